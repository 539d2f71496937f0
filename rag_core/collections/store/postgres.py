"""The shared store: collections in PostgreSQL, dense vectors in pgvector.

Chosen with ``RAG_CORE_STORE=postgresql://...`` (or ``--store`` on the command line).
Several app instances and command lines can use one database at once; see the README
for the privileges the role needs.

Tables (schema ``rag_core``; every statement binds its parameters, and no SQL is ever
built from user text: the only interpolated names are made from integer ids)::

    collections   one row a collection: name (unique without regard to case), settings,
                  the live version, a counter bumped whenever dense vectors are written
    versions      one row a version: its parent, counts, when it was made
    documents     one row a document *as added*: its record (jsonb), SHA-256, the version
                  that added it and the one that removed it (NULL while it is live)
    chunks        the chunks of a document row: text, the other chunk keys (jsonb), an
                  ordinal that fixes the index order, and the dense vector (pgvector)
    files         the original PDFs (bytea, stored uncompressed)
    lexical_files the TF-IDF vocabulary, idf and matrix and the BM25 files a commit built
                  (as the folder store keeps them), so a process loads them instead of
                  fitting TF-IDF again (40 s for 10k chunks on 2 busy cores)
    side_data     the relevance lab's judgments and snapshots (jsonb), outside versions
    embedding_progress   what the collection's embedder last reported

How versions work: version ``N`` holds the documents with ``added_in <= N`` and
``removed_in`` NULL or ``> N``. A commit adds rows only for new documents and marks
removed ones, in ONE transaction that also moves ``collections.live_version``, so a
reader sees the previous version until it commits, and a ``kill -9`` at any point of a
commit leaves the previous version as it was (the transaction is rolled back). Readers
read a version in one REPEATABLE READ snapshot. Rows only the live version and its parent
no longer need are deleted by the next commit (MVCC keeps them for readers mid-read).

The searchable index is the stored chunks plus TF-IDF and BM25 built exactly as the folder
store builds them: by the commit, which stores the fitted state in ``lexical_files``; a
process loads it once per collection version and caches it (a version without it, or with
a damaged one, is fitted in-process from the chunks instead). Dense search is exact (vectors loaded into the
:class:`~rag_core.index.build.RagIndex`); :meth:`PostgresStore.dense_search` offers pgvector's
HNSW index for collections large enough to have one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import numpy as np

from rag_core.atomic import write_bytes_atomic
from rag_core.collections.store.base import (
    COLLECTION_FORMAT,
    CheckReport,
    CollectionStore,
    EmbeddingStatus,
    PendingDocument,
    check_data_key,
    same_name,
    validate_collection_name,
    vector_key,
)
from rag_core.collections.store.folder import (
    COLLECTION_FORMAT_VERSION,
    check_documents,
    check_settings,
    damaged,
    model_key,
)
from rag_core.errors import (
    CollectionBusyError,
    CollectionError,
    CollectionExistsError,
    CollectionNotFoundError,
    RagCoreError,
)
from rag_core.index.build import RagIndex, build_index_from_chunks
from rag_core.index.lexical import TfidfScorer
from rag_core.settings import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_EMBEDDING_MODEL,
    PG_ANN_MIN_CHUNKS_ENV,
    PG_FILE_CACHE_ENV,
    PG_INDEX_MEMORY_ENV,
    PG_POOL_MAX_ENV,
)

try:
    import psycopg
    from psycopg import sql
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        f"the PostgreSQL store needs psycopg and psycopg-pool: pip install 'rag_core[postgres]' ({exc})"
    ) from None

log = logging.getLogger(__name__)

SCHEMA = "rag_core"
SCHEMA_VERSION = 1
# Advisory lock namespaces (the first of the two int4 keys); the second key is a collection id.
_SETUP_LOCK = 0x52470000
_WRITER_LOCK = 0x52470001
_EMBEDDER_LOCK = 0x52470002
LOCK_TIMEOUT_S = 600
# An embedder that has not reported for this long is gone.
EMBEDDER_SILENT_S = 30
# Collections with at least this many vectors get a pgvector HNSW index (built after a fold-in).
ANN_MIN_CHUNKS = int(os.environ.get(PG_ANN_MIN_CHUNKS_ENV, "50000"))
# HNSW candidate list per query: recall@10 against exact search on 100k realistic MiniLM vectors
# 0.943 / 0.972 / 0.985 at 40 / 100 / 200, p50 2.9 / 3.6 / 5.3 ms (benchmarks/bench_postgres.py --recall).
ANN_EF_SEARCH = 200
# Memory PostgreSQL may use to build an HNSW index (maintenance_work_mem for that statement).
ANN_BUILD_MEMORY = os.environ.get(PG_INDEX_MEMORY_ENV, "512MB")
# Processes keep this many collection versions' lexical indexes in memory.
INDEX_CACHE_ENTRIES = 4
POOL_MAX = int(os.environ.get(PG_POOL_MAX_ENV, "8"))
CONNECT_TIMEOUT_S = 15
_ESCAPED = "__rag_core_json__"
_SHA_RE = re.compile(r"[0-9a-f]{64}")
_KEY_RE = re.compile(r"[0-9a-f]{32}")


class StoreConnectionError(RagCoreError):
    """The PostgreSQL store cannot be reached or refused the connection."""


# --------------------------------------------------------------------------- connection strings


def is_postgres_url(location: object) -> bool:
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def mask_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://***"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            user, password = userinfo.split(":", 1)
            userinfo = f"{user}:***" if password else user
        netloc = f"{userinfo}@{host}"
    query = re.sub(r"(?i)(^|&)(password)=[^&]*", r"\1\2=***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _passwords(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = []
    if parts.password:
        found += [parts.password, unquote(parts.password)]
    for match in re.finditer(r"(?i)(?:^|&)password=([^&]*)", parts.query):
        found += [match.group(1), unquote(match.group(1))]
    return [p for p in found if p]


def redact(text: str, url: str) -> str:
    """``text`` (an error message, say) with every password of ``url`` and the URL itself masked."""
    text = str(text).replace(url, mask_url(url))
    for password in sorted(set(_passwords(url)), key=len, reverse=True):
        text = text.replace(password, "***")
    return text


# --------------------------------------------------------------------------- JSON that PostgreSQL accepts


def _dumps_for_pg(value) -> str:
    """JSON text jsonb accepts, for any JSON-able value: text with NUL or lone surrogates,
    NaN or infinities are wrapped (as escaped JSON inside a string) and come back unchanged."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
        if "\\u0000" not in text:
            return text
    except (ValueError, UnicodeEncodeError):
        pass
    return json.dumps({_ESCAPED: json.dumps(value, ensure_ascii=True)})


def _loads_from_pg(value):
    if isinstance(value, dict) and len(value) == 1 and _ESCAPED in value:
        return json.loads(value[_ESCAPED])
    return value


def _text_for_pg(text: str) -> tuple[str, bool]:
    """Chunk text as stored, and whether it had to be escaped (NUL characters, lone surrogates)."""
    if "\x00" not in text:
        try:
            text.encode("utf-8")
            return text, False
        except UnicodeEncodeError:
            pass
    return json.dumps(text, ensure_ascii=True), True


def _digest(record: dict, chunks: Sequence[dict]) -> str:
    """What decides whether a stored document row is still the document being committed."""
    digest = hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=True).encode())
    for chunk in chunks:
        digest.update(b"\0")
        digest.update(json.dumps(chunk, sort_keys=True, ensure_ascii=True).encode())
    return digest.hexdigest()


def version_name(number: int | None) -> str | None:
    return None if number is None else f"v{number:06d}"


def _version_number(name: str | None) -> int | None:
    if name is None or not re.fullmatch(r"v\d{6,}", name):
        return None
    return int(name[1:])


# --------------------------------------------------------------------------- vectors on the wire


def _vector_bytes(row: np.ndarray) -> bytes:
    """pgvector's binary format: dimension and a reserved word (uint16 each), float32 big-endian."""
    row = np.asarray(row, dtype=">f4").ravel()
    return np.array([row.size, 0], dtype=">u2").tobytes() + row.tobytes()


class _RawVectorLoader(Loader):
    """Loads a binary ``vector`` as its raw bytes, to be stacked into a matrix at once."""

    format = Format.BINARY

    def load(self, data):
        return bytes(data)


def _vectors_from_raw(rows: Sequence[bytes | None], dim: int | None) -> tuple[np.ndarray | None, np.ndarray]:
    """A float32 matrix (zeros where missing) and a mask of the rows that have a vector."""
    mask = np.fromiter((r is not None for r in rows), dtype=bool, count=len(rows))
    if not mask.any():
        return None, mask
    if dim is None:
        dim = int(np.frombuffer(next(r for r in rows if r is not None)[:2], dtype=">u2")[0])
    blank = b"\0" * (4 * (dim + 1))
    raw = b"".join(r if r is not None else blank for r in rows)
    matrix = np.frombuffer(raw, dtype=">f4").reshape(len(rows), dim + 1)[:, 1:].astype(np.float32)
    return matrix, mask


# --------------------------------------------------------------------------- the fitted lexical state

_PART_BYTES = 64 << 20  # a bytea value is at most 1 GB; files are stored in parts of 64 MiB


def lexical_files(index: RagIndex) -> dict[str, bytes]:
    """The TF-IDF and BM25 state of ``index`` as named files (the folder store's formats)."""
    import io
    import tempfile

    import scipy.sparse as sp

    from rag_core.index.lexical import tfidf_state

    vocabulary, idf = tfidf_state(index.vectorizer)
    files = {"tfidf_vocabulary.json": json.dumps(vocabulary, ensure_ascii=False).encode("utf-8")}
    buffer = io.BytesIO()
    np.save(buffer, idf, allow_pickle=False)
    files["tfidf_idf.npy"] = buffer.getvalue()
    buffer = io.BytesIO()
    sp.save_npz(buffer, sp.csr_matrix(index.matrix), compressed=False)
    files["tfidf_matrix.npz"] = buffer.getvalue()
    if index.bm25 is not None:
        with tempfile.TemporaryDirectory(prefix="rag-core-bm25-") as folder:
            index.bm25.save(folder)
            for path in sorted(Path(folder).iterdir()):
                files[f"bm25/{path.name}"] = path.read_bytes()
    return files


def index_from_lexical_files(files: dict[str, bytes], chunks: list[dict], settings: dict) -> RagIndex:
    """A :class:`RagIndex` (no vectors) from :func:`lexical_files`' output and the chunks."""
    import io
    import tempfile

    import scipy.sparse as sp

    from rag_core.index.lexical import BM25Index, tfidf_from_state

    vocabulary = json.loads(files["tfidf_vocabulary.json"].decode("utf-8"))
    if not isinstance(vocabulary, dict):
        raise TypeError("tfidf_vocabulary.json is not a term -> column mapping")
    idf = np.load(io.BytesIO(files["tfidf_idf.npy"]), allow_pickle=False)
    matrix = sp.load_npz(io.BytesIO(files["tfidf_matrix.npz"])).tocsr()
    bm25 = None
    bm25_files = {name[5:]: data for name, data in files.items() if name.startswith("bm25/")}
    if bm25_files:
        with tempfile.TemporaryDirectory(prefix="rag-core-bm25-") as folder:
            for name, data in bm25_files.items():
                if "/" in name or name.startswith("."):
                    raise ValueError(f"unexpected BM25 file name {name!r}")
                (Path(folder) / name).write_bytes(data)
            bm25 = BM25Index.load(folder, mmap=False)
    return RagIndex(chunks=chunks, vectorizer=tfidf_from_state(vocabulary, idf), matrix=matrix, embeddings=None,
                    embedding_model=settings["embedding_model"], chunk_size=settings["chunk_size"],
                    overlap=settings["overlap"], bm25=bm25)


# --------------------------------------------------------------------------- schema

_DDL = """
CREATE SCHEMA IF NOT EXISTS rag_core;
CREATE TABLE IF NOT EXISTS rag_core.meta (key text PRIMARY KEY, value jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS rag_core.collections (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE,
    name_key text NOT NULL UNIQUE,
    settings jsonb NOT NULL,
    created double precision NOT NULL,
    updated double precision NOT NULL,
    live_version integer,
    vectors_generation bigint NOT NULL DEFAULT 0,
    dim integer
);
CREATE TABLE IF NOT EXISTS rag_core.versions (
    collection_id bigint NOT NULL REFERENCES rag_core.collections(id) ON DELETE CASCADE,
    number integer NOT NULL,
    parent integer,
    created double precision NOT NULL,
    documents integer NOT NULL,
    chunks integer NOT NULL,
    vectors_generation bigint NOT NULL,
    lexical_of integer,
    PRIMARY KEY (collection_id, number)
);
CREATE TABLE IF NOT EXISTS rag_core.documents (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    collection_id bigint NOT NULL REFERENCES rag_core.collections(id) ON DELETE CASCADE,
    position bigint NOT NULL,
    doc_id text NOT NULL,
    source text NOT NULL,
    sha256 text NOT NULL,
    record jsonb NOT NULL,
    digest text NOT NULL,
    vector_key text NOT NULL,
    n_chunks integer NOT NULL,
    added_in integer NOT NULL,
    removed_in integer
);
CREATE INDEX IF NOT EXISTS documents_by_collection ON rag_core.documents (collection_id, position);
CREATE INDEX IF NOT EXISTS documents_by_vector_key ON rag_core.documents (collection_id, vector_key);
CREATE TABLE IF NOT EXISTS rag_core.chunks (
    document_id bigint NOT NULL REFERENCES rag_core.documents(id) ON DELETE CASCADE,
    seq integer NOT NULL,
    collection_id bigint NOT NULL,
    ord bigint NOT NULL,
    text text NOT NULL,
    escaped boolean NOT NULL DEFAULT false,
    meta jsonb NOT NULL,
    embedding vector,
    PRIMARY KEY (document_id, seq)
);
CREATE INDEX IF NOT EXISTS chunks_by_order ON rag_core.chunks (collection_id, ord);
CREATE TABLE IF NOT EXISTS rag_core.files (
    collection_id bigint NOT NULL REFERENCES rag_core.collections(id) ON DELETE CASCADE,
    sha256 text NOT NULL,
    bytes bigint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (collection_id, sha256)
);
ALTER TABLE rag_core.files ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS rag_core.lexical_files (
    collection_id bigint NOT NULL REFERENCES rag_core.collections(id) ON DELETE CASCADE,
    version integer NOT NULL,
    name text NOT NULL,
    part integer NOT NULL,
    data bytea NOT NULL,
    sha256 text NOT NULL,
    PRIMARY KEY (collection_id, version, name, part)
);
ALTER TABLE rag_core.lexical_files ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS rag_core.side_data (
    collection_id bigint NOT NULL REFERENCES rag_core.collections(id) ON DELETE CASCADE,
    key text NOT NULL,
    value jsonb NOT NULL,
    updated double precision NOT NULL,
    PRIMARY KEY (collection_id, key)
);
CREATE TABLE IF NOT EXISTS rag_core.embedding_progress (
    collection_id bigint PRIMARY KEY REFERENCES rag_core.collections(id) ON DELETE CASCADE,
    progress jsonb NOT NULL,
    updated double precision NOT NULL
);
"""

# A commit that writes at least this many chunk rows refreshes the planner's statistics at once.
_ANALYZE_MIN_ROWS = 2_000
_VISIBLE = "d.added_in <= %(v)s AND (d.removed_in IS NULL OR d.removed_in > %(v)s)"


def _ann_index_name(collection_id: int, dim: int) -> str:
    """The name of a collection's HNSW index: made from two integers, never from user text."""
    return f"chunks_hnsw_c{int(collection_id)}_d{int(dim)}"


# --------------------------------------------------------------------------- one pool per database and process


class _Engine:
    """The connection pool of one database, shared by every store object of the process."""

    def __init__(self, url: str):
        self.url = url
        self.masked = mask_url(url)
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
        self.local = threading.local()  # writer locks this thread holds: {collection id: [conn, depth]}
        self.vector_oid: int | None = None

    def _fail(self, exc: BaseException) -> StoreConnectionError:
        detail = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, self.url)
        return StoreConnectionError(f"Cannot use the PostgreSQL store at {self.masked}: {detail}")

    def _setup(self) -> None:
        """Create the schema, tables and the vector extension (once; idempotent)."""
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_SETUP_LOCK,))
                have = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
                if not have:
                    try:
                        with conn.transaction():
                            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                    except psycopg.errors.InsufficientPrivilege:
                        raise StoreConnectionError(
                            f"The database at {self.masked} lacks the pgvector extension and this role may not "
                            "create it: have a superuser run `CREATE EXTENSION vector;` in it once.") from None
                ready = conn.execute(
                    "SELECT to_regclass('rag_core.meta') IS NOT NULL").fetchone()[0]
                version = None
                if ready:
                    row = conn.execute("SELECT value FROM rag_core.meta WHERE key = 'schema_version'").fetchone()
                    version = row[0] if row else None
                if version is not None and version > SCHEMA_VERSION:
                    raise StoreConnectionError(
                        f"The store at {self.masked} was made by a newer rag_core (schema {version}); upgrade "
                        "rag_core to use it.")
                if version != SCHEMA_VERSION:
                    try:
                        conn.execute(_DDL)
                    except psycopg.errors.InsufficientPrivilege as exc:
                        raise StoreConnectionError(
                            f"This role may not create the rag_core schema in {self.masked} "
                            f"({redact(str(exc).strip(), self.url)}): grant it CREATE on the database, or have "
                            "the owner create the schema `rag_core` and grant the role ALL on it.") from None
                    conn.execute(
                        "INSERT INTO rag_core.meta (key, value) VALUES ('schema_version', %s::jsonb) "
                        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (json.dumps(SCHEMA_VERSION),))
            row = conn.execute("SELECT oid FROM pg_type WHERE typname = 'vector'").fetchone()
            self.vector_oid = int(row[0])
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        finally:
            conn.close()

    @property
    def pool(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                self._setup()
                pool = ConnectionPool(self.url, min_size=1, max_size=POOL_MAX, open=False, timeout=CONNECT_TIMEOUT_S,
                                      kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
                                      name="rag_core")
                pool.open(wait=False)
                self._pool = pool
            return self._pool

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as exc:
            raise self._fail(exc) from None

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def held(self) -> dict:
        if not hasattr(self.local, "writers"):
            self.local.writers = {}
        return self.local.writers


_engines: dict[str, _Engine] = {}
_engines_lock = threading.Lock()


def _engine(url: str) -> _Engine:
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = _Engine(url)
        return engine


def close_all() -> None:
    """Close every pool of this process (tests; a long-lived process never needs it)."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        engine.close()


# --------------------------------------------------------------------------- the index cache


@dataclasses.dataclass
class _Lexical:
    """A version's chunks with TF-IDF and BM25 built, and where each chunk row is."""

    index: RagIndex
    row_keys: np.ndarray  # (document row id, seq) of each chunk, in index order
    _positions: dict | None = None

    @property
    def positions(self) -> dict[tuple[int, int], int]:
        if self._positions is None:
            self._positions = {(int(a), int(b)): i for i, (a, b) in enumerate(self.row_keys)}
        return self._positions


_cache: OrderedDict[tuple, _Lexical] = OrderedDict()
_vector_cache: OrderedDict[tuple, tuple[np.ndarray | None, np.ndarray]] = OrderedDict()
_cache_lock = threading.Lock()
_build_locks: dict[tuple, threading.Lock] = {}


def _cached(cache: OrderedDict, key: tuple):
    with _cache_lock:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
        return value


def _remember(cache: OrderedDict, key: tuple, value) -> None:
    with _cache_lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > INDEX_CACHE_ENTRIES:
            cache.popitem(last=False)


def _build_lock(key: tuple) -> threading.Lock:
    with _cache_lock:
        return _build_locks.setdefault(key, threading.Lock())


class PostgresRagIndex(RagIndex):
    """A :class:`RagIndex` that can also ask pgvector's HNSW index for the nearest chunks.

    ``dense_search(query, k)`` is an optional hook: retrieval may call it when a
    collection is too large to hold its vectors in every process.
    """

    def __init__(self, *args, store: PostgresStore | None = None, collection: str = "", lexical=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._store = store
        self._collection = collection
        self._lexical = lexical

    def dense_search(self, query: str, k: int = 10, *, ef_search: int | None = None) -> list[tuple[int, float]]:
        """``[(chunk index, inner product)]`` of the ``k`` nearest chunks by pgvector (HNSW when built)."""
        vector = self.query_vector(query)  # by the encoder variant that made the stored vectors
        return self._store.dense_search(self._collection, vector, k, lexical=self._lexical, ef_search=ef_search)


# --------------------------------------------------------------------------- the store


@dataclasses.dataclass
class _Row:
    id: int
    name: str
    settings: dict
    created: float
    updated: float
    live: int | None
    generation: int
    dim: int | None
    lexical_of: int | None = None  # the version whose stored TF-IDF/BM25 the live version uses


class PostgresStore(CollectionStore):
    """Collections in a PostgreSQL database with pgvector (see the module docstring)."""

    kind = "postgresql"

    def __init__(self, url: str):
        if not is_postgres_url(url):
            raise CollectionError("A PostgreSQL store needs a postgresql:// URL.")
        self.url = url
        self._engine = _engine(url)

    @property
    def location(self) -> str:
        return self._engine.masked

    def __repr__(self) -> str:
        return f"PostgresStore({self.location!r})"

    def close(self) -> None:
        self._engine.close()

    # ---------------------------------------------------------------- rows
    def _row(self, conn, name: str, *, lock: bool = False) -> _Row:
        stored = validate_collection_name(name)
        query = ("SELECT id, name, settings, created, updated, live_version, vectors_generation, dim, "
                 "(SELECT v.lexical_of FROM rag_core.versions v WHERE v.collection_id = c.id "
                 " AND v.number = c.live_version) "
                 "FROM rag_core.collections c WHERE name = %s" + (" FOR UPDATE OF c" if lock else ""))
        row = conn.execute(query, (stored,)).fetchone()
        if row is None:
            known = sorted(r[0] for r in conn.execute("SELECT name FROM rag_core.collections"))
            close = [n for n in known if same_name(n, stored)]
            hint = f" Did you mean {close[0]!r}?" if close else f" (collections: {', '.join(known) or 'none yet'})"
            raise CollectionNotFoundError(f"No collection named {stored!r}.{hint}")
        return _Row(row[0], row[1], _loads_from_pg(row[2]), row[3], row[4], row[5], row[6], row[7], row[8])

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection]:
        """A connection in a read-only transaction that sees one snapshot throughout."""
        with self._engine.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield conn

    # ---------------------------------------------------------------- names
    def names(self) -> list[str]:
        with self._engine.connection() as conn:
            return sorted(r[0] for r in conn.execute("SELECT name FROM rag_core.collections"))

    def exists(self, name: str) -> bool:
        try:
            stored = validate_collection_name(name)
        except CollectionError:
            return False
        with self._engine.connection() as conn:
            return conn.execute("SELECT 1 FROM rag_core.collections WHERE name = %s", (stored,)).fetchone() is not None

    def _clash(self, conn, name: str, *, other_than: int | None = None) -> str | None:
        row = conn.execute("SELECT name FROM rag_core.collections WHERE name_key = %s AND id IS DISTINCT FROM %s",
                           (name.casefold(), other_than)).fetchone()
        return None if row is None else row[0]

    def create(self, name: str, settings: dict) -> str:
        stored = validate_collection_name(name)
        now = time.time()
        kept = {k: v for k, v in settings.items() if k not in ("name", "format", "format_version", "created",
                                                                "updated")}
        with self._engine.connection() as conn:
            clash = self._clash(conn, stored)
            if clash:
                raise CollectionExistsError(f"A collection named {clash!r} already exists.")
            try:
                conn.execute(
                    "INSERT INTO rag_core.collections (name, name_key, settings, created, updated) "
                    "VALUES (%s, %s, %s::jsonb, %s, %s)", (stored, stored.casefold(), _dumps_for_pg(kept), now, now))
            except psycopg.errors.UniqueViolation:
                clash = self._clash(conn, stored) or stored
                raise CollectionExistsError(f"A collection named {clash!r} already exists.") from None
        return stored

    def rename(self, old: str, new: str) -> str:
        target = validate_collection_name(new)
        with self._engine.connection() as conn:
            source = self._row(conn, old)
            clash = self._clash(conn, target, other_than=source.id)
            if clash:
                raise CollectionExistsError(f"A collection named {clash!r} already exists.")
        with self.writing(source.name), self._engine.connection() as conn:
            try:
                conn.execute("UPDATE rag_core.collections SET name = %s, name_key = %s, updated = %s WHERE id = %s",
                             (target, target.casefold(), time.time(), source.id))
            except psycopg.errors.UniqueViolation:
                clash = self._clash(conn, target, other_than=source.id) or target
                raise CollectionExistsError(f"A collection named {clash!r} already exists.") from None
        return target

    def delete(self, name: str, *, force: bool = False) -> None:
        if force:
            self._delete(name)
            return
        with self.writing(name):
            self._delete(name)

    def _delete(self, name: str) -> None:
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            with conn.transaction():
                conn.execute("DELETE FROM rag_core.collections WHERE id = %s", (row.id,))
            self._drop_ann_indexes(conn, row.id)

    # ---------------------------------------------------------------- reading
    def read_settings(self, name: str) -> dict:
        with self._engine.connection() as conn:
            row = self._row(conn, name)
        return self._settings(row)

    @staticmethod
    def _settings(row: _Row) -> dict:
        raw = {"format": COLLECTION_FORMAT, "format_version": COLLECTION_FORMAT_VERSION, **(row.settings or {}),
               "name": row.name, "created": row.created, "updated": row.updated}
        return check_settings(raw, row.name)

    def current_version(self, name: str) -> str | None:
        with self._engine.connection() as conn:
            return version_name(self._row(conn, name).live)

    def _documents(self, conn, row: _Row, version: int | None) -> list[dict]:
        if version is None:
            return []
        records = conn.execute(
            f"SELECT d.record FROM rag_core.documents d WHERE d.collection_id = %(c)s AND {_VISIBLE} "
            "ORDER BY d.position", {"c": row.id, "v": version}).fetchall()
        return check_documents([_loads_from_pg(r[0]) for r in records], row.name, f"version {version_name(version)}")

    def read_documents(self, name: str) -> list[dict]:
        with self._read() as conn:
            row = self._row(conn, name)
            return self._documents(conn, row, row.live)

    def index_token(self, name: str) -> str:
        with self._engine.connection() as conn:
            row = self._row(conn, name)
        return f"pg:{row.id}:{version_name(row.live)}:{row.generation}"

    def _cache_key(self, row: _Row) -> tuple:
        """Versions that share their chunks (a fold-in of vectors) share one lexical index."""
        return (self.url, row.id, row.lexical_of if row.lexical_of is not None else ("v", row.live))

    def load_index(self, name: str) -> RagIndex | None:
        """The live version's index, built once per version and process (TF-IDF and BM25 as the
        folder store builds them), with the vectors written so far. Shared: treat it as read-only."""
        with self._read() as conn:  # one snapshot: the chunks and vectors of one version
            row = self._row(conn, name)
            if row.live is None:
                return None
            key = self._cache_key(row)
            lexical = _cached(_cache, key)
            rows = files = None
            if lexical is None:
                rows = self._chunk_rows(conn, row, row.live)
                files = self._lexical_files(conn, row)
            vkey = (*key, row.generation)
            vectors = _cached(_vector_cache, vkey)
            if vectors is None:
                vectors = self._load_vectors(conn, row, row.live)
        if lexical is None:
            if not rows:
                return None
            with _build_lock(key):
                lexical = _cached(_cache, key)
                if lexical is None:
                    lexical = self._build_lexical(row, rows, files)
                    _remember(_cache, key, lexical)
        _remember(_vector_cache, vkey, vectors)
        embeddings, mask = vectors
        proto = lexical.index
        return PostgresRagIndex(
            chunks=proto.chunks, vectorizer=proto.vectorizer, matrix=proto.matrix, embeddings=embeddings,
            embedding_model=proto.embedding_model, chunk_size=proto.chunk_size, overlap=proto.overlap,
            bm25=proto.bm25, dense_mask=None if embeddings is None or mask.all() else mask,
            _tfidf_scorer=proto._tfidf_scorer, store=self, collection=row.name, lexical=lexical,
            encoder=self._settings(row)["encoder"] if embeddings is not None else None,
        )

    def _chunk_rows(self, conn, row: _Row, version: int):
        return conn.execute(
            "SELECT c.document_id, c.seq, c.text, c.escaped, c.meta FROM rag_core.chunks c "
            "JOIN rag_core.documents d ON d.id = c.document_id "
            f"WHERE c.collection_id = %(c)s AND d.collection_id = %(c)s AND {_VISIBLE} ORDER BY c.ord",
            {"c": row.id, "v": version}).fetchall()

    @staticmethod
    def _chunk(text: str, escaped: bool, meta) -> dict:
        chunk = dict(_loads_from_pg(meta))
        chunk["text"] = json.loads(text) if escaped else text
        return chunk

    def _lexical_files(self, conn, row: _Row) -> dict[str, bytes] | None:
        """The stored TF-IDF/BM25 files of the live version, or None when missing or damaged."""
        if row.lexical_of is None:
            return None
        parts: dict[str, list] = {}
        for name, data, digest in conn.execute(
                "SELECT name, data, sha256 FROM rag_core.lexical_files WHERE collection_id = %s AND version = %s "
                "ORDER BY name, part", (row.id, row.lexical_of)):
            parts.setdefault(name, [digest, []])[1].append(bytes(data))
        files = {}
        for name, (digest, pieces) in parts.items():
            data = b"".join(pieces)
            if hashlib.sha256(data).hexdigest() != digest:
                return None
            files[name] = data
        return files or None

    def _build_lexical(self, row: _Row, rows, files: dict[str, bytes] | None = None) -> _Lexical:
        chunks = [self._chunk(text, escaped, meta) for _doc, _seq, text, escaped, meta in rows]
        settings = self._settings(row)
        index = None
        if files:
            try:
                index = index_from_lexical_files(files, chunks, settings)
            except (KeyError, TypeError, ValueError, OSError) as exc:  # damaged: fit again (check-store says so)
                log.warning("Collection %r: stored TF-IDF/BM25 unusable (%s); fitting them again", row.name, exc)
        if index is None:
            index = build_index_from_chunks(chunks, embedding_model=settings["embedding_model"],
                                            compute_embeddings=False, chunk_size=settings["chunk_size"],
                                            overlap=settings["overlap"])
        index._tfidf_scorer = TfidfScorer(index.vectorizer, index.matrix)
        keys = np.array([(doc, seq) for doc, seq, *_ in rows], dtype=np.int64).reshape(len(rows), 2)
        return _Lexical(index, keys)

    def _load_vectors(self, conn, row: _Row, version: int) -> tuple[np.ndarray | None, np.ndarray]:
        with conn.cursor(binary=True) as cur:
            if self._engine.vector_oid is not None:
                cur.adapters.register_loader(self._engine.vector_oid, _RawVectorLoader)
            cur.execute(
                "SELECT c.embedding FROM rag_core.chunks c JOIN rag_core.documents d ON d.id = c.document_id "
                f"WHERE c.collection_id = %(c)s AND d.collection_id = %(c)s AND {_VISIBLE} ORDER BY c.ord",
                {"c": row.id, "v": version})
            raw = [r[0] for r in cur.fetchall()]
        matrix, mask = _vectors_from_raw(raw, row.dim)
        if matrix is not None and not np.isfinite(matrix).all():
            raise damaged(row.name, "a stored dense vector is not finite")
        return matrix, mask

    def read_pdf(self, name: str, sha256: str) -> bytes | None:
        if not _SHA_RE.fullmatch(sha256 or ""):
            return None
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            found = conn.execute("SELECT data FROM rag_core.files WHERE collection_id = %s AND sha256 = %s",
                                 (row.id, sha256)).fetchone()
        return None if found is None else bytes(found[0])

    def pdf_path(self, name: str, sha256: str) -> Path | None:
        """The original file copied into a local cache folder (page images need a path)."""
        if not _SHA_RE.fullmatch(sha256 or ""):
            return None
        from platformdirs import user_cache_dir

        folder = Path(os.environ.get(PG_FILE_CACHE_ENV) or Path(user_cache_dir("rag_core")) / "pg-files")
        path = folder / f"{sha256}.pdf"
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
            return path
        data = self.read_pdf(name, sha256)
        if data is None or hashlib.sha256(data).hexdigest() != sha256:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data)
        return path

    # ---------------------------------------------------------------- writing
    @contextmanager
    def writing(self, name: str) -> Iterator[None]:
        with self._engine.connection() as conn:
            row = self._row(conn, name)
        held = self._engine.held()
        if row.id in held:  # this thread holds it already: nested use is fine
            held[row.id][1] += 1
            try:
                yield
            finally:
                held[row.id][1] -= 1
            return
        with self._engine.connection() as conn:
            try:
                conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{LOCK_TIMEOUT_S}s",))
                conn.execute("SELECT pg_advisory_lock(%s, %s)", (_WRITER_LOCK, _int4(row.id)))
            except psycopg.errors.LockNotAvailable:
                raise CollectionBusyError(
                    f"Collection {row.name!r} is being changed by another process; try again when it is done."
                ) from None
            finally:
                conn.execute("SELECT set_config('lock_timeout', '0', false)")
            held[row.id] = [conn, 1]
            try:
                yield
            finally:
                del held[row.id]
                try:
                    conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_WRITER_LOCK, _int4(row.id)))
                except psycopg.Error:
                    conn.close()  # the session ends, and its lock with it

    def write_settings(self, name: str, settings: dict) -> None:
        kept = {k: v for k, v in settings.items() if k not in ("name", "format", "format_version", "created",
                                                                "updated")}
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            conn.execute("UPDATE rag_core.collections SET settings = %s::jsonb, updated = %s WHERE id = %s",
                         (_dumps_for_pg(kept), float(settings.get("updated") or time.time()), row.id))

    def commit(
        self,
        name: str,
        *,
        documents: list[dict],
        chunks: list[dict],
        embeddings: np.ndarray | None,
        dense_mask: np.ndarray | None,
        new_files: dict[str, bytes],
        dropped_files: Sequence[str] = (),
    ) -> str:
        """One transaction: only new documents' rows are written; readers see the old version until it ends."""
        documents = check_documents(list(documents), validate_collection_name(name), "the commit")
        if embeddings is not None:
            embeddings = np.asarray(embeddings, dtype=np.float32)
            if embeddings.shape[0] != len(chunks):
                raise ValueError(f"{embeddings.shape[0]} embeddings for {len(chunks)} chunks")
            if dense_mask is None:
                dense_mask = np.ones(len(chunks), dtype=bool)
            if not np.isfinite(embeddings[dense_mask]).all():
                raise ValueError("refusing to store embeddings that hold NaN or infinite values")
        groups, grouped = _group_chunks(documents, chunks, name)
        with self.writing(name):
            files = {}
            if chunks:  # fitted once here, as the folder store does, so readers need not fit it again
                settings = self.read_settings(name)
                built = build_index_from_chunks(
                    chunks, embedding_model=settings["embedding_model"], compute_embeddings=False,
                    chunk_size=settings["chunk_size"], overlap=settings["overlap"])
                files = lexical_files(built)
            version, inserted = self._commit(name, documents, chunks, groups, grouped, embeddings, dense_mask,
                                             new_files, files)
        if inserted >= _ANALYZE_MIN_ROWS:
            self._analyze()
        return version

    def _analyze(self) -> None:
        """Fresh planner statistics after a large commit. Until autovacuum's next round (up to a
        minute), the planner thought the tables nearly empty: a 100k-chunk load_index ran a nested
        loop that scanned every chunk once per document (6 s a query, 17 s cold)."""
        try:
            with self._engine.connection() as conn:
                conn.execute("ANALYZE rag_core.documents, rag_core.chunks")
        except psycopg.Error as exc:  # statistics are an optimisation: autovacuum refreshes them later
            log.warning("ANALYZE after a large commit failed: %s", exc)

    def _commit(self, name, documents, chunks, groups, grouped, embeddings, dense_mask, new_files, files
                ) -> tuple[str, int]:
        with self._engine.connection() as conn, conn.transaction():
            row = self._row(conn, name, lock=True)
            settings = self._settings(row)
            key_model = model_key(settings)
            stored = conn.execute(
                f"SELECT d.id, d.doc_id, d.digest, d.position FROM rag_core.documents d "
                f"WHERE d.collection_id = %(c)s AND {_VISIBLE} ORDER BY d.position",
                {"c": row.id, "v": row.live if row.live is not None else -1}).fetchall()
            by_doc = {doc_id: (row_id, digest, position) for row_id, doc_id, digest, position in stored}
            digests = [_digest(doc, [chunks[i] for i in groups[n]]) for n, doc in enumerate(documents)]
            keep: dict[int, int] = {}  # document number -> stored row id
            last = -1
            incremental = grouped
            for n, doc in enumerate(documents):
                found = by_doc.get(doc["doc_id"])
                if found is not None and found[1] == digests[n]:
                    if found[2] <= last or (keep and n != len(keep)):
                        incremental = False  # reordered, or new documents before kept ones
                        break
                    keep[n] = found[0]
                    last = found[2]
            if not incremental:
                keep = {}
            number = (conn.execute("SELECT coalesce(max(number), 0) FROM rag_core.versions WHERE collection_id = %s",
                                   (row.id,)).fetchone()[0] or 0) + 1
            number = max(number, (row.live or 0) + 1)
            kept_rows = set(keep.values())
            gone = [row_id for row_id, *_ in stored if row_id not in kept_rows]
            if gone:
                conn.execute("UPDATE rag_core.documents SET removed_in = %s WHERE id = ANY(%s)", (number, gone))
            next_position, next_ord = conn.execute(
                "SELECT (SELECT coalesce(max(position), 0) + 1 FROM rag_core.documents WHERE collection_id = %(c)s), "
                "(SELECT coalesce(max(ord), 0) + 1 FROM rag_core.chunks WHERE collection_id = %(c)s)",
                {"c": row.id}).fetchone()
            wrote_vectors = 0
            if not grouped:  # chunks interleave documents: keep their order with one ordinal each
                order = {i: next_ord + i for i in range(len(chunks))}
            else:
                order = {}
                ord_ = next_ord
                for n in range(len(documents)):
                    if n in keep:
                        continue
                    for i in groups[n]:
                        order[i] = ord_
                        ord_ += 1
            dim = row.dim
            if keep and embeddings is not None:
                wrote_vectors += self._fill_kept_vectors(conn, keep, groups, embeddings, dense_mask)
            for n, doc in enumerate(documents):
                if n in keep:
                    continue
                doc_chunks = [chunks[i] for i in groups[n]]
                texts = [c["text"] for c in doc_chunks]
                doc_row = conn.execute(
                    "INSERT INTO rag_core.documents (collection_id, position, doc_id, source, sha256, record, digest, "
                    "vector_key, n_chunks, added_in) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s) "
                    "RETURNING id",
                    (row.id, next_position, doc["doc_id"], doc["source"], doc["sha256"], _dumps_for_pg(doc),
                     digests[n], vector_key(texts, key_model), len(doc_chunks), number)).fetchone()[0]
                next_position += 1
                dim, written = self._insert_chunks(conn, row.id, doc_row, groups[n], chunks, order, embeddings,
                                                   dense_mask, dim)
                wrote_vectors += written
            for sha, data in new_files.items():
                if not _SHA_RE.fullmatch(sha) or hashlib.sha256(data).hexdigest() != sha:
                    raise ValueError(f"the file given for {sha[:16]}... does not have that SHA-256")
                conn.execute(
                    "INSERT INTO rag_core.files (collection_id, sha256, bytes, data) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (collection_id, sha256) DO NOTHING", (row.id, sha, len(data), data))
            generation = row.generation + (1 if wrote_vectors else 0)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO rag_core.lexical_files (collection_id, version, name, part, data, sha256) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    [(row.id, number, file, part, data[start:start + _PART_BYTES], hashlib.sha256(data).hexdigest())
                     for file, data in files.items() for part, start in enumerate(range(0, max(len(data), 1),
                                                                                          _PART_BYTES))])
            conn.execute(
                "INSERT INTO rag_core.versions (collection_id, number, parent, created, documents, chunks, "
                "vectors_generation, lexical_of) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (row.id, number, row.live, time.time(), len(documents), len(chunks), generation,
                 number if files else None))
            now = time.time()
            conn.execute(
                "UPDATE rag_core.collections SET live_version = %s, updated = %s, vectors_generation = %s, "
                "dim = %s WHERE id = %s", (number, now, generation, dim, row.id))
            self._prune(conn, row.id, number, row.live)
        return version_name(number), len(order)

    @staticmethod
    def _fill_kept_vectors(conn, keep: dict[int, int], groups: list[list[int]], embeddings, dense_mask) -> int:
        """Vectors given for kept documents' chunks that the store does not have yet (one query)."""
        row_to_doc = {row_id: n for n, row_id in keep.items()}
        missing = conn.execute("SELECT document_id, seq FROM rag_core.chunks WHERE document_id = ANY(%s) "
                               "AND embedding IS NULL", (list(row_to_doc),)).fetchall()
        updates = []
        for row_id, seq in missing:
            positions = groups[row_to_doc[row_id]]
            if seq < len(positions) and dense_mask[positions[seq]]:
                updates.append((_VectorParam(embeddings[positions[seq]]), row_id, seq))
        if updates:
            with conn.cursor() as cur:
                cur.executemany("UPDATE rag_core.chunks SET embedding = %b WHERE document_id = %s AND seq = %s",
                                updates)
        return len(updates)

    def _insert_chunks(self, conn, collection_id: int, doc_row: int, positions: list[int], chunks: list[dict],
                       order: dict[int, int], embeddings, dense_mask, dim: int | None) -> tuple[int | None, int]:
        """The chunk rows of one new document, by binary COPY (vectors travel as pgvector's binary)."""
        written = 0
        header = b""
        if embeddings is not None:
            if dim is not None and embeddings.shape[1] != dim and bool(np.any(dense_mask[positions])):
                raise ValueError(f"vectors of dimension {embeddings.shape[1]} for a collection of {dim}")
            header = np.array([embeddings.shape[1], 0], dtype=">u2").tobytes()
            big_endian = np.asarray(embeddings[positions], dtype=">f4")
        with conn.cursor() as cur:
            cur.adapters.register_dumper(_JsonText, _JsonbTextDumper)
            cur.adapters.register_dumper(_VectorBytes, type("_VectorOidDumper", (_RawDumper,),
                                                            {"oid": self._engine.vector_oid}))
            with cur.copy("COPY rag_core.chunks (document_id, seq, collection_id, ord, text, escaped, meta, "
                          "embedding) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "int4", "int8", "int8", "text", "bool", "jsonb", self._engine.vector_oid])
                for seq, i in enumerate(positions):
                    chunk = chunks[i]
                    text, escaped = _text_for_pg(chunk["text"])
                    meta = _dumps_for_pg({k: v for k, v in chunk.items() if k != "text"})
                    vector = None
                    if embeddings is not None and dense_mask[i]:
                        dim = int(embeddings.shape[1])
                        vector = header + big_endian[seq].tobytes()
                        written += 1
                    copy.write_row((doc_row, seq, collection_id, order[i], text, escaped, meta, vector))
        return dim, written

    def _prune(self, conn, collection_id: int, live: int, parent: int | None) -> None:
        """Rows and files that neither the live version nor its parent needs (MVCC keeps them for
        readers that are mid-read)."""
        floor = parent if parent is not None else live
        conn.execute("DELETE FROM rag_core.documents WHERE collection_id = %s AND removed_in IS NOT NULL "
                     "AND removed_in <= %s", (collection_id, floor))
        conn.execute("DELETE FROM rag_core.documents WHERE collection_id = %s AND added_in > %s",
                     (collection_id, live))
        conn.execute("DELETE FROM rag_core.versions WHERE collection_id = %s AND number < %s",
                     (collection_id, floor))
        conn.execute("DELETE FROM rag_core.lexical_files l WHERE l.collection_id = %(c)s AND NOT EXISTS "
                     "(SELECT 1 FROM rag_core.versions v WHERE v.collection_id = %(c)s AND v.lexical_of = l.version)",
                     {"c": collection_id})
        conn.execute("DELETE FROM rag_core.files f WHERE f.collection_id = %(c)s AND NOT EXISTS "
                     "(SELECT 1 FROM rag_core.documents d WHERE d.collection_id = %(c)s AND d.sha256 = f.sha256)",
                     {"c": collection_id})

    # ---------------------------------------------------------------- vectors filled in behind
    def pending_vectors(self, name: str) -> list[PendingDocument]:
        with self._read() as conn:
            row = self._row(conn, name)
            if row.live is None:
                return []
            docs = conn.execute(
                "SELECT d.id, d.doc_id, d.source, d.vector_key FROM rag_core.documents d "
                f"WHERE d.collection_id = %(c)s AND {_VISIBLE} AND EXISTS (SELECT 1 FROM rag_core.chunks c "
                "WHERE c.document_id = d.id AND c.embedding IS NULL) ORDER BY d.position",
                {"c": row.id, "v": row.live}).fetchall()
            out = []
            for doc_row, doc_id, source, key in docs:
                texts = tuple(json.loads(t) if e else t for t, e in conn.execute(
                    "SELECT text, escaped FROM rag_core.chunks WHERE document_id = %s ORDER BY seq", (doc_row,)))
                out.append(PendingDocument(doc_id, source, key, texts))
        return out

    def write_vectors(self, name: str, key: str, vectors: np.ndarray) -> None:
        if not _KEY_RE.fullmatch(key or ""):
            raise ValueError(f"not a vector key: {key!r}")
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or not np.isfinite(vectors).all():
            raise ValueError("vectors must be a finite 2-D float matrix")
        with self._engine.connection() as conn, conn.transaction():
            row = self._row(conn, name, lock=True)
            if row.dim is not None and vectors.shape[1] != row.dim:
                raise ValueError(f"vectors of dimension {vectors.shape[1]} for a collection of {row.dim}")
            targets = conn.execute(
                "SELECT id, n_chunks FROM rag_core.documents WHERE collection_id = %s AND vector_key = %s",
                (row.id, key)).fetchall()
            updates = []
            for doc_row, n_chunks in targets:
                if n_chunks != len(vectors):
                    raise ValueError(f"{len(vectors)} vectors for a document of {n_chunks} chunks")
                updates += [(_VectorParam(vectors[seq]), doc_row, seq) for seq in range(n_chunks)]
            if not updates:
                return  # the document left the collection meanwhile
            with conn.cursor() as cur:
                cur.executemany("UPDATE rag_core.chunks SET embedding = %b WHERE document_id = %s AND seq = %s",
                                updates)
            conn.execute("UPDATE rag_core.collections SET vectors_generation = vectors_generation + 1, dim = %s "
                         "WHERE id = %s", (int(vectors.shape[1]), row.id))

    def fold_in_vectors(self, name: str) -> str | None:
        """A new version when vectors were written since the live one was made (no rows are copied)."""
        with self.writing(name), self._engine.connection() as conn, conn.transaction():
            row = self._row(conn, name, lock=True)
            if row.live is None:
                return None
            made = conn.execute("SELECT documents, chunks, vectors_generation, lexical_of FROM rag_core.versions "
                                "WHERE collection_id = %s AND number = %s", (row.id, row.live)).fetchone()
            if made is not None and made[2] >= row.generation:
                return None
            number = row.live + 1
            conn.execute(
                "INSERT INTO rag_core.versions (collection_id, number, parent, created, documents, chunks, "
                "vectors_generation, lexical_of) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (row.id, number, row.live, time.time(), made[0] if made else 0, made[1] if made else 0,
                 row.generation, made[3] if made else None))
            conn.execute("UPDATE rag_core.collections SET live_version = %s, updated = %s WHERE id = %s",
                         (number, time.time(), row.id))
            self._prune(conn, row.id, number, row.live)
        # outside the writer lock: at 100k vectors the build takes minutes, and commits go on meanwhile
        self.ensure_ann_index(name)
        return version_name(number)

    @contextmanager
    def embedding_slot(self, name: str) -> Iterator[bool]:
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            got = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_EMBEDDER_LOCK, _int4(row.id))).fetchone()[0]
            try:
                yield bool(got)
            finally:
                if got:
                    try:
                        conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_EMBEDDER_LOCK, _int4(row.id)))
                    except psycopg.Error:
                        conn.close()

    def write_embedding_progress(self, name: str, progress: dict) -> None:
        now = time.time()
        value = {**progress, "pid": os.getpid(), "host": socket.gethostname(), "updated": now}
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            conn.execute(
                "INSERT INTO rag_core.embedding_progress (collection_id, progress, updated) VALUES (%s, %s::jsonb, %s) "
                "ON CONFLICT (collection_id) DO UPDATE SET progress = EXCLUDED.progress, updated = EXCLUDED.updated",
                (row.id, _dumps_for_pg(value), now))

    def embedding_status(self, name: str) -> EmbeddingStatus:
        try:
            with self._read() as conn:
                row = self._row(conn, name)
                if row.live is None:
                    return EmbeddingStatus(0, 0)
                total, done = conn.execute(
                    "SELECT count(*), count(c.embedding) FROM rag_core.chunks c JOIN rag_core.documents d "
                    f"ON d.id = c.document_id WHERE c.collection_id = %(c)s AND {_VISIBLE}",
                    {"c": row.id, "v": row.live}).fetchone()
                found = conn.execute("SELECT progress FROM rag_core.embedding_progress WHERE collection_id = %s",
                                     (row.id,)).fetchone()
                slot_held = conn.execute(
                    "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::oid "
                    "AND objid = %s::oid AND objsubid = 2 AND granted",
                    (_EMBEDDER_LOCK, _int4(row.id))).fetchone() is not None
        except CollectionNotFoundError:
            raise
        except CollectionError as exc:
            return EmbeddingStatus(0, 0, error=str(exc))
        progress = _loads_from_pg(found[0]) if found else {}
        if not isinstance(progress, dict):
            progress = {}

        def number(key):
            value = progress.get(key)
            return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        updated = number("updated")
        running = bool(progress.get("running")) and slot_held and updated is not None \
            and time.time() - updated < EMBEDDER_SILENT_S
        return EmbeddingStatus(
            done=int(done), total=int(total), running=running, rate=number("rate") if running else None,
            started=number("started"), updated=updated,
            error=progress.get("error") if isinstance(progress.get("error"), str) else None,
        )

    # ---------------------------------------------------------------- dense search through pgvector
    def ensure_ann_index(self, name: str, *, min_chunks: int | None = None) -> bool:
        """Build the collection's HNSW index (inner product) once it has ``min_chunks`` vectors.

        Built CONCURRENTLY, so commits to this and other collections go on meanwhile.
        Returns whether the index exists.
        """
        threshold = ANN_MIN_CHUNKS if min_chunks is None else min_chunks
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            if row.dim is None:
                return False
            index = _ann_index_name(row.id, row.dim)
            valid = conn.execute(
                "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'rag_core' AND c.relname = %s",
                (index,)).fetchone()
            if valid is not None and valid[0]:
                return True
            count = conn.execute("SELECT count(embedding) FROM rag_core.chunks WHERE collection_id = %s",
                                 (row.id,)).fetchone()[0]
            if count < threshold:
                return False
            if valid is not None:  # an interrupted build left an invalid index
                conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS rag_core.{}").format(sql.Identifier(index)))
            # the graph is built much faster when it fits in memory (100k x 384 floats: ~200 MB)
            conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (ANN_BUILD_MEMORY,))
            conn.execute(sql.SQL(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS {} ON rag_core.chunks USING hnsw "
                "((embedding::vector({})) vector_ip_ops) WHERE collection_id = {}"
            ).format(sql.Identifier(index), sql.Literal(int(row.dim)), sql.Literal(int(row.id))))
            conn.execute("RESET maintenance_work_mem")
            conn.execute("ANALYZE rag_core.chunks")
            return True

    def _drop_ann_indexes(self, conn, collection_id: int) -> None:
        names = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'rag_core' AND c.relkind = 'i' AND c.relname LIKE %s",
            (f"chunks_hnsw_c{int(collection_id)}_d%",)).fetchall()
        for (index,) in names:
            if re.fullmatch(r"chunks_hnsw_c\d+_d\d+", index):
                conn.execute(sql.SQL("DROP INDEX IF EXISTS rag_core.{}").format(sql.Identifier(index)))

    def dense_search(self, name: str, vector: np.ndarray, k: int = 10, *, lexical: _Lexical | None = None,
                     ef_search: int | None = None, exact: bool = False, explain: bool = False):
        """The ``k`` live chunks nearest to ``vector`` by inner product, through the collection's
        HNSW index when it has one (``exact=True``: a full scan). Returns ``[(chunk index, score)]``,
        the chunk index being the position in :meth:`load_index`'s chunks (``explain=True``: the
        query plan's lines instead)."""
        vector = np.asarray(vector, dtype=np.float32).ravel()
        k = max(int(k), 1)
        with self._engine.connection() as conn, conn.transaction():
            row = self._row(conn, name)
            if row.live is None or row.dim is None:
                return []
            if vector.size != row.dim:
                raise ValueError(f"a query vector of dimension {vector.size} for a collection of {row.dim}")
            fetch = 2 * k + 20  # rows of documents the live version no longer holds are dropped after
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)",
                         (str(int(ef_search or max(ANN_EF_SEARCH, fetch))),))
            if exact:
                conn.execute("SET LOCAL enable_indexscan = off")
            else:  # steer the planner to the HNSW index when there is one (it is the only ordered path left)
                conn.execute("SET LOCAL enable_seqscan = off")
                conn.execute("SET LOCAL enable_bitmapscan = off")
            # The nearest rows of the collection come first, from its partial HNSW index (the
            # collection id and the dimension are integers from our own table, written as
            # literals so the planner can match that index); then only the live version's.
            query = sql.SQL(
                "SELECT n.document_id, n.seq, -n.distance FROM ("
                " SELECT c.document_id, c.seq, (c.embedding::vector({dim})) <#> %(q)b::vector({dim}) AS distance"
                " FROM rag_core.chunks c WHERE c.collection_id = {cid} AND c.embedding IS NOT NULL"
                " ORDER BY (c.embedding::vector({dim})) <#> %(q)b::vector({dim}) LIMIT %(fetch)s) n "
                "JOIN rag_core.documents d ON d.id = n.document_id "
                "WHERE " + _VISIBLE.replace("%(v)s", "{live}") + " ORDER BY n.distance LIMIT %(k)s"
            ).format(dim=sql.Literal(int(row.dim)), cid=sql.Literal(int(row.id)), live=sql.Literal(int(row.live)))
            if explain:
                return [r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + query,
                                                   {"q": _VectorParam(vector), "k": k, "fetch": fetch})]
            found = conn.execute(query, {"q": _VectorParam(vector), "k": k, "fetch": fetch}).fetchall()
        if lexical is None:  # positions in the live version's index (a caller's older index: in that one)
            self.load_index(name)
            lexical = _cached(_cache, self._cache_key(row))
        positions = lexical.positions
        return [(positions[(doc, seq)], float(score)) for doc, seq, score in found if (doc, seq) in positions]

    # ---------------------------------------------------------------- side data
    def read_data(self, name: str, key: str):
        check_data_key(key)
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            found = conn.execute("SELECT value FROM rag_core.side_data WHERE collection_id = %s AND key = %s",
                                 (row.id, key)).fetchone()
        return None if found is None else _loads_from_pg(found[0])

    def write_data(self, name: str, key: str, value) -> None:
        check_data_key(key)
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            if value is None:
                conn.execute("DELETE FROM rag_core.side_data WHERE collection_id = %s AND key = %s", (row.id, key))
                return
            conn.execute(
                "INSERT INTO rag_core.side_data (collection_id, key, value, updated) VALUES (%s, %s, %s::jsonb, %s) "
                "ON CONFLICT (collection_id, key) DO UPDATE SET value = EXCLUDED.value, updated = EXCLUDED.updated",
                (row.id, key, _dumps_for_pg(value), time.time()))

    def list_data(self, name: str, prefix: str = "") -> list[str]:
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            keys = [r[0] for r in conn.execute("SELECT key FROM rag_core.side_data WHERE collection_id = %s",
                                               (row.id,))]
        return sorted(k for k in keys if k.startswith(prefix))

    # ---------------------------------------------------------------- integrity
    def check(self, name: str, *, repair: bool = False) -> CheckReport:
        if repair:
            with self.writing(name):
                return self._check(name, repair=True)
        return self._check(name, repair=False)

    def _store_lexical_again(self, conn, row: _Row) -> None:
        """Fit TF-IDF and BM25 of the live version again and store them (repair)."""
        rows = self._chunk_rows(conn, row, row.live)
        if not rows:
            return
        settings = self._settings(row)
        built = build_index_from_chunks([self._chunk(t, e, m) for _d, _s, t, e, m in rows],
                                        embedding_model=settings["embedding_model"], compute_embeddings=False,
                                        chunk_size=settings["chunk_size"], overlap=settings["overlap"])
        files = lexical_files(built)
        with conn.transaction():
            conn.execute("DELETE FROM rag_core.lexical_files WHERE collection_id = %s AND version = %s",
                         (row.id, row.lexical_of))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO rag_core.lexical_files (collection_id, version, name, part, data, sha256) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    [(row.id, row.lexical_of, file, part, data[start:start + _PART_BYTES],
                      hashlib.sha256(data).hexdigest())
                     for file, data in files.items()
                     for part, start in enumerate(range(0, max(len(data), 1), _PART_BYTES))])

    def _check(self, name: str, *, repair: bool) -> CheckReport:
        with self._engine.connection() as conn:
            row = self._row(conn, name)
            report = CheckReport(name=row.name)
            problem, fixed = report.problems.append, report.repaired.append
            try:
                self._settings(row)
            except CollectionError as exc:
                problem(str(exc))
                if repair:
                    defaults = {"chunk_size": CHUNK_SIZE_CHARS, "overlap": CHUNK_OVERLAP_CHARS,
                                "embedding_model": DEFAULT_EMBEDDING_MODEL}
                    conn.execute("UPDATE rag_core.collections SET settings = %s::jsonb WHERE id = %s",
                                 (_dumps_for_pg(defaults), row.id))
                    fixed("wrote the collection's settings again with default values")
            versions = [n for (n,) in conn.execute(
                "SELECT number FROM rag_core.versions WHERE collection_id = %s ORDER BY number DESC", (row.id,))]
            report.versions = [version_name(n) for n in versions]
            live = row.live
            if live is not None and live not in versions:
                problem(f"the live version {version_name(live)} has no version record")
                if repair:
                    conn.execute(
                        "INSERT INTO rag_core.versions (collection_id, number, parent, created, documents, chunks, "
                        "vectors_generation, lexical_of) SELECT %(c)s, %(v)s, NULL, %(t)s, count(*), "
                        f"coalesce(sum(n_chunks), 0), %(g)s, %(v)s FROM rag_core.documents d "
                        f"WHERE d.collection_id = %(c)s AND {_VISIBLE}",
                        {"c": row.id, "v": live, "t": time.time(), "g": row.generation})
                    row = dataclasses.replace(row, lexical_of=live)
                    self._store_lexical_again(conn, row)
                    fixed(f"wrote the record of version {version_name(live)} again, and its TF-IDF and BM25")
            report.version = version_name(live)
            if live is not None:
                docs = conn.execute(
                    "SELECT d.id, d.source, d.sha256, d.n_chunks, d.record, "
                    "(SELECT count(*) FROM rag_core.chunks c WHERE c.document_id = d.id), "
                    "(SELECT count(*) FROM rag_core.chunks c "
                    " WHERE c.document_id = d.id AND c.collection_id <> d.collection_id), "
                    "(SELECT sha256(f.data) FROM rag_core.files f WHERE f.collection_id = d.collection_id "
                    " AND f.sha256 = d.sha256) "
                    f"FROM rag_core.documents d WHERE d.collection_id = %(c)s AND {_VISIBLE} ORDER BY d.position",
                    {"c": row.id, "v": live}).fetchall()
                try:
                    check_documents([_loads_from_pg(d[4]) for d in docs], row.name, f"version {version_name(live)}")
                except CollectionError as exc:
                    problem(str(exc))
                for _doc_row, source, sha, n_chunks, record, count, foreign, file_digest in docs:
                    record = _loads_from_pg(record)
                    if count != n_chunks or (isinstance(record, dict) and record.get("chunks", count) != count) \
                            or foreign:
                        problem(f"document {source!r} has {count} stored chunks, its record says {n_chunks}")
                    if file_digest is None:
                        problem(f"the original of {source!r} is missing (page images cannot be shown)")
                    elif bytes(file_digest).hex() != sha:
                        problem(f"the original of {source!r} was altered (its checksum differs)")
            if row.lexical_of is not None:
                files = self._lexical_files(conn, row)
                usable = False
                if files:
                    rows = self._chunk_rows(conn, row, live)
                    try:
                        index_from_lexical_files(files, [self._chunk(t, e, m) for _d, _s, t, e, m in rows],
                                                 self._settings(row))
                        usable = True
                    except (KeyError, TypeError, ValueError, OSError, CollectionError):
                        usable = False
                if not usable:
                    problem(f"the stored TF-IDF/BM25 of version {version_name(row.lexical_of)} are damaged or "
                            "missing (each process fits them again, slowly)")
                    if repair:
                        self._store_lexical_again(conn, row)
                        fixed("fitted TF-IDF and BM25 again and stored them")
            dims = conn.execute("SELECT DISTINCT vector_dims(embedding) FROM rag_core.chunks "
                                "WHERE collection_id = %s AND embedding IS NOT NULL", (row.id,)).fetchall()
            if len(dims) > 1 or (dims and row.dim is not None and dims[0][0] != row.dim):
                problem(f"dense vectors of different dimensions ({', '.join(str(d[0]) for d in dims)})")
                if repair:
                    conn.execute("UPDATE rag_core.chunks SET embedding = NULL WHERE collection_id = %s", (row.id,))
                    conn.execute("UPDATE rag_core.collections SET dim = NULL, vectors_generation = "
                                 "vectors_generation + 1 WHERE id = %s", (row.id,))
                    fixed("removed the dense vectors (they are computed again by `rag-core embed`)")
            stray = conn.execute("SELECT count(*) FROM rag_core.documents WHERE collection_id = %s AND added_in > %s",
                                 (row.id, live if live is not None else -1)).fetchone()[0]
            if stray:
                problem(f"{stray} document row(s) of versions newer than the live one")
                if repair:
                    conn.execute("DELETE FROM rag_core.documents WHERE collection_id = %s AND added_in > %s",
                                 (row.id, live if live is not None else -1))
                    fixed("removed the rows of versions newer than the live one")
            if row.dim is not None:
                index = _ann_index_name(row.id, row.dim)
                invalid = conn.execute(
                    "SELECT NOT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'rag_core' AND c.relname = %s",
                    (index,)).fetchone()
                if invalid is not None and invalid[0]:
                    problem("the HNSW index was left invalid by an interrupted build")
                    if repair:
                        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS rag_core.{}").format(
                            sql.Identifier(index)))
                        fixed("removed the invalid HNSW index (it is built again after the next embedding)")
        return report


class _JsonText(str):
    """JSON text (from :func:`_dumps_for_pg`) to be sent as a binary jsonb value."""


class _VectorBytes(bytes):
    """A vector already in pgvector's binary format."""


class _JsonbTextDumper(Dumper):
    format = Format.BINARY
    oid = 3802  # jsonb

    def dump(self, obj):
        return b"\x01" + obj.encode("utf-8")  # jsonb's binary format: version 1, then the text


class _RawDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj):
        return obj


class _VectorParam:
    """A dense vector as a query parameter, sent in pgvector's binary format."""

    __slots__ = ("data",)

    def __init__(self, vector: np.ndarray):
        self.data = _vector_bytes(vector)


class _VectorParamDumper(Dumper):
    """Sends a :class:`_VectorParam` as binary (placeholder ``%b``); the server reads it as the
    ``vector`` its context asks for."""

    format = Format.BINARY

    def dump(self, obj: _VectorParam):
        return obj.data


psycopg.adapters.register_dumper(_VectorParam, _VectorParamDumper)


def _int4(value: int) -> int:
    """A collection id as the second int4 key of an advisory lock."""
    value = int(value)
    return value if value < 2**31 else (value % (2**31 - 1)) + 1


def _group_chunks(documents: list[dict], chunks: list[dict], name: str) -> tuple[list[list[int]], bool]:
    """The chunk positions of each document, and whether each document's chunks are one run
    in document order (the incremental commit needs it)."""
    by_id = {doc["doc_id"]: n for n, doc in enumerate(documents)}
    by_source = {doc["source"]: n for n, doc in enumerate(documents)}
    groups: list[list[int]] = [[] for _ in documents]
    grouped, current = True, -1
    for i, chunk in enumerate(chunks):
        n = by_id.get(chunk.get("doc_id")) if chunk.get("doc_id") is not None else by_source.get(chunk.get("source"))
        if n is None:
            raise CollectionError(
                f"Collection {name!r}: chunk {i} belongs to no document of the commit "
                f"(doc_id {str(chunk.get('doc_id'))[:40]!r}); nothing was changed.")
        if n < current:
            grouped = False
        current = n
        groups[n].append(i)
    return groups, grouped
