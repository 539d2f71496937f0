"""The cleaned text of every page of every shared PDF is exactly what it was before the
extraction was made faster (digests recorded by ``benchmarks/pdf_digests.py --record``)."""

from __future__ import annotations

import json
import random
import re
import unicodedata

import pytest

from rag_core.pdf import extraction as pdf
from rag_core.testing import digest_differences, page_digests, pdf_environment
from tests.support import TEST_DATA

DIGESTS = TEST_DATA / "pdf_page_digests.json"

pytest.importorskip("pypdf")


@pytest.mark.slow
def test_cleaned_text_of_every_shared_pdf_page_is_unchanged(pdf_dir):
    expected = json.loads(DIGESTS.read_text(encoding="utf-8"))
    if expected["environment"] != pdf_environment():
        pytest.skip(f"digests were recorded with {expected['environment']}, this is {pdf_environment()} "
                    "(another pypdf or fontTools gives other text): re-record them with the old code first")
    actual = page_digests(pdf_dir)
    assert sum(len(f["pages"]) for f in actual["files"].values()) == 487
    assert digest_differences(expected, actual) == []


def test_the_digest_check_notices_a_changed_page():
    expected = {"files": {"a.pdf": {"status": "ok", "n_pages": 2, "labels": [None, None], "pages": ["x", "y"]}}}
    changed = {"files": {"a.pdf": {"status": "ok", "n_pages": 2, "labels": [None, None], "pages": ["x", "z"]}}}
    assert digest_differences(expected, changed) == ["a.pdf: cleaned text differs on page(s) [2]"]
    assert digest_differences(expected, expected) == []


# The cleaning as it was before it was made faster: the reference the fast passes must equal.
_REF_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_REF_TRAILING = re.compile(r"[ \t]+$", re.MULTILINE)
_REF_HYPHEN = re.compile(r"(\S*?)([^\W\d_])[-\u2010][ \t]*\n[ \t]*([^\W\d_]\S*)[ \t]*(\n?)")


def _reference_clean(text: str) -> str:
    if not text:
        return ""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = pdf._CONTROL_RE.sub("", text)
    text = text.translate(pdf._LIGATURE_TABLE)
    if ".sc" in text:
        text = pdf._SMALL_CAPS_GLYPH_RE.sub(lambda m: m.group(1).replace("_", "").upper(), text)
    if "/H208" in text:
        text = pdf._MATH_PI_BRACKET_RE.sub(lambda m: pdf._MATH_PI_BRACKETS[m.group(1)], text)
    text = _REF_SPACES.sub(" ", text)
    text = _REF_TRAILING.sub("", text)
    text = pdf._SOFT_HYPHEN_BREAK_RE.sub(pdf._join_broken_word, text)
    text = text.replace("\u00ad", "")
    text = _REF_HYPHEN.sub(pdf._join_hyphen_break, text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def _reference_quality(text: str) -> tuple[int, float, float]:
    tokens = [t for t in re.findall(r"\S+", text) if not pdf._NEUTRAL_TOKEN_RE.fullmatch(t)]
    n_chars = sum(len(t) for t in tokens)
    if not tokens:
        return 0, 0.0, 0.0
    letters = sum(c.isalpha() for t in tokens for c in t)
    return n_chars, letters / n_chars, sum(pdf._looks_like_word(t) for t in tokens) / len(tokens)


def test_fast_cleaning_and_quality_equal_the_plain_passes_on_random_text():
    rng = random.Random(20261130)
    pieces = [*list("ab Zé-\u2010\n\t \u00a0\u00ad1.,/ \r\x0c\ufb01²"),
              "/e.sc ", "/o.sc", "/H20849", "/H20850", "  ", "-\n", " -\n x", "\u00ad\n", "\n\n\n", "state-of-the-\n",
              "Art", "val", "12.5%", "..."]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert pdf.clean_extracted_text(text) == _reference_clean(text), repr(text)
        assert pdf._text_quality(text) == _reference_quality(text), repr(text)
