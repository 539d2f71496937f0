"""The PostgreSQL store: :class:`PostgresStore` (see the package docstring for how versions
work), and its dense search through pgvector's HNSW index."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql

from rag_core.atomic import write_bytes_atomic
from rag_core.collections.store.base import (
    CheckReport,
    CollectionStore,
    EmbeddingStatus,
    PendingDocument,
    check_data_key,
    embedding_status_from,
    validate_collection_name,
)
from rag_core.collections.store.postgres import side_data
from rag_core.collections.store.postgres.cache import (
    LexicalIndex,
    build_lexical,
    build_lock,
    cached,
    lexical_cache,
    remember,
    vector_cache,
)
from rag_core.collections.store.postgres.check import check_collection
from rag_core.collections.store.postgres.codecs import RawVectorLoader, VectorParam, dumps_for_pg, loads_from_pg
from rag_core.collections.store.postgres.commit import commit_documents, prune
from rag_core.collections.store.postgres.connection import engine, is_postgres_url
from rag_core.collections.store.postgres.disk_copy import read_copy, stored_digests
from rag_core.collections.store.postgres.lazy_vectors import LazyVectors
from rag_core.collections.store.postgres.rows import (
    CollectionRow,
    chunk_rows_and_mask,
    collection_row,
    collection_settings,
    documents_at,
    load_vectors,
    stored_lexical_files,
    vector_mask,
)
from rag_core.collections.store.postgres.schema import (
    ANN_INDEX_RE,
    EMBEDDER_LOCK,
    SHA_RE,
    VECTOR_KEY_RE,
    VISIBLE,
    WRITER_LOCK,
    ann_index_name,
    lock_key,
    version_name,
)
from rag_core.errors import (
    CollectionBusyError,
    CollectionError,
    CollectionExistsError,
    CollectionNotFoundError,
)
from rag_core.index.build import RagIndex
from rag_core.settings import (
    LOCK_TIMEOUT_S,
    PG_ANN_EF_SEARCH,
    PG_ANN_MIN_CHUNKS,
    PG_INDEX_MEMORY,
    pg_file_cache_dir,
)

_SETTINGS_NOT_STORED = ("name", "format", "format_version", "created", "updated")


class PostgresRagIndex(RagIndex):
    """A :class:`RagIndex` that can also ask pgvector's HNSW index for the nearest chunks.

    ``dense_search(query, k)`` is an optional hook: retrieval may call it when a
    collection is too large to hold its vectors in every process.
    """

    def __init__(self, *args, store: PostgresStore | None = None, collection: str = "", lexical=None,
                 lazy: LazyVectors | None = None, **kwargs):
        # ``lazy``: the vectors are read when first needed (a collection with an HNSW index)
        self._lazy = lazy
        super().__init__(*args, **kwargs)
        self._store = store
        self._collection = collection
        self._lexical = lexical

    def __post_init__(self):
        if self._lazy is None:
            super().__post_init__()
        elif self.tfidf_matrix.shape[0] != len(self.chunks) or len(self._lazy.mask) != len(self.chunks):
            raise ValueError(f"{self.tfidf_matrix.shape[0]} TF-IDF rows and {len(self._lazy.mask)} vector flags "
                             f"for {len(self.chunks)} chunks")

    def __repr__(self) -> str:  # the dataclass's would read every vector
        return f"PostgresRagIndex(collection={self._collection!r}, chunks={len(self.chunks)})"

    @property
    def embeddings(self) -> np.ndarray | None:
        """The vectors of every chunk (read on first use where the collection has an HNSW index)."""
        if self.__dict__.get("_embeddings") is None and self._lazy is not None:
            self.__dict__["_embeddings"] = self._lazy.matrix()
        return self.__dict__.get("_embeddings")

    @embeddings.setter
    def embeddings(self, value) -> None:
        self.__dict__["_embeddings"] = value
        if value is not None:
            self._lazy = None

    @property
    def has_vectors(self) -> bool:
        return self._lazy is not None or self.__dict__.get("_embeddings") is not None

    def vectors_at(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        if self._lazy is not None and self.__dict__.get("_embeddings") is None:
            return self._lazy.rows(rows)
        return super().vectors_at(rows)

    def dense_search(self, query: str, k: int = 10, *, ef_search: int | None = None) -> list[tuple[int, float]]:
        """``[(chunk index, inner product)]`` of the ``k`` nearest chunks by pgvector (HNSW when built)."""
        vector = self.query_vector(query)  # by the encoder variant that made the stored vectors
        return self._store.dense_search(self._collection, vector, k, lexical=self._lexical, ef_search=ef_search)


class PgAnn:
    """The dense top-k of a collection through its pgvector HNSW index, in the shape of
    :class:`rag_core.index.ann.AnnIndex` (``search(vector, k) -> (rows, cosines)``): hybrid
    search's dense stage asks it for candidates and orders them by exact cosines
    (:meth:`RagIndex.dense_top`), so no product over every vector is computed in process."""

    exact_scores = True  # its inner products are of the stored float32 vectors: no overfetch needed

    def __init__(self, store: PostgresStore, row: CollectionRow, lexical, size: int,
                 vectors: LazyVectors | None = None):
        self._store, self._row, self._lexical, self._size = store, row, lexical, size
        self._vectors = vectors  # not read yet: the candidates' vectors come with them

    def __len__(self) -> int:
        return self._size

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        lazy = self._vectors is not None and not self._vectors.loaded
        found = self._store.nearest_in_version(self._row, query, k, self._lexical, with_vectors=lazy)
        rows = np.fromiter((f[0] for f in found), dtype=np.int64, count=len(found))
        if lazy:
            self._vectors.remember(rows, [f[2] for f in found])
        return rows, np.fromiter((f[1] for f in found), dtype=np.float32, count=len(found))


class PostgresStore(CollectionStore):
    """Collections in a PostgreSQL database with pgvector (see the package docstring)."""

    kind = "postgresql"

    def __init__(self, url: str):
        if not is_postgres_url(url):
            raise CollectionError("A PostgreSQL store needs a postgresql:// URL.")
        self.url = url
        self.engine = engine(url)

    @property
    def location(self) -> str:
        return self.engine.masked

    def __repr__(self) -> str:
        return f"PostgresStore({self.location!r})"

    def close(self) -> None:
        self.engine.close()

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection]:
        """A connection in a read-only transaction that sees one snapshot throughout."""
        with self.engine.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield conn

    def _row(self, name: str) -> CollectionRow:
        with self.engine.connection() as conn:
            return collection_row(conn, name)

    # ---------------------------------------------------------------- names
    def names(self) -> list[str]:
        with self.engine.connection() as conn:
            return sorted(r[0] for r in conn.execute("SELECT name FROM rag_core.collections"))

    def _clash(self, conn, name: str, *, other_than: int | None = None) -> str | None:
        row = conn.execute("SELECT name FROM rag_core.collections WHERE name_key = %s AND id IS DISTINCT FROM %s",
                           (name.casefold(), other_than)).fetchone()
        return None if row is None else row[0]

    def create(self, name: str, settings: dict) -> str:
        stored = validate_collection_name(name)
        now = time.time()
        kept = {k: v for k, v in settings.items() if k not in _SETTINGS_NOT_STORED}
        with self.engine.connection() as conn:
            clash = self._clash(conn, stored)
            if clash:
                raise CollectionExistsError(f"A collection named {clash!r} already exists.")
            try:
                conn.execute(
                    "INSERT INTO rag_core.collections (name, name_key, settings, created, updated) "
                    "VALUES (%s, %s, %s::jsonb, %s, %s)", (stored, stored.casefold(), dumps_for_pg(kept), now, now))
            except psycopg.errors.UniqueViolation:
                clash = self._clash(conn, stored) or stored
                raise CollectionExistsError(f"A collection named {clash!r} already exists.") from None
        return stored

    def rename(self, old: str, new: str) -> str:
        target = validate_collection_name(new)
        with self.engine.connection() as conn:
            source = collection_row(conn, old)
            clash = self._clash(conn, target, other_than=source.id)
            if clash:
                raise CollectionExistsError(f"A collection named {clash!r} already exists.")
        with self.writing(source.name), self.engine.connection() as conn:
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
        with self.engine.connection() as conn:
            row = collection_row(conn, name)
            with conn.transaction():
                conn.execute("DELETE FROM rag_core.collections WHERE id = %s", (row.id,))
            for (index,) in conn.execute(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = 'rag_core' AND c.relkind = 'i' AND c.relname LIKE %s",
                    (f"chunks_hnsw_c{int(row.id)}_d%",)).fetchall():
                if ANN_INDEX_RE.fullmatch(index):
                    conn.execute(sql.SQL("DROP INDEX IF EXISTS rag_core.{}").format(sql.Identifier(index)))

    # ---------------------------------------------------------------- reading
    def read_settings(self, name: str) -> dict:
        return collection_settings(self._row(name))

    def current_version(self, name: str) -> str | None:
        return version_name(self._row(name).live)

    def read_documents(self, name: str) -> list[dict]:
        with self._read() as conn:
            row = collection_row(conn, name)
            return documents_at(conn, row, row.live)

    def index_token(self, name: str) -> str:
        row = self._row(name)
        return f"pg:{row.id}:{version_name(row.live)}:{row.generation}"

    def _cache_key(self, row: CollectionRow) -> tuple:
        """Versions that share their chunks (a fold-in of vectors) share one lexical index."""
        return (self.url, row.id, row.lexical_of if row.lexical_of is not None else ("v", row.live))

    def load_index(self, name: str) -> RagIndex | None:
        """The live version's index, built once per version and process (TF-IDF and BM25 as the
        folder store builds them), with the vectors written so far. Shared: treat it as read-only."""
        with self._read() as conn:  # one snapshot: the chunks and vectors of one version
            row = collection_row(conn, name)
            if row.live is None:
                return None
            key = self._cache_key(row)
            lexical = cached(lexical_cache, key)
            rows = files = state = digests = mask = None
            vkey = (*key, row.generation)
            vectors = cached(vector_cache, vkey)
            graph = row.dim is not None and _valid_ann_index(conn, ann_index_name(row.id, row.dim))
            # with an HNSW index the vectors are read when first needed (LazyVectors): a search
            # reads a few by key (issue 21: reading all of them was half of a cold load)
            if isinstance(vectors, LazyVectors) and not graph:
                vectors = None  # the HNSW index is gone since: read them all
            lazy = graph and vectors is None
            beside = None
            if vectors is None and lexical is None and row.dim is not None and not lazy:
                # the vectors read on a second connection in this same snapshot, while this one
                # reads the chunks (issue 21: a cold load at 100k chunks read them one after the other)
                beside = _Beside(self._vectors_in_snapshot, conn.execute("SELECT pg_export_snapshot()").fetchone()[0],
                                 row)
            try:
                if lexical is None:
                    rows, mask = chunk_rows_and_mask(conn, row, row.live)
                    # the stored TF-IDF/BM25 from this machine's disk copy when it has one (by checksum)
                    digests = stored_digests(conn, row.id, row.lexical_of)
                    state = read_copy(digests, n_chunks=len(rows))
                    if state is None:
                        files = stored_lexical_files(conn, row)
            finally:
                if beside is not None:
                    vectors = beside.result()  # before this snapshot's transaction ends
            if vectors is None and lazy and mask is None:
                mask = vector_mask(conn, row, row.live)
            elif vectors is None and not lazy:
                vectors = load_vectors(conn, row, row.live, self.engine.vector_oid)
        if lexical is None:
            if not rows:
                return None
            with build_lock(key):
                lexical = cached(lexical_cache, key)
                if lexical is None:
                    lexical = build_lexical(row.name, collection_settings(row), rows, files, state=state,
                                            digests=digests)
                    remember(lexical_cache, key, lexical)
        if vectors is None and lazy:
            vectors = LazyVectors(self, row, mask, lexical.row_keys) if mask.any() else (None, mask)
        remember(vector_cache, vkey, vectors)
        proto = lexical.index
        common = {
            "chunks": proto.chunks, "vectorizer": proto.tfidf_model, "matrix": proto.tfidf_matrix,
            "embedding_model": proto.embedding_model, "chunk_size": proto.chunk_size, "overlap": proto.overlap,
            "bm25": proto.bm25, "_tfidf_scorer": proto._tfidf_scorer, "store": self, "collection": row.name,
            "lexical": lexical,
        }
        if isinstance(vectors, LazyVectors):
            return PostgresRagIndex(**common, lazy=vectors, dense_mask=None if vectors.mask.all() else vectors.mask,
                                    encoder=collection_settings(row)["encoder"],
                                    ann=PgAnn(self, row, lexical, len(proto.chunks), vectors))
        embeddings, mask = vectors
        return PostgresRagIndex(
            **common, embeddings=embeddings, dense_mask=None if embeddings is None or mask.all() else mask,
            encoder=collection_settings(row)["encoder"] if embeddings is not None else None,
            # the collection's HNSW index answers the dense stage of hybrid search (issue 21)
            ann=PgAnn(self, row, lexical, len(proto.chunks)) if graph and embeddings is not None else None,
        )

    def _vectors_in_snapshot(self, snapshot: str, row: CollectionRow) -> tuple[np.ndarray | None, np.ndarray]:
        """:func:`load_vectors` in the snapshot another transaction exported."""
        with self.engine.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
            return load_vectors(conn, row, row.live, self.engine.vector_oid)

    def read_pdf(self, name: str, sha256: str) -> bytes | None:
        if not SHA_RE.fullmatch(sha256 or ""):
            return None
        with self.engine.connection() as conn:
            row = collection_row(conn, name)
            found = conn.execute("SELECT data FROM rag_core.files WHERE collection_id = %s AND sha256 = %s",
                                 (row.id, sha256)).fetchone()
        return None if found is None else bytes(found[0])

    def pdf_path(self, name: str, sha256: str) -> Path | None:
        """The original file copied into a local cache folder (page images need a path)."""
        if not SHA_RE.fullmatch(sha256 or ""):
            return None
        folder = pg_file_cache_dir()
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
        row = self._row(name)
        held = self.engine.held()
        if row.id in held:  # this thread holds it already: nested use is fine
            held[row.id][1] += 1
            try:
                yield
            finally:
                held[row.id][1] -= 1
            return
        with self.engine.connection() as conn:
            try:
                conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{LOCK_TIMEOUT_S}s",))
                conn.execute("SELECT pg_advisory_lock(%s, %s)", (WRITER_LOCK, lock_key(row.id)))
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
                    conn.execute("SELECT pg_advisory_unlock(%s, %s)", (WRITER_LOCK, lock_key(row.id)))
                except psycopg.Error:
                    conn.close()  # the session ends, and its lock with it

    def write_settings(self, name: str, settings: dict) -> None:
        kept = {k: v for k, v in settings.items() if k not in _SETTINGS_NOT_STORED}
        with self.engine.connection() as conn:
            row = collection_row(conn, name)
            conn.execute("UPDATE rag_core.collections SET settings = %s::jsonb, updated = %s WHERE id = %s",
                         (dumps_for_pg(kept), float(settings.get("updated") or time.time()), row.id))

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
        return commit_documents(self, name, documents=documents, chunks=chunks, embeddings=embeddings,
                                dense_mask=dense_mask, new_files=new_files)

    # ---------------------------------------------------------------- vectors filled in behind
    def pending_vectors(self, name: str) -> list[PendingDocument]:
        """Read from the rows (no index is loaded)."""
        with self._read() as conn:
            row = collection_row(conn, name)
            if row.live is None:
                return []
            docs = conn.execute(
                "SELECT d.id, d.doc_id, d.source, d.vector_key FROM rag_core.documents d "
                f"WHERE d.collection_id = %(c)s AND {VISIBLE} AND EXISTS (SELECT 1 FROM rag_core.chunks c "
                "WHERE c.document_id = d.id AND c.embedding IS NULL) ORDER BY d.position",
                {"c": row.id, "v": row.live}).fetchall()
            out = []
            for doc_row, doc_id, source, key in docs:
                texts = tuple(json.loads(t) if e else t for t, e in conn.execute(
                    "SELECT text, escaped FROM rag_core.chunks WHERE document_id = %s ORDER BY seq", (doc_row,)))
                out.append(PendingDocument(doc_id, source, key, texts))
        return out

    def write_vectors(self, name: str, key: str, vectors: np.ndarray) -> None:
        if not VECTOR_KEY_RE.fullmatch(key or ""):
            raise ValueError(f"not a vector key: {key!r}")
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or not np.isfinite(vectors).all():
            raise ValueError("vectors must be a finite 2-D float matrix")
        with self.engine.connection() as conn, conn.transaction():
            row = collection_row(conn, name, lock=True)
            if row.dim is not None and vectors.shape[1] != row.dim:
                raise ValueError(f"vectors of dimension {vectors.shape[1]} for a collection of {row.dim}")
            targets = conn.execute(
                "SELECT id, n_chunks FROM rag_core.documents WHERE collection_id = %s AND vector_key = %s",
                (row.id, key)).fetchall()
            updates = []
            for doc_row, n_chunks in targets:
                if n_chunks != len(vectors):
                    raise ValueError(f"{len(vectors)} vectors for a document of {n_chunks} chunks")
                updates += [(VectorParam(vectors[seq]), doc_row, seq) for seq in range(n_chunks)]
            if not updates:
                return  # the document left the collection meanwhile
            with conn.cursor() as cur:
                cur.executemany("UPDATE rag_core.chunks SET embedding = %b WHERE document_id = %s AND seq = %s",
                                updates)
            conn.execute("UPDATE rag_core.collections SET vectors_generation = vectors_generation + 1, dim = %s "
                         "WHERE id = %s", (int(vectors.shape[1]), row.id))

    def fold_in_vectors(self, name: str) -> str | None:
        """A new version when vectors were written since the live one was made (no rows are copied)."""
        with self.writing(name), self.engine.connection() as conn, conn.transaction():
            row = collection_row(conn, name, lock=True)
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
            prune(conn, row.id, number, row.live)
        # outside the writer lock: at 100k vectors the build takes minutes, and commits go on meanwhile
        self.ensure_ann_index(name)
        return version_name(number)

    @contextmanager
    def embedding_slot(self, name: str) -> Iterator[bool]:
        with self.engine.connection() as conn:
            row = collection_row(conn, name)
            got = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (EMBEDDER_LOCK, lock_key(row.id))).fetchone()[0]
            if got:
                self.engine.slots[row.id] = conn.info.backend_pid
            try:
                yield bool(got)
            finally:
                if got:
                    self.engine.slots.pop(row.id, None)
                    try:
                        conn.execute("SELECT pg_advisory_unlock(%s, %s)", (EMBEDDER_LOCK, lock_key(row.id)))
                    except psycopg.Error:
                        conn.close()

    def write_embedding_progress(self, name: str, progress: dict) -> None:
        """The record names the database session holding the embedder's slot, so a status can
        tell this run from one that died (its session, and its slot, ended with it)."""
        now = time.time()
        with self.engine.connection() as conn:
            row = collection_row(conn, name)
            value = {**progress, "pid": os.getpid(), "host": socket.gethostname(), "updated": now,
                     "slot_session": self.engine.slots.get(row.id)}
            conn.execute(
                "INSERT INTO rag_core.embedding_progress (collection_id, progress, updated) VALUES (%s, %s::jsonb, %s) "
                "ON CONFLICT (collection_id) DO UPDATE SET progress = EXCLUDED.progress, updated = EXCLUDED.updated",
                (row.id, dumps_for_pg(value), now))

    def embedding_status(self, name: str) -> EmbeddingStatus:
        """Counted from the live version's chunk rows; the run is alive while the session its
        record names holds the embedder's slot."""
        try:
            with self._read() as conn:
                row = collection_row(conn, name)
                if row.live is None:
                    return EmbeddingStatus(0, 0)
                total, written = conn.execute(
                    "SELECT count(*), count(c.embedding) FROM rag_core.chunks c JOIN rag_core.documents d "
                    f"ON d.id = c.document_id WHERE c.collection_id = %(c)s AND {VISIBLE}",
                    {"c": row.id, "v": row.live}).fetchone()
                found = conn.execute("SELECT progress FROM rag_core.embedding_progress WHERE collection_id = %s",
                                     (row.id,)).fetchone()
                progress = loads_from_pg(found[0]) if found else {}
                session = progress.get("slot_session") if isinstance(progress, dict) else None
                alive = conn.execute(
                    "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::oid "
                    "AND objid = %s::oid AND objsubid = 2 AND granted AND (%s::int IS NULL OR pid = %s::int)",
                    (EMBEDDER_LOCK, lock_key(row.id), session if isinstance(session, int) else None,
                     session if isinstance(session, int) else None)).fetchone() is not None
        except CollectionNotFoundError:
            raise
        except CollectionError as exc:
            return EmbeddingStatus(0, 0, error=str(exc))
        return embedding_status_from(progress, total=int(total), written=int(written), embedder_alive=alive)

    # ---------------------------------------------------------------- dense search through pgvector
    def ensure_ann_index(self, name: str, *, min_chunks: int | None = None) -> bool:
        """Build the collection's HNSW index (inner product) once it has ``min_chunks`` vectors
        (default PG_ANN_MIN_CHUNKS).

        Built CONCURRENTLY, so commits to this and other collections go on meanwhile.
        Returns whether the index exists.
        """
        threshold = PG_ANN_MIN_CHUNKS if min_chunks is None else min_chunks
        with self.engine.connection() as conn:
            row = collection_row(conn, name)
            if row.dim is None:
                return False
            index = ann_index_name(row.id, row.dim)
            valid = _ann_index_state(conn, index)
            if valid:
                return True
            count = conn.execute("SELECT count(embedding) FROM rag_core.chunks WHERE collection_id = %s",
                                 (row.id,)).fetchone()[0]
            if count < threshold:
                return False
            if valid is False:  # an interrupted build left an invalid index
                conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS rag_core.{}").format(sql.Identifier(index)))
            conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (PG_INDEX_MEMORY,))
            conn.execute(sql.SQL(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS {} ON rag_core.chunks USING hnsw "
                "((embedding::vector({})) vector_ip_ops) WHERE collection_id = {}"
            ).format(sql.Identifier(index), sql.Literal(int(row.dim)), sql.Literal(int(row.id))))
            conn.execute("RESET maintenance_work_mem")
            conn.execute("ANALYZE rag_core.chunks")
            return True

    def dense_search(self, name: str, vector: np.ndarray, k: int = 10, *, lexical: LexicalIndex | None = None,
                     ef_search: int | None = None, exact: bool = False, explain: bool = False):
        """The ``k`` live chunks nearest to ``vector`` by inner product, through the collection's
        HNSW index when it has one (``exact=True``: a full scan). Returns ``[(chunk index, score)]``,
        the chunk index being the position in :meth:`load_index`'s chunks (``explain=True``: the
        query plan's lines instead)."""
        vector = np.asarray(vector, dtype=np.float32).ravel()
        with self.engine.connection() as conn, conn.transaction():
            row = collection_row(conn, name)
            if row.live is None or row.dim is None:
                return []
            found = _nearest(conn, row.id, row.dim, row.live, vector, k, ef_search=ef_search, exact=exact,
                             explain=explain)
        if explain:
            return found
        if lexical is None:  # positions in the live version's index (a caller's older index: in that one)
            self.load_index(name)
            lexical = cached(lexical_cache, self._cache_key(row))
        positions = lexical.positions
        return [(positions[(doc, seq)], float(score)) for doc, seq, score in found if (doc, seq) in positions]

    def nearest_in_version(self, row: CollectionRow, vector: np.ndarray, k: int,
                           lexical: LexicalIndex, *, with_vectors: bool = False) -> list[tuple]:
        """:meth:`dense_search` for the version a loaded index was read from (``row``: the
        collection's row then): its documents' rows only, with no look-up of the collection.
        ``with_vectors``: ``(chunk index, score, vector bytes)``."""
        vector = np.asarray(vector, dtype=np.float32).ravel()
        # pipelined: the transaction's start, its settings and the query go in one round trip
        with self.engine.connection() as conn, conn.pipeline(), conn.transaction():
            found = _nearest(conn, row.id, row.dim, row.live, vector, k, vector_oid=self.engine.vector_oid,
                             with_vectors=with_vectors)
        positions = lexical.positions
        return [(positions[(doc, seq)], float(score), *rest) for doc, seq, score, *rest in found
                if (doc, seq) in positions]

    # ---------------------------------------------------------------- side data
    def read_data(self, name: str, key: str):
        check_data_key(key)
        with self._read() as conn:
            return side_data.read(conn, collection_row(conn, name), key)

    def write_data(self, name: str, key: str, value) -> None:
        check_data_key(key)
        with self.engine.connection() as conn:
            side_data.write(conn, collection_row(conn, name), key, value)

    def data_token(self, name: str, key: str) -> str:
        check_data_key(key)
        with self._read() as conn:
            return side_data.token(conn, collection_row(conn, name), key)

    def list_data(self, name: str, prefix: str = "") -> list[str]:
        with self._read() as conn:
            keys = side_data.keys(conn, collection_row(conn, name))
        return [k for k in keys if k.startswith(prefix)]

    # ---------------------------------------------------------------- integrity
    def check(self, name: str, *, repair: bool = False) -> CheckReport:
        """Every part checked (see :mod:`.check`); nothing here needs the stored originals to
        repair, so ``rebuild`` stays None."""
        if repair:
            with self.writing(name):
                return check_collection(self, name, repair=True)
        return check_collection(self, name, repair=False)


def _ann_index_state(conn: psycopg.Connection, index: str) -> bool | None:
    """Whether the HNSW index ``index`` is valid (None: there is none)."""
    found = conn.execute(
        "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'rag_core' AND c.relname = %s",
        (index,)).fetchone()
    return None if found is None else bool(found[0])


def _valid_ann_index(conn: psycopg.Connection, index: str) -> bool:
    return _ann_index_state(conn, index) is True


def _nearest(conn: psycopg.Connection, collection_id: int, dim: int, version: int, vector: np.ndarray, k: int, *,
             ef_search: int | None = None, exact: bool = False, explain: bool = False,
             vector_oid: int | None = None, with_vectors: bool = False) -> list:
    """``[(document row, seq, inner product)]`` of the ``k`` rows of ``version`` nearest to
    ``vector``, in the caller's transaction (two round trips: the settings, the query);
    ``with_vectors``: ``(document row, seq, inner product, vector bytes)``, pgvector's binary
    form (a search needs its candidates' vectors: one round trip fewer than asking after)."""
    if vector.size != dim:
        raise ValueError(f"a query vector of dimension {vector.size} for a collection of {dim}")
    k = max(int(k), 1)
    fetch = 2 * k + 20  # rows of documents the version does not hold are dropped after
    # exact: no index scan; else steer the planner to the HNSW index when there is one (it is
    # the only ordered path left)
    off = ("enable_indexscan",) if exact else ("enable_seqscan", "enable_bitmapscan")
    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)" + "".join(
        f", set_config('{name}', 'off', true)" for name in off), (str(int(ef_search or max(PG_ANN_EF_SEARCH, fetch))),))
    # The nearest rows of the collection come first, from its partial HNSW index (the
    # collection id and the dimension are integers from our own table, written as
    # literals so the planner can match that index); then only the version's.
    extra = ", n.embedding" if with_vectors else ""
    query = sql.SQL(
        "SELECT n.document_id, n.seq, -n.distance" + extra + " FROM ("
        " SELECT c.document_id, c.seq, c.embedding, (c.embedding::vector({dim})) <#> %(q)b::vector({dim}) AS distance"
        " FROM rag_core.chunks c WHERE c.collection_id = {cid} AND c.embedding IS NOT NULL"
        " ORDER BY (c.embedding::vector({dim})) <#> %(q)b::vector({dim}) LIMIT %(fetch)s) n "
        "JOIN rag_core.documents d ON d.id = n.document_id "
        "WHERE " + VISIBLE.replace("%(v)s", "{live}") + " ORDER BY n.distance LIMIT %(k)s"
    ).format(dim=sql.Literal(int(dim)), cid=sql.Literal(int(collection_id)), live=sql.Literal(int(version)))
    params = {"q": VectorParam(vector), "k": k, "fetch": fetch}
    if explain:
        return [r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + query, params)]
    if not with_vectors:
        return conn.execute(query, params).fetchall()
    with conn.cursor(binary=True) as cur:
        if vector_oid is not None:
            cur.adapters.register_loader(vector_oid, RawVectorLoader)
        return cur.execute(query, params).fetchall()


class _Beside:
    """``fn(*args)`` in a thread of its own; :meth:`result` waits for it (and raises what it raised)."""

    def __init__(self, fn, *args):
        self._value = self._error = None
        self._thread = threading.Thread(target=self._run, args=(fn, *args), name="rag-core-pg-vectors", daemon=True)
        self._thread.start()

    def _run(self, fn, *args) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self._error = exc

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
