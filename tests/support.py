"""What the tests share besides fixtures."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]  # the checkout under test (holds pyproject.toml)
SHARED_DATA = REPO.parent / "shared" / "data"
PDF_DIR = SHARED_DATA / "pdfs"
TEST_DATA = REPO / "tests" / "data"

SMALL_PDFS = (
    "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf",  # 4 pages
    "ml_dpr_karpukhin2020_arxiv2004.04906.pdf",  # 13 pages
)


def store_location_of(library) -> str:
    """The location a subprocess passes to ``Library(store=...)`` to reach the same store."""
    return getattr(library.store, "url", None) or str(library.store.location)
