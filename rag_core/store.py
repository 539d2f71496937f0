"""Index folders on disk: explicit JSON / JSONL / .npy / .npz files, never pickle.

Layout of an index folder (format version 1)::

    manifest.json          format, version, model names, chunk settings, counts
    chunks.jsonl           one chunk dict per line
    tfidf_vocabulary.json  term -> column
    tfidf_idf.npy          idf weight per column
    tfidf_matrix.npz       unit-normalised TF-IDF rows (scipy sparse, no pickle)
    embeddings.npy         float32 dense vectors (absent when built without)
    bm25/                  bm25s index files (JSON and .npy)

``save_index`` writes into a temporary sibling folder and swaps it in, so an
interrupted save leaves the previous index loadable.
"""

from __future__ import annotations

import json
import os
import pickle  # only for its error type; nothing is unpickled here
import shutil
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .atomic import write_json_atomic  # noqa: F401  (re-exported for callers)
from .errors import IndexFormatError, UnsafeIndexError
from .index import RagIndex
from .lexical import BM25Index, tfidf_from_state, tfidf_state

FORMAT_NAME = "rag_core.index"
FORMAT_VERSION = 1
LEGACY_FILES = ("vectorizer.pkl", "matrix.pkl")




def write_index_files(index: RagIndex, folder: Path) -> None:
    """Write the index into an existing empty ``folder`` (no swapping)."""
    folder = Path(folder)
    with open(folder / "chunks.jsonl", "w", encoding="utf-8") as handle:
        for chunk in index.chunks:
            handle.write(json.dumps(chunk, ensure_ascii=False) + "\n")
    vocabulary, idf = tfidf_state(index.vectorizer)
    (folder / "tfidf_vocabulary.json").write_text(json.dumps(vocabulary, ensure_ascii=False), encoding="utf-8")
    np.save(folder / "tfidf_idf.npy", idf, allow_pickle=False)
    sp.save_npz(folder / "tfidf_matrix.npz", sp.csr_matrix(index.matrix), compressed=False)
    if index.embeddings is not None:
        np.save(folder / "embeddings.npy", np.asarray(index.embeddings, dtype=np.float32), allow_pickle=False)
    if index.bm25 is not None:
        index.bm25.save(folder / "bm25")
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "n_chunks": len(index.chunks),
        "embedding_model": index.embedding_model,
        "embedding_dim": None if index.embeddings is None else int(index.embeddings.shape[1]),
        "has_embeddings": index.embeddings is not None,
        "has_bm25": index.bm25 is not None,
        "chunk_size": index.chunk_size,
        "overlap": index.overlap,
        "n_features": int(index.matrix.shape[1]),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    for path in folder.rglob("*"):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())


def save_index(index: RagIndex, index_dir: str | os.PathLike) -> None:
    """Save ``index`` to ``index_dir``; an interrupted save keeps the previous folder."""
    target = Path(index_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.saving-", dir=target.parent))
    try:
        write_index_files(index, staging)
        if target.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, retired / "index")
            os.replace(staging, target)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _read_manifest(folder: Path) -> dict:
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise IndexFormatError(f"{folder / 'manifest.json'} is not valid JSON ({exc}); the index is damaged.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise IndexFormatError(f"{folder} does not hold a rag_core index (manifest format is wrong).")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            f"{folder} holds index format version {version!r}; this rag_core reads version "
            f"{FORMAT_VERSION}. Rebuild the index with this version."
        )
    return manifest


def load_index(index_dir: str | os.PathLike, *, trust_pickle: bool = False, mmap: bool = True) -> RagIndex:
    """Load an index folder written by :func:`save_index`.

    An old-format folder (``vectorizer.pkl``, ``matrix.pkl``) is read only with
    ``trust_pickle=True``: unpickling runs code from the files, so pass it only for a
    folder you made yourself. Damaged folders raise ``IndexFormatError``.
    """
    folder = Path(index_dir)
    if not folder.is_dir():
        raise IndexFormatError(f"No index folder at {folder}.")
    if not (folder / "manifest.json").is_file():
        if any((folder / name).exists() for name in LEGACY_FILES):
            if not trust_pickle:
                raise UnsafeIndexError(
                    f"{folder} is an old-format index stored with pickle, and unpickling runs code "
                    "from the files. If you made it yourself, load it with "
                    "load_index(path, trust_pickle=True) and save it again in the new format."
                )
            from .legacy import LegacyPickleError, load_legacy_index

            try:
                return load_legacy_index(folder)
            except LegacyPickleError as exc:
                raise UnsafeIndexError(f"{folder}: {exc}.") from None
            except (OSError, ValueError, KeyError, EOFError, pickle.UnpicklingError, AttributeError) as exc:
                raise IndexFormatError(f"The old-format index at {folder} is damaged: {exc}") from None
        raise IndexFormatError(f"{folder} has no manifest.json: not a rag_core index, or a damaged one.")
    manifest = _read_manifest(folder)
    try:
        chunks = []
        with open(folder / "chunks.jsonl", encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, start=1):
                if line.strip():
                    chunk = json.loads(line)
                    if not isinstance(chunk, dict) or "text" not in chunk or "source" not in chunk:
                        raise IndexFormatError(f"chunks.jsonl line {line_no} is not a chunk with text and source")
                    chunks.append(chunk)
        vocabulary = json.loads((folder / "tfidf_vocabulary.json").read_text(encoding="utf-8"))
        idf = np.load(folder / "tfidf_idf.npy", allow_pickle=False)
        vectorizer = tfidf_from_state(vocabulary, idf)
        matrix = sp.load_npz(folder / "tfidf_matrix.npz").tocsr()
        embeddings = None
        if manifest.get("has_embeddings"):
            embeddings = np.load(folder / "embeddings.npy", allow_pickle=False, mmap_mode="r" if mmap else None)
        bm25 = BM25Index.load(folder / "bm25", mmap=mmap) if manifest.get("has_bm25") else None
        index = RagIndex(
            chunks=chunks, vectorizer=vectorizer, matrix=matrix, embeddings=embeddings,
            embedding_model=manifest.get("embedding_model") or "", chunk_size=int(manifest.get("chunk_size", 1200)),
            overlap=int(manifest.get("overlap", 200)), bm25=bm25,
        )
    except IndexFormatError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
        raise IndexFormatError(f"The index at {folder} is damaged: {type(exc).__name__}: {exc}") from None
    if len(chunks) != manifest.get("n_chunks") or matrix.shape[1] != len(vocabulary):
        raise IndexFormatError(
            f"The index at {folder} is damaged: its files disagree on the number of chunks or terms."
        )
    return index
