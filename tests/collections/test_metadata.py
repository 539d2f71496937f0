"""Issue 18: records imported (BibTeX, CSL-JSON, RIS, a Zotero data folder), corrected by hand,
kept as committed side data on both stores (surviving re-adding the same file), exported; a Word
manuscript's Zotero field codes resolve its citations."""

from __future__ import annotations

import json
import sqlite3

import pytest

from rag_core import Library
from rag_core.citations.manuscript import check_statements, read_manuscript
from rag_core.errors import InputFileError
from tests.records_fixtures import make_field_code_docx, make_zotero_folder, zotero_field_code
from tests.support import SMALL_PDFS

DPR, ULTRA = "ml_dpr_karpukhin2020_arxiv2004.04906.pdf", "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"
RAG = "ml_rag_lewis2020_arxiv2005.11401.pdf"
DPR_QUOTE = "outperforms a strong Lucene-BM25 system greatly by 9%-19% absolute"

BIB = r"""
@inproceedings{karpukhin2020dense,
  author = {Karpukhin, Vladimir and O{\u{g}}uz, Barlas and Min, Sewon and others},
  title = {Dense Passage Retrieval for Open-Domain Question Answering},
  booktitle = {Proceedings of EMNLP}, year = {2020}, doi = {10.18653/v1/2020.emnlp-main.550},
  eprint = {2004.04906}, archivePrefix = {arXiv}
}
@article{nobody1999, author = {Nobody, Ann}, title = {Nothing Here}, year = {1999}}
@broken{
"""
CSL = [{"id": "ultra", "type": "article-journal", "title": "Ultra light bosonic dark matter and CMB",
        "author": [{"family": "Rodríguez-Montoya", "given": "Iván"}, {"family": "Matos", "given": "Tonatiuh"}],
        "issued": {"date-parts": [[2010]]}, "container-title": "Physical Review D",
        "DOI": "https://doi.org/10.1103/PhysRevD.81.067301"}]
RIS = ("TY  - JOUR\nAU  - Karpukhin, Vladimir\nTI  - Dense passage retrieval for open domain question answering\n"
       "PY  - 2020\nER  - \nTY  - JOUR\nTI  - Something else entirely\nPY  - 2001\nER  - \n")


@pytest.fixture()
def library(store_location, pdf_dir):
    lib = Library(store=store_location)
    report = lib.add_pdfs("papers", [pdf_dir / name for name in SMALL_PDFS], compute_embeddings=False)
    assert [f.status for f in report.files] == ["ok", "ok"]
    yield lib
    lib.store.close()


def _doc(lib, source):
    return next(d for d in lib.documents("papers") if d["source"] == source)


def test_bibtex_import_matches_by_identifier_and_reports_both_ways(library, tmp_path):
    (tmp_path / "refs.bib").write_text(BIB, encoding="utf-8")
    report = library.import_records("papers", tmp_path / "refs.bib")
    assert report.kind == "BibTeX" and report.records == 2 and any("could not be read" in n for n in report.notes)
    assert report.matched == [(DPR, "karpukhin2020dense: Karpukhin 2020, Dense Passage Retrieval for Open-Domain "
                                    "Question Answering", "DOI")] or report.matched[0][2] in ("DOI", "arXiv id")
    assert report.unmatched_records == ["nobody1999: Nobody 1999, Nothing Here"]
    assert report.unmatched_documents == [ULTRA]
    dpr = _doc(library, DPR)
    assert dpr["doi"] == "10.18653/v1/2020.emnlp-main.550" and dpr["origin"]["doi"] == "import"
    assert dpr["venue"] == "Proceedings of EMNLP" and dpr["key"] == "karpukhin2020dense"
    assert len(dpr["authors"]) == 8 and dpr["origin"]["authors"] == "pdf"  # "and others": the PDF's 8 kept


def test_csl_json_and_ris_imports(library, tmp_path):
    (tmp_path / "refs.json").write_text(json.dumps(CSL), encoding="utf-8")
    report = library.import_records("papers", tmp_path / "refs.json")
    assert [(m[0], m[2]) for m in report.matched] == [(ULTRA, "title")]
    ultra = _doc(library, ULTRA)
    assert ultra["year"] == 2010 and ultra["doi"] == "10.1103/physrevd.81.067301"
    assert ultra["authors"][0] == "Iván Rodríguez-Montoya" and ultra["origin"]["year"] == "import"
    (tmp_path / "refs.ris").write_text(RIS, encoding="utf-8")
    report = library.import_records("papers", tmp_path / "refs.ris")
    assert [(m[0], m[2]) for m in report.matched] == [(DPR, "title")]  # folded: case and hyphens
    assert report.unmatched_records == ["-: ? 2001, Something else entirely"]


def test_a_hand_edit_is_committed_wins_over_imports_and_survives_re_adding(library, pdf_dir, tmp_path):
    library.set_record("papers", DPR, year="2021", authors="Vladimir Karpukhin; Barlas Oğuz")
    assert _doc(library, DPR)["year"] == 2021 and _doc(library, DPR)["origin"]["year"] == "edited"
    (tmp_path / "refs.bib").write_text(BIB, encoding="utf-8")
    library.import_records("papers", tmp_path / "refs.bib")
    assert _doc(library, DPR)["year"] == 2021  # the import does not undo a person's correction
    library.remove_documents("papers", [DPR])
    assert all(d["source"] != DPR for d in library.documents("papers"))
    library.add_pdfs("papers", [pdf_dir / DPR], compute_embeddings=False)
    dpr = _doc(library, DPR)
    assert dpr["year"] == 2021 and dpr["authors"] == ["Vladimir Karpukhin", "Barlas Oğuz"]
    assert library.check("papers").ok
    with pytest.raises(ValueError, match="not a valid doi"):
        library.set_record("papers", DPR, doi="banana")
    with pytest.raises(ValueError, match="No document"):
        library.set_record("papers", "nothing.pdf", year="2020")


def test_export_bib_and_csl_round_trip(library):
    library.set_record("papers", DPR, key="dpr2020")
    bib = library.export_records("papers", "refs.bib").decode()
    assert "@article{dpr2020," in bib and "Karpukhin, Vladimir" in bib and "eprint = {2004.04906}" in bib
    from rag_core.records.bibtex import parse_bibtex

    records, failed = parse_bibtex(bib)
    assert failed == 0 and {r["key"] for r in records} == {"dpr2020", "montoya2009"}
    items = json.loads(library.export_records("papers", "refs.json"))
    assert {i["id"] for i in items} == {"dpr2020", "document2"} or len(items) == 2
    with pytest.raises(InputFileError):
        library.export_records("papers", "refs.txt")


def test_records_files_are_read_safely(tmp_path):
    import os

    from rag_core.records.reading import read_records

    fifo = tmp_path / "refs.bib"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match=r"not a regular file|FIFO|cannot"):
        read_records(fifo)
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputFileError, match="not CSL-JSON"):
        read_records(tmp_path / "bad.json")
    (tmp_path / "x.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(InputFileError, match="not a records file"):
        read_records(tmp_path / "x.txt")


def _zotero(tmp_path, pdf_dir):
    return make_zotero_folder(tmp_path / "Zotero", [
        {"type": "conferencePaper", "collection": "Thesis", "pdf": pdf_dir / DPR,
         "fields": {"title": "Dense Passage Retrieval for Open-Domain Question Answering", "date": "2020-11-00 2020",
                    "proceedingsTitle": "EMNLP 2020", "DOI": "10.18653/v1/2020.emnlp-main.550"},
         "creators": [("Vladimir", "Karpukhin"), ("Barlas", "Oğuz")], "better_bibtex": "karpukhin2020dense"},
        {"type": "preprint", "collection": "Thesis", "pdf": pdf_dir / RAG,
         "fields": {"title": "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks",
                    "date": "2020-05-22 2020", "archiveID": "arXiv:2005.11401",
                    "extra": "Some note\nCitation Key: lewis2020rag"},
         "creators": [("Patrick", "Lewis"), ("Ethan", "Perez")]},
        {"type": "journalArticle", "fields": {"title": "Elsewhere", "date": "2001"}, "creators": [("A", "B")]},
        {"type": "journalArticle", "deleted": True, "collection": "Thesis", "fields": {"title": "In the bin"}},
    ])


def test_a_zotero_folder_is_read_only_and_immutable(tmp_path, pdf_dir):
    from rag_core.records.zotero import read_zotero, zotero_collections

    folder = _zotero(tmp_path, pdf_dir)
    before = (folder / "zotero.sqlite").read_bytes()
    keys_before = (folder / "better-bibtex.sqlite").read_bytes()
    locker = sqlite3.connect(folder / "zotero.sqlite")  # a running Zotero holds an exclusive lock
    locker.execute("PRAGMA locking_mode=EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    try:
        found = read_zotero(folder, "Thesis")
        assert zotero_collections(folder) == ["Thesis"]
    finally:
        locker.rollback()
        locker.close()
    assert (folder / "zotero.sqlite").read_bytes() == before
    assert (folder / "better-bibtex.sqlite").read_bytes() == keys_before
    assert not (folder / "zotero.sqlite-journal").exists() and not (folder / "zotero.sqlite-wal").exists()
    assert [r["title"][:20] for r in found.records] == ["Dense Passage Retrie", "Retrieval-Augmented "]
    assert found.records[1]["arxiv_id"] == "2005.11401" and found.records[0]["year"] == 2020
    assert sorted(p.name for p in found.pdfs.values()) == sorted([DPR, RAG])
    # the citation keys a LaTeX draft cites: Better BibTeX's database, a key pinned in Extra
    assert [r["key"] for r in found.records] == ["karpukhin2020dense", "lewis2020rag"]
    assert [r["key"] for r in read_zotero(folder).records] == ["karpukhin2020dense", "lewis2020rag", "ITEM0002"]
    with pytest.raises(InputFileError, match="no Zotero collection named"):
        read_zotero(folder, "Nope")


@pytest.mark.slow
def test_a_zotero_collection_is_imported_with_its_pdfs_in_one_go(tmp_path, pdf_dir):
    folder = _zotero(tmp_path, pdf_dir)
    library = Library(tmp_path / "data")
    report = library.import_records("thesis", folder, collection="Thesis", compute_embeddings=False)
    assert sorted(report.added) == sorted([DPR, RAG])
    assert sorted((m[0], m[2]) for m in report.matched) == [(DPR, "its PDF"), (RAG, "its PDF")]
    rag = _doc_of(library, "thesis", RAG)
    assert rag["origin"]["title"] == "import" and rag["authors"] == ["Patrick Lewis", "Ethan Perez"]


def _doc_of(lib, name, source):
    return next(d for d in lib.documents(name) if d["source"] == source)


def test_a_docx_with_zotero_field_codes_resolves_each_citation(library):
    dpr_item = {"type": "paper-conference", "title": "Dense Passage Retrieval for Open-Domain Question Answering",
                "author": [{"family": "Karpukhin", "given": "Vladimir"}], "issued": {"date-parts": [[2020]]},
                "DOI": "10.18653/v1/2020.emnlp-main.550"}
    ultra_item = {"type": "article-journal", "title": "Ultra light bosonic dark matter and CMB",
                  "author": [{"family": "Rodriguez-Montoya", "given": "Ivan"}], "issued": {"date-parts": [[2009]]},
                  "URL": "https://arxiv.org/abs/0908.0054"}
    library.set_record("papers", DPR, doi="10.18653/v1/2020.emnlp-main.550")
    data = make_field_code_docx([
        [(f"Dense retrieval \u201c{DPR_QUOTE}\u201d ", None),
         ("(Karpukhin et al., 2020)", zotero_field_code([dpr_item], "(Karpukhin et al., 2020)"))],
        [("Dark matter may be an ultra light boson that imprints the acoustic peaks of the CMB ", None),
         ("[1]", zotero_field_code([ultra_item], "[1]", mendeley=True)), (".", None)],
    ])
    manuscript = read_manuscript(data, name="draft.docx")
    assert [r.via for r in manuscript.references] == ["Zotero field code", "Mendeley field code"]
    rows = check_statements(manuscript.statements(), library.load_index("papers"),
                            documents=library.documents("papers"), meaning=False)
    first, second = rows[0].resolutions[0], rows[1].resolutions[0]
    assert first["source"] == DPR and first["why"] == "DOI 10.18653/v1/2020.emnlp-main.550 of Zotero field code"
    assert second["source"] == ULTRA and second["why"] == "arXiv id 0908.0054 of Mendeley field code"
    assert rows[0].verdict in ("verbatim", "near_verbatim") and not rows[0].misattributed
