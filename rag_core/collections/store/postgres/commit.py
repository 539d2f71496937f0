"""A commit to the PostgreSQL store: ONE transaction that writes rows only for new documents,
marks removed ones, stores the fitted TF-IDF/BM25 files and moves the live version; and the
pruning of rows no kept version needs."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import TYPE_CHECKING, Protocol

import numpy as np
import psycopg

from rag_core.collections.store.base import check_documents, model_key, validate_collection_name, vector_key
from rag_core.collections.store.lexical_state import lexical_state_bytes
from rag_core.collections.store.postgres.cache import fit_lexical
from rag_core.collections.store.postgres.codecs import VectorParam, dumps_for_pg, register_copy_dumpers, text_for_pg
from rag_core.collections.store.postgres.rows import collection_row, collection_settings, store_lexical_files
from rag_core.collections.store.postgres.schema import SHA_RE, VISIBLE, version_name
from rag_core.errors import CollectionError, StoreConnectionError
from rag_core.settings import PG_ANALYZE_MIN_ROWS

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextlib import AbstractContextManager

    from rag_core.collections.store.postgres.connection import Engine

log = logging.getLogger(__name__)


class PostgresStore(Protocol):
    """What a commit uses of :class:`~rag_core.collections.store.postgres.store.PostgresStore`
    (named here, not imported: the store imports this module)."""

    engine: Engine

    def read_settings(self, name: str) -> dict: ...

    def writing(self, name: str) -> AbstractContextManager[None]: ...


def commit_documents(store: PostgresStore, name: str, *, documents: list[dict], chunks: list[dict],
                     embeddings: np.ndarray | None, dense_mask: np.ndarray | None,
                     new_files: dict[str, bytes]) -> str:
    """Make ``documents`` and ``chunks`` the new live version (see :meth:`PostgresStore.commit`)."""
    documents = check_documents(list(documents), validate_collection_name(name), "the commit")
    if embeddings is not None:
        embeddings = np.asarray(embeddings, dtype=np.float32)
        if embeddings.shape[0] != len(chunks):
            raise ValueError(f"{embeddings.shape[0]} embeddings for {len(chunks)} chunks")
        if dense_mask is None:
            dense_mask = np.ones(len(chunks), dtype=bool)
        if not np.isfinite(embeddings[dense_mask]).all():
            raise ValueError("refusing to store embeddings that hold NaN or infinite values")
    groups, grouped = group_chunks(documents, chunks, name)
    progress = {"commit_sent": False}
    with store.writing(name):
        files = {}
        if chunks:  # fitted once here, as the folder store does, so readers need not fit it again
            files = lexical_state_bytes(fit_lexical(chunks, store.read_settings(name)))
        try:
            version, inserted = _write_version(store.engine, name, documents, chunks, groups, grouped, embeddings,
                                               dense_mask, new_files, files, progress)
        except StoreConnectionError as exc:
            if progress["commit_sent"]:
                raise StoreConnectionError(
                    f"{str(exc).rstrip('.')}. The connection was lost while collection {name!r}'s new version was "
                    f"being committed: it may have landed; `rag-core list {name}` tells once the store is back.") \
                    from None
            raise StoreConnectionError(f"{str(exc).rstrip('.')}. Nothing was committed to collection {name!r}.") \
                from None
    if inserted >= PG_ANALYZE_MIN_ROWS:
        analyze(store.engine)
    return version


def analyze(engine: Engine) -> None:
    """Fresh planner statistics after a large commit. Until autovacuum's next round (up to a
    minute), the planner thought the tables nearly empty: a 100k-chunk load_index ran a nested
    loop that scanned every chunk once per document (6 s a query, 17 s cold)."""
    try:
        with engine.connection() as conn:
            conn.execute("ANALYZE rag_core.documents, rag_core.chunks")
    except (psycopg.Error, StoreConnectionError) as exc:  # an optimisation: autovacuum refreshes them later
        log.warning("ANALYZE after a large commit failed: %s", exc)


def _write_version(engine: Engine, name: str, documents: list[dict], chunks: list[dict], groups: list[list[int]],
                   grouped: bool, embeddings: np.ndarray | None, dense_mask: np.ndarray | None,
                   new_files: dict[str, bytes], files: dict[str, bytes], progress: dict) -> tuple[str, int]:
    """The commit's transaction; returns the new version and how many chunk rows it wrote
    (``progress["commit_sent"]`` is set once every row is written and the COMMIT goes out)."""
    with engine.connection() as conn, conn.transaction():
        row = collection_row(conn, name, lock=True)
        key_model = model_key(collection_settings(row))
        stored = conn.execute(
            f"SELECT d.id, d.doc_id, d.digest, d.position FROM rag_core.documents d "
            f"WHERE d.collection_id = %(c)s AND {VISIBLE} ORDER BY d.position",
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
            wrote_vectors += _fill_kept_vectors(conn, keep, groups, embeddings, dense_mask)
        for n, doc in enumerate(documents):
            if n in keep:
                continue
            doc_chunks = [chunks[i] for i in groups[n]]
            texts = [c["text"] for c in doc_chunks]
            doc_row = conn.execute(
                "INSERT INTO rag_core.documents (collection_id, position, doc_id, source, sha256, record, digest, "
                "vector_key, n_chunks, added_in) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s) "
                "RETURNING id",
                (row.id, next_position, doc["doc_id"], doc["source"], doc["sha256"], dumps_for_pg(doc),
                 digests[n], vector_key(texts, key_model), len(doc_chunks), number)).fetchone()[0]
            next_position += 1
            dim, written = insert_chunks(conn, engine.vector_oid, row.id, doc_row, groups[n], chunks, order,
                                         embeddings, dense_mask, dim)
            wrote_vectors += written
        for sha, data in new_files.items():
            if not SHA_RE.fullmatch(sha) or hashlib.sha256(data).hexdigest() != sha:
                raise ValueError(f"the file given for {sha[:16]}... does not have that SHA-256")
            conn.execute(
                "INSERT INTO rag_core.files (collection_id, sha256, bytes, data) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (collection_id, sha256) DO NOTHING", (row.id, sha, len(data), data))
        generation = row.generation + (1 if wrote_vectors else 0)
        store_lexical_files(conn, row.id, number, files)
        conn.execute(
            "INSERT INTO rag_core.versions (collection_id, number, parent, created, documents, chunks, "
            "vectors_generation, lexical_of) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (row.id, number, row.live, time.time(), len(documents), len(chunks), generation,
             number if files else None))
        now = time.time()
        conn.execute(
            "UPDATE rag_core.collections SET live_version = %s, updated = %s, vectors_generation = %s, "
            "dim = %s WHERE id = %s", (number, now, generation, dim, row.id))
        prune(conn, row.id, number, row.live)
        progress["commit_sent"] = True  # leaving the block sends COMMIT: a connection lost now leaves it unknown
    return version_name(number), len(order)


def _fill_kept_vectors(conn: psycopg.Connection, keep: dict[int, int], groups: list[list[int]],
                       embeddings: np.ndarray, dense_mask: np.ndarray) -> int:
    """Vectors given for kept documents' chunks that the store does not have yet (one query)."""
    row_to_doc = {row_id: n for n, row_id in keep.items()}
    missing = conn.execute("SELECT document_id, seq FROM rag_core.chunks WHERE document_id = ANY(%s) "
                           "AND embedding IS NULL", (list(row_to_doc),)).fetchall()
    updates = []
    for row_id, seq in missing:
        positions = groups[row_to_doc[row_id]]
        if seq < len(positions) and dense_mask[positions[seq]]:
            updates.append((VectorParam(embeddings[positions[seq]]), row_id, seq))
    if updates:
        with conn.cursor() as cur:
            cur.executemany("UPDATE rag_core.chunks SET embedding = %b WHERE document_id = %s AND seq = %s",
                            updates)
    return len(updates)


def insert_chunks(conn: psycopg.Connection, vector_oid: int | None, collection_id: int, doc_row: int,
                  positions: list[int], chunks: list[dict], order: dict[int, int], embeddings: np.ndarray | None,
                  dense_mask: np.ndarray | None, dim: int | None) -> tuple[int | None, int]:
    """The chunk rows of one new document, by binary COPY (vectors travel as pgvector's binary)."""
    written = 0
    header = b""
    if embeddings is not None:
        if dim is not None and embeddings.shape[1] != dim and bool(np.any(dense_mask[positions])):
            raise ValueError(f"vectors of dimension {embeddings.shape[1]} for a collection of {dim}")
        header = np.array([embeddings.shape[1], 0], dtype=">u2").tobytes()
        big_endian = np.asarray(embeddings[positions], dtype=">f4")
    with conn.cursor() as cur:
        register_copy_dumpers(cur, vector_oid)
        with cur.copy("COPY rag_core.chunks (document_id, seq, collection_id, ord, text, escaped, meta, "
                      "embedding) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int4", "int8", "int8", "text", "bool", "jsonb", vector_oid])
            for seq, i in enumerate(positions):
                chunk = chunks[i]
                text, escaped = text_for_pg(chunk["text"])
                meta = dumps_for_pg({k: v for k, v in chunk.items() if k != "text"})
                vector = None
                if embeddings is not None and dense_mask[i]:
                    dim = int(embeddings.shape[1])
                    vector = header + big_endian[seq].tobytes()
                    written += 1
                copy.write_row((doc_row, seq, collection_id, order[i], text, escaped, meta, vector))
    return dim, written


def prune(conn: psycopg.Connection, collection_id: int, live: int, parent: int | None) -> None:
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


def _digest(record: dict, chunks: Sequence[dict]) -> str:
    """What decides whether a stored document row is still the document being committed."""
    digest = hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=True).encode())
    for chunk in chunks:
        digest.update(b"\0")
        digest.update(json.dumps(chunk, sort_keys=True, ensure_ascii=True).encode())
    return digest.hexdigest()


def group_chunks(documents: list[dict], chunks: list[dict], name: str) -> tuple[list[list[int]], bool]:
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
