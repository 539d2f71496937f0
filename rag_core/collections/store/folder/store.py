"""The folder store: :class:`FolderStore`, collections as folders under ``<data dir>/collections``
(the layout is in the package docstring)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from filelock import FileLock, Timeout

from rag_core.atomic import write_json_atomic
from rag_core.collections.store.base import (
    COLLECTION_FORMAT,
    COLLECTION_FORMAT_VERSION,
    CheckReport,
    CollectionStore,
    EmbeddingStatus,
    check_data_key,
    damaged,
    embedding_status_from,
    model_key,
    same_name,
    validate_collection_name,
)
from rag_core.collections.store.folder import segments
from rag_core.collections.store.folder import vectors as vector_files
from rag_core.collections.store.folder.check import check_collection
from rag_core.collections.store.folder.layout import (
    SETTINGS_FILE,
    Resolved,
    checked_manifest_digest,
    clean_leftovers,
    read_settings_at,
    resolve,
    version_record,
    version_segments,
)
from rag_core.collections.store.folder.side_data import FolderSideData
from rag_core.collections.store.index_files import MANIFEST, load_index, verify_index_files
from rag_core.errors import (
    CollectionBusyError,
    CollectionError,
    CollectionExistsError,
    CollectionNotFoundError,
    IndexFormatError,
)
from rag_core.index.segments import SegmentedIndex
from rag_core.settings import FOLDER_READ_ATTEMPTS, LOCK_TIMEOUT_S

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex


class FolderStore(CollectionStore):
    """Collections as folders under ``root/collections`` (see the package docstring)."""

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

    def dir_for_removal(self, name: str) -> Path:
        """A folder directly under collections/ with this exact name, however broken its contents."""
        if not isinstance(name, str) or not name.strip() or "/" in name or "\\" in name or "\x00" in name \
                or name.strip() in (".", ".."):
            raise CollectionError(f"{name!r} is not the name of a collection folder.")
        path = self.collections_dir / name.strip()
        if not (path.is_dir() or path.is_symlink()):
            raise CollectionNotFoundError(f"No collection named {name.strip()!r} in {self.collections_dir}.")
        return path

    def _resolve(self, name: str) -> Resolved:
        return resolve(self._existing(name))

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
        path = self.dir_for_removal(name) if force else self._existing(name)
        with self._names_lock():
            trash = Path(tempfile.mkdtemp(prefix=".deleting-", dir=self.collections_dir))
            if force:
                os.rename(path, trash / "collection")
            else:
                with self.writing(path.name):
                    os.rename(path, trash / "collection")
        shutil.rmtree(trash, ignore_errors=True)

    # ---------------------------------------------------------------- reading
    def read_settings(self, name: str) -> dict:
        return read_settings_at(self._existing(name))

    def notes(self, name: str) -> list[str]:
        return self._resolve(name).notes

    def current_version(self, name: str) -> str | None:
        return self._resolve(name).version

    def read_documents(self, name: str) -> list[dict]:
        for attempt in range(FOLDER_READ_ATTEMPTS):
            resolved = self._resolve(name)
            if resolved.folder is None:
                return []
            try:
                return version_record(resolved.path.name, resolved.folder)["documents"]
            except (CollectionError, OSError):
                if attempt == FOLDER_READ_ATTEMPTS - 1 or self._resolve(name).version == resolved.version:
                    raise
        raise AssertionError("unreachable")

    def load_index(self, name: str) -> RagIndex | None:
        for attempt in range(FOLDER_READ_ATTEMPTS):
            resolved = self._resolve(name)
            if resolved.folder is None:
                return None
            try:
                record = version_record(resolved.path.name, resolved.folder)
                parts_of = version_segments(resolved.path, resolved.folder, record)
                if not parts_of:
                    return None
                parts = []
                for folder, info in parts_of:
                    expected = info.get("manifest_sha256")
                    if expected and checked_manifest_digest(folder) != expected:
                        raise IndexFormatError(f"{folder.name}/{MANIFEST} was altered after it was written")
                    parts.append(load_index(folder, verify="full"))
                parts = self._with_written_vectors(resolved.path, parts, record)
                if attempt < FOLDER_READ_ATTEMPTS - 1 and self._resolve(name).version != resolved.version:
                    # vectors were folded into a new version meanwhile (and their files removed):
                    # this version's overlay may lack some, read the new one
                    continue
                return parts[0] if len(parts) == 1 else SegmentedIndex(parts)
            except (CollectionError, IndexFormatError, OSError, ValueError) as exc:
                if self._resolve(name).version != resolved.version and attempt < FOLDER_READ_ATTEMPTS - 1:
                    continue  # a commit replaced the version while we read it: read the new one
                raise self._damage(resolved, exc) from None
        raise AssertionError("unreachable")

    def _damage(self, resolved: Resolved, exc: Exception) -> CollectionError:
        """The error for a version that failed to load, after a full re-check."""
        if isinstance(exc, CollectionError):
            return exc
        problems = []
        try:
            record = version_record(resolved.path.name, resolved.folder)
            for folder, _ in version_segments(resolved.path, resolved.folder, record):
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
        current = read_settings_at(path)
        key = model_key({**current, **(record.get("settings") or current)})
        return [part if part.embeddings is not None and part.dense_mask is None
                else vector_files.overlay(path, part, record["documents"], key) for part in parts]

    def index_token(self, name: str) -> str:
        resolved = self._resolve(name)
        written = vector_files.written_keys(resolved.path)
        return f"{resolved.version}:{len(written)}:{hash(tuple(written)) & 0xFFFFFFFF:08x}"

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
            clean_leftovers(path)
            yield
        finally:
            lock.release()

    def write_settings(self, name: str, settings: dict) -> None:
        path = self._existing(name)
        write_json_atomic(path / SETTINGS_FILE, {**settings, "format": COLLECTION_FORMAT,
                                                 "format_version": COLLECTION_FORMAT_VERSION, "name": path.name})

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
        segments.store_files(path, new_files)
        parts = [segments.write_segment(path, settings, chunks[a:b], segments.rows_of(embeddings, a, b),
                                        segments.rows_of(dense_mask, a, b))
                 for a, b in segments.segment_bounds(chunks)]
        return segments.write_version(path, settings, documents, parts)

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
        segments.store_files(path, new_files)
        resolved = self._resolve(name)
        parts: list[dict] = []
        if resolved.folder is not None:
            record = version_record(path.name, resolved.folder)
            for folder, info in version_segments(path, resolved.folder, record):
                parts.append(info if info.get("id") else segments.adopt_legacy(path, folder, settings))
        parts += [segments.write_segment(path, settings, chunks[a:b], segments.rows_of(embeddings, a, b),
                                         segments.rows_of(dense_mask, a, b))
                  for a, b in segments.segment_bounds(chunks)]
        parts = segments.merge_tail(path, settings, parts)
        return segments.write_version(path, settings, documents, parts)

    # ---------------------------------------------------------------- vectors filled in behind
    def write_vectors(self, name: str, key: str, vectors: np.ndarray) -> None:
        vector_files.write_vector_file(self._existing(name), key, vectors)

    def fold_in_vectors(self, name: str) -> str | None:
        with self.writing(name):
            resolved = self._resolve(name)
            if resolved.folder is None:
                return None
            record = version_record(resolved.path.name, resolved.folder)
            stored = version_segments(resolved.path, resolved.folder, record)
            index = self.load_index(name)
            if index is None:
                return None
            parts = index.parts if isinstance(index, SegmentedIndex) else [index]
            settings = self.read_settings(name)
            changed = False
            new_segments = []
            for (folder, info), part in zip(stored, parts, strict=True):
                dense = int(info.get("dense_chunks", -1)) if info.get("id") else segments.stored_dense(folder)
                if part.embeddings is None or part.dense_coverage[0] <= dense:
                    new_segments.append(info if info.get("id") else segments.adopt_legacy(resolved.path, folder,
                                                                                          settings))
                    continue
                changed = True
                new_segments.append(segments.write_segment(resolved.path, settings, None, None, None,
                                                           lexical_from=folder, vectors_of=part))
            if not changed:
                return None
            version = segments.write_version(resolved.path, settings, record["documents"], new_segments)
            vector_files.drop_vector_files(resolved.path, {p.key for p in self.pending_vectors(name)})
            return version

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
        vector_files.write_progress(self._existing(name), progress)

    def embedding_status(self, name: str) -> EmbeddingStatus:
        """Counted from the version record and the vector files written since (no index is
        loaded); the run is alive while its process is."""
        try:
            resolved = self._resolve(name)
            if resolved.folder is None:
                return EmbeddingStatus(0, 0)
            record = version_record(resolved.path.name, resolved.folder)
        except CollectionError as exc:
            return EmbeddingStatus(0, 0, error=str(exc))
        total = sum(int(d.get("chunks", 0)) for d in record["documents"])
        written = record.get("dense_chunks")
        if not isinstance(written, int):  # a version written before the count was recorded
            try:
                index = self.load_index(name)
            except CollectionError as exc:
                return EmbeddingStatus(0, total, error=str(exc))
            written = 0 if index is None else index.dense_coverage[0]
        elif written < total:
            written += vector_files.rows_written(resolved.path)
        progress = vector_files.read_progress(resolved.path)
        return embedding_status_from(progress, total=total, written=written,
                                     embedder_alive=vector_files.pid_alive(progress.get("pid")))

    # ---------------------------------------------------------------- side data
    def side_data(self, name: str) -> FolderSideData:
        """The collection's side data: committed generations with checksums (see :mod:`.side_data`)."""
        return FolderSideData(self._existing(name))

    def read_data(self, name: str, key: str):
        return self.side_data(name).read(check_data_key(key))

    def write_data(self, name: str, key: str, value) -> None:
        self.side_data(name).write(check_data_key(key), value)

    def data_token(self, name: str, key: str) -> str | None:
        return self.side_data(name).token(check_data_key(key))

    def list_data(self, name: str, prefix: str = "") -> list[str]:
        return self.side_data(name).keys(prefix)

    # ---------------------------------------------------------------- integrity
    def check(self, name: str, *, repair: bool = False) -> CheckReport:
        """Every file checked against its checksum (see :mod:`.check`); a repair that needs the
        stored originals names the documents in ``rebuild``."""
        return check_collection(self, name, repair=repair)
