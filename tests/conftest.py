"""Shared fixtures: offline models, the real data folder, small indexes, the CLI in a new process.

Tests use these by naming them as arguments (pytest's way), never by importing this module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import PDF_DIR, REPO, SMALL_PDFS

# The machine has no model hub: never wait on one, in this process or in subprocesses.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tiny test ingests must not become the rates behind a user's next time estimate (a 20-chunk
# commit remembered as 15 ms a chunk made a real upload's estimate 2.5x long).
os.environ["RAG_CORE_RATES_FILE"] = os.path.join(
    os.environ.get("TMPDIR", "/tmp"), f"rag-core-test-rates-{os.getpid()}.json")
# Nor the PostgreSQL store's disk copies of PDFs and TF-IDF/BM25 files the user's cache folder.
os.environ["RAG_CORE_PG_FILE_CACHE"] = os.path.join(
    os.environ.get("TMPDIR", "/tmp"), f"rag-core-test-pg-files-{os.getpid()}")


WORKED_EXAMPLE = [
    ("Gao, Jafferis and Wall show that a traversable wormhole opens in an eternal BTZ black hole when a "
     "double-trace coupling between the two boundaries produces negative average null energy, so that "
     "information can leak through the wormhole.", "gao_wormhole.pdf"),
    ("Temme, Bravyi and Gambetta introduce zero-noise extrapolation, which mitigates errors in short-depth "
     "quantum circuits by running them at amplified noise levels and extrapolating to zero noise.",
     "temme_mitigation.pdf"),
    ("Cross-encoders read the query and the passage together and usually rank passages more accurately "
     "than bi-encoders, which embed query and passage separately.", "reranking_note.pdf"),
]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout under test (the folder holding pyproject.toml)."""
    return REPO


@pytest.fixture(scope="session")
def worked_example() -> list[tuple[str, str]]:
    """The contract's worked example: three one-sentence ``(text, source)`` documents."""
    return list(WORKED_EXAMPLE)


@pytest.fixture(scope="session")
def run_cli():
    """Run ``rag-core ARGS...`` in a new process, as a user or a script does.

    ``data_dir`` sets ``RAG_CORE_DATA_DIR``; ``env`` adds variables; returns the
    ``CompletedProcess`` (text mode, output captured).
    """

    def run(*args: str, data_dir: str | os.PathLike | None = None, env: dict | None = None,
            cwd: str | os.PathLike | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
        full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        if data_dir is not None:
            full_env["RAG_CORE_DATA_DIR"] = str(data_dir)
        return subprocess.run([sys.executable, "-m", "rag_core", *args], capture_output=True, text=True,
                              env=full_env, cwd=cwd, timeout=timeout)

    return run


@pytest.fixture(scope="session")
def pdf_dir() -> Path:
    if not PDF_DIR.is_dir():
        pytest.skip(f"real PDFs not found at {PDF_DIR}")
    return PDF_DIR


@pytest.fixture(scope="session")
def worked_example_index():
    """The contract's worked example, with real all-MiniLM-L6-v2 embeddings."""
    from rag_core import build_index

    return build_index(WORKED_EXAMPLE)


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory) -> Path:
    from rag_core.testing import make_tiny_cross_encoder

    return make_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture()
def data_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "data"
    monkeypatch.setenv("RAG_CORE_DATA_DIR", str(folder))
    return folder




@pytest.fixture(scope="session")
def paper_library(tmp_path_factory, pdf_dir):
    """A data folder with one collection, "papers", of two real PDFs (built once)."""
    from rag_core.collections.library import Library

    library = Library(tmp_path_factory.mktemp("library"))
    report = library.add_pdfs("papers", [pdf_dir / name for name in SMALL_PDFS])
    assert [f.status for f in report.files] == ["ok", "ok"], report.files
    return library


@pytest.fixture(scope="session")
def shared_collection(tmp_path_factory, pdf_dir):
    """``(library, index, documents)``: every shared PDF in one collection, "shared", without
    embeddings (lexical and exact search only; built once per session, about half a minute)."""
    from rag_core.collections.library import Library

    library = Library(tmp_path_factory.mktemp("shared-library"))
    report = library.add_pdfs("shared", sorted(pdf_dir.glob("*.pdf")), compute_embeddings=False)
    assert report.added, report.files
    return library, library.load_index("shared"), library.documents("shared")
# ---------------------------------------------------------------- the two store backends


class PostgresTestServer:
    """A throw-away PostgreSQL 16 with pgvector (the pgserver package), one database a test."""

    TEMPLATE = "rag_core_template"

    def __init__(self, folder: Path):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs' note about XDG_RUNTIME_DIR
            import pgserver

        self.server = pgserver.get_server(folder, cleanup_mode="delete")
        self.count = 0
        self._admin("CREATE EXTENSION IF NOT EXISTS vector", database="template1")
        self._admin(f"CREATE DATABASE {self.TEMPLATE}")
        from rag_core.collections.store.postgres.store import PostgresStore

        store = PostgresStore(self.server.get_uri(self.TEMPLATE))
        store.names()  # creates the schema once; every test database is a copy
        store.close()

    def _admin(self, statement: str, *, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.server.get_uri(database), autocommit=True) as conn:
            conn.execute(statement)

    def new_database(self) -> str:
        self.count += 1
        name = f"t{os.getpid()}_{self.count}"
        self._admin(f"CREATE DATABASE {name} TEMPLATE {self.TEMPLATE}")
        return self.server.get_uri(name)

    def drop(self, url: str) -> None:
        from rag_core.collections.store.postgres.store import PostgresStore

        PostgresStore(url).close()
        name = url.split("?", 1)[0].rsplit("/", 1)[1]
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server for the session, or a skip saying why it could not start.

    Its data folder is not under pytest's temporary folders: pytest removes old ones while
    other pytest runs on the machine may still use them.
    """
    import shutil
    import subprocess
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="rag-core-test-pg-"))
    try:
        server = PostgresTestServer(folder / "data")
    except Exception as exc:  # noqa: BLE001 - whatever stops it, the folder tests still run
        detail = ""
        if isinstance(exc, subprocess.CalledProcessError):
            detail = f" ({(exc.stderr or exc.stdout or b'').decode(errors='replace').strip()[-300:]})"
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"PostgreSQL (the pgserver package) could not start here: {type(exc).__name__}: {exc}{detail}")
    yield server
    from rag_core.collections.store.postgres.connection import close_all

    close_all()
    server.server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def pg_url(pg_server):
    """A fresh, empty database (with the rag_core schema) for one test."""
    url = pg_server.new_database()
    yield url
    pg_server.drop(url)


@pytest.fixture(params=["folder", "postgres"])
def store_kind(request) -> str:
    return request.param


@pytest.fixture()
def store_location(store_kind, tmp_path, request) -> str:
    """Where a test's collections live: a data folder, or a fresh PostgreSQL database."""
    if store_kind == "folder":
        return str(tmp_path / "data")
    return request.getfixturevalue("pg_url")
