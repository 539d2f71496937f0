"""The collection store interface, and the records every backend shares.

A store keeps named collections: their settings, their documents (with the original
files), and versions of their searchable index. The library, the ingest pipeline, the
app, the CLI and the evaluation talk to a :class:`CollectionStore` and do not know which
backend they use: :class:`~rag_core.collections.store.folder.store.FolderStore` (the embedded
default, a folder per collection) or
:class:`~rag_core.collections.store.postgres.store.PostgresStore`.

Rules every backend keeps:

* a commit is atomic: readers see the previous version until it is complete;
* writers of one collection are serialised by :meth:`CollectionStore.writing`;
* a reader is never told a healthy collection is damaged: damage is reported only after
  a re-check, naming the collection and the part that is wrong;
* dense vectors may be filled in after a commit (:meth:`pending_vectors`,
  :meth:`write_vectors`, :meth:`fold_in_vectors`), so lexical search works at once;
* a repair does what the store can do alone (roll back to a complete version, drop what is
  damaged) and names in :attr:`CheckReport.rebuild` the documents only their stored
  originals can restore: re-reading PDFs is the ingest pipeline's job, above the store
  (:mod:`rag_core.collections.repair`).

The rules every backend applies the same way live here too: collection names, the checks
of stored settings and document records (:func:`check_settings`, :func:`check_documents`),
the "damaged" error (:func:`damaged`), what decides a chunk's vector (:func:`model_key`),
and how an embedder's progress becomes an :class:`EmbeddingStatus`
(:func:`embedding_status_from`).
"""

from __future__ import annotations

import hashlib
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag_core.errors import CollectionDamagedError, CollectionError
from rag_core.settings import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_LONG_TEXT,
    EMBEDDER_SILENT_S,
    MAX_COLLECTION_NAME_LENGTH,
)
from rag_core.text.chunking import validate_chunk_settings

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex

COLLECTION_FORMAT = "rag_core.collection"
# recorded in every collection's settings (collection.json, or the row PostgreSQL returns)
COLLECTION_FORMAT_VERSION = 2
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


def same_name(a: str, b: str) -> bool:
    """Collection names are unique without regard to case ("papers" and "PAPERS" clash)."""
    return a.casefold() == b.casefold()


# --------------------------------------------------------------------------- shared rules


def damaged(name: str, detail: str, *, advice: str | None = None) -> CollectionDamagedError:
    """The error for a damaged part of collection ``name``, with what to do about it."""
    advice = advice or (f"Run `rag-core check-store {name!r} --repair` (it rolls back to a complete version "
                        "or rebuilds from the stored PDFs), or remove the collection.")
    return CollectionDamagedError(f"Collection {name!r} is damaged: {detail.rstrip('.')}. {advice}")


def is_number(value) -> bool:
    """An int or a float, not a bool (JSON read back from a file or a database)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def default_settings() -> dict:
    """The chunk settings and model of a collection whose own settings were lost (a repair)."""
    return {"chunk_size": CHUNK_SIZE_CHARS, "overlap": CHUNK_OVERLAP_CHARS, "embedding_model": DEFAULT_EMBEDDING_MODEL}


def check_settings(raw, name: str) -> dict:
    """Stored settings completed with their defaults and their types checked
    (``CollectionDamagedError`` naming what is wrong)."""
    if not isinstance(raw, dict):
        raise damaged(name, "collection.json does not hold settings")
    settings = {
        "format": COLLECTION_FORMAT, "format_version": COLLECTION_FORMAT_VERSION, "name": name,
        **default_settings(),
        # collections made before encoder variants existed were embedded with torch
        "encoder": "torch", "created": 0.0, "updated": 0.0, **raw,
    }
    wrong = [key for key, ok in (
        ("chunk_size", isinstance(settings["chunk_size"], int)), ("overlap", isinstance(settings["overlap"], int)),
        ("embedding_model", isinstance(settings["embedding_model"], str)),
        ("encoder", isinstance(settings["encoder"], str)),
        ("created", is_number(settings["created"])), ("updated", is_number(settings["updated"])),
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
    """Document records with their types checked (``where`` names them in the error)."""
    if not isinstance(raw, list):
        raise damaged(name, f"{where} does not hold a document list")
    for n, doc in enumerate(raw, start=1):
        ok = isinstance(doc, dict) and all(isinstance(doc.get(k), str) for k in ("doc_id", "source", "sha256")) \
            and all(isinstance(doc.get(k, 0), int) and not isinstance(doc.get(k, 0), bool)
                    for k in ("pages", "chunks", "bytes"))
        if not ok:
            raise damaged(name, f"document {n} in {where} is not a well-formed record")
    return raw


def model_key(settings: dict) -> str:
    """What decides a chunk's vector: the model, its encoder variant and how long texts are read."""
    return f"{settings.get('embedding_model') or DEFAULT_EMBEDDING_MODEL}|{settings['encoder']}|{DEFAULT_LONG_TEXT}"


@dataclass
class CollectionInfo:
    """A summary of one collection; ``error`` is set (and the counts are 0) when it is damaged."""

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
    embedded_chunks: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def damaged(self) -> bool:
        return self.error is not None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PendingDocument:
    """A document whose chunks have no dense vectors yet: ``key`` names its vector file."""

    doc_id: str
    source: str
    key: str
    texts: tuple[str, ...]


@dataclass
class CheckReport:
    """What ``check-store`` found in one collection, and what it repaired."""

    name: str
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    version: str | None = None
    versions: list[str] = field(default_factory=list)
    # Set by a repair when no complete version holds the committed documents: SHA-256 -> source
    # name ("" when unknown) of the documents to rebuild from their stored originals, which the
    # caller above the store does (rag_core.collections.repair); None: nothing to rebuild.
    rebuild: dict[str, str] | None = None
    # Documents whose stored original is missing or altered: source name -> "missing" or "altered"
    # (page images and a rebuild need it; only the user's copy of the PDF can replace it).
    originals: dict[str, str] = field(default_factory=dict)
    # What the user can do about what a repair could not fix: one line each, with the command.
    actions: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems or len(self.repaired) >= len(self.problems)

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


@dataclass
class EmbeddingStatus:
    """How far the dense vectors of a collection are: ``done`` of ``total`` chunks."""

    done: int
    total: int
    running: bool = False
    rate: float | None = None  # chunks per second of the running embedder
    started: float | None = None
    updated: float | None = None
    error: str | None = None
    interrupted: bool = False  # a run started and stopped before the end (killed, or the app restarted)
    # vectors written where searches read them (``done`` also counts those computed and not yet
    # written, for a smooth progress bar); None: the same as ``done``
    written: int | None = None

    @property
    def complete(self) -> bool:
        """Every chunk has a vector that searches use (not merely computed)."""
        return (self.done if self.written is None else self.written) >= self.total

    @property
    def eta_s(self) -> float | None:
        if not self.running or not self.rate or self.rate <= 0:
            return None
        return max(self.total - self.done, 0) / self.rate

    def to_dict(self) -> dict:
        return {**asdict(self), "complete": self.complete, "eta_s": self.eta_s}


def embedding_status_from(progress, *, total: int, written: int, embedder_alive: bool,
                          now: float | None = None) -> EmbeddingStatus:
    """The status every backend reports, from the embedder's last progress record and the counts.

    ``progress``: what :meth:`CollectionStore.write_embedding_progress` last stored (None or
    anything but a dict: nothing); ``written``: chunks whose vectors searches read;
    ``embedder_alive``: whether the embedder that wrote the record can still be running (its
    process, or the slot it held). A run is *running* while it is alive and reported within
    ``EMBEDDER_SILENT_S``; its ``done`` then counts the vectors computed and not yet written.
    A run that started or was stopped and is not running, with chunks still lacking a
    vector, is *interrupted* (the app resumes it).
    """
    progress = progress if isinstance(progress, dict) else {}
    now = time.time() if now is None else now
    written = min(int(written), int(total))
    updated = progress.get("updated") if is_number(progress.get("updated")) else None
    running = bool(progress.get("running")) and embedder_alive and updated is not None \
        and now - updated < EMBEDDER_SILENT_S
    in_memory = progress.get("done") if running and isinstance(progress.get("done"), int) else None
    return EmbeddingStatus(
        done=max(written, min(in_memory, total)) if in_memory is not None else written, total=total,
        running=running, rate=progress.get("rate") if running and is_number(progress.get("rate")) else None,
        started=progress.get("started") if is_number(progress.get("started")) else None, updated=updated,
        error=progress.get("error") if isinstance(progress.get("error"), str) else None,
        interrupted=bool(progress.get("running") or progress.get("stopped")) and not running and written < total,
        written=written,
    )


_DATA_KEY_RE = re.compile(r"[a-z0-9][a-z0-9_\-]{0,63}(/[a-z0-9][a-z0-9_\-.]{0,127})?")


def check_data_key(key: str) -> str:
    """Side-data keys: ``word`` or ``word/name`` of lower-case letters, digits, ``_ - .``."""
    if not isinstance(key, str) or not _DATA_KEY_RE.fullmatch(key) or ".." in key:
        raise ValueError(f"not a valid data key: {key!r}")
    return key


def vector_key(texts: Sequence[str], key_of_model: str) -> str:
    """A content address for the vectors of a document's chunks under one model (:func:`model_key`)."""
    digest = hashlib.sha256(key_of_model.encode("utf-8"))
    for text in texts:
        digest.update(b"\0")
        digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


def document_rows(chunks: Sequence[dict]) -> dict[str, np.ndarray]:
    """The rows of each document (by ``doc_id``, else ``source``), in order; by column where
    the chunks are stored so (a dict per chunk would cost seconds at a million chunks)."""
    if hasattr(chunks, "column") and hasattr(chunks, "strings"):
        ids = np.asarray(chunks.column("doc_id"))
        names = chunks.strings("doc_id")
        if (ids >= 0).all():
            keys = np.asarray(names, dtype=object)[ids] if len(ids) else np.zeros(0, dtype=object)
        else:
            sources = np.asarray(chunks.strings("source"), dtype=object)[np.asarray(chunks.column("source"))]
            keys = np.where(ids >= 0, np.asarray([*names, ""], dtype=object)[ids], sources)
    else:
        keys = np.asarray([c.get("doc_id") or c["source"] for c in chunks], dtype=object)
    if not len(keys):
        return {}
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    edges = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    return {str(group[0]): rows for group, rows in zip(np.split(sorted_keys, edges), np.split(order, edges),
                                                        strict=True)}


def document_texts(chunks: Sequence[dict], doc_id: str) -> list[str]:
    """What the bi-encoder reads of each chunk of a document (:func:`rag_core.index.build.index_text`)."""
    from rag_core.index.build import index_text

    return [index_text(c) for c in chunks if c.get("doc_id") == doc_id]


def pending_documents(index: RagIndex | None, documents: Sequence[dict], key_of_model: str) -> list[PendingDocument]:
    """The documents of ``index`` that have chunks without a dense vector."""
    if index is None:
        return []
    if index.has_vectors and index.dense_mask is None:
        return []
    missing = np.ones(len(index.chunks), dtype=bool) if not index.has_vectors else ~index.dense_mask
    rows_of = document_rows(index.chunks)
    text_of = getattr(index.chunks, "text", None) or (lambda i: index.chunks[i]["text"])
    out = []
    for doc in documents:
        rows = rows_of.get(doc["doc_id"])
        if rows is None or not missing[rows].any():
            continue
        texts = [text_of(int(i)) for i in rows]
        out.append(PendingDocument(doc["doc_id"], doc["source"], vector_key(texts, key_of_model), tuple(texts)))
    return out


class CollectionStore(ABC):
    """Named collections and their versions; see the module docstring for the rules.

    A backend implements the abstract methods; the others are derived from them (override
    one where the backend can do it faster, as PostgreSQL does :meth:`pending_vectors`).
    """

    #: "folder" or "postgresql"
    kind: str = ""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the store lives, safe to print (no password)."""

    # ---------------------------------------------------------------- names
    @abstractmethod
    def names(self) -> list[str]:
        """Every collection, damaged ones included, sorted."""

    def exists(self, name: str) -> bool:
        try:
            return validate_collection_name(name) in self.names()
        except CollectionError:
            return False

    @abstractmethod
    def create(self, name: str, settings: dict) -> str:
        """Make an empty collection; returns its stored name."""

    @abstractmethod
    def rename(self, old: str, new: str) -> str: ...

    @abstractmethod
    def delete(self, name: str, *, force: bool = False) -> None:
        """Remove a collection; ``force`` removes whatever is there, however damaged."""

    # ---------------------------------------------------------------- reading
    @abstractmethod
    def read_settings(self, name: str) -> dict: ...

    @abstractmethod
    def current_version(self, name: str) -> str | None: ...

    def notes(self, name: str) -> list[str]:
        """Warnings about a collection that still works (a recovered pointer, say)."""
        return []

    @abstractmethod
    def read_documents(self, name: str) -> list[dict]:
        """The document records of the live version."""

    @abstractmethod
    def load_index(self, name: str) -> RagIndex | None:
        """The live version's index with every dense vector computed so far, or None when empty."""

    @abstractmethod
    def index_token(self, name: str) -> str:
        """A value that changes whenever :meth:`load_index` would return something new."""

    def read_pdf(self, name: str, sha256: str) -> bytes | None:
        """The original file of a document, or None when it is not stored."""
        path = self.pdf_path(name, sha256)
        return None if path is None else path.read_bytes()

    def pdf_path(self, name: str, sha256: str) -> Path | None:
        """A path to the original file, where the backend has one (override this or :meth:`read_pdf`)."""
        return None

    # ---------------------------------------------------------------- writing
    @abstractmethod
    def writing(self, name: str) -> AbstractContextManager[None]:
        """Hold the collection's writer lock (raises ``CollectionBusyError`` after a wait)."""

    @abstractmethod
    def write_settings(self, name: str, settings: dict) -> None:
        """Replace the collection's settings (the caller holds :meth:`writing`)."""

    @abstractmethod
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
        """Make a new live version (the caller holds :meth:`writing`); returns its name."""

    # ---------------------------------------------------------------- vectors filled in behind
    def pending_vectors(self, name: str) -> list[PendingDocument]:
        """Documents of the live version whose vectors are neither stored nor written yet."""
        from rag_core.index.segments import SegmentedIndex

        index = self.load_index(name)
        if index is None:
            return []
        documents = self.read_documents(name)
        key = model_key(self.read_settings(name))
        parts = index.parts if isinstance(index, SegmentedIndex) else [index]
        return [p for part in parts if part.embeddings is None or part.dense_mask is not None
                for p in pending_documents(part, documents, key)]

    @abstractmethod
    def write_vectors(self, name: str, key: str, vectors: np.ndarray) -> None:
        """Keep the vectors of one pending document (crash-safe; readers see them at once)."""

    def fold_in_vectors(self, name: str) -> str | None:
        """Make the written vectors part of a new live version; returns it (None: nothing to do,
        as for a backend whose written vectors are part of the live version already)."""
        return None

    @abstractmethod
    def embedding_slot(self, name: str) -> AbstractContextManager[bool]:
        """Try to become the collection's one embedder; yields False when another has the slot."""

    @abstractmethod
    def write_embedding_progress(self, name: str, progress: dict) -> None: ...

    @abstractmethod
    def embedding_status(self, name: str) -> EmbeddingStatus:
        """How far the vectors are: the counts and the progress record through
        :func:`embedding_status_from`."""

    # ---------------------------------------------------------------- side data (the relevance lab's)
    @abstractmethod
    def read_data(self, name: str, key: str):
        """A JSON value kept with the collection outside its versions (judgments, snapshots), or None.

        Side data is committed in checksummed generations (:mod:`.side_data`): a live value that
        was lost or altered is read from its committed copy, and ``check`` reports it."""

    @abstractmethod
    def write_data(self, name: str, key: str, value) -> None:
        """Replace a JSON value atomically as a new generation (the caller holds :meth:`writing`);
        ``None`` deletes it. ``value`` may be a
        :class:`~rag_core.collections.store.side_data.PreparedValue`, serialised before the lock."""

    def data_token(self, name: str, key: str) -> str | None:
        """A value that changes whenever ``key``'s value does, so a writer can prepare a new value
        outside the writer lock and only commit it under the lock (None: unknown, read it again
        under the lock)."""
        return None

    @abstractmethod
    def list_data(self, name: str, prefix: str = "") -> list[str]:
        """The keys of the side data that start with ``prefix``, sorted."""

    # ---------------------------------------------------------------- integrity
    @abstractmethod
    def check(self, name: str, *, repair: bool = False) -> CheckReport:
        """Verify every stored part of a collection; ``repair`` fixes what the store can fix
        alone and names in ``rebuild`` the documents only their stored originals can restore."""

    def close(self) -> None:  # noqa: B027 - optional: only backends with connections need it
        """Release connections or handles (nothing to do for a folder)."""
