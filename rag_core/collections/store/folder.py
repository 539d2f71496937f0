"""The embedded store: one folder per collection, versions swapped in atomically.

Layout of a collection folder::

    <data dir>/collections/<name>/
        collection.json       name, format version, models and chunk settings
        CURRENT               the name of the live version (replaced atomically)
        versions/v000007/     version.json (documents, settings, checksum of the index
                              manifest) and the index files of rag_core.collections.store.index_files
        data/<key>.json       side data of the relevance lab (judgments, snapshots), outside versions
        vectors/<key>.npy     dense vectors computed after the last commit, one file per
                              document, folded into the next version
        files/<sha256>.pdf    the original PDFs (page images, rebuilding a damaged index)
                              (and progress.json, the embedder's progress)
        .lock, .embed.lock    the writer lock and the embedder's slot

A commit writes a complete new version folder and only then points ``CURRENT`` at it,
so a crash (even ``kill -9``) at any moment leaves the previous version loadable.
Older versions are kept for :data:`VERSION_GRACE_S` seconds (and the previous one
always), so a reader that has just read ``CURRENT`` never finds its files gone; a
reader that does meet a vanished or half-read version looks at ``CURRENT`` again and
retries, and calls a collection damaged only when a full checksum re-check proves it.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from filelock import FileLock, Timeout

from rag_core.atomic import write_bytes_atomic, write_json_atomic
from rag_core.collections.store.base import (
    COLLECTION_FORMAT,
    CheckReport,
    CollectionStore,
    EmbeddingStatus,
    PendingDocument,
    check_data_key,
    document_rows,
    pending_documents,
    same_name,
    validate_collection_name,
)
from rag_core.collections.store.index_files import (
    MANIFEST,
    file_digest,
    fsync_tree,
    load_index,
    read_manifest,
    verify_index_files,
    write_index_files,
)
from rag_core.errors import (
    CollectionBusyError,
    CollectionError,
    CollectionExistsError,
    CollectionNotFoundError,
    IndexFormatError,
)
from rag_core.index.segments import SegmentedIndex
from rag_core.settings import (
    ANN_MIN_CHUNKS,
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_LONG_TEXT,
    SEGMENT_MAX_CHUNKS,
)
from rag_core.text.chunking import validate_chunk_settings

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex

COLLECTION_FORMAT_VERSION = 2
VERSION_FORMAT = "rag_core.version"
VERSION_FILE = "version.json"
SETTINGS_FILE = "collection.json"
PROGRESS_FILE = "progress.json"
LOCK_TIMEOUT_S = 600
# Old versions stay this long after they stop being live, so readers that opened one
# just before a commit finish with it (a load takes well under a second at 100k chunks).
VERSION_GRACE_S = 600
# A temporary file or folder this old in a collection belongs to a writer that died.
STALE_TEMP_S = 60
# An embedder that has not reported for this long is gone (killed, machine restarted).
EMBEDDER_SILENT_S = 30
_VERSION_RE = re.compile(r"v\d{6}")
_SEGMENT_RE = re.compile(r"s\d{6}")
SEGMENTS_DIR = "segments"
_VECTOR_RE = re.compile(r"[0-9a-f]{32}\.npy")
_RETRIES = 3

# --------------------------------------------------------------------------- helpers


class CollectionDamagedError(CollectionError):
    """Part of a stored collection cannot be read; the message names the collection and the part."""


def damaged(name: str, detail: str, *, advice: str | None = None) -> CollectionDamagedError:
    """The error for a damaged part of collection ``name``, with what to do about it."""
    advice = advice or (f"Run `rag-core check-store {name!r} --repair` (it rolls back to a complete version "
                        "or rebuilds from the stored PDFs), or remove the collection.")
    return CollectionDamagedError(f"Collection {name!r} is damaged: {detail.rstrip('.')}. {advice}")


def model_key(settings: dict) -> str:
    """What decides a chunk's vector: the model, its encoder variant and how long texts are read."""
    return f"{settings.get('embedding_model') or DEFAULT_EMBEDDING_MODEL}|{settings['encoder']}|{DEFAULT_LONG_TEXT}"


def _read_json(path: Path, what: str, name: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise damaged(name, f"{what} ({path.name}) is not valid UTF-8 JSON ({exc})") from None
    except OSError as exc:
        raise damaged(name, f"{what} ({path.name}) cannot be read ({exc.strerror or exc})") from None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_settings(raw, name: str) -> dict:
    """The settings of ``collection.json`` with their types checked (``CollectionDamagedError`` if wrong)."""
    if not isinstance(raw, dict):
        raise damaged(name, "collection.json does not hold settings")
    settings = {
        "format": COLLECTION_FORMAT, "format_version": COLLECTION_FORMAT_VERSION, "name": name,
        "chunk_size": CHUNK_SIZE_CHARS, "overlap": CHUNK_OVERLAP_CHARS, "embedding_model": DEFAULT_EMBEDDING_MODEL,
        # collections made before encoder variants existed were embedded with torch
        "encoder": "torch", "created": 0.0, "updated": 0.0, **raw,
    }
    wrong = [key for key, ok in (
        ("chunk_size", isinstance(settings["chunk_size"], int)), ("overlap", isinstance(settings["overlap"], int)),
        ("embedding_model", isinstance(settings["embedding_model"], str)),
        ("encoder", isinstance(settings["encoder"], str)),
        ("created", _is_number(settings["created"])), ("updated", _is_number(settings["updated"])),
        ("name", isinstance(settings["name"], str)),
    ) if not ok]
    if wrong:
        raise damaged(name, f"collection.json has a wrong type for {', '.join(wrong)}")
    try:
        validate_chunk_settings(settings["chunk_size"], settings["overlap"])
    except ValueError as exc:
        raise damaged(name, f"collection.json: {exc}") from None
    return settings


def check_documents(raw, name: str, where: str) -> list[dict]:
    """Document records with their types checked."""
    if not isinstance(raw, list):
        raise damaged(name, f"{where} does not hold a document list")
    for n, doc in enumerate(raw, start=1):
        ok = isinstance(doc, dict) and all(isinstance(doc.get(k), str) for k in ("doc_id", "source", "sha256")) \
            and all(isinstance(doc.get(k, 0), int) and not isinstance(doc.get(k, 0), bool)
                    for k in ("pages", "chunks", "bytes"))
        if not ok:
            raise damaged(name, f"document {n} in {where} is not a well-formed record")
    return raw


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _pid_alive(pid) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _rows(array: np.ndarray | None, a: int, b: int) -> np.ndarray | None:
    return None if array is None else np.asarray(array[a:b])


def _segment_bounds(chunks: Sequence[dict]) -> list[tuple[int, int]]:
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


def _stored_dense(folder: Path) -> int:
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
    dense = _stored_dense(target)
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


# Manifest digests checked in this process: (path, inode, size, mtime) -> sha256.
_manifest_digests: dict[tuple, str] = {}


def _checked_manifest_digest(folder: Path) -> str:
    info = (folder / MANIFEST).stat()
    key = (str(folder), info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _manifest_digests:
        _manifest_digests[key] = file_digest(folder / MANIFEST)
    return _manifest_digests[key]


class _Resolved:
    """The live version of a collection as found on disk."""

    def __init__(self, path: Path, version: str | None, notes: list[str]):
        self.path = path
        self.version = version
        self.notes = notes

    @property
    def folder(self) -> Path | None:
        return None if self.version is None else self.path / "versions" / self.version


# --------------------------------------------------------------------------- the store


class FolderStore(CollectionStore):
    """Collections as folders under ``root/collections`` (see the module docstring)."""

    kind = "folder"

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser()
        self.collections_dir = self.root / "collections"

    @property
    def location(self) -> str:
        return str(self.root)

    # ---------------------------------------------------------------- paths
    def _dir(self, name: str) -> Path:
        name = validate_collection_name(name)
        path = self.collections_dir / name
        if path.is_symlink() or path.resolve().parent != self.collections_dir.resolve():
            raise CollectionError(f"Collection name {name!r} would leave the data folder.")
        return path

    def _existing(self, name: str) -> Path:
        path = self._dir(name)
        if path.is_dir():
            return path
        known = self.names()
        if path.is_dir():  # appeared while we looked (a rename back, say)
            return path
        close = [n for n in known if same_name(n, name)]
        hint = f" Did you mean {close[0]!r}?" if close else f" (collections: {', '.join(known) or 'none yet'})"
        raise CollectionNotFoundError(f"No collection named {name.strip()!r}.{hint}")

    @contextmanager
    def _names_lock(self) -> Iterator[None]:
        """Serialises creating, renaming and deleting collections in this data folder."""
        self.collections_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.collections_dir / ".names.lock"), timeout=LOCK_TIMEOUT_S)
        try:
            lock.acquire()
        except Timeout:
            raise CollectionBusyError("Another process is changing the list of collections; try again.") from None
        try:
            yield
        finally:
            lock.release()

    # ---------------------------------------------------------------- names
    def names(self) -> list[str]:
        if not self.collections_dir.is_dir():
            return []
        out = []
        for path in self.collections_dir.iterdir():
            if path.name.startswith(".") or not path.is_dir() or path.is_symlink():
                continue
            out.append(path.name)
        return sorted(out)

    def exists(self, name: str) -> bool:
        try:
            return self._dir(name).is_dir()
        except CollectionError:
            return False

    def create(self, name: str, settings: dict) -> str:
        path = self._dir(name)
        with self._names_lock():
            clash = [n for n in self.names() if same_name(n, path.name)]
            if clash:
                raise CollectionExistsError(f"A collection named {clash[0]!r} already exists.")
            staging = Path(tempfile.mkdtemp(prefix=".creating-", dir=self.collections_dir))
            try:
                now = time.time()
                write_json_atomic(staging / SETTINGS_FILE, {
                    **settings, "format": COLLECTION_FORMAT, "format_version": COLLECTION_FORMAT_VERSION,
                    "name": path.name, "created": now, "updated": now,
                })
                os.rename(staging, path)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        return path.name

    def rename(self, old: str, new: str) -> str:
        source = self._existing(old)
        target = self._dir(new)
        with self._names_lock():
            clash = [n for n in self.names() if same_name(n, target.name) and n != source.name]
            if clash:
                raise CollectionExistsError(f"A collection named {clash[0]!r} already exists.")
            with self.writing(source.name):
                settings = self.read_settings(source.name)
                if source.name != target.name:
                    os.rename(source, target)
                settings.update(name=target.name, updated=time.time())
                write_json_atomic(target / SETTINGS_FILE, settings)
        return target.name

    def delete(self, name: str, *, force: bool = False) -> None:
        path = self._dir_for_removal(name) if force else self._existing(name)
        with self._names_lock():
            trash = Path(tempfile.mkdtemp(prefix=".deleting-", dir=self.collections_dir))
            if force:
                os.rename(path, trash / "collection")
            else:
                with self.writing(path.name):
                    os.rename(path, trash / "collection")
        shutil.rmtree(trash, ignore_errors=True)

    def _dir_for_removal(self, name: str) -> Path:
        """A folder directly under collections/ with this exact name, however broken its contents."""
        if not isinstance(name, str) or not name.strip() or "/" in name or "\\" in name or "\x00" in name \
                or name.strip() in (".", ".."):
            raise CollectionError(f"{name!r} is not the name of a collection folder.")
        path = self.collections_dir / name.strip()
        if not (path.is_dir() or path.is_symlink()):
            raise CollectionNotFoundError(f"No collection named {name.strip()!r} in {self.collections_dir}.")
        return path

    # ---------------------------------------------------------------- reading
    def _complete_versions(self, path: Path) -> list[str]:
        """Version folders that hold a readable version record, newest first."""
        versions = path / "versions"
        if not versions.is_dir():
            return []
        found = []
        for folder in versions.iterdir():
            if not _VERSION_RE.fullmatch(folder.name) or not folder.is_dir():
                continue
            try:
                self._version_record(path.name, folder)
            except (CollectionError, OSError):
                continue
            found.append(folder.name)
        return sorted(found, reverse=True)

    def _version_record(self, name: str, folder: Path) -> dict:
        """The version's record: documents and settings (format 2), or documents.json (format 1)."""
        record_path = folder / VERSION_FILE
        if record_path.is_file():
            record = _read_json(record_path, f"version {folder.name}", name)
            if not isinstance(record, dict) or record.get("format") != VERSION_FORMAT:
                raise damaged(name, f"{folder.name}/{VERSION_FILE} is malformed")
            record["documents"] = check_documents(record.get("documents"), name, f"{folder.name}/{VERSION_FILE}")
            return record
        legacy = folder / "documents.json"
        if legacy.is_file():
            docs = check_documents(_read_json(legacy, "the document list", name), name, f"{folder.name}/documents.json")
            return {"format": VERSION_FORMAT, "format_version": 1, "version": folder.name, "documents": docs}
        raise damaged(name, f"version {folder.name} is incomplete (no {VERSION_FILE})")

    def _resolve(self, name: str) -> _Resolved:
        """The live version: ``CURRENT``, or when it is missing or wrong, the newest complete version."""
        path = self._existing(name)
        notes: list[str] = []
        try:
            value = (path / "CURRENT").read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            value = None
        except (OSError, UnicodeDecodeError):
            value = ""
        if value and _VERSION_RE.fullmatch(value) and (path / "versions" / value).is_dir():
            return _Resolved(path, value, notes)
        newest = self._complete_versions(path)
        if value is None and not newest:
            return _Resolved(path, None, notes)  # a new, empty collection
        if not newest:
            raise damaged(path.name, f"CURRENT names {value[:40]!r} and no complete version exists (its PDFs "
                                     f"are kept in {path / 'files'})")
        if value is None:
            what = "is missing"
        else:
            what = f"names {value[:40]!r}, which does not exist" if value else "is empty or unreadable"
        notes.append(f"CURRENT {what}; using the newest complete version {newest[0]} "
                     f"(`rag-core check-store {path.name!r} --repair` fixes the pointer).")
        return _Resolved(path, newest[0], notes)

    def read_settings(self, name: str) -> dict:
        path = self._existing(name)
        try:
            return check_settings(_read_json(path / SETTINGS_FILE, "its settings", path.name), path.name)
        except FileNotFoundError:
            pass
        for version in self._complete_versions(path):
            record = self._version_record(path.name, path / "versions" / version)
            if isinstance(record.get("settings"), dict):
                return check_settings({**record["settings"], "name": path.name}, path.name)
        raise damaged(path.name, "collection.json is missing")

    def notes(self, name: str) -> list[str]:
        """Warnings about a collection that still works (a recovered pointer, say)."""
        return self._resolve(name).notes

    def current_version(self, name: str) -> str | None:
        return self._resolve(name).version

    def read_documents(self, name: str) -> list[dict]:
        for attempt in range(_RETRIES):
            resolved = self._resolve(name)
            if resolved.folder is None:
                return []
            try:
                return self._version_record(resolved.path.name, resolved.folder)["documents"]
            except (CollectionError, OSError):
                if attempt == _RETRIES - 1 or self._resolve(name).version == resolved.version:
                    raise
        raise AssertionError("unreachable")

    def _version_segments(self, path: Path, folder: Path, record: dict) -> list[tuple[Path, dict]]:
        """``(index folder, segment record)`` of each segment of a version, in order.

        A version of the older layout (index files in the version folder) is its own one segment.
        """
        segments = record.get("segments")
        if segments is None:
            return [(folder, {"id": None})] if (folder / MANIFEST).is_file() else []
        if not isinstance(segments, list) or not all(
                isinstance(seg, dict) and isinstance(seg.get("id"), str) and _SEGMENT_RE.fullmatch(seg["id"])
                for seg in segments):
            raise damaged(path.name, f"{folder.name}/{VERSION_FILE} has a malformed segment list")
        return [(path / SEGMENTS_DIR / seg["id"], seg) for seg in segments]

    def load_index(self, name: str) -> RagIndex | None:
        for attempt in range(_RETRIES):
            resolved = self._resolve(name)
            if resolved.folder is None:
                return None
            try:
                record = self._version_record(resolved.path.name, resolved.folder)
                segments = self._version_segments(resolved.path, resolved.folder, record)
                if not segments:
                    return None
                parts = []
                for folder, info in segments:
                    expected = info.get("manifest_sha256")
                    if expected and _checked_manifest_digest(folder) != expected:
                        raise IndexFormatError(f"{folder.name}/{MANIFEST} was altered after it was written")
                    parts.append(load_index(folder, verify="full"))
                parts = self._with_written_vectors(resolved.path, parts, record)
                if attempt < _RETRIES - 1 and self._resolve(name).version != resolved.version:
                    # vectors were folded into a new version meanwhile (and their files removed):
                    # this version's overlay may lack some, read the new one
                    continue
                return parts[0] if len(parts) == 1 else SegmentedIndex(parts)
            except (CollectionError, IndexFormatError, OSError, ValueError) as exc:
                if self._resolve(name).version != resolved.version and attempt < _RETRIES - 1:
                    continue  # a commit replaced the version while we read it: read the new one
                raise self._damage(resolved, exc) from None
        raise AssertionError("unreachable")

    def _damage(self, resolved: _Resolved, exc: Exception) -> CollectionError:
        """The error for a version that failed to load, after a full re-check."""
        if isinstance(exc, CollectionError):
            return exc
        problems = []
        try:
            record = self._version_record(resolved.path.name, resolved.folder)
            for folder, _ in self._version_segments(resolved.path, resolved.folder, record):
                problems += [f"{folder.name}: {p}" if folder != resolved.folder else p
                             for p in verify_index_files(folder, full=True)]
        except (CollectionError, IndexFormatError, OSError) as inner:
            problems = [str(inner)]
        detail = "; ".join(problems) or str(exc)
        return damaged(resolved.path.name, f"version {resolved.version}: {detail}")

    def _with_written_vectors(self, path: Path, parts: list[RagIndex], record: dict) -> list[RagIndex]:
        """Fill rows still missing a vector from vector files written since the commit."""
        if all(p.embeddings is not None and p.dense_mask is None for p in parts):
            return parts
        settings = record.get("settings") or self.read_settings(path.name)
        key = model_key({**self.read_settings(path.name), **settings})
        return [part if part.embeddings is not None and part.dense_mask is None
                else self._overlay(path, part, record["documents"], key) for part in parts]

    def _overlay(self, path: Path, index: RagIndex, documents: list[dict], key: str) -> RagIndex:
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

    def index_token(self, name: str) -> str:
        resolved = self._resolve(name)
        vectors = resolved.path / "vectors"
        written = sorted(p.name for p in vectors.iterdir() if _VECTOR_RE.fullmatch(p.name)) if vectors.is_dir() else []
        return f"{resolved.version}:{len(written)}:{hash(tuple(written)) & 0xFFFFFFFF:08x}"

    def read_pdf(self, name: str, sha256: str) -> bytes | None:
        path = self.pdf_path(name, sha256)
        return None if path is None else path.read_bytes()

    def pdf_path(self, name: str, sha256: str) -> Path | None:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256 or ""):
            return None
        path = self._existing(name) / "files" / f"{sha256}.pdf"
        return path if path.is_file() else None

    # ---------------------------------------------------------------- writing
    @contextmanager
    def writing(self, name: str) -> Iterator[None]:
        path = self._existing(name)
        lock_path = path / ".lock"
        if lock_path.exists() and not lock_path.is_file():
            raise damaged(path.name, f"its lock file {lock_path} is not a file, so it cannot be changed",
                          advice=f"Run `rag-core check-store {path.name!r} --repair`, or remove the collection.")
        lock = FileLock(str(lock_path), timeout=LOCK_TIMEOUT_S)
        try:
            lock.acquire()
        except Timeout:
            raise CollectionBusyError(
                f"Collection {path.name!r} is being changed by another process; try again when it is done."
            ) from None
        try:
            self._clean_leftovers(path)
            yield
        finally:
            lock.release()

    def _clean_leftovers(self, path: Path, *, older_than: float = 0.0) -> list[str]:
        """Remove what writers that died left behind (the caller holds the writer lock)."""
        removed = []
        now = time.time()
        for folder in (path, path / "files", path / "versions", path / "data", path / SEGMENTS_DIR):
            if not folder.is_dir():
                continue
            for item in folder.iterdir():
                if not item.name.startswith(".") or item.name in (".lock", ".embed.lock"):
                    continue
                try:
                    if now - item.lstat().st_mtime < older_than:
                        continue
                    if item.is_dir() and not item.is_symlink():
                        shutil.rmtree(item)
                    else:
                        item.unlink()
                    removed.append(str(item.relative_to(path)))
                except OSError:
                    pass
        return removed

    def write_settings(self, name: str, settings: dict) -> None:
        path = self._existing(name)
        write_json_atomic(path / SETTINGS_FILE, {**settings, "format": COLLECTION_FORMAT,
                                                 "format_version": COLLECTION_FORMAT_VERSION, "name": path.name})

    def _store_files(self, path: Path, new_files: dict[str, bytes]) -> None:
        files = path / "files"
        files.mkdir(exist_ok=True)
        for sha, data in new_files.items():
            target = files / f"{sha}.pdf"
            if not (target.is_file() and target.stat().st_size == len(data)):
                write_bytes_atomic(target, data)

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
        """A new version holding exactly ``chunks`` (in segments of at most SEGMENT_MAX_CHUNKS)."""
        path = self._existing(name)
        settings = self.read_settings(name)
        self._store_files(path, new_files)
        segments = [self._write_segment(path, settings, chunks[a:b], _rows(embeddings, a, b), _rows(dense_mask, a, b))
                    for a, b in _segment_bounds(chunks)]
        return self._write_version(path, settings, documents, segments)

    def append(
        self,
        name: str,
        *,
        documents: list[dict],
        chunks: list[dict],
        embeddings: np.ndarray | None = None,
        dense_mask: np.ndarray | None = None,
        new_files: dict[str, bytes],
    ) -> str:
        """A new version: the live one's segments plus ``chunks`` in new ones (writer lock held).

        Nothing already stored is refitted; afterwards the tail segments are merged while two
        of them together stay within SEGMENT_MAX_CHUNKS.
        """
        path = self._existing(name)
        settings = self.read_settings(name)
        self._store_files(path, new_files)
        resolved = self._resolve(name)
        segments: list[dict] = []
        if resolved.folder is not None:
            record = self._version_record(path.name, resolved.folder)
            for folder, info in self._version_segments(path, resolved.folder, record):
                segments.append(info if info.get("id") else self._adopt_legacy(path, folder, settings))
        segments += [self._write_segment(path, settings, chunks[a:b], _rows(embeddings, a, b),
                                         _rows(dense_mask, a, b)) for a, b in _segment_bounds(chunks)]
        segments = self._merge_tail(path, settings, segments)
        return self._write_version(path, settings, documents, segments)

    def _merge_tail(self, path: Path, settings: dict, segments: list[dict]) -> list[dict]:
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
            segments[-2:] = [self._write_segment(path, settings, chunks, embeddings, mask)]
        return segments

    def _adopt_legacy(self, path: Path, folder: Path, settings: dict) -> dict:
        """A version folder of the older layout, copied (by links) into a segment of its own."""
        return self._write_segment(path, settings, None, None, None, lexical_from=folder)

    def _write_segment(self, path: Path, settings: dict, chunks: list[dict] | None, embeddings: np.ndarray | None,
                       dense_mask: np.ndarray | None, *, lexical_from: Path | None = None,
                       vectors_of: RagIndex | None = None) -> dict:
        """Write an immutable segment folder and return its record (writer lock held).

        With ``lexical_from``, the chunk and lexical files of that index folder are linked,
        not rebuilt, and ``vectors_of`` gives the vectors (the fold-in of vectors computed behind).
        """
        from rag_core.index.build import build_index_from_chunks

        folder = path / SEGMENTS_DIR
        folder.mkdir(exist_ok=True)
        numbers = [int(p.name[1:]) for p in folder.iterdir() if _SEGMENT_RE.fullmatch(p.name)]
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

    def _write_version(self, path: Path, settings: dict, documents: list[dict], segments: list[dict]) -> str:
        """Write a version record naming ``segments`` and make it live (writer lock held)."""
        versions = path / "versions"
        versions.mkdir(exist_ok=True)
        numbers = [int(p.name[1:]) for p in versions.iterdir() if _VERSION_RE.fullmatch(p.name)]
        version = f"v{max(numbers, default=0) + 1:06d}"
        try:
            parent = self._resolve(path.name).version
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
        self._prune(path, version, parent)
        return version

    def _prune(self, path: Path, current: str, parent: str | None) -> None:
        """Drop versions past their grace period, the segments no kept version names, and
        original files no kept version has needed for as long."""
        versions = path / "versions"
        now = time.time()
        kept: list[Path] = []
        for folder in versions.iterdir():
            if not _VERSION_RE.fullmatch(folder.name):
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
                record = self._version_record(path.name, folder)
                needed.update(d["sha256"] for d in record["documents"])
                segments.update(info["id"] for _, info in self._version_segments(path, folder, record) if info["id"])
            except (CollectionError, OSError):
                return  # cannot tell what an unreadable version needs: keep everything
        for item in (path / SEGMENTS_DIR).iterdir() if (path / SEGMENTS_DIR).is_dir() else []:
            if _SEGMENT_RE.fullmatch(item.name) and item.name not in segments:
                shutil.rmtree(item, ignore_errors=True)
        files = path / "files"
        if files.is_dir():
            for item in files.glob("*.pdf"):
                try:
                    if item.stem not in needed and now - item.stat().st_mtime >= VERSION_GRACE_S:
                        item.unlink()
                except OSError:
                    pass

    # ---------------------------------------------------------------- vectors filled in behind
    def pending_vectors(self, name: str) -> list[PendingDocument]:
        index = self.load_index(name)
        if index is None:
            return []
        documents = self.read_documents(name)
        key = model_key(self.read_settings(name))
        parts = index.parts if isinstance(index, SegmentedIndex) else [index]
        return [p for part in parts if part.embeddings is None or part.dense_mask is not None
                for p in pending_documents(part, documents, key)]

    def write_vectors(self, name: str, key: str, vectors: np.ndarray) -> None:
        if not re.fullmatch(r"[0-9a-f]{32}", key):
            raise ValueError(f"not a vector key: {key!r}")
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or not np.isfinite(vectors).all():
            raise ValueError("vectors must be a finite 2-D float matrix")
        folder = self._existing(name) / "vectors"
        folder.mkdir(exist_ok=True)
        write_bytes_atomic(folder / f"{key}.npy", _npy_bytes(vectors))

    def fold_in_vectors(self, name: str) -> str | None:
        with self.writing(name):
            resolved = self._resolve(name)
            if resolved.folder is None:
                return None
            record = self._version_record(resolved.path.name, resolved.folder)
            segments = self._version_segments(resolved.path, resolved.folder, record)
            index = self.load_index(name)
            if index is None:
                return None
            parts = index.parts if isinstance(index, SegmentedIndex) else [index]
            settings = self.read_settings(name)
            changed = False
            new_segments = []
            for (folder, info), part in zip(segments, parts, strict=True):
                stored = int(info.get("dense_chunks", -1)) if info.get("id") else _stored_dense(folder)
                if part.embeddings is None or part.dense_coverage[0] <= stored:
                    new_segments.append(info if info.get("id") else self._adopt_legacy(resolved.path, folder,
                                                                                       settings))
                    continue
                changed = True
                new_segments.append(self._write_segment(resolved.path, settings, None, None, None,
                                                        lexical_from=folder, vectors_of=part))
            if not changed:
                return None
            version = self._write_version(resolved.path, settings, record["documents"], new_segments)
            self._drop_folded_vectors(resolved.path)
            return version

    def _drop_folded_vectors(self, path: Path) -> None:
        """Vector files the live version now holds, or no pending document needs."""
        folder = path / "vectors"
        if not folder.is_dir():
            return
        keep = {p.key for p in self.pending_vectors(path.name)}
        for item in folder.iterdir():
            if item.suffix == ".npy" and item.stem not in keep:
                item.unlink(missing_ok=True)

    @contextmanager
    def embedding_slot(self, name: str) -> Iterator[bool]:
        path = self._existing(name)
        lock = FileLock(str(path / ".embed.lock"), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def write_embedding_progress(self, name: str, progress: dict) -> None:
        folder = self._existing(name) / "vectors"
        folder.mkdir(exist_ok=True)
        write_json_atomic(folder / PROGRESS_FILE, {**progress, "pid": os.getpid(), "updated": time.time()})

    def embedding_status(self, name: str) -> EmbeddingStatus:
        """Counted from the version record and the vector files written since (no index is loaded)."""
        try:
            resolved = self._resolve(name)
            if resolved.folder is None:
                return EmbeddingStatus(0, 0)
            record = self._version_record(resolved.path.name, resolved.folder)
        except CollectionError as exc:
            return EmbeddingStatus(0, 0, error=str(exc))
        total = sum(int(d.get("chunks", 0)) for d in record["documents"])
        done = record.get("dense_chunks")
        if not isinstance(done, int):  # a version written before the count was recorded
            try:
                index = self.load_index(name)
            except CollectionError as exc:
                return EmbeddingStatus(0, total, error=str(exc))
            done = 0 if index is None else index.dense_coverage[0]
        elif done < total:
            done += self._rows_written(resolved.path)
        done = min(done, total)
        path = resolved.path
        try:
            progress = json.loads((path / "vectors" / PROGRESS_FILE).read_text(encoding="utf-8"))
            if not isinstance(progress, dict):
                progress = {}
        except (OSError, ValueError):
            progress = {}
        updated = progress.get("updated") if _is_number(progress.get("updated")) else None
        running = bool(progress.get("running")) and updated is not None \
            and time.time() - updated < EMBEDDER_SILENT_S and _pid_alive(progress.get("pid"))
        in_memory = progress.get("done") if running and isinstance(progress.get("done"), int) else None
        interrupted = bool(progress.get("running") or progress.get("stopped")) and not running and done < total
        return EmbeddingStatus(
            done=max(done, min(in_memory, total)) if in_memory is not None else done, total=total,
            interrupted=interrupted, written=done,
            running=running, rate=progress.get("rate") if running and _is_number(progress.get("rate")) else None,
            started=progress.get("started") if _is_number(progress.get("started")) else None, updated=updated,
            error=progress.get("error") if isinstance(progress.get("error"), str) else None,
        )

    @staticmethod
    def _rows_written(path: Path) -> int:
        """Vectors in files written since the last version (read from the .npy headers only)."""
        rows = 0
        folder = path / "vectors"
        for item in folder.iterdir() if folder.is_dir() else []:
            if _VECTOR_RE.fullmatch(item.name):
                try:
                    rows += int(np.load(item, mmap_mode="r", allow_pickle=False).shape[0])
                except (OSError, ValueError):
                    continue
        return rows

    # ---------------------------------------------------------------- side data
    def read_data(self, name: str, key: str):
        path = self._existing(name) / "data" / f"{check_data_key(key)}.json"
        try:
            return _read_json(path, f"its {key}", name)
        except FileNotFoundError:
            return None

    def write_data(self, name: str, key: str, value) -> None:
        path = self._existing(name) / "data" / f"{check_data_key(key)}.json"
        if value is None:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, value)

    def list_data(self, name: str, prefix: str = "") -> list[str]:
        folder = self._existing(name) / "data"
        if not folder.is_dir():
            return []
        keys = [p.relative_to(folder).as_posix()[:-5] for p in folder.rglob("*.json") if not p.name.startswith(".")]
        return sorted(k for k in keys if k.startswith(prefix))

    # ---------------------------------------------------------------- integrity
    def check(self, name: str, *, repair: bool = False) -> CheckReport:
        path = self._dir_for_removal(name)
        report = CheckReport(name=path.name)
        problem, fixed = report.problems.append, report.repaired.append
        lock_path = path / ".lock"
        if lock_path.exists() and not lock_path.is_file():
            problem(".lock is not a file")
            if repair:
                shutil.rmtree(lock_path) if lock_path.is_dir() else lock_path.unlink()
                fixed("removed the .lock that was not a file")
        if repair:
            with self.writing(path.name):
                return self._check_locked(path, report, repair=True)
        return self._check_locked(path, report, repair=False)

    def _check_locked(self, path: Path, report: CheckReport, *, repair: bool) -> CheckReport:
        problem, fixed = report.problems.append, report.repaired.append
        name = path.name
        # settings
        settings = None
        try:
            settings = check_settings(_read_json(path / SETTINGS_FILE, "its settings", name), name)
        except FileNotFoundError:
            problem("collection.json is missing")
        except CollectionError as exc:
            problem(str(exc))
        # versions: every file checked against its checksum
        versions_dir = path / "versions"
        good: list[str] = []
        damaged: list[str] = []
        for folder in sorted(versions_dir.iterdir(), reverse=True) if versions_dir.is_dir() else []:
            if not _VERSION_RE.fullmatch(folder.name):
                continue
            issues = self._check_version(name, folder)
            if issues:
                problem(f"version {folder.name}: {'; '.join(issues)}")
                damaged.append(folder.name)
            else:
                good.append(folder.name)
        report.versions = good
        if settings is None and repair:
            settings = self._settings_from_versions(path, good)
            write_json_atomic(path / SETTINGS_FILE, settings)
            fixed("wrote collection.json again" + (" from the newest version" if good else " with default settings"))
        # the live pointer
        try:
            current = (path / "CURRENT").read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            current = None
        except (OSError, UnicodeDecodeError):
            current = ""
        if current in good:
            report.version = current
        elif current is None and not good and not damaged:
            report.version = None  # a new, empty collection
        else:
            what = ("missing" if current is None else f"{(current or '')[:40]!r}, " +
                    ("a damaged version" if current in damaged else "not a complete version"))
            problem(f"CURRENT is {what}")
            if repair:
                self._repair_live_version(path, settings or self._settings_from_versions(path, good), good,
                                          current if current in damaged else None, report)
        if repair:
            for version in damaged:
                if version != report.version:
                    shutil.rmtree(versions_dir / version, ignore_errors=True)
                    fixed(f"removed the damaged version {version}")
        # originals of the live documents
        if report.version:
            docs = self._version_record(name, versions_dir / report.version)["documents"]
            for doc in docs:
                pdf = path / "files" / f"{doc['sha256']}.pdf"
                if not pdf.is_file():
                    problem(f"the original of {doc['source']!r} is missing (page images cannot be shown)")
                elif file_digest(pdf) != doc["sha256"]:
                    problem(f"the original of {doc['source']!r} was altered (its checksum differs)")
        # vectors written behind
        vectors = path / "vectors"
        for item in vectors.iterdir() if vectors.is_dir() else []:
            if not _VECTOR_RE.fullmatch(item.name):
                continue
            try:
                array = np.load(item, allow_pickle=False)
                bad = array.ndim != 2 or not np.isfinite(array).all()
            except (OSError, ValueError):
                bad = True
            if bad:
                problem(f"vectors/{item.name} is damaged")
                if repair:
                    item.unlink(missing_ok=True)
                    fixed(f"removed vectors/{item.name} (it will be computed again)")
        for key in self.list_data(name):
            try:
                self.read_data(name, key)
            except CollectionError:
                problem(f"data/{key}.json is not valid JSON (the relevance lab's {key.split('/')[0]})")
        leftovers = [p for folder in (path, path / "files", path / "versions", path / "data", path / SEGMENTS_DIR)
                     if folder.is_dir()
                     for p in folder.iterdir() if p.name.startswith(".") and p.name not in (".lock", ".embed.lock")]
        if leftovers:
            problem(f"{len(leftovers)} temporary file(s) left by interrupted writes")
            if repair:
                self._clean_leftovers(path)
                fixed("removed the temporary files of interrupted writes")
        return report

    def _check_version(self, name: str, folder: Path) -> list[str]:
        path = folder.parent.parent
        try:
            record = self._version_record(name, folder)
            segments = self._version_segments(path, folder, record)
        except CollectionError as exc:
            return [str(exc)]
        if not segments:
            return [] if not record["documents"] else ["its documents have no index"]
        problems: list[str] = []
        for index_folder, info in segments:
            label = f"segment {info['id']}: " if info.get("id") else ""
            try:
                manifest = read_manifest(index_folder)
            except (IndexFormatError, OSError) as exc:
                problems.append(f"{label}{exc}")
                continue
            expected = info.get("manifest_sha256") or (record.get("index_manifest") or {}).get("sha256")
            if expected and file_digest(index_folder / MANIFEST) != expected:
                problems.append(f"{label}manifest.json was altered after it was written")
                continue
            found = verify_index_files(index_folder, full=True, manifest=manifest)
            if not found:
                try:
                    load_index(index_folder, verify="full")
                except IndexFormatError as exc:
                    found.append(str(exc))
            problems += [f"{label}{p}" for p in found]
        if not problems and sum(int(d.get("chunks", 0)) for d in record["documents"]) != sum(
                int(read_manifest(f).get("n_chunks", -1)) for f, _ in segments):
            problems.append("its documents and its index disagree on the number of chunks")
        return problems

    def _settings_from_versions(self, path: Path, good: list[str]) -> dict:
        settings = {"chunk_size": CHUNK_SIZE_CHARS, "overlap": CHUNK_OVERLAP_CHARS,
                    "embedding_model": DEFAULT_EMBEDDING_MODEL, "created": time.time()}
        for version in good:
            record = self._version_record(path.name, path / "versions" / version)
            if isinstance(record.get("settings"), dict):
                settings.update(record["settings"])
                break
        now = time.time()
        return check_settings({"format": COLLECTION_FORMAT, "format_version": COLLECTION_FORMAT_VERSION,
                               "name": path.name, "updated": now, **settings}, path.name)

    def _repair_live_version(self, path: Path, settings: dict, good: list[str], damaged_current: str | None,
                             report: CheckReport) -> None:
        """Make a complete version live again without losing a committed document.

        The documents to keep are those of the damaged live version when its record can
        still be read, else those of the newest complete version plus every stored
        original no version accounts for. A complete version holding exactly them becomes
        live; otherwise the index is rebuilt from the stored originals.
        """
        wanted: dict[str, str] | None = None
        if damaged_current is not None:
            try:
                record = self._version_record(path.name, path / "versions" / damaged_current)
                wanted = {d["sha256"]: d["source"] for d in record["documents"]}
            except (CollectionError, OSError):
                wanted = None
        if wanted is None:
            wanted = {}
            if good:
                wanted = {d["sha256"]: d["source"]
                          for d in self._version_record(path.name, path / "versions" / good[0])["documents"]}
            stored = {p.stem for p in (path / "files").glob("*.pdf")} if (path / "files").is_dir() else set()
            for sha in stored - set(wanted):
                wanted[sha] = ""
        for version in good:
            docs = self._version_record(path.name, path / "versions" / version)["documents"]
            if {d["sha256"] for d in docs} == set(wanted):
                write_bytes_atomic(path / "CURRENT", f"{version}\n".encode())
                report.version = version
                report.repaired.append(f"CURRENT now names {version}, a complete version with the same documents")
                return
        from rag_core.collections.ingest.pipeline import rebuild_from_originals  # re-reads the stored PDFs

        version, restored, missing = rebuild_from_originals(self, path.name, settings, wanted)
        report.version = version
        if version:
            report.repaired.append(f"rebuilt the index from {restored} stored PDF(s); dense vectors are computed "
                                   "again by the next ingest or `rag-core embed`")
        if missing:
            report.problems.append(f"{len(missing)} document(s) could not be restored (original missing or "
                                   f"unreadable): {', '.join(sorted(missing))}")


def is_regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False
