"""Dense vectors filled in behind, in a collection folder: the vector files written since the
last version (one per document, named by its content address), how they overlay the stored
index until they are folded in, and the embedder's progress record."""

from __future__ import annotations

import io
import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag_core.atomic import write_bytes_atomic, write_json_atomic
from rag_core.collections.store.base import document_rows, pending_documents
from rag_core.collections.store.folder.layout import PROGRESS_FILE, VECTOR_RE

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex

_KEY_RE = re.compile(r"[0-9a-f]{32}")


def write_vector_file(path: Path, key: str, vectors: np.ndarray) -> None:
    """Keep one pending document's vectors in ``vectors/<key>.npy`` (atomically)."""
    if not _KEY_RE.fullmatch(key):
        raise ValueError(f"not a vector key: {key!r}")
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or not np.isfinite(vectors).all():
        raise ValueError("vectors must be a finite 2-D float matrix")
    folder = path / "vectors"
    folder.mkdir(exist_ok=True)
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    write_bytes_atomic(folder / f"{key}.npy", buffer.getvalue())


def written_keys(path: Path) -> list[str]:
    """The names of the vector files written since the last version, sorted."""
    folder = path / "vectors"
    return sorted(p.name for p in folder.iterdir() if VECTOR_RE.fullmatch(p.name)) if folder.is_dir() else []


def rows_written(path: Path) -> int:
    """Vectors in files written since the last version (read from the .npy headers only)."""
    rows = 0
    for name in written_keys(path):
        try:
            rows += int(np.load(path / "vectors" / name, mmap_mode="r", allow_pickle=False).shape[0])
        except (OSError, ValueError):
            continue
    return rows


def overlay(path: Path, index: RagIndex, documents: list[dict], key: str) -> RagIndex:
    """``index`` with the rows still missing a vector filled from the vector files written since."""
    pending = pending_documents(index, documents, key)
    found = [(p, path / "vectors" / f"{p.key}.npy") for p in pending]
    found = [(p, f) for p, f in found if f.is_file()]
    if not found:
        return index
    dim = None if index.embeddings is None else index.embeddings.shape[1]
    vectors_by_doc = {}
    for p, f in found:
        try:
            vectors = np.load(f, allow_pickle=False)
        except (OSError, ValueError):
            continue  # being replaced, or damaged: the embedder writes it again
        if vectors.ndim != 2 or len(vectors) != len(p.texts) or (dim and vectors.shape[1] != dim) \
                or not np.isfinite(vectors).all():
            continue
        dim = vectors.shape[1]
        vectors_by_doc[p.doc_id] = vectors
    if not vectors_by_doc:
        return index
    n = len(index.chunks)
    embeddings = np.zeros((n, dim), dtype=np.float32) if index.embeddings is None else np.array(index.embeddings)
    mask = np.zeros(n, dtype=bool) if index.embeddings is None else (
        np.ones(n, dtype=bool) if index.dense_mask is None else index.dense_mask.copy())
    for doc_id, rows in document_rows(index.chunks).items():
        if doc_id in vectors_by_doc:
            embeddings[rows] = vectors_by_doc[doc_id]
            mask[rows] = True
    index.embeddings = embeddings
    index.dense_mask = None if mask.all() else mask
    index.ann = None  # the graph holds the vectors of the commit only: search exactly until folded in
    return index


def drop_vector_files(path: Path, keep: set[str]) -> None:
    """Remove the vector files whose key is not in ``keep`` (the live version holds them now)."""
    folder = path / "vectors"
    if not folder.is_dir():
        return
    for item in folder.iterdir():
        if item.suffix == ".npy" and item.stem not in keep:
            item.unlink(missing_ok=True)


def damaged_vector_files(path: Path) -> list[Path]:
    """Vector files that cannot be read as a finite 2-D matrix."""
    bad = []
    for name in written_keys(path):
        item = path / "vectors" / name
        try:
            array = np.load(item, allow_pickle=False)
            broken = array.ndim != 2 or not np.isfinite(array).all()
        except (OSError, ValueError):
            broken = True
        if broken:
            bad.append(item)
    return bad


def write_progress(path: Path, progress: dict) -> None:
    """The embedder's progress record, with its process id and the time."""
    folder = path / "vectors"
    folder.mkdir(exist_ok=True)
    write_json_atomic(folder / PROGRESS_FILE, {**progress, "pid": os.getpid(), "updated": time.time()})


def read_progress(path: Path) -> dict:
    """The last progress record ({} when there is none or it cannot be read)."""
    try:
        progress = json.loads((path / "vectors" / PROGRESS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return progress if isinstance(progress, dict) else {}


def pid_alive(pid) -> bool:
    """Whether a process of this id runs on this machine."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
