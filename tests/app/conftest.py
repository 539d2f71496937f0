"""Fixtures of the app tests: a data folder with one small collection of two real PDFs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.support import COLLECTION, quote_from, small_pdfs


@pytest.fixture(scope="session")
def built_data_dir(tmp_path_factory) -> Path:
    """A data folder holding collection ``two papers`` (built once per test session)."""
    from rag_core.collections.library import Library

    paths = small_pdfs()
    root = tmp_path_factory.mktemp("app-data")
    report = Library(root).add_pdfs(COLLECTION, paths)
    assert [f.status for f in report.files] == ["ok", "ok"], report.to_dict()
    return root


@pytest.fixture(scope="session")
def real_quote() -> str:
    return quote_from(small_pdfs()[0])
