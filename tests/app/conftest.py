"""Fixtures of the app tests: a data folder with one small collection of two real PDFs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PDFS = REPO.parent / "shared" / "data" / "pdfs"
SMALL_PDFS = ("ml_bert_devlin2018_arxiv1810.04805.pdf", "ml_dpr_karpukhin2020_arxiv2004.04906.pdf")
COLLECTION = "two papers"


def small_pdfs() -> list[Path]:
    paths = [PDFS / name for name in SMALL_PDFS]
    if not all(p.is_file() for p in paths):
        pytest.skip(f"the sample PDFs {', '.join(SMALL_PDFS)} are not in {PDFS}")
    return paths


def quote_from(pdf: Path, page: int = 2) -> str:
    """A real line of text (at least 40 characters, no line-end hyphen) from one page of ``pdf``."""
    from rag_core.pdf import extract_pdf

    extraction = extract_pdf(pdf)
    text = extraction.pages[page - 1].text
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= 40 and not line.endswith("-") and re.fullmatch(r"[A-Za-z0-9 ,.;:()']+", line):
            return line
    raise AssertionError(f"no usable line on page {page} of {pdf.name}")


@pytest.fixture(scope="session")
def built_data_dir(tmp_path_factory) -> Path:
    """A data folder holding collection ``two papers`` (built once per test session)."""
    from rag_core.library import Library

    paths = small_pdfs()
    root = tmp_path_factory.mktemp("app-data")
    report = Library(root).add_pdfs(COLLECTION, paths)
    assert [f.status for f in report.files] == ["ok", "ok"], report.to_dict()
    return root


@pytest.fixture(scope="session")
def real_quote() -> str:
    return quote_from(small_pdfs()[0])
