"""``rag-core meta show|import|set|export`` and ``rag-core check --bib`` (issue 18)."""

from __future__ import annotations

import json

import pytest

from rag_core import Library
from rag_core.cli import main
from tests.support import SMALL_PDFS

DPR = "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"
BIB = r"""@inproceedings{karpukhin2020dense,
  author = {Karpukhin, Vladimir and O{\u{g}}uz, Barlas and others},
  title = {Dense Passage Retrieval for Open-Domain Question Answering}, year = {2020},
  doi = {10.18653/v1/2020.emnlp-main.550}}
@article{absent, author = {Nobody, Ann}, title = {Not Here}, year = {1999}}
"""


@pytest.fixture()
def data_dir(tmp_path, pdf_dir):
    Library(tmp_path / "data").add_pdfs("papers", [pdf_dir / n for n in SMALL_PDFS], compute_embeddings=False)
    return str(tmp_path / "data")


def test_meta_import_set_show_export(data_dir, tmp_path, capsys):
    bib = tmp_path / "refs.bib"
    bib.write_text(BIB, encoding="utf-8")
    assert main(["--data-dir", data_dir, "meta", "import", "papers", str(bib)]) == 0
    out = capsys.readouterr().out
    assert "2 BibTeX record(s) from refs.bib: 1 matched." in out and f"{DPR} <- karpukhin2020dense" in out
    assert "1 record(s) match no document" in out and "absent: Nobody 1999, Not Here" in out
    assert "1 document(s) match no record" in out
    assert main(["--data-dir", data_dir, "meta", "set", "papers", DPR, "--year", "2021"]) == 0
    assert capsys.readouterr().out.strip() == f"{DPR}: year = 2021 (edited)"
    assert main(["--data-dir", data_dir, "meta", "show", "papers", "--json"]) == 0
    shown = {d["source"]: d for d in json.loads(capsys.readouterr().out)}
    assert shown[DPR]["year"] == 2021 and shown[DPR]["origin"]["year"] == "edited"
    assert shown[DPR]["origin"]["doi"] == "import"
    out_bib = tmp_path / "out.bib"
    assert main(["--data-dir", data_dir, "meta", "export", "papers", str(out_bib)]) == 0
    assert "doi = {10.18653/v1/2020.emnlp-main.550}" in out_bib.read_text(encoding="utf-8")
    assert main(["--data-dir", data_dir, "meta", "export", "papers", str(tmp_path / "out.json")]) == 0
    assert {i["id"] for i in json.loads((tmp_path / "out.json").read_text())} >= {"karpukhin2020dense"}


def test_meta_errors_are_one_line(data_dir, tmp_path, capsys):
    assert main(["--data-dir", data_dir, "meta"]) == 2
    assert main(["--data-dir", data_dir, "meta", "set", "papers", DPR]) == 2
    assert main(["--data-dir", data_dir, "meta", "set", "papers", "nothing.pdf", "--year", "2020"]) == 1
    assert main(["--data-dir", data_dir, "meta", "set", "papers", DPR, "--year", "soon"]) == 1
    assert main(["--data-dir", data_dir, "meta", "import", "papers", str(tmp_path / "missing.bib")]) == 1
    assert main(["--data-dir", data_dir, "meta", "import", "nope", str(tmp_path / "missing.bib")]) == 1
    err = capsys.readouterr().err
    assert "No document 'nothing.pdf'" in err and "not a valid year" in err and "no such file" in err
    assert all(line.startswith("rag-core: error: ") for line in err.strip().splitlines())


def test_check_with_a_bib_for_pandoc_keys(data_dir, tmp_path, capsys):
    bib = tmp_path / "refs.bib"
    bib.write_text(BIB, encoding="utf-8")
    draft = tmp_path / "draft.md"
    draft.write_text('DPR "outperforms a strong Lucene-BM25 system greatly by 9%-19% absolute" '
                     "[@karpukhin2020dense; @absent].\n", encoding="utf-8")
    assert main(["--data-dir", data_dir, "check", "papers", str(draft), "--bib", str(bib), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in row["resolutions"]] == ["matched", "not_in_collection"]
    assert row["resolutions"][0]["source"] == DPR and row["misattributed"] is False


def test_meta_show_and_import_json_carry_no_control_characters(data_dir, tmp_path, capsys):
    """Issue 27 row 22: a record kept by an older version with C1 controls and a bidi override."""
    from rag_core.collections.metadata import _commit

    library = Library(data_dir)
    doc = next(d for d in library.documents("papers") if d["source"] == DPR)
    _commit(library, "papers", lambda kept: {**kept, doc["sha256"]: {
        "fields": {"title": "BERT \u009b2J\u009d0;x\u0007 \u202eevil"}, "origin": {"title": "edited"}}})
    for args in (["meta", "show", "papers", "--json"], ["meta", "show", "papers"]):
        assert main(["--data-dir", data_dir, *args]) == 0
        out = capsys.readouterr().out
        assert not any(0x80 <= ord(c) <= 0x9f or c in "\u202e\x07\x1b" for c in out), args
    assert main(["--data-dir", data_dir, "meta", "show", "papers", "--json"]) == 0
    titles = {d["source"]: d["title"] for d in json.loads(capsys.readouterr().out)}
    assert titles[DPR] == "BERT \u009b2J\u009d0;x\u0007 \u202eevil"  # escaped in the JSON: the data exactly
    bib = tmp_path / "c.bib"
    bib.write_text("@article{k\u202e, title={Dense Passage Retrieval for Open-Domain Question Answering}}\n"
                   "@article{k\u202e, title={Again}}\n", encoding="utf-8")
    assert main(["--data-dir", data_dir, "meta", "import", "papers", str(bib), "--json"]) == 0
    out = capsys.readouterr().out
    assert "\u202e" not in out and "the key 'k' is used twice" in out


def test_a_doi_set_by_hand_is_used_for_matching(data_dir, tmp_path, capsys):
    """Issue 27 row 9: the DOI a person corrected counts like the one the PDF printed."""
    assert main(["--data-dir", data_dir, "meta", "set", "papers", DPR, "--doi", "10.5555/shared.1"]) == 0
    bib = tmp_path / "d.bib"
    bib.write_text("@article{d, title={Something else}, doi={10.5555/shared.1}}", encoding="utf-8")
    capsys.readouterr()
    assert main(["--data-dir", data_dir, "meta", "import", "papers", str(bib)]) == 0
    assert f"{DPR} <- d: ? n.d., Something else (by DOI)" in capsys.readouterr().out
