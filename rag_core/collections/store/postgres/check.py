"""Check and repair of a PostgreSQL collection: settings, version records, document and chunk
counts, the originals' checksums, the stored TF-IDF/BM25, vector dimensions, rows of versions
that never became live, an HNSW index an interrupted build left invalid, and the side data
against its recorded checksums (:mod:`.side_data`)."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Protocol

import psycopg
from psycopg import sql

from rag_core.collections.store.base import CheckReport, check_documents, default_settings
from rag_core.collections.store.lexical_state import lexical_state_bytes
from rag_core.collections.store.postgres import side_data
from rag_core.collections.store.postgres.cache import fit_lexical, index_from_stored
from rag_core.collections.store.postgres.codecs import chunk_from_row, dumps_for_pg, loads_from_pg
from rag_core.collections.store.postgres.rows import (
    CollectionRow,
    chunk_rows,
    collection_row,
    collection_settings,
    store_lexical_files,
    stored_lexical_files,
)
from rag_core.collections.store.postgres.schema import VISIBLE, ann_index_name, version_name
from rag_core.errors import CollectionError

if TYPE_CHECKING:
    from rag_core.collections.store.postgres.connection import Engine


class PostgresStore(Protocol):
    """What the check uses of :class:`~rag_core.collections.store.postgres.store.PostgresStore`
    (named here, not imported: the store imports this module)."""

    engine: Engine


def check_collection(store: PostgresStore, name: str, *, repair: bool) -> CheckReport:
    """What :meth:`PostgresStore.check` reports (with ``repair``, the caller holds the writer lock)."""
    with store.engine.connection() as conn:
        row = collection_row(conn, name)
        report = CheckReport(name=row.name)
        _check_settings(conn, row, report, repair=repair)
        versions = [n for (n,) in conn.execute(
            "SELECT number FROM rag_core.versions WHERE collection_id = %s ORDER BY number DESC", (row.id,))]
        report.versions = [version_name(n) for n in versions]
        live = row.live
        if live is not None and live not in versions:
            report.problems.append(f"the live version {version_name(live)} has no version record")
            if repair:
                conn.execute(
                    "INSERT INTO rag_core.versions (collection_id, number, parent, created, documents, chunks, "
                    "vectors_generation, lexical_of) SELECT %(c)s, %(v)s, NULL, %(t)s, count(*), "
                    f"coalesce(sum(n_chunks), 0), %(g)s, %(v)s FROM rag_core.documents d "
                    f"WHERE d.collection_id = %(c)s AND {VISIBLE}",
                    {"c": row.id, "v": live, "t": time.time(), "g": row.generation})
                row = dataclasses.replace(row, lexical_of=live)
                _store_lexical_again(conn, row)
                report.repaired.append(f"wrote the record of version {version_name(live)} again, and its TF-IDF "
                                       "and BM25")
        report.version = version_name(live)
        if live is not None:
            _check_documents(conn, row, live, report)
        if row.lexical_of is not None:
            _check_lexical(conn, row, live, report, repair=repair)
        _check_rest(conn, row, live, report, repair=repair)
        side_data.check(conn, row, report, repair=repair)  # the relevance lab's judgments and snapshots
    return report


def _check_settings(conn: psycopg.Connection, row: CollectionRow, report: CheckReport, *, repair: bool) -> None:
    try:
        collection_settings(row)
    except CollectionError as exc:
        report.problems.append(str(exc))
        if repair:
            conn.execute("UPDATE rag_core.collections SET settings = %s::jsonb WHERE id = %s",
                         (dumps_for_pg(default_settings()), row.id))
            report.repaired.append("wrote the collection's settings again with default values")


def _check_documents(conn: psycopg.Connection, row: CollectionRow, live: int, report: CheckReport) -> None:
    """Each live document's record, its chunk rows and its original's checksum."""
    problem = report.problems.append
    docs = conn.execute(
        "SELECT d.id, d.source, d.sha256, d.n_chunks, d.record, "
        "(SELECT count(*) FROM rag_core.chunks c WHERE c.document_id = d.id), "
        "(SELECT count(*) FROM rag_core.chunks c "
        " WHERE c.document_id = d.id AND c.collection_id <> d.collection_id), "
        "(SELECT sha256(f.data) FROM rag_core.files f WHERE f.collection_id = d.collection_id "
        " AND f.sha256 = d.sha256) "
        f"FROM rag_core.documents d WHERE d.collection_id = %(c)s AND {VISIBLE} ORDER BY d.position",
        {"c": row.id, "v": live}).fetchall()
    try:
        check_documents([loads_from_pg(d[4]) for d in docs], row.name, f"version {version_name(live)}")
    except CollectionError as exc:
        problem(str(exc))
    for _doc_row, source, sha, n_chunks, record, count, foreign, file_digest in docs:
        record = loads_from_pg(record)
        if count != n_chunks or (isinstance(record, dict) and record.get("chunks", count) != count) or foreign:
            problem(f"document {source!r} has {count} stored chunks, its record says {n_chunks}")
        if file_digest is None:
            problem(f"the original of {source!r} is missing (page images cannot be shown)")
            report.originals[source] = "missing"
        elif bytes(file_digest).hex() != sha:
            problem(f"the original of {source!r} was altered (its checksum differs)")
            report.originals[source] = "altered"


def _check_lexical(conn: psycopg.Connection, row: CollectionRow, live: int | None, report: CheckReport, *,
                   repair: bool) -> None:
    """The stored TF-IDF/BM25 files load over the live chunks (old ones, written with the
    matrix by row, load too)."""
    files = stored_lexical_files(conn, row)
    usable = False
    if files:
        rows = chunk_rows(conn, row, live)
        try:
            index_from_stored(files, [chunk_from_row(t, e, m) for _d, _s, t, e, m in rows], collection_settings(row))
            usable = True
        except (KeyError, TypeError, ValueError, OSError, CollectionError):
            usable = False
    if not usable:
        report.problems.append(f"the stored TF-IDF/BM25 of version {version_name(row.lexical_of)} are damaged or "
                               "missing (each process fits them again, slowly)")
        if repair:
            _store_lexical_again(conn, row)
            report.repaired.append("fitted TF-IDF and BM25 again and stored them")


def _check_rest(conn: psycopg.Connection, row: CollectionRow, live: int | None, report: CheckReport, *,
                repair: bool) -> None:
    """Vector dimensions, rows of versions newer than the live one, an invalid HNSW index."""
    problem, fixed = report.problems.append, report.repaired.append
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
        index = ann_index_name(row.id, row.dim)
        invalid = conn.execute(
            "SELECT NOT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'rag_core' AND c.relname = %s",
            (index,)).fetchone()
        if invalid is not None and invalid[0]:
            problem("the HNSW index was left invalid by an interrupted build")
            if repair:
                conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS rag_core.{}").format(sql.Identifier(index)))
                fixed("removed the invalid HNSW index (it is built again after the next embedding)")


def _store_lexical_again(conn: psycopg.Connection, row: CollectionRow) -> None:
    """Fit TF-IDF and BM25 of the live version again and store them (repair)."""
    rows = chunk_rows(conn, row, row.live)
    if not rows:
        return
    files = lexical_state_bytes(fit_lexical([chunk_from_row(t, e, m) for _d, _s, t, e, m in rows],
                                            collection_settings(row)))
    with conn.transaction():
        conn.execute("DELETE FROM rag_core.lexical_files WHERE collection_id = %s AND version = %s",
                     (row.id, row.lexical_of))
        store_lexical_files(conn, row.id, row.lexical_of, files)
