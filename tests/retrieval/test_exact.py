"""Tests of rag_core.retrieval.exact: exact-phrase / regex / normalised search over chunk text."""

from __future__ import annotations

import random
import re
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_core.retrieval import exact
from rag_core.retrieval.exact import (
    ExactSearchError,
    find_exact,
    search_exact,
)
from rag_core.text.chunking import PageText, chunk_pages

HIT_KEYS = {
    "source", "chunk_index", "match", "snippet", "start", "end", "truncated", "mode",
    "page", "page_start", "page_end", "page_label", "doc_chunk", "doc_start", "doc_end",
}


@pytest.fixture
def chunks():
    return [
        {"text": "Traversable wormholes need exotic matter.", "source": "morris_thorne.pdf"},
        {
            "text": "We show that the wormhole requires negative average null energy along a geodesic.",
            "source": "gao_wormhole.pdf",
        },
        {"text": "Dense retrieval with dual encoders.", "source": "dpr.pdf"},
    ]


def test_contract_example(chunks):
    hits = find_exact("negative average null energy", chunks)
    assert len(hits) == 1
    hit = hits[0]
    assert set(hit) == HIT_KEYS
    assert hit["source"] == "gao_wormhole.pdf"
    assert hit["chunk_index"] == 1
    assert hit["match"] == "negative average null energy"
    text = chunks[1]["text"]
    assert text[hit["start"] : hit["end"]] == hit["match"]
    assert hit["start"] == text.index("negative")
    assert hit["truncated"] is False
    assert hit["mode"] == "literal"
    assert hit["snippet"] == text  # context 300 covers the whole chunk: no "..."
    # chunks with only text and source: page and document keys are None
    assert hit["page"] is None and hit["page_start"] is None and hit["page_end"] is None
    assert hit["doc_start"] is None and hit["doc_end"] is None and hit["doc_chunk"] is None


def test_search_exact_wrapper(chunks):
    index = SimpleNamespace(chunks=chunks)
    hits = search_exact("negative average null energy", index)
    assert [(h["source"], h["match"], h["mode"]) for h in hits] == [
        ("gao_wormhole.pdf", "negative average null energy", "literal")
    ]
    assert search_exact("wormholes? need", index, regex=True)[0]["match"] == "wormholes need"
    assert search_exact("wormholes? need", index)[0:] == []  # literal: "?" is just a character
    hits = search_exact("retrie-\nval", SimpleNamespace(chunks=[{"text": "retrieval", "source": "s"}]),
                        mode="normalized")
    assert hits[0]["match"] == "retrieval"
    with pytest.raises(ExactSearchError):
        search_exact("x", index, regex=True, mode="literal")


def test_literal_is_case_insensitive(chunks):
    hits = find_exact("NEGATIVE Average NULL energy", chunks)
    assert len(hits) == 1
    assert hits[0]["match"] == "negative average null energy"  # as it appears in the chunk
    hits = find_exact("WORMHOLE", chunks)
    assert [h["chunk_index"] for h in hits] == [0, 1]
    assert [h["match"] for h in hits] == ["wormhole", "wormhole"]


def test_literal_treats_regex_characters_literally():
    chunks = [{"text": "cost is $5 (approx.) or a+b", "source": "s"}]
    assert find_exact("$5 (approx.)", chunks)[0]["match"] == "$5 (approx.)"
    assert find_exact("a+b", chunks)[0]["start"] == 24
    assert find_exact("a.b", chunks) == []


def test_regex_is_case_sensitive(chunks):
    assert find_exact("Negative average", chunks, mode="regex") == []
    hits = find_exact(r"negative \w+ null", chunks, mode="regex")
    assert [h["match"] for h in hits] == ["negative average null"]
    hits = find_exact(r"(?i)NEGATIVE \w+ null", chunks, mode="regex")
    assert [h["match"] for h in hits] == ["negative average null"]
    hits = find_exact(r"[Ww]ormholes?", chunks, mode="regex")
    assert [(h["chunk_index"], h["match"]) for h in hits] == [(0, "wormholes"), (1, "wormhole")]


def test_one_hit_per_chunk_first_match():
    chunks = [{"text": "alpha beta alpha beta", "source": "s"}, {"text": "beta", "source": "t"}]
    hits = find_exact("beta", chunks)
    assert [(h["chunk_index"], h["start"]) for h in hits] == [(0, 6), (1, 0)]


def test_regex_anchors_apply_per_chunk():
    chunks = [
        {"text": "intro text\nResults: good", "source": "a"},
        {"text": "Results first", "source": "b"},
        {"text": "ends with Results", "source": "c"},
    ]
    assert [h["chunk_index"] for h in find_exact("^Results", chunks, mode="regex")] == [1]
    assert [h["chunk_index"] for h in find_exact("(?m)^Results", chunks, mode="regex")] == [0, 1]
    assert [h["chunk_index"] for h in find_exact("Results$", chunks, mode="regex")] == [2]
    assert [h["chunk_index"] for h in find_exact(r"\AResults", chunks, mode="regex")] == [1]
    # a pattern that could run on past the end of a chunk still matches inside it only
    hits = find_exact(r"good.*", chunks, mode="regex")
    assert [(h["chunk_index"], h["match"]) for h in hits] == [(0, "good")]
    hits = find_exact(r"(?s)text.*", chunks, mode="regex")
    assert [(h["chunk_index"], h["match"]) for h in hits] == [(0, "text\nResults: good")]
    hits = find_exact(r"\bResults\b", chunks, mode="regex")
    assert [h["chunk_index"] for h in hits] == [0, 1, 2]


def test_regex_matches_agree_with_per_chunk_search():
    import re

    rng = random.Random(7)
    words = ["alpha", "Beta", "gamma", "x", "\n", "ab", "ba"]
    chunks = [
        {"text": " ".join(rng.choice(words) for _ in range(rng.randint(0, 12))), "source": str(i)}
        for i in range(200)
    ]
    for pattern in [r"a\s+b", r"b\w*", r"(?s)a.*x", r"\bx\b", r"a[^x]+a", r"\s", r"ma\s*x"]:
        got = [(h["chunk_index"], h["start"], h["end"]) for h in
               find_exact(pattern, chunks, mode="regex", max_hits=1000)]
        want = []
        for i, c in enumerate(chunks):
            m = re.search(pattern, c["text"])
            if m:
                want.append((i, m.start(), m.end()))
        assert got == want, pattern


def test_snippet_ellipses():
    text = "0123456789" * 3 + "TARGET" + "abcdefghij" * 3
    chunks = [{"text": text, "source": "s"}]
    hit = find_exact("target", chunks, context=5)[0]
    assert hit["snippet"] == "...56789TARGETabcde..."
    hit = find_exact("01234", chunks, context=3)[0]
    assert hit["snippet"] == "01234567..."  # start of text: no "..." on the left
    hit = find_exact("hij", chunks, context=2)[0]
    # first match is in the first "abcdefghij" block
    assert hit["snippet"] == "...fghijab..."
    hit = find_exact("cdefghij" + "abcdefghij" * 2, chunks, context=4)[0]
    assert hit["snippet"].startswith("...") and not hit["snippet"].endswith("...")
    hit = find_exact("target", chunks, context=0)[0]
    assert hit["snippet"] == "...TARGET..."
    hit = find_exact("target", chunks, context=1000)[0]
    assert hit["snippet"] == text


def test_truncated_flag():
    chunks = [{"text": f"chunk {i} mentions wormhole", "source": f"d{i}"} for i in range(5)]
    hits = find_exact("wormhole", chunks, max_hits=3)
    assert [h["chunk_index"] for h in hits] == [0, 1, 2]
    assert [h["truncated"] for h in hits] == [False, False, True]
    hits = find_exact("wormhole", chunks, max_hits=10)
    assert len(hits) == 5
    assert all(h["truncated"] is False for h in hits)


def test_no_match_is_empty_list(chunks):
    assert find_exact("positive energy theorem", chunks) == []
    assert find_exact(r"\d{5}", chunks, mode="regex") == []
    assert find_exact("quantum inequality", chunks, mode="normalized") == []
    assert find_exact("anything", []) == []


def test_sources_filter(chunks):
    assert find_exact("wormhole", chunks, sources={"gao_wormhole.pdf"})[0]["chunk_index"] == 1
    assert len(find_exact("wormhole", chunks, sources=["gao_wormhole.pdf"])) == 1
    assert find_exact("wormhole", chunks, sources=[]) == []
    assert find_exact("wormhole", chunks, sources={"dpr.pdf"}) == []
    hits = find_exact("w.rmhole", chunks, mode="regex", sources={"morris_thorne.pdf"})
    assert [h["source"] for h in hits] == ["morris_thorne.pdf"]
    many = [{"text": f"{i} wormhole", "source": "keep" if i % 3 == 0 else "drop"} for i in range(10)]
    for mode in ("literal", "regex", "normalized"):
        hits = find_exact("wormhole", many, mode=mode, sources={"keep"})
        assert [h["chunk_index"] for h in hits] == [0, 3, 6, 9], mode


def test_argument_errors(chunks):
    for bad in ["", "   ", "\n\t"]:
        with pytest.raises(ExactSearchError, match="empty"):
            find_exact(bad, chunks)
    with pytest.raises(ExactSearchError, match="empty"):
        find_exact("\u00ad", chunks, mode="normalized")  # only a soft hyphen
    with pytest.raises(ExactSearchError, match="too long"):
        find_exact("a" * 1001, chunks)
    with pytest.raises(ValueError):
        find_exact("wormhole", chunks, max_hits=0)
    with pytest.raises(ValueError):
        find_exact("wormhole", chunks, max_hits=-1)
    with pytest.raises(ValueError):
        find_exact("wormhole", chunks, context=-1)
    with pytest.raises(ExactSearchError, match="mode"):
        find_exact("wormhole", chunks, mode="fuzzy")
    assert issubclass(ExactSearchError, ValueError)


def test_pathological_regex_is_linear_time():
    assert exact.REGEX_ENGINE == "re2"
    text = "a" * 100_000 + "b"
    chunks = [{"text": text, "source": "evil.txt"}]
    # Catastrophic backtracking for a backtracking engine; RE2 answers at once.
    assert find_exact("(a+)+$", chunks, mode="regex") == []
    hits = find_exact("(a+)+b$", chunks, mode="regex")
    assert hits[0]["start"] == 0 and hits[0]["end"] == len(text)
    assert hits[0]["snippet"] == text
    hits = find_exact("a{3}b", chunks, mode="regex", context=2)
    assert hits[0]["start"] == 99_997 and hits[0]["snippet"] == "...aaaaab"


def test_unsupported_regex_syntax():
    chunks = [{"text": "abab", "source": "s"}]
    with pytest.raises(ExactSearchError, match="RE2") as info:
        find_exact(r"(ab)\1", chunks, mode="regex")
    assert "backreference" in str(info.value)
    for pattern in [r"a(?=b)", r"(?<=a)b", r"(?<!a)b", r"a(?!b)"]:
        with pytest.raises(ExactSearchError, match="RE2") as info:
            find_exact(pattern, chunks, mode="regex")
        assert "look" in str(info.value)


def test_invalid_regex():
    with pytest.raises(ExactSearchError, match=r"missing \]") as info:
        find_exact("([a-z", [{"text": "abc", "source": "s"}], mode="regex")
    assert "Invalid regex" in str(info.value)
    with pytest.raises(ExactSearchError):  # even with no chunks to search
        find_exact("(unclosed", [], mode="regex")


def test_non_ascii_offsets_are_character_offsets():
    text = "café – naïve Größe ☃ then the wormhole appears"
    chunks = [{"text": text, "source": "s"}]
    for mode, pattern in [("literal", "WORMHOLE"), ("regex", r"worm\w+"), ("normalized", "Wormhole")]:
        hit = find_exact(pattern, chunks, mode=mode)[0]
        assert hit["start"] == text.index("wormhole"), mode
        assert hit["end"] == text.index("wormhole") + len("wormhole"), mode
        assert hit["match"] == "wormhole"
    hit = find_exact("GRÖSSE", chunks)  # literal case folding is 1:1: ß is not "ss"
    assert hit == []
    hit = find_exact("größe", chunks)[0]
    assert hit["match"] == "Größe" and hit["start"] == text.index("Größe")
    hit = find_exact("grösse", chunks, mode="normalized")[0]  # full case folding: ß -> ss
    assert hit["match"] == "Größe"


def test_normalized_mode_ligature_and_hyphenation():
    text = "We propose eﬃcient retrie-\nval of passages."
    chunks = [{"text": text, "source": "paper.pdf"}]
    assert find_exact("efficient retrieval", chunks) == []  # literal does not fold
    hits = find_exact("efficient retrieval", chunks, mode="normalized")
    assert len(hits) == 1
    hit = hits[0]
    assert hit["mode"] == "normalized"
    assert hit["start"] == text.index("eﬃcient")
    assert hit["end"] == text.index("val") + 3
    assert hit["match"] == "eﬃcient retrie-\nval"
    assert hit["match"] == text[hit["start"] : hit["end"]]


def test_normalized_mode_quotes_dashes_whitespace():
    text = "As noted, the “null energy condition”\u00a0– in  its\taveraged form – holds’s."
    chunks = [{"text": "unrelated", "source": "a"}, {"text": text, "source": "b"}]
    hits = find_exact('the "null energy condition" - in its averaged form', chunks, mode="normalized")
    assert len(hits) == 1
    hit = hits[0]
    assert hit["chunk_index"] == 1
    assert hit["match"] == "the “null energy condition”\u00a0– in  its\taveraged form"
    assert text[hit["start"] : hit["end"]] == hit["match"]
    # the other way round: curly quotes in the pattern, straight in the text
    chunks = [{"text": 'a so-called "quote" here', "source": "c"}]
    hit = find_exact("So\u2010called “quote”", chunks, mode="normalized")[0]
    assert hit["match"] == 'so-called "quote"'


def test_page_mapping_with_page_breaks():
    pages = [
        PageText(1, "First page talks about wormholes.", label="i"),
        PageText(2, "Second page: negative average null energy is required."),
        PageText(3, "Third page concludes."),
    ]
    chunks = chunk_pages(pages, "gao.pdf", chunk_size=200, overlap=20)
    assert len(chunks) == 1 and chunks[0]["page_breaks"][1][1] == 2
    hit = find_exact("negative average", chunks)[0]
    assert hit["page"] == 2 and hit["page_start"] == 2 and hit["page_end"] == 2
    assert hit["page_label"] == "i"
    assert hit["doc_chunk"] == 0
    assert hit["doc_start"] == chunks[0]["start"] + hit["start"]
    assert hit["doc_end"] == chunks[0]["start"] + hit["end"]
    # a match spanning a page break
    hit = find_exact(r"required\.\s+Third", chunks, mode="regex")[0]
    assert (hit["page"], hit["page_start"], hit["page_end"]) == (2, 2, 3)
    hit = find_exact("wormholes", chunks)[0]
    assert hit["page"] == 1


def test_page_mapping_with_offset_chunks():
    text = ("x" * 90 + " ") * 5 + "the marker phrase"
    chunks = chunk_pages([PageText(4, text)], "doc.pdf", chunk_size=100, overlap=10)
    hits = find_exact("marker phrase", chunks)
    assert len(hits) == 1
    hit = hits[0]
    chunk = chunks[hit["chunk_index"]]
    assert hit["page"] == 4
    assert hit["doc_start"] == text.index("marker phrase")
    assert hit["doc_end"] == text.index("marker phrase") + len("marker phrase")
    assert hit["doc_chunk"] == chunk["doc_chunk"]


def test_cache_sees_edited_chunks():
    chunks = [{"text": "old words here", "source": "s"}]
    assert find_exact("old", chunks)[0]["start"] == 0
    chunks[0]["text"] = "new words, no longer old"
    assert find_exact("old", chunks)[0]["start"] == len("new words, no longer ")
    chunks.append({"text": "old again", "source": "t"})
    assert [h["chunk_index"] for h in find_exact("old", chunks)] == [0, 1]
    assert [h["chunk_index"] for h in find_exact("old", chunks, mode="normalized")] == [0, 1]
    exact.clear_cache()
    assert [h["chunk_index"] for h in find_exact("old", chunks, mode="regex")] == [0, 1]


def test_missing_and_odd_chunk_fields():
    chunks = [{"source": "no_text"}, {"text": None, "source": "none"}, {"text": "found it"}]
    hits = find_exact("found", chunks)
    assert [(h["chunk_index"], h["source"]) for h in hits] == [(2, None)]


# ------------------------------------------------------------------ folding for real quotes


@pytest.mark.parametrize("text, typed", [
    ("outperforms a strong Lucene-\nBM25 system", "outperforms a strong Lucene-BM25 system"),
    ("outperforms a strong Lucene-\nBM25 system", "outperforms a strong LuceneBM25 system"),
    ("without substantial taskspecific\narchitecture", "without substantial task-specific architecture"),
    ("without substantial task-\nspecific architecture", "without substantial task-specific architecture"),
    ("without substantial task-\nspecific architecture", "without substantial taskspecific architecture"),
    ("fine-tuning all pretrained\nparameters", "fine-tuning all pre-trained parameters"),
    ("a conventional pertoken\nlikelihood", "a conventional per-token likelihood"),
    ("instead of sequencealigned\nrecurrence", "instead of sequence-aligned recurrence"),
    ("current tabletext\nencoding models", "current table-text encoding models"),
    ("our tracecompilation\nbased speculative", "our trace-compilation based speculative"),
    ("efficient retrie-\nval of passages", "efficient retrie- val of passages"),
    ("efficient retrie-\nval of passages", "efficient retrie-val of passages"),
    ("efficient retrieval of passages", "efficient retrie- val of passages"),
    ("efficient retrie\u00ad\nval of passages", "efficient retrieval of passages"),
    ("a left-to-\nright model", "a left-to-right model"),
    ("the e\ufb03cient \ufb01ne-tuning", "the efficient fine-tuning"),
    ("the \u201cnull energy\u201d condition", 'the "null energy" condition'),
    ("the model\u2019s output", "the model's output"),
    ("results\u2014and more\u2013so", "results -- and more - so"),
    ("non\u00a0breaking\u2009thin\u200bzero", "non breaking thinzero"),
    ("from 1990\u2013\n2000 on", "from 1990-2000 on"),
])
def test_reader_readings_of_a_pdf_line_match(text, typed):
    chunks = [{"text": "Something else.\n" + text + ".", "source": "p.pdf"}]
    hits = find_exact(typed, chunks, mode="normalized")
    assert len(hits) == 1, (text, typed)
    hit = hits[0]
    assert hit["match"] == chunks[0]["text"][hit["start"]:hit["end"]]
    assert hit["start"] == len("Something else.\n")
    assert hit["end"] == len("Something else.\n") + len(text)


def test_digits_keep_their_dash():
    chunks = [{"text": "we used 19902000 samples", "source": "p.pdf"}]
    assert find_exact("1990-2000 samples", chunks, mode="normalized") == []
    chunks = [{"text": "we used 10 - 20 samples", "source": "p.pdf"}]
    assert find_exact("10-20 samples", chunks, mode="normalized")[0]["match"] == "10 - 20 samples"


def test_a_place_in_the_overlap_of_two_chunks_is_reported_once():
    sentence = "The overlap sentence appears in two chunks."
    text = "a" * 109 + " " + sentence + " " + "b" * 200 + " " + "The overlap sentence again, later."
    chunks = chunk_pages([PageText(1, text)], "doc.pdf", chunk_size=200, overlap=100)
    holding = [i for i, c in enumerate(chunks) if sentence in c["text"]]
    assert len(holding) >= 2  # the sentence is in the overlap
    for mode in ("literal", "normalized", "regex"):
        hits = find_exact("The overlap sentence", chunks, mode=mode, max_hits=50)
        places = [(h["doc_start"], h["doc_end"]) for h in hits]
        assert len(places) == len(set(places)) == 2, (mode, places)
        assert min(places)[0] == text.index(sentence)


# ------------------------------------------------------------------ property tests

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1, max_size=9)


@settings(max_examples=150, deadline=None)
@given(st.lists(_WORD, min_size=3, max_size=14), st.data())
def test_a_line_broken_passage_is_found_in_every_reading(words, data):
    """The PDF breaks some words at line ends with a hyphen; the reader types each either joined,
    hyphenated or with a space after the hyphen, with the line breaks gone. (Between two digits
    the dash stays: "1990-\n2000" is a range, never "19902000".)"""
    pdf_words, typed_words = [], []
    for word in words:
        cuts = [k for k in range(1, len(word)) if not (word[k - 1].isdigit() and word[k].isdigit())]
        if cuts and data.draw(st.booleans()):
            cut = data.draw(st.sampled_from(cuts))
            pdf_words.append(word[:cut] + "-\n" + word[cut:])
            typed_words.append(word[:cut] + data.draw(st.sampled_from(["", "-", "- "])) + word[cut:])
        else:
            pdf_words.append(word)
            typed_words.append(word)
    text = "Before. " + " ".join(pdf_words) + " after."
    typed = " ".join(typed_words)
    hits = find_exact(typed, [{"text": text, "source": "s"}], mode="normalized")
    assert hits, (text, typed)
    assert hits[0]["start"] == len("Before. ")
    assert hits[0]["match"].endswith(pdf_words[-1].split("\n")[-1])


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _as_typed(sentence: str, rng: random.Random) -> str:
    """A sentence of the extracted text as a reader would type it."""
    s = sentence.replace("“", '"').replace("”", '"').replace("’", "'").replace("‘", "'")
    s = s.replace("–", rng.choice(["-", "--"])).replace("—", "--")
    s = re.sub(r"(\w)-\n(\w)", lambda m: m.group(1) + rng.choice(["-", "", "- "]) + m.group(2), s)  # both readings
    s = " ".join(s.split())  # line breaks gone
    if rng.random() < 0.5:
        s = s.replace("fi", "ﬁ").replace("ffl", "ﬄ")  # ligatures as copied from a viewer
    words = s.split(" ")
    long_words = [i for i, w in enumerate(words) if re.fullmatch(r"[a-z]{8,}", w)]
    if long_words:  # a word the PDF may have broken at a line end, typed with its hyphen
        i = rng.choice(long_words)
        words[i] = words[i][: len(words[i]) // 2] + rng.choice(["-", "- "]) + words[i][len(words[i]) // 2:]
    return " ".join(words)


@pytest.mark.slow
def test_sentences_of_every_shared_page_are_found_on_their_page(shared_collection):
    """A seeded sampler over every page of ../shared/data/pdfs: three sentences per page,
    rewritten as a reader types them, are each found on their page."""
    from rag_core.retrieval.exact import document_texts, find_places

    _, index, _ = shared_collection
    rng = random.Random(0)
    checked, missed = 0, []
    for doc in document_texts(index.chunks):
        for number in doc.page_numbers:
            start, end = doc.page_bounds(number)
            # bare page numbers at a page break are blanked there: they are not part of a sentence
            page_text = doc.match_text[start:end]
            sentences = [s for s in _SENTENCE_SPLIT.split(page_text) if len(s.split()) >= 6 and len(s) <= 2000
                         and not s[0].islower()]  # not the end of a sentence begun on the page before
            for sentence in rng.sample(sentences, min(3, len(sentences))):
                typed = _as_typed(sentence, rng)
                places = find_places(typed, index.chunks, sources=[doc.source], max_places=100)
                checked += 1
                if not any(p["page"] <= number <= p["page_end"] for p in places):
                    missed.append((doc.source, number, typed[:80]))
    assert checked > 1000
    assert missed == [], "\n".join(map(str, missed))
