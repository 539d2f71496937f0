"""Named collections of PDFs under one data folder, safe against crashes and races.

Layout of a collection folder::

    <data dir>/collections/<name>/
        collection.json       name, format version, models and chunk settings
        CURRENT               the name of the live version (replaced atomically)
        versions/v000007/     documents.json and the index files of rag_core.store
        files/<sha256>.pdf    the original PDFs (for page images)
        .lock                 serialises writers

An ingest writes a complete new version folder and only then points ``CURRENT`` at
it, so a crash (even ``kill -9``) at any moment leaves the previous version loadable.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from .chunking import chunk_pages
from .index import RagIndex, build_index_from_chunks, embed_chunks
from .pdf import extract_pdf
from .settings import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_EMBEDDING_MODEL,
    MAX_COLLECTION_NAME_LENGTH,
    default_data_dir,
)
from .atomic import write_bytes_atomic, write_json_atomic
from .errors import (  # noqa: F401  (re-exported)
    CollectionBusyError,
    CollectionError,
    CollectionExistsError,
    CollectionNotFoundError,
)
from .store import IndexFormatError, load_index, write_index_files

COLLECTION_FORMAT = "rag_core.collection"
COLLECTION_FORMAT_VERSION = 1
LOCK_TIMEOUT_S = 600
_NAME_RE = re.compile(r"^[^\W_][\w .()+\-]*$")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}




def validate_collection_name(name: str) -> str:
    """The stripped name, or ``CollectionError`` for a name that could escape the data folder."""
    if not isinstance(name, str):
        raise CollectionError(f"A collection name must be text, got {type(name).__name__}.")
    stripped = name.strip()
    if not stripped:
        raise CollectionError("A collection name cannot be empty.")
    if "\x00" in stripped or "/" in stripped or "\\" in stripped or ".." in stripped:
        raise CollectionError(
            f"Collection name {stripped[:60]!r} is not allowed: no slashes, '..' or NUL characters."
        )
    if len(stripped) > MAX_COLLECTION_NAME_LENGTH:
        raise CollectionError(
            f"A collection name can have at most {MAX_COLLECTION_NAME_LENGTH} characters (got {len(stripped)})."
        )
    if not _NAME_RE.match(stripped) or stripped.endswith("."):
        raise CollectionError(
            f"Collection name {stripped!r} is not allowed: start with a letter or digit and use only "
            "letters, digits, spaces and . _ - ( ) +"
        )
    if stripped.lower() in _RESERVED:
        raise CollectionError(f"Collection name {stripped!r} is reserved on some systems; choose another.")
    return stripped


@dataclass
class FileReport:
    """What happened to one file of an ingest: ``status`` "ok", "duplicate" or a PDF problem."""

    source: str
    status: str
    reason: str
    pages: int = 0
    chunks: int = 0
    doc_id: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class IngestReport:
    collection: str
    files: list[FileReport] = field(default_factory=list)
    chunks_added: int = 0
    seconds: float = 0.0
    version: str | None = None

    @property
    def added(self) -> list[FileReport]:
        return [f for f in self.files if f.ok]

    @property
    def skipped(self) -> list[FileReport]:
        return [f for f in self.files if not f.ok]

    def to_dict(self) -> dict:
        return {
            "collection": self.collection,
            "files": [f.to_dict() for f in self.files],
            "chunks_added": self.chunks_added,
            "seconds": round(self.seconds, 3),
            "version": self.version,
        }


@dataclass
class IngestProgress:
    """A progress event: ``stage`` is "extract", "embed", "index" or "done"."""

    stage: str
    files_done: int
    files_total: int
    current_file: str | None
    chunks_done: int
    chunks_total: int
    elapsed_s: float
    eta_s: float | None
    fraction: float


@dataclass
class CollectionInfo:
    name: str
    documents: int
    pages: int
    chunks: int
    chunk_size: int
    overlap: int
    embedding_model: str
    created: float
    updated: float
    version: str | None
    error: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _read_upload(item) -> tuple[str, bytes | None, str | None]:
    """``(display name, bytes, error)`` for a path, a (name, bytes) pair or an uploaded file."""
    if isinstance(item, tuple) and len(item) == 2:
        name, data = item
        return str(name), bytes(data), None
    if hasattr(item, "getvalue") and hasattr(item, "name"):  # Streamlit UploadedFile, BytesIO with name
        return Path(str(item.name)).name, bytes(item.getvalue()), None
    path = Path(item)
    try:
        return path.name, path.read_bytes(), None
    except IsADirectoryError:
        return path.name, None, "is a folder, not a file"
    except FileNotFoundError:
        return path.name, None, "file not found"
    except OSError as exc:
        return path.name, None, f"cannot be read ({exc.strerror or exc})"


def _unique_source(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    n = 2
    while True:
        candidate = f"{stem} ({n}){'.' + ext if ext else ''}"
        if candidate not in taken:
            return candidate
        n += 1


class Library:
    """The named collections under one data folder (default: :func:`default_data_dir`)."""

    def __init__(self, data_dir: str | os.PathLike | None = None):
        self.root = Path(data_dir).expanduser() if data_dir else default_data_dir()
        self.collections_dir = self.root / "collections"

    # -- paths and locks -------------------------------------------------
    def _dir(self, name: str) -> Path:
        name = validate_collection_name(name)
        path = self.collections_dir / name
        if path.resolve().parent != self.collections_dir.resolve():
            raise CollectionError(f"Collection name {name!r} would leave the data folder.")
        return path

    def _existing(self, name: str) -> Path:
        path = self._dir(name)
        if not (path / "collection.json").is_file():
            known = ", ".join(self.names()) or "none yet"
            raise CollectionNotFoundError(f"No collection named {name!r} (collections: {known}).")
        return path

    def _lock(self, path: Path) -> FileLock:
        return FileLock(str(path / ".lock"), timeout=LOCK_TIMEOUT_S)

    def _locked(self, path: Path):
        lock = self._lock(path)
        try:
            lock.acquire()
        except Timeout:
            raise CollectionBusyError(
                f"Collection {path.name!r} is being changed by another process; try again when it is done."
            ) from None
        return lock

    # -- reading ---------------------------------------------------------
    def names(self) -> list[str]:
        if not self.collections_dir.is_dir():
            return []
        return sorted(p.name for p in self.collections_dir.iterdir() if (p / "collection.json").is_file())

    def exists(self, name: str) -> bool:
        try:
            return (self._dir(name) / "collection.json").is_file()
        except CollectionError:
            return False

    def settings(self, name: str) -> dict:
        path = self._existing(name)
        try:
            return json.loads((path / "collection.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise CollectionError(f"Collection {name!r} is damaged: collection.json cannot be read ({exc}).") from None

    def version(self, name: str) -> str | None:
        """The live version's name (changes whenever the collection changes)."""
        current = self._existing(name) / "CURRENT"
        try:
            value = current.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return value or None

    def _version_dir(self, name: str) -> Path | None:
        version = self.version(name)
        if version is None:
            return None
        if not re.fullmatch(r"v\d{6}", version):
            raise CollectionError(f"Collection {name!r} is damaged: CURRENT names {version[:40]!r}.")
        return self._existing(name) / "versions" / version

    def documents(self, name: str) -> list[dict]:
        folder = self._version_dir(name)
        if folder is None:
            return []
        try:
            return json.loads((folder / "documents.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise CollectionError(f"Collection {name!r} is damaged: its document list cannot be read ({exc}).") from None

    def info(self, name: str) -> CollectionInfo:
        settings = self.settings(name)
        docs = self.documents(name)
        return CollectionInfo(
            name=settings.get("name", name), documents=len(docs), pages=sum(d.get("pages", 0) for d in docs),
            chunks=sum(d.get("chunks", 0) for d in docs), chunk_size=settings.get("chunk_size", CHUNK_SIZE_CHARS),
            overlap=settings.get("overlap", CHUNK_OVERLAP_CHARS),
            embedding_model=settings.get("embedding_model", DEFAULT_EMBEDDING_MODEL),
            created=settings.get("created", 0.0), updated=settings.get("updated", 0.0), version=self.version(name),
        )

    def list(self) -> list[CollectionInfo]:
        """Every collection; a damaged one is listed with ``error`` set, so it can be deleted."""
        infos = []
        for name in self.names():
            try:
                infos.append(self.info(name))
            except CollectionError as exc:
                infos.append(CollectionInfo(name, 0, 0, 0, CHUNK_SIZE_CHARS, CHUNK_OVERLAP_CHARS, "", 0.0, 0.0,
                                            None, error=str(exc)))
        return infos

    def load_index(self, name: str) -> RagIndex | None:
        """The collection's index, or None when it has no documents yet."""
        folder = self._version_dir(name)
        if folder is None or not (folder / "manifest.json").is_file():
            return None
        try:
            return load_index(folder)
        except IndexFormatError as exc:
            raise CollectionError(
                f"Collection {name!r} is damaged ({exc}). Delete it and ingest the PDFs again."
            ) from None

    def pdf_path(self, name: str, doc_id: str) -> Path | None:
        """The stored original PDF of a document, for page images."""
        for doc in self.documents(name):
            if doc["doc_id"] == doc_id or doc["source"] == doc_id:
                path = self._existing(name) / "files" / f"{doc['sha256']}.pdf"
                return path if path.is_file() else None
        return None

    # -- writing ---------------------------------------------------------
    def create(
        self,
        name: str,
        *,
        chunk_size: int = CHUNK_SIZE_CHARS,
        overlap: int = CHUNK_OVERLAP_CHARS,
        embedding_model: str = DEFAULT_EMBEDDING_MODEL,
        exist_ok: bool = False,
    ) -> CollectionInfo:
        """Make an empty collection."""
        path = self._dir(name)
        if (path / "collection.json").is_file():
            if exist_ok:
                return self.info(name)
            raise CollectionExistsError(f"A collection named {name.strip()!r} already exists.")
        if int(chunk_size) <= 0 or not 0 <= int(overlap) < int(chunk_size):
            raise CollectionError(
                f"Chunk size must be positive and overlap between 0 and the chunk size (got {chunk_size}, {overlap})."
            )
        path.mkdir(parents=True, exist_ok=True)
        now = time.time()
        write_json_atomic(path / "collection.json", {
            "format": COLLECTION_FORMAT, "format_version": COLLECTION_FORMAT_VERSION, "name": path.name,
            "chunk_size": int(chunk_size), "overlap": int(overlap), "embedding_model": embedding_model,
            "created": now, "updated": now,
        })
        return self.info(path.name)

    def rename(self, old: str, new: str) -> CollectionInfo:
        source = self._existing(old)
        target = self._dir(new)
        if target.exists():
            raise CollectionExistsError(f"A collection named {new.strip()!r} already exists.")
        lock = self._locked(source)
        try:
            os.rename(source, target)
        finally:
            lock.release()
        settings = json.loads((target / "collection.json").read_text(encoding="utf-8"))
        settings.update(name=target.name, updated=time.time())
        write_json_atomic(target / "collection.json", settings)
        return self.info(target.name)

    def delete(self, name: str) -> None:
        path = self._existing(name)
        lock = self._locked(path)
        try:
            trash = Path(tempfile.mkdtemp(prefix=".deleting-", dir=self.collections_dir))
            os.rename(path, trash / "collection")
        finally:
            lock.release()
        shutil.rmtree(trash, ignore_errors=True)

    def _commit(self, path: Path, chunks: list[dict], embeddings: np.ndarray | None, documents: list[dict],
                settings: dict) -> str:
        """Write a complete new version and point CURRENT at it (caller holds the lock)."""
        versions = path / "versions"
        versions.mkdir(exist_ok=True)
        numbers = [int(p.name[1:]) for p in versions.iterdir() if re.fullmatch(r"v\d{6}", p.name)]
        version = f"v{max(numbers, default=0) + 1:06d}"
        staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=versions))
        try:
            if chunks:
                index = build_index_from_chunks(
                    chunks, embedding_model=settings["embedding_model"], embeddings=embeddings,
                    compute_embeddings=embeddings is not None, chunk_size=settings["chunk_size"],
                    overlap=settings["overlap"],
                )
                write_index_files(index, staging)
            write_json_atomic(staging / "documents.json", documents)
            os.rename(staging, versions / version)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        tmp = path / f".CURRENT.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(version)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path / "CURRENT")
        settings["updated"] = time.time()
        write_json_atomic(path / "collection.json", settings)
        for old in versions.iterdir():  # older versions and leftovers of crashed writes
            if old.name != version:
                shutil.rmtree(old, ignore_errors=True)
        return version

    def _current_state(self, name: str) -> tuple[list[dict], np.ndarray | None, list[dict]]:
        documents = self.documents(name)
        index = self.load_index(name)
        if index is None:
            return [], None, documents
        embeddings = None if index.embeddings is None else np.array(index.embeddings, dtype=np.float32)
        return list(index.chunks), embeddings, documents

    def add_pdfs(
        self,
        name: str,
        files: Iterable,
        *,
        progress: Callable[[IngestProgress], None] | None = None,
        create: bool = True,
        compute_embeddings: bool = True,
    ) -> IngestReport:
        """Extract, chunk and embed PDFs into ``name``; one bad file never stops the others.

        ``files``: paths, ``(name, bytes)`` pairs or uploaded-file objects. Files already
        in the collection (same SHA-256) are reported as duplicates; chunks already
        embedded are not embedded again.
        """
        if create and not self.exists(name):
            self.create(name)
        path = self._existing(name)
        files = list(files)
        started = time.perf_counter()
        report = IngestReport(collection=path.name)
        lock = self._locked(path)
        try:
            settings = self.settings(name)
            chunks, embeddings, documents = self._current_state(name)
            known = {d["sha256"]: d["source"] for d in documents}
            taken = {d["source"] for d in documents}
            new_chunks: list[dict] = []
            new_documents: list[dict] = []
            pending_files: list[tuple[Path, bytes]] = []

            def emit(stage, files_done, current, chunks_done=0, chunks_total=0):
                if progress is None:
                    return
                elapsed = time.perf_counter() - started
                if stage == "extract":
                    fraction = 0.25 * files_done / max(len(files), 1)
                elif stage == "embed":
                    fraction = 0.25 + 0.7 * chunks_done / max(chunks_total, 1)
                else:
                    fraction = 0.95 if stage == "index" else 1.0
                eta = elapsed / fraction - elapsed if fraction > 0.02 else None
                progress(IngestProgress(stage, files_done, len(files), current, chunks_done, chunks_total,
                                        elapsed, eta, min(fraction, 1.0)))

            for done, item in enumerate(files):
                t0 = time.perf_counter()
                display, data, error = _read_upload(item)
                emit("extract", done, display)
                if error:
                    report.files.append(FileReport(display, "unreadable_file", f"{display} {error}."))
                    continue
                sha = hashlib.sha256(data).hexdigest()
                if sha in known:
                    report.files.append(FileReport(
                        display, "duplicate", f"Same content as {known[sha]!r}, already in the collection; skipped.",
                        doc_id=sha[:16]))
                    continue
                extraction = extract_pdf(data, name=display)
                if not extraction.ok:
                    report.files.append(FileReport(display, extraction.status, extraction.reason,
                                                   pages=extraction.n_pages, seconds=time.perf_counter() - t0))
                    continue
                source = _unique_source(display, taken)
                doc_id = sha[:16]
                doc_chunks = chunk_pages(extraction.pages, source, settings["chunk_size"], settings["overlap"])
                if not doc_chunks:
                    report.files.append(FileReport(display, "no_text", "No text to index was found.",
                                                   pages=extraction.n_pages))
                    continue
                for chunk in doc_chunks:
                    chunk["doc_id"] = doc_id
                known[sha] = source
                taken.add(source)
                new_chunks.extend(doc_chunks)
                pending_files.append((path / "files" / f"{sha}.pdf", data))
                new_documents.append({
                    "doc_id": doc_id, "source": source, "file_name": display, "sha256": sha,
                    "pages": extraction.n_pages, "chunks": len(doc_chunks), "bytes": len(data),
                    "has_page_labels": any(p.label for p in extraction.pages), "added": time.time(),
                    "warnings": list(getattr(extraction, "warnings", []) or []),
                    **{key: (getattr(extraction, "metadata", None) or {}).get(key)
                       for key in ("title", "authors", "year")},
                })
                reason = extraction.reason if source == display else f"{extraction.reason}; stored as {source!r}"
                report.files.append(FileReport(display, "ok", reason, pages=extraction.n_pages,
                                               chunks=len(doc_chunks), doc_id=doc_id,
                                               seconds=time.perf_counter() - t0))
            emit("extract", len(files), None)
            if new_chunks:
                new_embeddings = None
                embed = compute_embeddings and (embeddings is not None or not chunks)
                if embed:
                    new_embeddings = embed_chunks(
                        new_chunks, settings["embedding_model"],
                        progress=lambda d, t: emit("embed", len(files), None, d, t),
                    )
                emit("index", len(files), None, len(new_chunks), len(new_chunks))
                (path / "files").mkdir(exist_ok=True)
                for target, data in pending_files:
                    write_bytes_atomic(target, data)
                all_embeddings = None
                if new_embeddings is not None:
                    all_embeddings = new_embeddings if embeddings is None else np.vstack([embeddings, new_embeddings])
                report.version = self._commit(path, chunks + new_chunks, all_embeddings,
                                              documents + new_documents, settings)
                report.chunks_added = len(new_chunks)
        finally:
            lock.release()
        report.seconds = time.perf_counter() - started
        emit("done", len(files), None)
        return report

    def remove_documents(self, name: str, documents: Iterable[str]) -> list[str]:
        """Remove documents by doc_id or source name; returns the removed sources."""
        path = self._existing(name)
        wanted = set(documents)
        lock = self._locked(path)
        try:
            settings = self.settings(name)
            chunks, embeddings, docs = self._current_state(name)
            removed = [d for d in docs if d["doc_id"] in wanted or d["source"] in wanted]
            missing = wanted - {d["doc_id"] for d in removed} - {d["source"] for d in removed}
            if missing:
                raise CollectionError(
                    f"Not in collection {name!r}: {', '.join(sorted(missing))}. "
                    f"Documents: {', '.join(d['source'] for d in docs) or 'none'}."
                )
            gone = {d["doc_id"] for d in removed}
            keep = [i for i, c in enumerate(chunks) if c.get("doc_id") not in gone]
            kept_embeddings = None if embeddings is None else embeddings[keep]
            self._commit(path, [chunks[i] for i in keep], kept_embeddings,
                         [d for d in docs if d["doc_id"] not in gone], settings)
            for doc in removed:
                (path / "files" / f"{doc['sha256']}.pdf").unlink(missing_ok=True)
        finally:
            lock.release()
        return [d["source"] for d in removed]

