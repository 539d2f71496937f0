"""Citations resolved the way a reader resolves them (issue 18): first author + year (one off
tolerated and noted), DOI, arXiv id, \\cite keys through a .bib, pandoc [@key] with --bib; matched,
ambiguous, not in collection; misattributed only when the cited work is in the collection."""

from __future__ import annotations

import json

import pytest

from rag_core.citations.manuscript import check_statements, manuscript_from_text, read_manuscript
from rag_core.citations.markers import Citation, parse_citations
from rag_core.citations.resolution import resolve_citation
from rag_core.index.build import build_index_from_chunks
from rag_core.pdf.extraction import PageText
from rag_core.text.chunking import chunk_pages

RAG_TEXT = ("We explore a general-purpose fine-tuning recipe for retrieval-augmented generation which combines "
            "pre-trained parametric and non-parametric memory for language generation.")
DPR_TEXT = ("Dense passage retrieval outperforms a strong Lucene-BM25 system greatly by 9 to 19 percent absolute "
            "in terms of top-20 passage retrieval accuracy.")
BEIR_TEXT = "BEIR is a robust and heterogeneous evaluation benchmark for information retrieval."
DOCUMENTS = [
    {"source": "rag.pdf", "authors": ["Patrick Lewis", "Ethan Perez"], "year": 2020, "arxiv_id": "2005.11401",
     "title": "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks"},
    {"source": "dpr.pdf", "authors": ["Vladimir Karpukhin", "Barlas Oğuz", "Sewon Min", "Patrick Lewis"],
     "year": 2020, "doi": "10.18653/v1/2020.emnlp-main.550",
     "title": "Dense Passage Retrieval for Open-Domain Question Answering"},
    {"source": "beir.pdf", "authors": ["Andreas Rücklé", "Nandan Thakur"], "year": 2021, "title": "BEIR"},
]


@pytest.fixture(scope="module")
def index():
    chunks = []
    for source, text in (("rag.pdf", RAG_TEXT), ("dpr.pdf", DPR_TEXT), ("beir.pdf", BEIR_TEXT)):
        for chunk in chunk_pages([PageText(1, text)], source):
            chunk["doc_id"] = source
            chunks.append(chunk)
    return build_index_from_chunks(chunks, compute_embeddings=False)


def _check(text, index, documents=DOCUMENTS, **kwargs):
    manuscript = read_manuscript(**kwargs) if kwargs else manuscript_from_text(text)
    return check_statements(manuscript.statements(), index, documents=documents, meaning=False)


def test_lewis_2020_is_the_rag_paper_not_dpr_where_lewis_is_fourth(index):
    rows = _check(f"RAG \u201c{RAG_TEXT}\u201d (Lewis et al., 2020).", index)
    assert rows[0].verdict == "verbatim" and rows[0].source == "rag.pdf" and not rows[0].misattributed
    (res,) = rows[0].resolutions
    assert res["status"] == "matched" and res["source"] == "rag.pdf"
    assert res["text"] == "(Lewis et al., 2020) \u2192 matched to rag.pdf (first author Lewis + year 2020)"
    assert "matched to rag.pdf" in rows[0].to_dict()["resolution"]


def test_one_year_off_is_tolerated_and_noted(index):
    (res,) = _check(f"\u201c{RAG_TEXT}\u201d (Lewis et al., 2021).", index)[0].resolutions
    assert res["status"] == "matched" and res["source"] == "rag.pdf" and "one off" in res["year_note"]
    (res,) = _check(f"\u201c{RAG_TEXT}\u201d (Lewis et al., 2023).", index)[0].resolutions
    assert res["status"] == "not_in_collection"


def test_several_markers_and_forms(index):
    rows = _check(f"Both \u201c{DPR_TEXT}\u201d (Karpukhin et al. 2020; Lewis et al. 2020).", index)
    assert [r["source"] for r in rows[0].resolutions] == ["dpr.pdf", "rag.pdf"]
    rows = _check(f"Lewis and Perez (2020) say \u201c{RAG_TEXT}\u201d.", index)
    assert rows[0].resolutions[0]["source"] == "rag.pdf"


def test_diacritics_are_folded():
    citation = parse_citations("as shown (Ruckle et al., 2021)")[0]
    assert resolve_citation(citation, DOCUMENTS).source == "beir.pdf"


def test_not_in_collection_is_never_misattributed(index):
    rows = _check(f"\u201c{RAG_TEXT}\u201d (Smith et al., 2019).", index)
    (res,) = rows[0].resolutions
    assert res["status"] == "not_in_collection" and "not in collection" in res["text"]
    assert rows[0].verdict == "verbatim" and rows[0].misattributed is False


def test_misattributed_only_when_the_cited_work_is_in_the_collection(index):
    rows = _check(f"\u201c{RAG_TEXT}\u201d (Karpukhin et al., 2020).", index)
    assert rows[0].resolutions[0]["source"] == "dpr.pdf" and rows[0].misattributed is True


def test_ambiguous_names_the_candidates():
    docs = [{"source": "a.pdf", "authors": ["Kyle Lo"], "year": 2020}, {"source": "b.pdf", "authors": ["Kyle Lo"],
                                                                       "year": 2020}]
    res = resolve_citation(Citation("(Lo et al., 2020)", surnames=["Lo"], year=2020), docs)
    assert res.status == "ambiguous" and res.candidates == ["a.pdf", "b.pdf"] and "ambiguous" in res.text()
    # the exact year wins over one off: not ambiguous
    docs[1]["year"] = 2021
    assert resolve_citation(Citation("(Lo, 2020)", surnames=["Lo"], year=2020), docs).source == "a.pdf"


def test_numeric_marker_without_an_entry_is_unresolved(index):
    rows = _check("Cats solved quantum gravity long ago [9].", index)
    assert rows[0].resolutions[0]["status"] == "unresolved"


BIB = r"""
@inproceedings{lewis2020rag,
  author = {Lewis, Patrick and Perez, Ethan},
  title = {Retrieval-Augmented Generation for Knowledge-Intensive {NLP} Tasks},
  booktitle = {NeurIPS}, year = {2020}, eprint = {2005.11401}, archivePrefix = {arXiv}
}
@inproceedings{dpr,
  author = {Karpukhin, Vladimir and O{\u{g}}uz, Barlas},
  title = {Dense Passage Retrieval for Open-Domain Question Answering},
  booktitle = {EMNLP}, year = {2020}, doi = {10.18653/v1/2020.emnlp-main.550}
}
@article{gone, author = {Nobody, Ann}, title = {Not Here}, year = {1999}}
"""


def test_latex_cite_keys_through_the_bib_beside_the_tex(tmp_path, index):
    (tmp_path / "refs.bib").write_text(BIB, encoding="utf-8")
    tex = tmp_path / "draft.tex"
    tex.write_text("\\documentclass{article}\\begin{document}\n"
                   f"RAG \u201c{RAG_TEXT}\u201d \\citep{{lewis2020rag}}.\n\n"
                   f"DPR says \u201c{DPR_TEXT}\u201d \\textcite[p.~3]{{dpr, gone}}.\n\n"
                   f"Again \u201c{DPR_TEXT}\u201d \\parencite{{dpr}} \\autocite{{gone}}.\n"
                   "\\bibliography{refs}\n\\end{document}\n", encoding="utf-8")
    rows = _check(None, index, source=tex)
    first = rows[0].resolutions[0]
    assert first["source"] == "rag.pdf" and first["why"] == "arXiv id 2005.11401 of refs.bib entry lewis2020rag"
    dpr, gone = rows[1].resolutions
    assert dpr["source"] == "dpr.pdf" and dpr["why"].startswith("DOI 10.18653/v1/2020.emnlp-main.550")
    assert gone["status"] == "not_in_collection"
    assert not any(r.misattributed for r in rows)


def test_a_missing_bib_is_a_note_and_bib_option_wins(tmp_path, index):
    tex = tmp_path / "draft.tex"
    tex.write_text(f"\\begin{{document}}\u201c{RAG_TEXT}\u201d \\cite{{lewis2020rag}}.\n"
                   "\\addbibresource{nowhere.bib}\\end{document}", encoding="utf-8")
    manuscript = read_manuscript(tex)
    assert any("nowhere.bib" in note for note in manuscript.notes)
    (tmp_path / "other.bib").write_text(BIB, encoding="utf-8")
    rows = _check(None, index, source=tex, bib=tmp_path / "other.bib")
    assert rows[0].resolutions[0]["why"].startswith("arXiv id")


def test_pandoc_markdown_keys_with_a_bib(tmp_path, index):
    (tmp_path / "refs.bib").write_text(BIB, encoding="utf-8")
    md = tmp_path / "draft.md"
    md.write_text(f"RAG says \u201c{RAG_TEXT}\u201d [@lewis2020rag; @dpr, p. 3].\n", encoding="utf-8")
    rows = _check(None, index, source=md, bib=tmp_path / "refs.bib")
    assert [r["source"] for r in rows[0].resolutions] == ["rag.pdf", "dpr.pdf"]
    assert rows[0].cited == "[@lewis2020rag]; [@dpr]"


def test_csl_json_and_ris_resolve_keys_too(tmp_path, index):
    csl = [{"id": "lewis2020rag", "type": "paper-conference", "title": "Retrieval-Augmented Generation",
            "author": [{"family": "Lewis", "given": "Patrick"}], "issued": {"date-parts": [[2020]]},
            "URL": "https://arxiv.org/abs/2005.11401"}]
    (tmp_path / "refs.json").write_text(json.dumps(csl), encoding="utf-8")
    (tmp_path / "refs.ris").write_text("TY  - CONF\nID  - dpr\nAU  - Karpukhin, Vladimir\nTI  - Dense Passage "
                                       "Retrieval\nPY  - 2020\nDO  - 10.18653/v1/2020.emnlp-main.550\nER  - \n",
                                       encoding="utf-8")
    md = tmp_path / "draft.md"
    md.write_text(f"\u201c{RAG_TEXT}\u201d [@lewis2020rag].\n\n\u201c{DPR_TEXT}\u201d [@dpr].\n", encoding="utf-8")
    rows = _check(None, index, source=md, bib=tmp_path / "refs.json")
    assert rows[0].resolutions[0]["source"] == "rag.pdf" and "refs.json" in rows[0].resolutions[0]["why"]
    rows = _check(None, index, source=md, bib=tmp_path / "refs.ris")
    assert rows[1].resolutions[0]["source"] == "dpr.pdf" and rows[1].resolutions[0]["why"].startswith("DOI")
