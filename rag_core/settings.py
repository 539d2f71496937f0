"""Constants of the public contract and the project's measured defaults."""

from __future__ import annotations

import os
from pathlib import Path

CHUNK_SIZE_CHARS = 1200
CHUNK_OVERLAP_CHARS = 200
DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_CROSS_ENCODER_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"
# Candidates taken from each first-stage list (TF-IDF, BM25, dense) before re-reading.
# 30, chosen on SciFact train (docs/benchmarks.md): fused nDCG@10 within 0.0003 of the
# best pool (50), the union still holds 93% of relevant documents (BM25's top 100: 91%),
# and a cross-encoder reads at most 90 chunks a query instead of 150 at pool 50.
DEFAULT_POOL = 30

# Lexical settings the contract fixes for the TF-IDF matrix.
TFIDF_MAX_FEATURES = 20_000
TFIDF_NGRAM_RANGE = (1, 2)

# Passage sizes a collection may use (the app's settings form offers the same range).
MIN_CHUNK_SIZE = 200
MAX_CHUNK_SIZE = 20_000

# Limits on user input.
MAX_PDF_BYTES = 200 * 1024 * 1024
MAX_PDF_PAGES = 2_000
MAX_COLLECTION_NAME_LENGTH = 100
MAX_QUERY_CHARS = 10_000

# Extraction of one PDF runs in a worker process under these budgets (issue: a 257 KB PDF
# whose 50 pages share one 70 MiB content stream took ~11 s a page). Real papers here
# extract at 0.02-0.2 s a page, so 0.5 s a page on top of 15 s is a wide margin.
EXTRACT_WORKERS = max(1, min(2, os.cpu_count() or 1))
EXTRACT_SECONDS_BASE = float(os.environ.get("RAG_CORE_EXTRACT_SECONDS_BASE", 15))
EXTRACT_SECONDS_PER_PAGE = float(os.environ.get("RAG_CORE_EXTRACT_SECONDS_PER_PAGE", 0.5))
EXTRACT_SECONDS_MAX = 600.0
EXTRACT_MEMORY_MB = int(os.environ.get("RAG_CORE_EXTRACT_MEMORY_MB", 2048))

DATA_DIR_ENV = "RAG_CORE_DATA_DIR"
APP_NAME = "rag_core"


def default_data_dir() -> Path:
    """The data folder: ``$RAG_CORE_DATA_DIR`` or the user's data directory."""
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME, appauthor=False))
