"""The README's examples, run as written: its command lines in a fresh data folder, its Python blocks.

The commands run from an empty folder that has ``../shared`` beside it, as a fresh clone has,
with ``RAG_CORE_DATA_DIR`` in a temporary folder. The ingest reads all 25 shared PDFs (minutes), the
three scans among them by OCR.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def readme_blocks(text: str) -> list[tuple[str, str, str]]:
    """``(section, language, code)`` of every fenced block, in order."""
    blocks = []
    for match in FENCE.finditer(text):
        headings = re.findall(r"^## (.+)$", text[: match.start()], re.M)
        blocks.append((headings[-1] if headings else "", match.group(1), match.group(2)))
    return blocks


@pytest.fixture(scope="module")
def readme(repo_root) -> str:
    return (repo_root / "README.md").read_text(encoding="utf-8")


def test_the_readme_test_commands_are_what_ci_runs(readme, repo_root):
    ci = (repo_root / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [code.strip() for section, lang, code in readme_blocks(readme) if section == "The two commands"]
    setup, full, quick = commands
    assert setup.startswith("bash scripts/setup.sh && ")
    assert "bash scripts/setup.sh" in ci and full in ci and ".venv/bin/ruff check ." in ci
    assert ci.index("bash scripts/setup.sh") < ci.index(".venv/bin/ruff check .") < ci.index(full)
    # the quick run deselects a marker that pytest knows
    assert quick == f'{full} -m "not slow"'
    assert '"slow: ' in (repo_root / "pyproject.toml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory, repo_root, pdf_dir):
    """An empty working folder with ``../shared`` beside it, a new data folder, and ``rag-core`` on PATH."""
    root = tmp_path_factory.mktemp("readme")
    (root / "shared").symlink_to(repo_root.parent / "shared", target_is_directory=True)
    work = root / "checkout"
    work.mkdir()
    bin_dir = root / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "rag-core"  # the console script, bound to the interpreter and checkout under test
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m rag_core "$@"\n')
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(repo_root),
        "RAG_CORE_DATA_DIR": str(root / "data"),
        "RAG_CORE_EVAL_CACHE": str(root / "eval-cache"),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    return work, env


def _check_output(line: str, out: str) -> str | None:
    """What is wrong with a command's output, or None."""
    args = shlex.split(line, comments=True)
    if args[1] == "search":
        if "--json" in args:
            if not json.loads(out)["results"]:
                return "no results"
        elif "No results." in out or not out.startswith(("#1", "Reranker:")):
            return "no results"
    if args[1] == "ingest":
        added = re.search(r"(\d+) of (\d+) files added", out)
        if not added or added[1] != added[2] or (args[3].endswith("pdfs/") and added[1] != "25"):
            return "not every PDF was added (the scans are read by OCR)"
    if args[1:3] == ["list", "papers"] and "ml_dpr_karpukhin2020_arxiv2004.04906.pdf" not in out:
        return "the DPR paper is not listed"
    if args[1] == "eval" and not re.search(r"^tfidf\s+0\.\d+", out, re.M):
        return "no tfidf row"
    return None


@pytest.mark.slow
def test_every_command_line_example_works_as_written(readme, fresh_clone):
    work, env = fresh_clone
    lines = [line.strip() for section, lang, code in readme_blocks(readme) if section == "Command line"
             for line in code.splitlines() if line.strip()]
    assert len(lines) >= 10 and all(line.startswith("rag-core ") for line in lines)
    failures = []
    for line in lines:
        result = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True,
                                timeout=1800)
        problem = f"exit {result.returncode}" if result.returncode != 0 else _check_output(line, result.stdout)
        if problem:
            failures.append(f"{line}\n  -> {problem}\n  stdout: {result.stdout[-400:]}\n"
                            f"  stderr: {result.stderr[-400:]}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_every_python_example_works_as_written(readme, fresh_clone, monkeypatch):
    work, env = fresh_clone
    monkeypatch.chdir(work)
    monkeypatch.setenv("RAG_CORE_DATA_DIR", env["RAG_CORE_DATA_DIR"] + "-python")
    blocks = [code for section, lang, code in readme_blocks(readme) if lang == "python"]
    assert len(blocks) == 2
    first: dict = {}
    exec(compile(blocks[0], "README.md (Python API)", "exec"), first)
    assert first["rows"][0]["source"] == "gao_wormhole.pdf"
    assert len(first["search_exact"]("negative average null energy", first["index"])) == 1
    assert first["search_exact"]("eﬃcient retrie-\nval", first["index"], mode="normalized")
    assert Path("my_index").is_dir()
    second: dict = {}
    exec(compile(blocks[1], "README.md (collections)", "exec"), second)
    assert [f.status for f in second["report"].files] == ["ok", "ok"]  # the scan read by OCR
    assert "ocr: 1 page" in second["report"].files[1].reason
    assert second["side_by_side"].tfidf and second["side_by_side"].hybrid
    assert second["verify_quote"]("When evaluated on a wide range of open-domain QA datasets",
                                  second["index"]).verdict == "verbatim"
