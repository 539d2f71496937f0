"""The shared store: collections in PostgreSQL, dense vectors in pgvector.

Chosen with ``RAG_CORE_STORE=postgresql://...`` (or ``--store`` on the command line).
Several app instances and command lines can use one database at once; see the README
for the privileges the role needs. The modules, bottom-up:

* :mod:`.schema` -- the tables (listed there), made once per database, and the SQL pieces
  and advisory-lock names the others share;
* :mod:`.connection` -- the URL (masked wherever it is shown) and one pool per database
  and process;
* :mod:`.codecs` -- what PostgreSQL cannot hold as given (NUL characters, lone surrogates,
  NaN) escaped and back, and vectors in pgvector's binary format;
* :mod:`.rows` -- reading a collection's rows (settings, documents, chunks, vectors, the
  stored TF-IDF/BM25 files), shared by the store and its check;
* :mod:`.cache` -- each process's cache of fitted lexical indexes and vectors per version;
* :mod:`.commit` -- the one transaction that makes a new version;
* :mod:`.side_data` -- the relevance lab's side data as committed, checksummed generations;
* :mod:`.store` -- :class:`~.store.PostgresStore`, and its dense search through pgvector;
* :mod:`.check` -- check and repair.

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
a damaged one, is fitted in-process from the chunks instead). Dense search is exact (vectors
loaded into the :class:`~rag_core.index.build.RagIndex`);
:meth:`~.store.PostgresStore.dense_search` offers pgvector's HNSW index for collections
large enough to have one.
"""

try:  # here, so that whichever module is imported first says what is missing
    import psycopg  # noqa: F401
    import psycopg_pool  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        f"the PostgreSQL store needs psycopg and psycopg-pool: pip install 'rag_core[postgres]' ({exc})"
    ) from None
