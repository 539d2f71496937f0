"""Memory-mapped index files that do not stay in a query process's resident memory.

A search that touches a few rows of a mapped file, or scans one once, leaves those pages
mapped into the process, and the kernel maps page-cache pages in large folios (up to
megabytes a fault): 128 vector rows re-ranked in a 150 MB segment made 90 MB of it resident.
Over a million passages the query process's RSS then grew past 4.8 GB of clean file pages.

* :func:`read_rows` reads the rows a search needs with ``pread`` from the array's file
  (nothing mapped; the page cache still serves them), falling back to indexing the array.
* :func:`release` drops a mapping's resident pages after a full scan (``MADV_DONTNEED``: the
  file is read-only, its data stays in the page cache, the next access maps it again).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
import weakref

import numpy as np

# a few rows are read one by one; more than this share of the array is read through the mapping
_PREAD_MAX_SHARE = 0.05
_files: dict[int, int] = {}  # id of a mapped array -> its open file, closed when the array goes
_lock = threading.Lock()


def _mapping(array: np.ndarray) -> mmap.mmap | None:
    """The mmap behind ``array`` when it is a whole memory-mapped ``.npy``/``.bin`` file (not a view)."""
    if isinstance(array, np.memmap) and isinstance(array.base, mmap.mmap):
        return array.base
    return None


def _descriptor(array: np.memmap) -> int | None:
    """An open descriptor of the array's file, kept as long as the array (a store may remove the
    path of an old version while a process still searches it: the open file stays readable)."""
    key = id(array)
    with _lock:
        fd = _files.get(key)
        if fd is None and getattr(array, "filename", None):
            try:
                fd = os.open(array.filename, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                return None
            _files[key] = fd
            weakref.finalize(array, _forget, key, fd)
        return fd


def _forget(key: int, fd: int) -> None:
    with _lock:
        if _files.get(key) == fd:
            del _files[key]
    os.close(fd)


def read_rows(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``array[rows]`` for a 2-D C-ordered array, read without mapping the rows when ``array``
    is a whole memory-mapped file and ``rows`` are a few of its rows."""
    rows = np.asarray(rows, dtype=np.int64)
    if (_mapping(array) is None or array.ndim != 2 or not array.flags.c_contiguous or not len(rows)
            or len(rows) > _PREAD_MAX_SHARE * len(array) or rows.min() < 0 or rows.max() >= len(array)):
        return np.asarray(array[rows])
    fd = _descriptor(array)
    if fd is None:
        return np.asarray(array[rows])
    row_bytes = array.shape[1] * array.dtype.itemsize
    out = np.empty((len(rows), array.shape[1]), dtype=array.dtype)
    view = out.view(np.uint8).reshape(len(rows), row_bytes)
    base = int(array.offset)
    for i, row in enumerate(rows.tolist()):
        got = os.preadv(fd, [view[i]], base + row * row_bytes)
        if got != row_bytes:  # pragma: no cover - a file shorter than its header says
            return np.asarray(array[rows])
    return out


def release(array: np.ndarray) -> None:
    """Drop the resident pages of a whole memory-mapped array (no effect on other arrays)."""
    mapping = _mapping(array)
    if mapping is not None and hasattr(mapping, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
        with contextlib.suppress(OSError, ValueError):  # a platform without it: the pages stay
            mapping.madvise(mmap.MADV_DONTNEED)
