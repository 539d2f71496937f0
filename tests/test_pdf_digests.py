"""The cleaned text of every page of every shared PDF is exactly what it was before the
extraction was made faster (digests recorded by ``benchmarks/pdf_digests.py --record``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import pdf_digests  # noqa: E402

pytest.importorskip("pypdf")


@pytest.mark.slow
def test_cleaned_text_of_every_shared_pdf_page_is_unchanged(pdf_dir):
    expected = json.loads(pdf_digests.DIGESTS.read_text(encoding="utf-8"))
    if expected["environment"] != pdf_digests.environment():
        pytest.skip(f"digests were recorded with {expected['environment']}, this is {pdf_digests.environment()} "
                    "(another pypdf or fontTools gives other text): re-record them with the old code first")
    actual = pdf_digests.digests(pdf_dir)
    assert sum(len(f["pages"]) for f in actual["files"].values()) == 487
    assert pdf_digests.differences(expected, actual) == []


def test_the_digest_check_notices_a_changed_page():
    expected = {"files": {"a.pdf": {"status": "ok", "n_pages": 2, "labels": [None, None], "pages": ["x", "y"]}}}
    changed = {"files": {"a.pdf": {"status": "ok", "n_pages": 2, "labels": [None, None], "pages": ["x", "z"]}}}
    assert pdf_digests.differences(expected, changed) == ["a.pdf: cleaned text differs on page(s) [2]"]
    assert pdf_digests.differences(expected, expected) == []
