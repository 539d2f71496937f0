"""Where indexes and collections are stored.

* :mod:`.index_files` -- one index as a folder of explicit files (``save_index`` /
  ``load_index``), never pickle, its TF-IDF and BM25 in the format of :mod:`.lexical_state`
  (which the PostgreSQL store keeps too); :mod:`.legacy` reads the old tool's pickles, under trust.
* :mod:`.base` -- the :class:`CollectionStore` interface every backend implements, and the
  rules and records they share.
* :mod:`.folder` -- the embedded default: a folder per collection.
* :mod:`.postgres` -- PostgreSQL with pgvector, for a library several processes share.
* :mod:`.copying` -- copy a collection between stores; :mod:`.local_server` -- ``rag-core serve-db``.

:func:`open_store` picks the backend from a location: a folder path, or a
``postgresql://`` URL. Nothing here imports the ingest pipeline: a repair that must re-read
the stored PDFs is done above, by :mod:`rag_core.collections.repair`.
"""

from __future__ import annotations

import os

from rag_core.collections.store.base import CollectionStore
from rag_core.collections.store.index_files import load_index, save_index, verify_index_files, write_index_files
from rag_core.errors import IndexFormatError, UnsafeIndexError

__all__ = [
    "CollectionStore", "IndexFormatError", "UnsafeIndexError", "load_index", "open_store", "save_index",
    "verify_index_files", "write_index_files",
]


def open_store(location: str | os.PathLike) -> CollectionStore:
    """The store at ``location``: a ``postgresql://`` URL, or a data folder."""
    text = os.fspath(location)
    if isinstance(text, str) and text.startswith(("postgresql://", "postgres://")):
        try:
            from rag_core.collections.store.postgres.store import PostgresStore
        except ImportError as exc:
            raise ImportError(f"The PostgreSQL store is not available in this installation ({exc}).") from None
        return PostgresStore(text)
    from rag_core.collections.store.folder.store import FolderStore

    return FolderStore(text)
