"""The rag-core command line, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rag_core.cli import main
from tests.support import REPO

DPR = "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"


@pytest.mark.parametrize(
    "argv",
    [[], ["search"], ["search", "c"], ["search", "c", "q", "--mode", "nope"], ["search", "c", "q", "--top", "0"],
     ["frobnicate"], ["ingest", "c"],
     # options of one mode given with another are refused, not silently ignored
     ["search", "c", "q", "--regex"], ["search", "c", "q", "--mode", "tfidf", "--normalized"],
     ["search", "c", "q", "--mode", "exact", "--regex", "--normalized"], ["search", "c", "q", "--context", "20"],
     ["search", "c", "q", "--mode", "exact", "--literal", "--regex"], ["search", "c", "q", "--literal"],
     ["search", "c", "q", "--mode", "bm25", "--pool", "5"],
     ["search", "c", "q", "--mode", "dense", "--cross-encoder", "x"],
     ["search", "c", "q", "--pool", "0"], ["search", "c", "q", "--mode", "exact", "--context", "-1"],
     # an empty query, or one that is not valid text, before the collection is looked up
     ["search", "c", ""], ["search", "c", "  \n"], ["search", "c", "x" * 10_001],
     ["eval", "nowhere", "--methods", "foo"], ["eval", "nowhere", "--methods", "tfidf,nope"],
     ["eval", "nowhere", "--methods", ","], ["eval", "nowhere", "--methods", "tfidf", "--cross-encoder", "x"],
     ["ingest", "c", "no/such/file.pdf"]],
)
def test_usage_errors_exit_2_with_one_line(argv, capsys, data_dir):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rag-core: error:")
    assert not data_dir.exists()  # nothing was created or loaded


@pytest.mark.parametrize("mode", ["tfidf", "bm25", "dense", "hybrid", "exact"])
def test_query_that_is_not_valid_text_is_one_line_in_every_mode(mode, capsys, data_dir):
    # `rag-core search c $'\xff'`: Python hands the undecodable byte over as a lone surrogate
    assert main(["search", "c", "caf\udce9", "--mode", mode]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not valid text" in err[0]


def test_undecodable_bytes_on_a_real_command_line(run_cli, tmp_path):
    result = run_cli("search", "papers", b"\xff\xfe wormhole", "--mode", "dense", data_dir=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "not valid text" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_ingest_names_what_it_skips_and_a_missing_path_as_given(tmp_path, capsys):
    import pypdf

    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=200, height=200)
    with open(folder / "sub" / "blank.pdf", "wb") as handle:
        writer.write(handle)
    (folder / "empty.PDF").write_bytes(b"")
    for name in ("notes.txt", "data.csv", "sub/readme.md"):
        (folder / name).write_text("not a pdf")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", "c", str(folder), "--json"]) == 1  # nothing usable
    out, err = capsys.readouterr()
    statuses = {f["source"]: f["status"] for f in json.loads(out)["files"]}
    assert statuses == {"empty.PDF": "empty", "blank.pdf": "no_text"}
    assert err.strip().startswith("rag-core: skipped 3 file(s) in the folder(s): ")
    assert err.count("(not a .pdf file)") == 3
    for name in ("notes.txt", "data.csv", "readme.md"):
        assert name in err
    missing = tmp_path / "typo" / "paper.pdf"
    assert main(["--data-dir", data, "ingest", "d", str(folder / "sub" / "blank.pdf"), str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "nothing was ingested" in err
    assert main(["--data-dir", data, "list", "--json"]) == 0
    assert "d" not in {c["name"] for c in json.loads(capsys.readouterr().out)}


def test_runtime_errors_exit_1(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    assert main(["--data-dir", str(data), "search", "missing", "q"]) == 1
    assert "No collection named 'missing'" in capsys.readouterr().err
    (tmp_path / "x.pdf").write_bytes(b"%PDF-1.4")
    assert main(["--data-dir", str(data), "ingest", "../evil", str(tmp_path / "x.pdf")]) == 1
    assert "not allowed" in capsys.readouterr().err
    assert not any(data.iterdir())


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
    assert main(["--data-dir", data, "ingest", "c", *files, "--json", "--ocr", "off"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [f["status"] for f in report["files"]] == ["unreadable_text", "no_text", "ok"]
    assert main(["--data-dir", data, "rename", "c", "d"]) == 0
    assert main(["--data-dir", data, "remove", "d", "awkward_apl2011_custom_font_encoding_2col.pdf"]) == 0
    assert main(["--data-dir", data, "remove", "d"]) == 2  # deleting a collection needs --yes
    assert main(["--data-dir", data, "remove", "d", "--yes"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", data, "list"]) == 0
    assert "No collections" in capsys.readouterr().out


def test_lexical_and_exact_searches_import_no_model_and_no_fitting_library(paper_library):
    """`search --mode exact|tfidf|bm25` read the stored index only: no torch, ONNX Runtime,
    scikit-learn, SciPy or bm25s (importing scikit-learn alone was 1.5 s of a 1.7 s search)."""
    import subprocess
    import sys

    script = ("import sys; from rag_core.cli import main\n"
              "for mode in ('exact', 'tfidf', 'bm25'):\n"
              "    assert main(['--data-dir', sys.argv[1], 'search', 'papers', 'dense passage retrieval',"
              " '--mode', mode]) == 0\n"
              "heavy = ('torch', 'onnxruntime', 'sklearn', 'scipy.stats', 'scipy.sparse', 'bm25s', 'transformers')\n"
              "print(sorted(m for m in heavy if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script, str(paper_library.root)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ml_dpr_karpukhin2020" in out.stdout  # the searches answered
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_quick_commands_import_no_heavy_library(tmp_path, pdf_dir):
    """`--help`, `list` and `models` answer without importing torch or scikit-learn (seconds each)."""
    import subprocess
    import sys

    from rag_core.collections.library import Library

    Library(tmp_path).add_pdfs("c", [pdf_dir / "awkward_apl2011_custom_font_encoding_2col.pdf"],
                               compute_embeddings=False)
    script = ("import sys; from rag_core.cli import main\n"
              "for argv in (['list'], ['list', 'c'], ['models']): main(['--data-dir', sys.argv[1], *argv])\n"
              "heavy = ('torch', 'sklearn', 'scipy', 'transformers', 'huggingface_hub')\n"
              "print(sorted(m for m in heavy if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_exact_search_folds_by_default_and_reports_every_occurrence(tmp_path, capsys):
    """What `rag-core search --mode exact` prints can be searched again: a word hyphenated across a line end
    is found folded (the default, as in the app), not with --literal; a phrase twice in a passage is two hits."""
    from fpdf import FPDF

    from rag_core.collections.library import Library
    from rag_core.retrieval.exact import search_exact

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    for line in ("We prove that the estimator is cor-", "rect under mild conditions, and that the bound is tight.",
                 "In the second setting the estimator is correct again, and the estimator is correct a third time."):
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    lib = Library(tmp_path)
    report = lib.add_pdfs("c", [("proof.pdf", bytes(pdf.output()))], compute_embeddings=False)
    assert report.files[0].ok, report.to_dict()
    data = str(tmp_path)

    def hits(query: str, *flags: str) -> list[dict]:
        assert main(["--data-dir", data, "search", "c", query, "--mode", "exact", "--json", "--top", "10",
                     *flags]) == 0
        return json.loads(capsys.readouterr().out)["results"]

    copied = "the estimator is cor-\nrect"  # as a PDF's line end (and a printed snippet) has it
    folded = hits(copied)
    assert len(folded) == 3 and folded[0]["mode"] == "normalized", [h["match"] for h in folded]
    assert len({h["chunk_index"] for h in folded}) == 1, "three occurrences in one passage, three hits"
    assert hits(copied, "--literal") == [], "--literal: the raw text, nothing folded"
    literal = hits("estimator is correct", "--literal")
    assert len(literal) >= 2 and all(h["mode"] == "literal" for h in literal)
    assert len(hits(copied, "--normalized")) == 3
    index = lib.load_index("c")
    assert len(search_exact("estimator is correct", index, max_hits=10)) == 1, "the contract: one hit per chunk"


def test_ingest_reads_scans_by_ocr_and_checks_the_ocr_options(tmp_path, pdf_dir, capsys, monkeypatch):
    from rag_core.pdf.ocr import find_tesseract

    data = str(tmp_path)
    scan = str(pdf_dir / "awkward_truetype_font_no_unicode_mapping.pdf")
    if find_tesseract() is not None:
        assert main(["--data-dir", data, "ingest", "c", scan, "--no-embed"]) == 0
        out = capsys.readouterr().out
        assert "1 page, 1 chunk; OCR: 1 page, mean confidence" in out
        assert main(["--data-dir", data, "search", "c", "Phone", "--mode", "exact"]) == 0
        assert "p. 1 (OCR text)" in capsys.readouterr().out
        assert main(["--data-dir", data, "ingest", "c", scan, "--ocr-lang", "eng+xyz"]) == 2
        assert "tesseract-ocr-xyz" in capsys.readouterr().err
    monkeypatch.setenv("RAG_CORE_TESSERACT", str(tmp_path / "no-tesseract"))
    assert main(["--data-dir", data, "ingest", "d", scan, "--ocr", "force"]) == 2
    assert "apt-get install tesseract-ocr" in capsys.readouterr().err
    assert main(["--data-dir", data, "ingest", "d", scan, "--ocr", "sometimes"]) == 2
    capsys.readouterr()
    assert main(["--data-dir", data, "ingest", "d", scan, "--json"]) == 1  # nothing could be added
    report = json.loads(capsys.readouterr().out)
    assert report["files"][0]["status"] == "unreadable_text"
    assert "apt-get install tesseract-ocr tesseract-ocr-eng" in report["files"][0]["reason"]


BROKEN_PIPE = """
import sys
from rag_core.cli import check, main
def endless(args):
    while True:
        print("#1   related        0.58  a line of the table")
check.cmd_check = endless
sys.exit(main(["check", "papers", "draft.md"]))
"""


def test_output_cut_short_by_its_reader_is_no_error(tmp_path):
    """`rag-core check ... | head -n 1` printed "rag-core: error: [Errno 32] Broken pipe" (issue 27's doors)."""
    child = subprocess.Popen([sys.executable, "-c", BROKEN_PIPE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert child.stdout.readline().startswith(b"#1")
    child.stdout.close()  # the reader goes, as head does after its line
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141
    assert err == "", err


def test_search_and_check_leave_back_matter_out_unless_asked(tmp_path, pdf_dir, capsys):
    """`search` and `check` look in no reference list by default; --include-back-matter brings it back."""
    from rag_core.collections.library import Library

    name = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"
    lib = Library(tmp_path)
    lib.add_pdfs("c", [pdf_dir / name], compute_embeddings=False, ocr="off")
    data = str(tmp_path)

    def results(*flags: str) -> list[dict]:
        assert main(["--data-dir", data, "search", "c", "Phys. Rev. Lett. Gruzinov", "--mode", "tfidf", "--json",
                     "--top", "20", *flags]) == 0
        return json.loads(capsys.readouterr().out)["results"]

    assert results() and not any(r.get("back_matter") for r in results())
    assert any(r.get("back_matter") == "references" for r in results("--include-back-matter"))

    draft = tmp_path / "draft.txt"
    draft.write_text("Cosmology texts are listed as \u201cModern Cosmology (Academic Press, 2003)\u201d "
                     "in the paper [1].\n\n"
                     "References\n[1] W. Hu. 2000. Fuzzy cold dark matter.\n", encoding="utf-8")

    def verdicts(*flags: str) -> list[str]:
        main(["--data-dir", data, "check", "c", str(draft), "--json", *flags])
        return [row["verdict"] for row in json.loads(capsys.readouterr().out)]

    assert "verbatim" not in verdicts()
    assert verdicts("--include-back-matter") == ["verbatim"]
