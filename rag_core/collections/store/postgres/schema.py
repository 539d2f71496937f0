"""The PostgreSQL store's tables (schema ``rag_core``), made once per database, and the SQL
pieces and names every module of the backend shares.

Tables (every statement binds its parameters, and no SQL is ever built from user text: the
only interpolated names are made from integer ids)::

    collections   one row a collection: name (unique without regard to case), settings,
                  the live version, a counter bumped whenever dense vectors are written
    versions      one row a version: its parent, counts, when it was made
    documents     one row a document *as added*: its record (jsonb), SHA-256, the version
                  that added it and the one that removed it (NULL while it is live)
    chunks        the chunks of a document row: text, the other chunk keys (jsonb), an
                  ordinal that fixes the index order, and the dense vector (pgvector)
    files         the original PDFs (bytea, stored uncompressed)
    lexical_files the TF-IDF and BM25 files a commit fitted (the format of
                  rag_core.collections.store.lexical_state), so a process loads them
                  instead of fitting TF-IDF again (40 s for 10k chunks on 2 busy cores)
    side_data     the relevance lab's judgments and snapshots (jsonb), outside versions
    side_data_log their committed generations: checksums and copies (postgres.side_data)
    embedding_progress   what the collection's embedder last reported
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import psycopg

from rag_core.errors import StoreConnectionError

# 2: side_data_log (side data in checksummed generations); a version-1 store gets the table on first use
SCHEMA_VERSION = 2
# Advisory lock namespaces (the first of the two int4 keys); the second key is a collection id.
SETUP_LOCK = 0x52470000
WRITER_LOCK = 0x52470001
EMBEDDER_LOCK = 0x52470002

DDL = """
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
CREATE TABLE IF NOT EXISTS rag_core.side_data_log (
    collection_id bigint NOT NULL REFERENCES rag_core.collections(id) ON DELETE CASCADE,
    key text NOT NULL,
    generation bigint NOT NULL,
    sha256 text,
    data bytea,
    live_digest text,
    live_xmin text,
    created double precision NOT NULL,
    PRIMARY KEY (collection_id, key, generation)
);
-- stored uncompressed: a million judgments (40 MB) are committed in half the time under the writer lock
ALTER TABLE rag_core.side_data ALTER COLUMN value SET STORAGE EXTERNAL;
ALTER TABLE rag_core.side_data_log ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS rag_core.embedding_progress (
    collection_id bigint PRIMARY KEY REFERENCES rag_core.collections(id) ON DELETE CASCADE,
    progress jsonb NOT NULL,
    updated double precision NOT NULL
);
"""

# The documents of version %(v)s: added by then, and not removed by then.
VISIBLE = "d.added_in <= %(v)s AND (d.removed_in IS NULL OR d.removed_in > %(v)s)"
SHA_RE = re.compile(r"[0-9a-f]{64}")
VECTOR_KEY_RE = re.compile(r"[0-9a-f]{32}")
ANN_INDEX_RE = re.compile(r"chunks_hnsw_c\d+_d\d+")


def version_name(number: int | None) -> str | None:
    """A version number as the store reports it (``v000007``), as the folder store names them."""
    return None if number is None else f"v{number:06d}"


def ann_index_name(collection_id: int, dim: int) -> str:
    """The name of a collection's HNSW index: made from two integers, never from user text."""
    return f"chunks_hnsw_c{int(collection_id)}_d{int(dim)}"


def lock_key(value: int) -> int:
    """A collection id as the second int4 key of an advisory lock."""
    value = int(value)
    return value if value < 2**31 else (value % (2**31 - 1)) + 1


def setup_schema(conn: psycopg.Connection, *, where: str, redact: Callable[[str], str]) -> None:
    """Create the vector extension, the schema and its tables when missing (idempotent, one
    process at a time). ``where``: the masked URL for messages; ``redact`` hides the
    password in a server's message."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (SETUP_LOCK,))
        have = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
        if not have:
            try:
                with conn.transaction():
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.errors.InsufficientPrivilege:
                raise StoreConnectionError(
                    f"The database at {where} lacks the pgvector extension and this role may not "
                    "create it: have a superuser run `CREATE EXTENSION vector;` in it once.") from None
        ready = conn.execute("SELECT to_regclass('rag_core.meta') IS NOT NULL").fetchone()[0]
        version = None
        if ready:
            row = conn.execute("SELECT value FROM rag_core.meta WHERE key = 'schema_version'").fetchone()
            version = row[0] if row else None
        if version is not None and version > SCHEMA_VERSION:
            raise StoreConnectionError(
                f"The store at {where} was made by a newer rag_core (schema {version}); upgrade "
                "rag_core to use it.")
        if version != SCHEMA_VERSION:
            try:
                conn.execute(DDL)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise StoreConnectionError(
                    f"This role may not create the rag_core schema in {where} "
                    f"({redact(str(exc).strip())}): grant it CREATE on the database, or have "
                    "the owner create the schema `rag_core` and grant the role ALL on it.") from None
            conn.execute(
                "INSERT INTO rag_core.meta (key, value) VALUES ('schema_version', %s::jsonb) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (json.dumps(SCHEMA_VERSION),))
