"""Where indexes and collections are stored.

* :mod:`.index_files` -- one index as a folder of explicit files (``save_index`` /
  ``load_index``), never pickle; :mod:`.legacy` reads the old tool's pickles, under trust.
* :mod:`.base` -- the :class:`CollectionStore` interface every backend implements.
* :mod:`.folder` -- the embedded default: a folder per collection.

:func:`open_store` picks the backend from a location: a folder path, or a
``postgresql://`` URL.
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
            from rag_core.collections.store.postgres import PostgresStore
        except ImportError as exc:
            raise ImportError(f"The PostgreSQL store is not available in this installation ({exc}).") from None
        return PostgresStore(text)
    from rag_core.collections.store.folder import FolderStore

    return FolderStore(text)
