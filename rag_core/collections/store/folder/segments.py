"""Writing a collection folder: immutable segments, version records that name them (and make
them live), the original files, and pruning what no kept version needs. The caller holds the
collection's writer lock."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag_core.atomic import write_bytes_atomic, write_json_atomic
from rag_core.collections.store.folder.layout import (
    SEGMENT_RE,
    SEGMENTS_DIR,
    SETTINGS_FILE,
    VERSION_FILE,
    VERSION_FORMAT,
    VERSION_RE,
    resolve,
    version_record,
    version_segments,
)
from rag_core.collections.store.index_files import (
    MANIFEST,
    file_digest,
    fsync_tree,
    load_index,
    read_manifest,
    write_index_files,
)
from rag_core.errors import CollectionError
from rag_core.settings import ANN_MIN_CHUNKS, SEGMENT_MAX_CHUNKS, VERSION_GRACE_S

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex


def rows_of(array: np.ndarray | None, a: int, b: int) -> np.ndarray | None:
    return None if array is None else np.asarray(array[a:b])


def segment_bounds(chunks: Sequence[dict]) -> list[tuple[int, int]]:
    """``(start, end)`` of the segments ``chunks`` is cut into: at most SEGMENT_MAX_CHUNKS each,
    cut between documents (a document longer than that has a segment to itself)."""
    n = len(chunks)
    if n <= SEGMENT_MAX_CHUNKS:
        return [(0, n)] if n else []
    bounds, start = [], 0
    last_cut = 0
    for i in range(1, n + 1):
        boundary = i == n or chunks[i].get("doc_id") != chunks[i - 1].get("doc_id")
        if boundary:
            if i - start > SEGMENT_MAX_CHUNKS and last_cut > start:
                bounds.append((start, last_cut))
                start = last_cut
            last_cut = i
    bounds.append((start, n))
    return bounds


def stored_dense(folder: Path) -> int:
    """How many rows of a stored index folder have a vector."""
    if not (folder / "embeddings.npy").is_file():
        return 0
    mask = folder / "embeddings_mask.npy"
    if mask.is_file():
        return int(np.count_nonzero(np.load(mask, allow_pickle=False)))
    return int(np.load(folder / "embeddings.npy", mmap_mode="r", allow_pickle=False).shape[0])


def _link_with_vectors(source: Path, target: Path, vectors_of: RagIndex | None) -> tuple[int, int]:
    """Link the chunk and lexical files of index folder ``source`` into ``target``, write the
    vectors of ``vectors_of`` (or link the stored ones) and a manifest; ``(chunks, with vector)``."""
    from rag_core.index.ann import ANN_FILE, AnnIndex

    manifest = read_manifest(source)
    skip = {MANIFEST, VERSION_FILE, "documents.json"}
    if vectors_of is not None:  # the vectors (and their graph) are written anew
        skip |= {"embeddings.npy", "embeddings_mask.npy", ANN_FILE}
    for item in source.rglob("*"):
        rel = item.relative_to(source)
        if rel.as_posix() in skip:
            continue
        destination = target / rel
        if item.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(item, destination)
            except OSError:
                shutil.copy2(item, destination)
    files = {k: v for k, v in (manifest.get("files") or {}).items() if (target / k).is_file()}
    n = int(manifest.get("n_chunks", 0))
    dense = stored_dense(target)
    if vectors_of is not None and vectors_of.embeddings is not None:
        embeddings = np.asarray(vectors_of.embeddings, dtype=np.float32)
        np.save(target / "embeddings.npy", embeddings, allow_pickle=False)
        added = ["embeddings.npy"]
        if vectors_of.dense_mask is not None:
            np.save(target / "embeddings_mask.npy", vectors_of.dense_mask, allow_pickle=False)
            added.append("embeddings_mask.npy")
        if len(embeddings) >= ANN_MIN_CHUNKS:
            rows = None if vectors_of.dense_mask is None else np.flatnonzero(vectors_of.dense_mask)
            AnnIndex.build(embeddings, rows=rows).save(target / ANN_FILE)
            added.append(ANN_FILE)
        for rel in added:
            files[rel] = {"bytes": (target / rel).stat().st_size, "sha256": file_digest(target / rel)}
        manifest.update(has_embeddings=True, embedding_dim=int(embeddings.shape[1]),
                        has_ann=(target / ANN_FILE).is_file())
        dense = vectors_of.dense_coverage[0]
    manifest["files"] = files
    (target / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return n, dense


def write_segment(path: Path, settings: dict, chunks: list[dict] | None, embeddings: np.ndarray | None,
                  dense_mask: np.ndarray | None, *, lexical_from: Path | None = None,
                  vectors_of: RagIndex | None = None) -> dict:
    """Write an immutable segment folder and return its record.

    With ``lexical_from``, the chunk and lexical files of that index folder are linked,
    not rebuilt, and ``vectors_of`` gives the vectors (the fold-in of vectors computed behind).
    """
    from rag_core.index.build import build_index_from_chunks

    folder = path / SEGMENTS_DIR
    folder.mkdir(exist_ok=True)
    numbers = [int(p.name[1:]) for p in folder.iterdir() if SEGMENT_RE.fullmatch(p.name)]
    segment = f"s{max(numbers, default=0) + 1:06d}"
    staging = Path(tempfile.mkdtemp(prefix=f".{segment}-", dir=folder))
    try:
        if lexical_from is None:
            index = build_index_from_chunks(
                chunks, embedding_model=settings["embedding_model"], embeddings=embeddings,
                compute_embeddings=False, chunk_size=settings["chunk_size"], overlap=settings["overlap"],
            )
            index.dense_mask = None if dense_mask is None or bool(np.all(dense_mask)) else dense_mask
            index.encoder = settings["encoder"]
            write_index_files(index, staging)
            n_chunks, dense = len(index.chunks), index.dense_coverage[0]
        else:
            n_chunks, dense = _link_with_vectors(lexical_from, staging, vectors_of)
        fsync_tree(staging)
        os.rename(staging, folder / segment)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {"id": segment, "n_chunks": n_chunks, "dense_chunks": dense,
            "manifest_sha256": file_digest(folder / segment / MANIFEST)}


def adopt_legacy(path: Path, folder: Path, settings: dict) -> dict:
    """A version folder of the older layout, copied (by links) into a segment of its own."""
    return write_segment(path, settings, None, None, None, lexical_from=folder)


def merge_tail(path: Path, settings: dict, segments: list[dict]) -> list[dict]:
    """Merge the last two segments while together they stay within SEGMENT_MAX_CHUNKS."""
    while len(segments) >= 2 and segments[-1]["n_chunks"] + segments[-2]["n_chunks"] <= SEGMENT_MAX_CHUNKS:
        parts = [load_index(path / SEGMENTS_DIR / seg["id"], verify="full") for seg in segments[-2:]]
        chunks = [c for part in parts for c in part.chunks]
        dim = next((p.embeddings.shape[1] for p in parts if p.embeddings is not None), None)
        embeddings = mask = None
        if dim is not None:
            embeddings = np.concatenate([np.asarray(p.embeddings, dtype=np.float32) if p.embeddings is not None
                                         else np.zeros((len(p.chunks), dim), np.float32) for p in parts])
            mask = np.concatenate([np.zeros(len(p.chunks), bool) if p.embeddings is None else (
                np.ones(len(p.chunks), bool) if p.dense_mask is None else p.dense_mask) for p in parts])
        segments[-2:] = [write_segment(path, settings, chunks, embeddings, mask)]
    return segments


def store_files(path: Path, new_files: dict[str, bytes]) -> None:
    """Keep the original files of new documents (by SHA-256)."""
    files = path / "files"
    files.mkdir(exist_ok=True)
    for sha, data in new_files.items():
        target = files / f"{sha}.pdf"
        if not (target.is_file() and target.stat().st_size == len(data)):
            write_bytes_atomic(target, data)


def write_version(path: Path, settings: dict, documents: list[dict], segments: list[dict]) -> str:
    """Write a version record naming ``segments`` and make it live."""
    versions = path / "versions"
    versions.mkdir(exist_ok=True)
    numbers = [int(p.name[1:]) for p in versions.iterdir() if VERSION_RE.fullmatch(p.name)]
    version = f"v{max(numbers, default=0) + 1:06d}"
    try:
        parent = resolve(path).version
    except CollectionError:  # being repaired: no readable version is left
        parent = None
    staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=versions))
    try:
        record = {
            "format": VERSION_FORMAT, "format_version": 3, "version": version, "parent": parent,
            "created": time.time(),
            "settings": {k: settings[k] for k in ("chunk_size", "overlap", "embedding_model", "encoder",
                                                  "created")},
            "documents": documents, "n_chunks": sum(int(d.get("chunks", 0)) for d in documents),
            "dense_chunks": sum(int(seg["dense_chunks"]) for seg in segments),
            "segments": segments,
        }
        write_json_atomic(staging / VERSION_FILE, record)
        fsync_tree(staging)
        os.rename(staging, versions / version)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    write_bytes_atomic(path / "CURRENT", f"{version}\n".encode())
    settings = {**settings, "updated": time.time()}
    write_json_atomic(path / SETTINGS_FILE, settings)
    prune(path, version, parent)
    return version


def prune(path: Path, current: str, parent: str | None) -> None:
    """Drop versions past their grace period, the segments no kept version names, and
    original files no kept version has needed for as long."""
    versions = path / "versions"
    now = time.time()
    kept: list[Path] = []
    for folder in versions.iterdir():
        if not VERSION_RE.fullmatch(folder.name):
            continue
        if folder.name in (current, parent):
            kept.append(folder)
            continue
        try:
            age = now - (folder / VERSION_FILE).stat().st_mtime
        except OSError:
            age = now - folder.stat().st_mtime
        if age < VERSION_GRACE_S:
            kept.append(folder)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    needed: set[str] = set()
    segments: set[str] = set()
    for folder in kept:
        try:
            record = version_record(path.name, folder)
            needed.update(d["sha256"] for d in record["documents"])
            segments.update(info["id"] for _, info in version_segments(path, folder, record) if info["id"])
        except (CollectionError, OSError):
            return  # cannot tell what an unreadable version needs: keep everything
    for item in (path / SEGMENTS_DIR).iterdir() if (path / SEGMENTS_DIR).is_dir() else []:
        if SEGMENT_RE.fullmatch(item.name) and item.name not in segments:
            shutil.rmtree(item, ignore_errors=True)
    files = path / "files"
    if files.is_dir():
        for item in files.glob("*.pdf"):
            try:
                if item.stem not in needed and now - item.stat().st_mtime >= VERSION_GRACE_S:
                    item.unlink()
            except OSError:
                pass
