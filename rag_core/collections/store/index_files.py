"""Index folders on disk: explicit JSON / .npy files, never pickle.

Layout of an index folder (format version 2)::

    manifest.json          format, version, model names, chunk settings, counts, and the
                           size and SHA-256 of every other file (verified on load)
    chunk_*                the chunks by column (rag_core.index.chunk_table)
    tfidf_*, bm25/         TF-IDF and BM25 (rag_core.collections.store.lexical_state)
    embeddings.npy         float32 dense vectors (absent when built without)
    embeddings_mask.npy    which rows have a vector (only while some are still missing)
    ann.usearch            the HNSW graph of a large index (rag_core.index.ann)

Format 1 (read only) held the chunks as ``chunks.jsonl`` and the TF-IDF matrix by row.

``save_index`` writes into a temporary sibling folder and swaps it in, so an
interrupted save leaves the previous index loadable. Manifests written before
checksums existed load as before, unverified.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle  # only for its error type; nothing is unpickled here
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag_core.collections.store.lexical_state import read_lexical_state, write_lexical_state
from rag_core.errors import IndexFormatError, UnsafeIndexError
from rag_core.index.chunk_table import ChunkTable, write_chunk_table
from rag_core.settings import ANN_MIN_CHUNKS

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex

FORMAT_NAME = "rag_core.index"
# 2: chunks by column (rag_core.index.chunk_table) and the TF-IDF matrix by column, memory-mapped;
# 1 (read only): chunks.jsonl and a row-major tfidf_matrix.npz.
FORMAT_VERSION = 2
READ_VERSIONS = (1, 2)
MANIFEST = "manifest.json"
LEGACY_FILES = ("vectorizer.pkl", "matrix.pkl")
VERIFY_MODES = ("full", "size", "none")
_HASH_BLOCK = 1 << 20

__all__ = [
    "FORMAT_NAME", "FORMAT_VERSION", "IndexFormatError", "UnsafeIndexError", "file_checksums", "load_index",
    "save_index", "verify_index_files", "write_index_files",
]


def file_digest(path: Path) -> str:
    """SHA-256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def file_checksums(folder: Path, *, exclude: tuple[str, ...] = (MANIFEST,)) -> dict[str, dict]:
    """``{relative path: {"bytes", "sha256"}}`` of every file under ``folder``."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and rel not in exclude:
            out[rel] = {"bytes": path.stat().st_size, "sha256": file_digest(path)}
    return out


def fsync_tree(folder: Path) -> None:
    """Flush every file under ``folder`` (and the folders themselves) to disk."""
    for path in [*folder.rglob("*"), folder]:
        flags = os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0)
        fd = os.open(path, flags)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_index_files(index: RagIndex, folder: Path) -> dict:
    """Write the index into an existing empty ``folder`` (no swapping); returns the manifest."""
    folder = Path(folder)
    embeddings = None if index.embeddings is None else np.asarray(index.embeddings, dtype=np.float32)
    if embeddings is not None and not np.isfinite(embeddings).all():
        raise ValueError("refusing to save embeddings that hold NaN or infinite values")
    write_chunk_table(index.chunks, folder)
    nnz = write_lexical_state(index, folder)
    if embeddings is not None:
        np.save(folder / "embeddings.npy", embeddings, allow_pickle=False)
        if index.dense_mask is not None and not bool(np.all(index.dense_mask)):
            np.save(folder / "embeddings_mask.npy", np.asarray(index.dense_mask, dtype=bool), allow_pickle=False)
    if embeddings is not None and len(embeddings) >= ANN_MIN_CHUNKS:
        from rag_core.index.ann import ANN_FILE, AnnIndex

        ann = index.ann
        if ann is None or len(ann) != (len(embeddings) if index.dense_mask is None else int(index.dense_mask.sum())):
            rows = None if index.dense_mask is None else np.flatnonzero(index.dense_mask)
            ann = AnnIndex.build(embeddings, rows=rows)
        ann.save(folder / ANN_FILE)
    manifest = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "n_chunks": len(index.chunks),
        "embedding_model": index.embedding_model,
        "embedding_dim": None if embeddings is None else int(embeddings.shape[1]),
        "encoder": index.encoder,
        "has_embeddings": embeddings is not None,
        "has_bm25": index.bm25 is not None,
        "has_ann": (folder / "ann.usearch").is_file(),
        "chunk_size": index.chunk_size,
        "overlap": index.overlap,
        "n_features": int(index.tfidf_matrix.shape[1]),
        "nnz": nnz,
        "files": file_checksums(folder),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    fsync_tree(folder)
    return manifest


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


def read_manifest(folder: Path) -> dict:
    """The index manifest, checked for format and version."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IndexFormatError(f"{folder / MANIFEST} is not valid JSON ({exc}); the index is damaged.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise IndexFormatError(f"{folder} does not hold a rag_core index (manifest format is wrong).")
    version = manifest.get("format_version")
    if version not in READ_VERSIONS:
        raise IndexFormatError(
            f"{folder} holds index format version {version!r}; this rag_core reads version "
            f"{FORMAT_VERSION}. Rebuild the index with this version."
        )
    files = manifest.get("files")
    if files is not None and not (
        isinstance(files, dict)
        and all(isinstance(v, dict) and isinstance(v.get("bytes"), int) and isinstance(v.get("sha256"), str)
                for v in files.values())
    ):
        raise IndexFormatError(f"{folder / MANIFEST} has a malformed file list; the index is damaged.")
    return manifest


# Files whose hash was checked in this process: (path, inode, size, mtime) -> sha256.
_verified: dict[tuple, str] = {}
_VERIFIED_MAX = 4096


def _checked_digest(path: Path) -> str:
    info = path.stat()
    key = (str(path), info.st_ino, info.st_size, info.st_mtime_ns)
    digest = _verified.get(key)
    if digest is None:
        digest = file_digest(path)
        if len(_verified) >= _VERIFIED_MAX:
            _verified.clear()
        _verified[key] = digest
    return digest


def verify_index_files(
    folder: str | os.PathLike, *, full: bool = True, manifest: dict | None = None, cached: bool = False
) -> list[str]:
    """Problems found comparing the files with the manifest's sizes (and hashes when ``full``).

    An empty list means the folder is intact (or was written before checksums existed).
    ``cached``: trust a hash this process already checked for the same unchanged file.
    """
    folder = Path(folder)
    manifest = read_manifest(folder) if manifest is None else manifest
    problems = []
    for rel, expected in (manifest.get("files") or {}).items():
        path = folder / rel
        if not path.is_file():
            problems.append(f"{rel} is missing")
            continue
        size = path.stat().st_size
        if size != expected["bytes"]:
            problems.append(f"{rel} has {size:,} bytes, {expected['bytes']:,} were written")
        elif full and (_checked_digest(path) if cached else file_digest(path)) != expected["sha256"]:
            problems.append(f"{rel} was altered after it was written (checksum differs)")
    return problems


def _load_chunks(path: Path) -> list[dict]:
    chunks = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            chunk = json.loads(line)
            if not (isinstance(chunk, dict) and isinstance(chunk.get("text"), str)
                    and isinstance(chunk.get("source"), str)):
                raise IndexFormatError(f"chunks.jsonl line {line_no} is not a chunk with text and source")
            for key in ("page_start", "page_end", "start", "end", "doc_chunk"):
                value = chunk.get(key)
                if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                    raise IndexFormatError(f"chunks.jsonl line {line_no}: {key} is not a whole number")
            if chunk.get("page_label") is not None and not isinstance(chunk["page_label"], str):
                raise IndexFormatError(f"chunks.jsonl line {line_no}: page_label is not text")
            breaks = chunk.get("page_breaks")
            if breaks is not None and not (isinstance(breaks, list) and all(
                    isinstance(b, list) and len(b) == 2 and all(isinstance(x, int) for x in b) for b in breaks)):
                raise IndexFormatError(f"chunks.jsonl line {line_no}: page_breaks is malformed")
            chunks.append(chunk)
    return chunks


def _load_legacy(folder: Path, trust_pickle: bool) -> RagIndex:
    if not trust_pickle:
        raise UnsafeIndexError(
            f"{folder} is an old-format index stored with pickle, and unpickling runs code "
            "from the files. If you made it yourself, load it with "
            "load_index(path, trust_pickle=True) and save it again in the new format."
        )
    from rag_core.collections.store.legacy import LegacyPickleError, load_legacy_index

    try:
        return load_legacy_index(folder)
    except LegacyPickleError as exc:
        raise UnsafeIndexError(f"{folder}: {exc}.") from None
    except (OSError, ValueError, KeyError, EOFError, pickle.UnpicklingError, AttributeError) as exc:
        raise IndexFormatError(f"The old-format index at {folder} is damaged: {exc}") from None


def load_index(
    index_dir: str | os.PathLike, *, trust_pickle: bool = False, mmap: bool = True, verify: str = "full"
) -> RagIndex:
    """Load an index folder written by :func:`save_index`.

    ``verify``: "full" (the default) checks every file's SHA-256 against the manifest
    (once per process for an unchanged file), "size" only the sizes, "none" nothing. An
    old-format folder (``vectorizer.pkl``, ``matrix.pkl``) is read only with
    ``trust_pickle=True``: unpickling runs code from the files, so pass it only for a
    folder you made yourself. Damaged folders raise
    ``IndexFormatError`` naming the file.
    """
    from rag_core.index.build import RagIndex

    if verify not in VERIFY_MODES:
        raise ValueError(f"verify must be one of {VERIFY_MODES}, got {verify!r}")
    folder = Path(index_dir)
    if not folder.is_dir():
        raise IndexFormatError(f"No index folder at {folder}.")
    if not (folder / MANIFEST).is_file():
        if any((folder / name).exists() for name in LEGACY_FILES):
            return _load_legacy(folder, trust_pickle)
        raise IndexFormatError(f"{folder} has no {MANIFEST}: not a rag_core index, or a damaged one.")
    manifest = read_manifest(folder)
    if verify != "none":
        problems = verify_index_files(folder, full=verify == "full", manifest=manifest, cached=True)
        if problems:
            raise IndexFormatError(f"The index at {folder} is damaged: {'; '.join(problems)}.")
    try:
        format_1 = manifest["format_version"] == 1
        chunks = _load_chunks(folder / "chunks.jsonl") if format_1 else ChunkTable(folder, mmap=mmap)
        vectorizer, matrix, bm25 = read_lexical_state(folder, n_chunks=len(chunks), mmap=mmap,
                                                      bm25=bool(manifest.get("has_bm25")), row_major=format_1)
        embeddings = dense_mask = None
        if manifest.get("has_embeddings"):
            embeddings = np.load(folder / "embeddings.npy", allow_pickle=False, mmap_mode="r" if mmap else None)
            if embeddings.ndim != 2 or embeddings.dtype != np.float32:
                raise IndexFormatError("embeddings.npy is not a float32 matrix")
            if verify == "full" and not manifest.get("files") and not np.isfinite(embeddings).all():
                raise IndexFormatError("embeddings.npy holds NaN or infinite values")
            if (folder / "embeddings_mask.npy").is_file():
                dense_mask = np.load(folder / "embeddings_mask.npy", allow_pickle=False)
                if dense_mask.dtype != bool or dense_mask.shape != (len(embeddings),):
                    raise IndexFormatError("embeddings_mask.npy does not match embeddings.npy")
        ann = None
        if manifest.get("has_ann") and embeddings is not None:
            from rag_core.index.ann import ANN_FILE, AnnIndex

            ann = AnnIndex.load(folder / ANN_FILE, view=mmap)
        index = RagIndex(
            chunks=chunks, vectorizer=vectorizer, matrix=matrix, embeddings=embeddings,
            embedding_model=manifest.get("embedding_model") or "", chunk_size=int(manifest.get("chunk_size", 1200)),
            overlap=int(manifest.get("overlap", 200)), bm25=bm25, dense_mask=dense_mask,
            # indexes saved before variants existed were embedded with torch
            encoder=manifest.get("encoder") or ("torch" if manifest.get("has_embeddings") else None), ann=ann,
        )
    except IndexFormatError as exc:
        raise IndexFormatError(f"The index at {folder} is damaged: {exc}") from None
    except (OSError, ValueError, KeyError, TypeError, EOFError, AttributeError, zipfile.BadZipFile) as exc:
        raise IndexFormatError(f"The index at {folder} is damaged: {type(exc).__name__}: {exc}") from None
    if len(chunks) != manifest.get("n_chunks") or matrix.shape[1] != len(vectorizer.vocabulary_):
        raise IndexFormatError(
            f"The index at {folder} is damaged: its files disagree on the number of chunks or terms."
        )
    return index
