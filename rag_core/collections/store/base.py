"""The collection store interface, and the records every backend shares.

A store keeps named collections: their settings, their documents (with the original
files), and versions of their searchable index. The library, the ingest pipeline, the
app, the CLI and the evaluation talk to a :class:`CollectionStore` and do not know which
backend they use: :class:`~rag_core.collections.store.folder.FolderStore` (the embedded default, a
folder per collection) or the PostgreSQL backend.

Rules every backend keeps:

* a commit is atomic: readers see the previous version until it is complete;
* writers of one collection are serialised by :meth:`CollectionStore.writing`;
* a reader is never told a healthy collection is damaged: damage is reported only after
  a re-check, naming the collection and the part that is wrong;
* dense vectors may be filled in after a commit (:meth:`pending_vectors`,
  :meth:`write_vectors`, :meth:`fold_in_vectors`), so lexical search works at once.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rag_core.errors import CollectionError
from rag_core.settings import MAX_COLLECTION_NAME_LENGTH

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex

COLLECTION_FORMAT = "rag_core.collection"
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


_DATA_KEY_RE = re.compile(r"[a-z0-9][a-z0-9_\-]{0,63}(/[a-z0-9][a-z0-9_\-.]{0,127})?")


def check_data_key(key: str) -> str:
    """Side-data keys: ``word`` or ``word/name`` of lower-case letters, digits, ``_ - .``."""
    if not isinstance(key, str) or not _DATA_KEY_RE.fullmatch(key) or ".." in key:
        raise ValueError(f"not a valid data key: {key!r}")
    return key


def vector_key(texts: Sequence[str], model_key: str) -> str:
    """A content address for the vectors of a document's chunks under one model."""
    digest = hashlib.sha256(model_key.encode("utf-8"))
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


def pending_documents(index: RagIndex | None, documents: Sequence[dict], model_key: str) -> list[PendingDocument]:
    """The documents of ``index`` that have chunks without a dense vector."""
    if index is None:
        return []
    if index.embeddings is not None and index.dense_mask is None:
        return []
    missing = np.ones(len(index.chunks), dtype=bool) if index.embeddings is None else ~index.dense_mask
    rows_of = document_rows(index.chunks)
    text_of = getattr(index.chunks, "text", None) or (lambda i: index.chunks[i]["text"])
    out = []
    for doc in documents:
        rows = rows_of.get(doc["doc_id"])
        if rows is None or not missing[rows].any():
            continue
        texts = [text_of(int(i)) for i in rows]
        out.append(PendingDocument(doc["doc_id"], doc["source"], vector_key(texts, model_key), tuple(texts)))
    return out


class CollectionStore(ABC):
    """Named collections and their versions; see the module docstring for the rules."""

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

    @abstractmethod
    def exists(self, name: str) -> bool: ...

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

    @abstractmethod
    def read_documents(self, name: str) -> list[dict]:
        """The document records of the live version."""

    @abstractmethod
    def load_index(self, name: str) -> RagIndex | None:
        """The live version's index with every dense vector computed so far, or None when empty."""

    @abstractmethod
    def index_token(self, name: str) -> str:
        """A value that changes whenever :meth:`load_index` would return something new."""

    @abstractmethod
    def read_pdf(self, name: str, sha256: str) -> bytes | None:
        """The original file of a document, or None when it is not stored."""

    def pdf_path(self, name: str, sha256: str):
        """A path to the original file, where the backend has one."""
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
    @abstractmethod
    def pending_vectors(self, name: str) -> list[PendingDocument]:
        """Documents of the live version whose vectors are neither stored nor written yet."""

    @abstractmethod
    def write_vectors(self, name: str, key: str, vectors: np.ndarray) -> None:
        """Keep the vectors of one pending document (crash-safe; readers see them at once)."""

    @abstractmethod
    def fold_in_vectors(self, name: str) -> str | None:
        """Make the written vectors part of a new live version; returns it (None: nothing to do)."""

    @abstractmethod
    def embedding_slot(self, name: str) -> AbstractContextManager[bool]:
        """Try to become the collection's one embedder; yields False when another has the slot."""

    @abstractmethod
    def write_embedding_progress(self, name: str, progress: dict) -> None: ...

    @abstractmethod
    def embedding_status(self, name: str) -> EmbeddingStatus: ...

    # ---------------------------------------------------------------- side data (the relevance lab's)
    @abstractmethod
    def read_data(self, name: str, key: str):
        """A JSON value kept with the collection outside its versions (judgments, snapshots), or None."""

    @abstractmethod
    def write_data(self, name: str, key: str, value) -> None:
        """Replace a JSON value atomically (the caller holds :meth:`writing`); ``None`` deletes it."""

    @abstractmethod
    def list_data(self, name: str, prefix: str = "") -> list[str]:
        """The keys of the side data that start with ``prefix``, sorted."""

    # ---------------------------------------------------------------- integrity
    @abstractmethod
    def check(self, name: str, *, repair: bool = False) -> CheckReport: ...

    def close(self) -> None:  # noqa: B027 - optional: only backends with connections need it
        """Release connections or handles (nothing to do for a folder)."""

