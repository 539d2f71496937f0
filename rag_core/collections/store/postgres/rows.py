"""Reading a collection's rows in PostgreSQL: its record and settings, the documents, chunks
and vectors of a version, and the stored TF-IDF/BM25 files (written here too). Shared by the
store and its check."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import psycopg
from psycopg import sql

from rag_core.collections.store.base import (
    COLLECTION_FORMAT,
    COLLECTION_FORMAT_VERSION,
    check_documents,
    check_settings,
    damaged,
    same_name,
    validate_collection_name,
)
from rag_core.collections.store.postgres.codecs import (
    RawVectorLoader,
    loads_from_pg,
    vectors_from_copy,
    vectors_from_raw,
)
from rag_core.collections.store.postgres.schema import VISIBLE, version_name
from rag_core.errors import CollectionNotFoundError
from rag_core.settings import PG_BLOB_PART_BYTES


@dataclasses.dataclass
class CollectionRow:
    """A collection's row, and the version whose stored TF-IDF/BM25 its live version uses."""

    id: int
    name: str
    settings: dict
    created: float
    updated: float
    live: int | None
    generation: int
    dim: int | None
    lexical_of: int | None = None


def collection_row(conn: psycopg.Connection, name: str, *, lock: bool = False) -> CollectionRow:
    """The row of collection ``name`` (``lock``: FOR UPDATE), or the not-found error with the names."""
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
    return CollectionRow(row[0], row[1], loads_from_pg(row[2]), row[3], row[4], row[5], row[6], row[7], row[8])


def collection_settings(row: CollectionRow) -> dict:
    """The collection's settings as the folder store reads them from ``collection.json``."""
    raw = {"format": COLLECTION_FORMAT, "format_version": COLLECTION_FORMAT_VERSION, **(row.settings or {}),
           "name": row.name, "created": row.created, "updated": row.updated}
    return check_settings(raw, row.name)


def documents_at(conn: psycopg.Connection, row: CollectionRow, version: int | None) -> list[dict]:
    """The document records of ``version``, in order, checked."""
    if version is None:
        return []
    records = conn.execute(
        f"SELECT d.record FROM rag_core.documents d WHERE d.collection_id = %(c)s AND {VISIBLE} "
        "ORDER BY d.position", {"c": row.id, "v": version}).fetchall()
    return check_documents([loads_from_pg(r[0]) for r in records], row.name, f"version {version_name(version)}")


def chunk_rows(conn: psycopg.Connection, row: CollectionRow, version: int) -> list[tuple]:
    """``(document row, seq, text, escaped, meta)`` of every chunk of ``version``, in index order.

    The metas come as JSON text and are parsed in one call (a jsonb parse per row was ~1 s of a
    cold load at 100k chunks)."""
    return chunk_rows_and_mask(conn, row, version)[0]


def chunk_rows_and_mask(conn: psycopg.Connection, row: CollectionRow, version: int) -> tuple[list[tuple], np.ndarray]:
    """:func:`chunk_rows`, and the mask of the chunks that have a dense vector (read in the same scan)."""
    found = conn.execute(
        "SELECT c.document_id, c.seq, c.text, c.escaped, c.meta::text, c.embedding IS NOT NULL FROM rag_core.chunks c "
        "JOIN rag_core.documents d ON d.id = c.document_id "
        f"WHERE c.collection_id = %(c)s AND d.collection_id = %(c)s AND {VISIBLE} ORDER BY c.ord",
        {"c": row.id, "v": version}).fetchall()
    metas = json.loads("[" + ",".join(r[4] for r in found) + "]") if found else []
    mask = np.fromiter((r[5] for r in found), dtype=bool, count=len(found))
    return [(doc, seq, text, escaped, meta)
            for (doc, seq, text, escaped, *_), meta in zip(found, metas, strict=True)], mask


def vector_mask(conn: psycopg.Connection, row: CollectionRow, version: int) -> np.ndarray:
    """Which chunks of ``version`` (in index order) have a dense vector, without reading the vectors."""
    found = conn.execute(
        "SELECT c.embedding IS NOT NULL FROM rag_core.chunks c JOIN rag_core.documents d ON d.id = c.document_id "
        f"WHERE c.collection_id = %(c)s AND d.collection_id = %(c)s AND {VISIBLE} ORDER BY c.ord",
        {"c": row.id, "v": version}).fetchall()
    return np.fromiter((r[0] for r in found), dtype=bool, count=len(found))


def vectors_by_key(conn: psycopg.Connection, keys: np.ndarray, dim: int, vector_oid: int | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The dense vectors of the chunk rows ``keys`` (``(document row, seq)`` pairs), in that
    order, as they are now: a float32 matrix (zeros where missing) and the mask of those that have one."""
    keys = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
    with conn.cursor(binary=True) as cur:
        if vector_oid is not None:
            cur.adapters.register_loader(vector_oid, RawVectorLoader)
        cur.execute(
            "SELECT k.i, c.embedding FROM unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY AS k(doc, seq, i) "
            "JOIN rag_core.chunks c ON c.document_id = k.doc AND c.seq = k.seq",
            (keys[:, 0].tolist(), keys[:, 1].tolist()))
        found = dict(cur.fetchall())
    raw = [found.get(i + 1) for i in range(len(keys))]
    matrix, mask = vectors_from_raw(raw, dim)
    if matrix is None:
        matrix = np.zeros((len(keys), dim), dtype=np.float32)
    return matrix, mask


def load_vectors(conn: psycopg.Connection, row: CollectionRow, version: int, vector_oid: int | None
                 ) -> tuple[np.ndarray | None, np.ndarray]:
    """The dense vectors of ``version``'s chunks in index order (zeros where missing) and the mask of
    those that have one: one binary COPY read straight into a matrix (a binary row per vector
    took ~3 s at 100k chunks)."""
    if row.dim is not None:
        query = sql.SQL(
            "COPY (SELECT c.embedding FROM rag_core.chunks c JOIN rag_core.documents d ON d.id = c.document_id "
            "WHERE c.collection_id = {c} AND d.collection_id = {c} AND " + VISIBLE.replace("%(v)s", "{v}")
            + " ORDER BY c.ord) TO STDOUT (FORMAT BINARY)").format(c=sql.Literal(int(row.id)),
                                                                  v=sql.Literal(int(version)))
        with conn.cursor() as cur, cur.copy(query) as copy:
            data = b"".join(bytes(block) for block in copy)
        matrix, mask = vectors_from_copy(data, row.dim)
    else:
        with conn.cursor(binary=True) as cur:
            if vector_oid is not None:
                cur.adapters.register_loader(vector_oid, RawVectorLoader)
            cur.execute(
                "SELECT c.embedding FROM rag_core.chunks c JOIN rag_core.documents d ON d.id = c.document_id "
                f"WHERE c.collection_id = %(c)s AND d.collection_id = %(c)s AND {VISIBLE} ORDER BY c.ord",
                {"c": row.id, "v": version})
            raw = [r[0] for r in cur.fetchall()]
        matrix, mask = vectors_from_raw(raw, row.dim)
    if matrix is not None and not np.isfinite(matrix).all():
        raise damaged(row.name, "a stored dense vector is not finite")
    return matrix, mask


def stored_lexical_files(conn: psycopg.Connection, row: CollectionRow) -> dict[str, bytes] | None:
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


def store_lexical_files(conn: psycopg.Connection, collection_id: int, version: int, files: dict[str, bytes]) -> None:
    """Keep ``files`` (from :func:`~rag_core.collections.store.lexical_state.lexical_state_bytes`)
    as the TF-IDF/BM25 of ``version``, each in parts of PG_BLOB_PART_BYTES."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO rag_core.lexical_files (collection_id, version, name, part, data, sha256) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            [(collection_id, version, file, part, data[start:start + PG_BLOB_PART_BYTES],
              hashlib.sha256(data).hexdigest())
             for file, data in files.items()
             for part, start in enumerate(range(0, max(len(data), 1), PG_BLOB_PART_BYTES))])
