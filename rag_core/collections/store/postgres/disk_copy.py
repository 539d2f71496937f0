"""A machine's disk copies of the TF-IDF/BM25 files a PostgreSQL collection version stores, by
content: a process loading a version it has not loaded before finds the files on disk, named
by their checksums, and reads them memory-mapped instead of fetching them (160 MB at 100k
chunks). A copy is made whole in a temporary folder and renamed into place, so a folder that
exists is complete; the least recently used beyond PG_LEXICAL_DISK_ENTRIES are removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from pathlib import Path

import psycopg

from rag_core.collections.store.lexical_state import LexicalState, read_lexical_files, write_lexical_files
from rag_core.settings import PG_LEXICAL_DISK_ENTRIES, pg_lexical_cache_dir

log = logging.getLogger(__name__)
_STALE_TMP_S = 3600


def stored_digests(conn: psycopg.Connection, collection_id: int, version: int | None) -> dict[str, str] | None:
    """``{file name: sha256}`` of the stored TF-IDF/BM25 files of ``version`` (their data not read)."""
    if version is None:
        return None
    found = dict(conn.execute("SELECT DISTINCT name, sha256 FROM rag_core.lexical_files "
                              "WHERE collection_id = %s AND version = %s", (collection_id, version)).fetchall())
    return found or None


def _folder(digests: dict[str, str]) -> Path:
    key = hashlib.sha256(json.dumps(sorted(digests.items())).encode()).hexdigest()
    return pg_lexical_cache_dir() / key


def read_copy(digests: dict[str, str] | None, *, n_chunks: int) -> LexicalState | None:
    """The state from this machine's copy of the files ``digests`` names, or None (no copy, or a
    copy that cannot be read: removed, so the files are fetched again)."""
    if not digests:
        return None
    folder = _folder(digests)
    if not folder.is_dir():
        return None
    try:
        state = read_lexical_files(folder, digests, n_chunks=n_chunks, mmap=True)
        os.utime(folder)  # recently used
        return state
    except (KeyError, TypeError, ValueError, OSError) as exc:
        log.warning("a disk copy of stored TF-IDF/BM25 files could not be read (%s); fetching them again", exc)
        shutil.rmtree(folder, ignore_errors=True)
        return None


def keep_copy(files: dict[str, bytes], digests: dict[str, str] | None, *, n_chunks: int) -> LexicalState | None:
    """Write the fetched (and checked) ``files`` as this machine's copy and read them from it;
    None when that cannot be done here (the caller reads them from memory)."""
    if not digests or set(files) != set(digests):
        return None
    folder = _folder(digests)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        write_lexical_files(files, tmp)
        try:
            tmp.rename(folder)
        except OSError:  # another process made it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
        _prune(folder.parent)
        return read_lexical_files(folder, digests, n_chunks=n_chunks, mmap=True)
    except (OSError, ValueError) as exc:
        log.warning("no disk copy of stored TF-IDF/BM25 files (%s)", exc)
        shutil.rmtree(tmp, ignore_errors=True)
        return None


def _prune(root: Path) -> None:
    """Remove the least recently used copies beyond PG_LEXICAL_DISK_ENTRIES, and temporary
    folders a process left over an hour ago."""
    copies, now = [], time.time()
    for entry in root.iterdir():
        try:
            mtime = entry.stat().st_mtime
        except OSError:
            continue
        if entry.name.startswith("."):
            if now - mtime > _STALE_TMP_S:
                shutil.rmtree(entry, ignore_errors=True)
        elif entry.is_dir():
            copies.append((mtime, entry))
    for _, entry in sorted(copies, reverse=True)[PG_LEXICAL_DISK_ENTRIES:]:
        shutil.rmtree(entry, ignore_errors=True)  # a process that mapped its files keeps reading them
