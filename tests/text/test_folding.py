"""Tests of rag_core.text.folding: the fold for quote matching and its map back to the original."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from rag_core.text.folding import fold_text, normalize_for_matching


def test_normalize_for_matching_map():
    text = "Eﬃcient  retrie-\nval “x”"
    folded, origin = normalize_for_matching(text)
    assert folded == 'efficient retrieval "x"'
    assert len(origin) == len(folded)
    assert origin[:4] == [0, 1, 1, 1]  # "e", then "ffi" from the ligature
    assert origin[folded.index("val")] == text.index("val")
    assert origin[folded.index(" retrieval")] == text.index("  ")
    assert normalize_for_matching("") == ("", [])


def test_fast_fold_agrees_with_mapped_fold():
    rng = random.Random(3)
    alphabet = [*"abcXYZ -\n\t", "ﬁ", "ﬃ", "\u00ad", "‐", "–", "“", "”", "’", "\u00a0",
                "ß", "İ", "Σ", "é", "\u2003", "\u200b", "Ａ", "①", "\r"]
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert fold_text(text) == normalize_for_matching(text)[0], repr(text)


FOLD_ALPHABET = [*list("ab1 -\n\t.,\"'"), "ﬁ", "\xad", "‐", "–", "—", "“", "”", "’", "\xa0", "\u200b", "ß", "\x02",
                 "\u2009"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=FOLD_ALPHABET, max_size=40))
def test_fast_fold_agrees_with_mapped_fold_everywhere(text):
    folded, origin = normalize_for_matching(text)
    assert fold_text(text) == folded
    assert len(origin) == len(folded)
    assert origin == sorted(origin) and all(0 <= o < len(text) for o in origin)
