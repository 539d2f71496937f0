"""Tests of rag_core.citations.verdicts (graded verdicts), rag_core.pdf.marks and rag_core.citations.bibliography."""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

from rag_core.citations.verdicts import VERDICTS, CitationCheck, verify_quote
from rag_core.index.build import build_index_from_chunks
from rag_core.text.chunking import PageText, chunk_pages
from rag_core.text.sentences import split_sentences
from tests.support import REPO, TEST_DATA

LABELLED = TEST_DATA / "citations_labelled.json"
DPR = "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"
RAG = "ml_rag_lewis2020_arxiv2005.11401.pdf"
TRANSFORMER = "ml_transformer_vaswani2017_arxiv1706.03762v5.pdf"
MEANING_KINDS = ("negation", "number", "direction", "quantifier", "harmless", "contradiction")


def labelled() -> list[dict]:
    return json.loads(LABELLED.read_text(encoding="utf-8"))["statements"]


def small_index(pages_by_source: dict[str, list[str]], *, chunk_size: int = 1200, overlap: int = 200):
    chunks = []
    for source, pages in pages_by_source.items():
        doc_chunks = chunk_pages([PageText(n, t) for n, t in enumerate(pages, start=1)], source, chunk_size, overlap)
        for chunk in doc_chunks:
            chunk["doc_id"] = source
        chunks.extend(doc_chunks)
    return build_index_from_chunks(chunks, compute_embeddings=False)


GAO = ("Traversable wormholes were long thought impossible. Gao, Jafferis and Wall show that a traversable "
       "wormhole opens in an eternal BTZ black hole when a double-trace coupling between the two boundaries "
       "produces negative average null energy, so that information can leak through the worm-\nhole. "
       "The effect is small but it is there.")
TEMME = ("Temme, Bravyi and Gambetta introduce zero-noise extrapolation, which mitigates errors in short-depth "
         "quantum circuits by running them at amplified noise levels and extrapolating to zero noise. "
         "Error mitigation needs no extra qubits.")


@pytest.fixture(scope="module")
def toy_index():
    return small_index({"gao.pdf": [GAO, "Second page about something else entirely."], "temme.pdf": [TEMME]})


# ------------------------------------------------------------------ the labelled set


def test_labelled_set_is_big_and_varied():
    rows = labelled()
    kinds = {r["kind"] for r in rows}
    assert len(rows) >= 60
    assert kinds == {"quote", "misquote", "paraphrase", "fabricated", "misattributed", "negation", "number",
                     "direction", "quantifier", "harmless", "contradiction"}
    assert all(r["expected"] in VERDICTS for r in rows)
    meaning_cases = [r for r in rows if r["kind"] in MEANING_KINDS or r["id"].startswith(("meaning-", "heldout-"))]
    assert len(meaning_cases) >= 60 and all(r["meaning"] in ("same", "changed") for r in meaning_cases)
    assert all(r.get("original") for r in meaning_cases)
    notes = " ".join(r.get("note", "") for r in rows)
    assert "\\n" in notes and "ligature" in notes  # compounds broken across lines, ligatures


@pytest.mark.slow
def test_verdicts_on_the_labelled_set(shared_collection):
    """Every real quote is verbatim on the right page; no misquote, paraphrase or fabrication is
    verbatim; misquotes are near_verbatim with the changed words shown; wrong citations flagged."""
    _, index, _ = shared_collection
    near_with_changes = 0
    misquotes = 0
    for row in labelled():
        cited = [row["cited_document"]] if row.get("cited_document") else None
        check = verify_quote(row["statement"], index, cited_sources=cited, meaning=False)
        if row["kind"] in ("quote", "misattributed"):
            assert check.verdict == "verbatim", row["id"]
            assert check.source == row["document"], row["id"]
            assert any(row["page"] <= h["page"] <= row["page_end"] for h in check.hits), row["id"]
            assert check.misattributed == (row["kind"] == "misattributed"), row["id"]
        elif row["expected"] != "verbatim":  # a harmless edit may be folding only (curly quotes)
            assert check.verdict != "verbatim", row["id"]
        if row["kind"] in ("negation", "number", "direction", "quantifier"):  # misquotes of one meaning word
            assert check.verdict == "near_verbatim" and check.source == row["document"], row["id"]
            assert row["page"] <= check.best["page"] <= row["page_end"], row["id"]
        if row["kind"] == "misquote":
            misquotes += 1
            best = check.best
            if check.verdict == "near_verbatim" and all(
                    (was in best["diff"] and now in best["diff"]) for was, now in row["changed"]):
                near_with_changes += 1
                assert best["source"] == row["document"] and row["page"] <= best["page"] <= row["page_end"]
        if row["kind"] in ("paraphrase", "fabricated") and row["expected"] != "near_verbatim":
            assert check.verdict != "near_verbatim", row["id"]
    assert near_with_changes >= 0.9 * misquotes


@pytest.mark.slow
def test_one_changed_word_is_never_verbatim(shared_collection):
    """A seeded sample of real sentences with one word swapped: never called verbatim."""
    _, index, _ = shared_collection
    from rag_core.retrieval.exact import document_texts

    rng = random.Random(11)
    documents = [d for d in document_texts(index.chunks) if len(d.text) > 5000]
    checked = 0
    for doc in rng.sample(documents, 8):
        sentences = [doc.text[a:b] for a, b in split_sentences(doc.text)]
        sentences = [s for s in sentences if 12 <= len(s.split()) <= 40 and sum(c.isalpha() for c in s) > 0.8 * len(
            s.replace(" ", ""))]
        for sentence in rng.sample(sentences, min(3, len(sentences))):
            words = sentence.split()
            k = rng.randrange(2, len(words) - 2)
            if not words[k].isalpha():
                continue
            words[k] = "zebra" if words[k].lower() != "zebra" else "okapi"
            check = verify_quote(" ".join(words), index, meaning=False)
            assert check.verdict != "verbatim", sentence
            checked += 1
    assert checked >= 10


# ------------------------------------------------------------------ verdicts on a small index


def test_verbatim_says_whether_folding_was_needed(toy_index):
    check = verify_quote("Error mitigation needs no extra qubits.", toy_index)
    assert check.verdict == "verbatim" and not check.folded and check.folds == []
    assert check.similarity == 1.0 and "Found word for word in the collection" in check.message
    check = verify_quote("information can leak through the worm-hole", toy_index)
    assert check.verdict == "verbatim" and check.folded
    assert "hyphenation" in check.folds
    assert check.hits[0]["match"] == "information can leak through the worm-\nhole"
    check = verify_quote("INFORMATION can leak", toy_index)
    assert check.folds == ["letter case"]


def test_every_place_once_even_in_the_overlap():
    sentence = "The quoted sentence sits in the overlap of two chunks."
    text = ("x" * 150 + " " + sentence + " " + "y" * 300 + " " + sentence + " end.")
    index = small_index({"doc.pdf": [text]}, chunk_size=220, overlap=100)
    holding = [c for c in index.chunks if sentence in c["text"]]
    assert len(holding) >= 3  # each occurrence lies in more than one chunk
    check = verify_quote(sentence, index)
    assert check.verdict == "verbatim"
    assert [h["doc_start"] for h in check.hits] == [151, text.index(sentence, 200)]
    assert "2 places" in check.message


def test_near_verbatim_shows_the_changed_words(toy_index):
    quote = ("a traversable wormhole opens in an eternal BTZ black hole when a single-trace coupling between the "
             "two boundaries produces positive average null energy")
    check = verify_quote(quote, toy_index)
    assert check.verdict == "near_verbatim"
    assert check.source == "gao.pdf" and check.page == 1
    best = check.best
    assert {(c["document"], c["quote"]) for c in best["changes"]} == {("double-trace", "single-trace"),
                                                                      ("negative", "positive")}
    assert best["diff"] == "double-trace \u2192 single-trace; negative \u2192 positive"
    assert 0.7 <= check.similarity < 1
    assert GAO[best["doc_start"]:best["doc_end"]].startswith("a traversable wormhole")
    assert "2 words different" in check.message


def test_paraphrase_and_fabrication_without_embeddings(toy_index):
    check = verify_quote("Errors of shallow quantum circuits shrink when the noise is amplified and then "
                         "extrapolated back to zero.", toy_index)
    assert check.verdict == "related" and check.similarity_kind == "key words"
    top = check.closest[0]
    assert top["source"] == "temme.pdf"
    assert top["text"][top["sentence_start"]:top["sentence_end"]] == top["sentence"]
    assert top["sentence"].startswith("Temme, Bravyi and Gambetta")
    assert "key words" in check.score_note
    check = verify_quote("Marathon runners who drink coffee finish twelve minutes faster.", toy_index)
    assert check.verdict == "not_found" and not check.hits
    assert check.to_dict()["verdict"] == "not_found"


@pytest.mark.slow
def test_related_by_meaning_with_embeddings(worked_example_index):
    check = verify_quote("A cross-encoder reads the query and the passage at once, which usually ranks better "
                         "than separate embeddings.", worked_example_index)
    assert check.verdict == "related" and check.similarity_kind == "meaning"
    assert check.closest[0]["source"] == "reranking_note.pdf"
    assert "cosine" in check.score_note
    check = verify_quote("Medieval bakers used sourdough starters kept in oak barrels.", worked_example_index)
    assert check.verdict == "not_found"


def test_misattribution(toy_index):
    quote = "mitigates errors in short-depth quantum circuits"
    check = verify_quote(quote, toy_index, cited_sources=["gao.pdf"])
    assert check.verdict == "verbatim" and check.misattributed and check.found_in_cited is False
    assert "different document than the one cited" in check.message
    check = verify_quote(quote, toy_index, cited_sources=["temme.pdf"])
    assert check.verdict == "verbatim" and not check.misattributed and check.found_in_cited
    check = verify_quote("mitigates faults in short-depth quantum circuits by running them", toy_index,
                         cited_sources=["gao.pdf"])
    assert check.verdict == "near_verbatim" and check.misattributed


def test_sources_restrict_the_search(toy_index):
    check = verify_quote("Error mitigation needs no extra qubits.", toy_index, sources=["gao.pdf"], meaning=False)
    assert check.verdict == "not_found" and "in the chosen document" in check.message


def test_result_type_and_reexports(toy_index):
    import rag_core

    assert rag_core.verify_quote is verify_quote
    check = verify_quote("Error mitigation needs no extra qubits.", toy_index)
    assert isinstance(check, CitationCheck)
    data = check.to_dict()
    for key in ("quote", "verdict", "message", "hits", "closest", "folded", "best", "similarity", "misattributed",
                "source", "page", "page_label"):
        assert key in data
    json.dumps(data)  # plain data


def test_bad_input(toy_index):
    with pytest.raises(ValueError, match="empty"):
        verify_quote("   ", toy_index)


# ------------------------------------------------------------------ boxes on the page


@pytest.fixture(scope="module")
def dpr_pdf(pdf_dir) -> Path:
    return pdf_dir / DPR


def test_boxes_lie_where_pdfium_finds_the_words(dpr_pdf):
    import pypdfium2 as pdfium

    from rag_core.pdf.marks import locate_passage

    passage = "our dense retriever outperforms a strong Lucene-BM25 system greatly"
    location = locate_passage(dpr_pdf, 1, passage)
    assert location.found and location.method == "exact" and location.boxes
    document = pdfium.PdfDocument(str(dpr_pdf))
    try:
        textpage = document[0].get_textpage()
        searcher = textpage.search("retriever outperforms")
        start, count = searcher.get_next()
        word_box = [textpage.get_charbox(i) for i in range(start, start + count)]
    finally:
        document.close()
    left, bottom = min(b[0] for b in word_box), min(b[1] for b in word_box)
    right, top = max(b[2] for b in word_box), max(b[3] for b in word_box)
    assert any(b[0] - 1 <= left and right <= b[2] + 1 and b[1] - 1 <= bottom and top <= b[3] + 1
               for b in location.boxes)
    # the boxes cover the passage's lines and nothing far away
    assert len(location.boxes) == 3  # "our" ends a line, then two more lines
    assert max(b[3] for b in location.boxes) - min(b[1] for b in location.boxes) < 40


def test_marked_page_image(dpr_pdf):
    from PIL import Image

    from rag_core.pdf.marks import MARK_COLOUR, render_marked_page

    marked = render_marked_page(dpr_pdf, 1, "dense retriever outperforms a strong Lucene-\nBM25 system")
    assert marked.found and marked.cropped and marked.page == 1
    image = Image.open(io.BytesIO(marked.png)).convert("RGB")
    assert image.size == (marked.width, marked.height)
    assert image.height < 400  # zoomed to the passage, not the whole page
    pixels = np.asarray(image, dtype=int)
    blue = int((np.abs(pixels - np.array(MARK_COLOUR)) < 30).all(axis=2).sum())
    assert blue > 200  # outlines and the margin bar
    assert marked.caption().startswith("Page 1: passage marked")
    whole = render_marked_page(dpr_pdf, 1, "no such passage anywhere on this page at all, really", zoom=True)
    assert not whole.found and not whole.cropped and "not located" in whole.caption()


def test_annotations_are_not_rendered(pdf_dir):
    """The DPR PDF carries reader highlights: the marked page shows none of their yellow."""
    import pypdfium2 as pdfium
    from PIL import Image

    from rag_core.pdf.marks import render_marked_page

    def yellow(image) -> int:
        pixels = np.asarray(image.convert("RGB"), dtype=int)
        return int(((pixels[..., 0] > 200) & (pixels[..., 1] > 200) & (pixels[..., 2] < 120)).sum())

    document = pdfium.PdfDocument(str(pdf_dir / DPR))
    try:
        for number in range(1, len(document) + 1):
            with_annots = document[number - 1].render(scale=0.5).to_pil()
            if yellow(with_annots) > 500:
                break
        else:
            pytest.skip("no page with a yellow highlight found")
    finally:
        document.close()
    marked = render_marked_page(pdf_dir / DPR, number, "the", scale=0.5, zoom=False)
    assert yellow(Image.open(io.BytesIO(marked.png))) < 50


@pytest.mark.slow
def test_a_passage_across_two_pages_gives_both(shared_collection):
    from rag_core.pdf.marks import mark_hit

    library, index, _ = shared_collection
    quote = ("We do not use the supplied passages, only the questions and answers, to treat MSMARCO as an "
             "open-domain abstractive QA task.")
    check = verify_quote(quote, index, meaning=False)
    hit = check.hits[0]
    assert check.verdict == "verbatim" and (hit["page"], hit["page_end"]) == (4, 5)
    assert [s["page"] for s in hit["pages"]] == [4, 5]
    pages = mark_hit(library.pdf_path("shared", hit["doc_id"]), hit)
    assert [p.page for p in pages] == [4, 5] and all(p.found for p in pages)
    assert pages[1].location.text.startswith("MSMARCO as an open-domain")


def test_page_label_beside_the_physical_page(pdf_dir):
    from rag_core.pdf.marks import PdfMarkError, render_marked_page

    bert = pdf_dir / "ml_bert_devlin2018_arxiv1810.04805.pdf"
    marked = render_marked_page(bert, 1, "BERT alleviates the previously mentioned unidirectionality constraint",
                                scale=1.0)
    assert marked.found and marked.page == 1 and marked.page_label == "1"
    with pytest.raises(PdfMarkError, match="out of range"):
        render_marked_page(bert, 99, "x")
    with pytest.raises(PdfMarkError):
        render_marked_page(b"not a pdf", 1, "x")


# ------------------------------------------------------------------ bibliographic metadata


def test_metadata_from_the_first_page(pdf_dir):
    from rag_core.pdf.extraction import extract_pdf

    bert = extract_pdf(pdf_dir / "ml_bert_devlin2018_arxiv1810.04805.pdf").metadata
    assert bert["title"].startswith("BERT: Pre-training of Deep Bidirectional Transformers")
    assert bert["authors"][:2] == ["Jacob Devlin", "Ming-Wei Chang"]
    assert bert["year"] == 2018 and bert["arxiv_id"] == "1810.04805"  # the arXiv id's year comes first
    dpr = extract_pdf(pdf_dir / DPR).metadata
    assert dpr["title"] == "Dense Passage Retrieval for Open-Domain Question Answering"
    assert "Vladimir Karpukhin" in dpr["authors"] and dpr["year"] == 2020
    jcap = extract_pdf(pdf_dir / "phys_jcap2008_apparent_average_accelerations_arxiv0807.3577.pdf").metadata
    assert {k: jcap[k] for k in ("title", "authors", "year", "doi")} == {
        "title": "Apparent and average accelerations of the Universe",
        "authors": ["Krzysztof Bolejko", "Lars Andersson"], "year": 2008, "doi": "10.1088/1475-7516/2008/10/003"}
    mitiq = extract_pdf(pdf_dir / "qem_mitiq_manual_v0.5.0_2021.pdf").metadata
    assert mitiq["authors"] is None  # "Tech Team @ Unitary Fund" is not a list of names: unsure, so None


def test_documents_record_their_metadata(paper_library):
    docs = {d["source"]: d for d in paper_library.documents("papers")}
    dpr = docs[DPR]
    assert set(dpr) >= {"title", "authors", "year"}
    assert dpr["year"] == 2020 and dpr["title"].startswith("Dense Passage Retrieval")


def test_match_documents():
    from rag_core.citations.bibliography import match_documents

    docs = [
        {"source": "bert.pdf", "authors": ["Jacob Devlin", "Ming-Wei Chang"], "year": 2019, "title": "BERT"},
        {"source": "dpr.pdf", "authors": None, "year": 2020, "title": None,
         "first_page": "Dense Passage Retrieval\nVladimir Karpukhin, Barlas Oğuz"},
        {"source": "retro.pdf", "authors": ["Sebastian Borgeaudy"], "year": 2021},
    ]
    assert match_documents(["Devlin"], 2019, docs) == ["bert.pdf"]
    assert match_documents(["Devlin"], 2018, docs) == ["bert.pdf"]  # arXiv year one off
    assert match_documents(["Devlin"], 2015, docs) == []
    assert match_documents(["Karpukhin"], 2020, docs) == ["dpr.pdf"]
    assert match_documents(["Borgeaud"], 2021, docs) == ["retro.pdf"]
    assert match_documents(["Devlin"], 2019, docs, title="Attention is all you need") == []
    assert match_documents(["Nobody"], 2019, docs) == []


def test_citation_thresholds_are_documented():
    from rag_core import settings

    doc = REPO / "docs" / "citations.md"
    text = doc.read_text(encoding="utf-8")
    for name in ("NEAR_MIN_SIMILARITY", "RELATED_MIN_MEANING", "RELATED_MIN_LEXICAL"):
        assert name in text
        assert re.search(rf"{name}\D+{getattr(settings, name)}", text), name


def test_a_quote_with_an_ellipsis(toy_index):
    for quote in ("Gao, Jafferis and Wall show that ... information can leak through the worm-hole",
                  "Gao, Jafferis and Wall show that [\u2026] information can leak",
                  "a traversable wormhole opens [...] between the two boundaries"):
        check = verify_quote(quote, toy_index)
        assert check.verdict == "verbatim", quote
        assert check.folds == ["omitted words (...)"]
        hit = check.hits[0]
        assert GAO[hit["doc_start"]:hit["doc_end"]].startswith(("Gao, Jafferis", "a traversable"))
    check = verify_quote("Gao, Jafferis and Wall show that ... no extra qubits", toy_index)  # parts far apart
    assert check.verdict != "verbatim"
    check = verify_quote("information can leak through the wormhole ...", toy_index)  # a trailing ellipsis
    assert check.verdict == "verbatim"


def test_a_related_passage_is_marked_at_its_best_sentence(paper_library):
    from rag_core.pdf.marks import mark_hit

    index = paper_library.load_index("papers")
    check = verify_quote("Using dense vectors for retrieval beats sparse term matching such as BM25 on many open "
                         "domain question answering benchmarks.", index, meaning=True)
    assert check.verdict == "related"
    row = check.closest[0]
    assert row["sentence_pages"] and row["sentence_pages"][0]["text"].strip()
    assert row["sentence_page"] == row["sentence_pages"][0]["page"]
    pages = mark_hit(paper_library.pdf_path("papers", row["doc_id"]), row)
    assert pages and pages[0].page == row["sentence_page"] and pages[0].found
