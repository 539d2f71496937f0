"""The rag-core command line, run as a user runs it."""

from __future__ import annotations

import json

import pytest

from rag_core.cli import main

DPR = "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"


@pytest.mark.parametrize(
    "argv",
    [[], ["search"], ["search", "c"], ["search", "c", "q", "--mode", "nope"], ["search", "c", "q", "--top", "0"],
     ["frobnicate"], ["ingest", "c"]],
)
def test_usage_errors_exit_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rag-core: error:")


def test_runtime_errors_exit_1(tmp_path, capsys):
    assert main(["--data-dir", str(tmp_path), "search", "missing", "q"]) == 1
    assert "No collection named 'missing'" in capsys.readouterr().err
    assert main(["--data-dir", str(tmp_path), "ingest", "../evil", "x.pdf"]) == 1
    assert "not allowed" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.slow  # four processes, each loading the bi-encoder
def test_search_modes_json_from_a_new_process(paper_library, run_cli):
    data = paper_library.root
    for mode in ("tfidf", "bm25", "dense", "hybrid"):
        result = run_cli("search", "papers", "dense passage retriever", "--mode", mode, "--top", "3", "--json",
                         data_dir=data)
        assert result.returncode == 0, result.stderr
        payload = json.loads(result.stdout)
        assert payload["mode"] == mode and len(payload["results"]) == 3
        for row in payload["results"]:
            assert {"rank", "source", "text", "score", "score_type", "cosine", "page_start"} <= set(row)
            assert row["page_start"] >= 1
        if mode == "hybrid":
            assert "reranker_detail" in payload
    result = run_cli("search", "papers", "Dense Passage Retrieval", "--mode", "exact", "--json", data_dir=data)
    hits = json.loads(result.stdout)["results"]
    assert hits and hits[0]["source"] == DPR and hits[0]["page"] == 1


def test_person_readable_output_and_list(paper_library, capsys):
    data = str(paper_library.root)
    assert main(["--data-dir", data, "list"]) == 0
    assert "papers" in capsys.readouterr().out
    assert main(["list", "papers", "--data-dir", data]) == 0
    assert DPR in capsys.readouterr().out
    assert main(["--data-dir", data, "search", "papers", "BM25", "--mode", "tfidf", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#1") and "cosine" in out and "p. " in out
    assert main(["--data-dir", data, "search", "papers", "(a+)+$", "--mode", "exact", "--regex"]) == 0
    assert main(["--data-dir", data, "search", "papers", "(a", "--mode", "exact", "--regex"]) == 1
    assert "regex" in capsys.readouterr().err.lower()


def test_ingest_report_remove_and_rename(tmp_path, pdf_dir, capsys):
    data = str(tmp_path)
    files = [str(pdf_dir / "awkward_truetype_font_no_unicode_mapping.pdf"),
             str(pdf_dir / "awkward_scanned_no_text_linn_brochure_2col.pdf"),
             str(pdf_dir / "awkward_apl2011_custom_font_encoding_2col.pdf")]
    assert main(["--data-dir", data, "ingest", "c", *files, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [f["status"] for f in report["files"]] == ["unreadable_text", "no_text", "ok"]
    assert main(["--data-dir", data, "rename", "c", "d"]) == 0
    assert main(["--data-dir", data, "remove", "d", "awkward_apl2011_custom_font_encoding_2col.pdf"]) == 0
    assert main(["--data-dir", data, "remove", "d"]) == 2  # deleting a collection needs --yes
    assert main(["--data-dir", data, "remove", "d", "--yes"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", data, "list"]) == 0
    assert "No collections" in capsys.readouterr().out
