"""Named collections of PDFs: the one object the app, the CLI and scripts use.

``Library`` puts a :class:`~rag_core.collections.store.CollectionStore` (where collections live) and
the ingest pipeline (:mod:`rag_core.collections.ingest.pipeline`) behind one small API. The store is the
folder store under the data folder, or the one ``RAG_CORE_STORE`` names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rag_core.collections.ingest.embedding import (
    background_embedding_alive,
    embed_pending,
    start_background_embedding,
)
from rag_core.collections.ingest.ocr_layers import layer_key, read_layer
from rag_core.collections.ingest.pipeline import IngestReport, ingest_files
from rag_core.collections.ingest.progress import IngestProgress
from rag_core.collections.repair import check_collection
from rag_core.collections.store import CollectionStore, open_store
from rag_core.collections.store.base import CheckReport, CollectionInfo, EmbeddingStatus, validate_collection_name
from rag_core.errors import CollectionError, CollectionExistsError, CollectionNotFoundError
from rag_core.settings import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_EMBEDDING_MODEL,
    OCR_LANG,
    STORE_ENV,
    default_data_dir,
)
from rag_core.text.chunking import validate_chunk_settings

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex


class Library:
    """The named collections of one store (default: the folder store in :func:`default_data_dir`).

    ``store``: a :class:`CollectionStore`, or a location (a folder, or a
    ``postgresql://`` URL); default ``$RAG_CORE_STORE``, else the data folder.
    """

    def __init__(self, data_dir: str | os.PathLike | None = None, *, store: CollectionStore | str | None = None):
        self.root = Path(data_dir).expanduser() if data_dir else default_data_dir()
        if isinstance(store, CollectionStore):
            self.store = store
        else:
            self.store = open_store(store or os.environ.get(STORE_ENV) or self.root)

    def __repr__(self) -> str:
        return f"Library({self.store.kind}: {self.store.location})"

    # -- reading ---------------------------------------------------------
    def names(self) -> list[str]:
        return self.store.names()

    def exists(self, name: str) -> bool:
        return self.store.exists(name)

    def settings(self, name: str) -> dict:
        return self.store.read_settings(name)

    def version(self, name: str) -> str | None:
        """The live version's name (changes whenever the collection changes)."""
        return self.store.current_version(name)

    def index_token(self, name: str) -> str:
        """Changes whenever :meth:`load_index` would give something new (also as vectors fill in)."""
        return self.store.index_token(name)

    def documents(self, name: str) -> list[dict]:
        """The collection's document records: what each PDF said, with the corrections and imports
        kept for it laid over (:mod:`rag_core.collections.metadata`; ``origin`` says per field)."""
        from rag_core.collections.metadata import apply_records, load_records

        return apply_records(self.store.read_documents(name), load_records(self.store, name))

    # -- bibliographic records (issue 18) ----------------------------------
    def set_record(self, name: str, document: str, **fields) -> dict:
        """Correct a document's record by hand (``title``, ``authors``, ``year``, ``doi``, ...):
        a committed change of the collection that survives re-adding the same file."""
        from rag_core.collections.metadata import set_record

        return set_record(self.store, name, document, self.store.read_documents(name), **fields)

    def import_records(self, name: str, source, *, collection: str | None = None, add_pdfs: bool = True,
                       compute_embeddings: bool = True):
        """Records from a ``.bib``, CSL-JSON ``.json`` or ``.ris`` file (a path, or ``(name, bytes)``),
        or a Zotero data folder (its PDFs added first when ``add_pdfs``; ``collection``: only that
        Zotero collection's items), matched to the documents and kept. Returns an ImportReport."""
        from rag_core.collections.metadata import import_records
        from rag_core.records.reading import parse_records, read_records

        if isinstance(source, tuple):
            found = parse_records(source[1], source[0])
        elif collection is not None:
            from rag_core.records.zotero import read_zotero

            found = read_zotero(source, collection)
        else:
            found = read_records(source)
        attachments: dict[int, str] = {}
        added: list[str] = []
        if found.pdfs and add_pdfs:
            import hashlib

            from rag_core.safe_files import read_regular_file
            from rag_core.settings import MAX_PDF_BYTES

            for n, path in found.pdfs.items():
                attachments[n] = hashlib.sha256(read_regular_file(path, max_bytes=MAX_PDF_BYTES)).hexdigest()
            report = self.add_pdfs(name, sorted(set(found.pdfs.values())), compute_embeddings=compute_embeddings)
            added = [f.source for f in report.files if f.status == "ok"]
        if not self.exists(name):
            raise CollectionNotFoundError(f"No collection named {name!r}.")
        # matched against the records as they stand: a DOI or title set by hand counts like the PDF's own
        result = import_records(self.store, name, found, self.documents(name), attachments=attachments)
        result.added = added
        return result

    def export_records(self, name: str, path_name: str) -> bytes:
        """The collection's records as BibTeX (``.bib``) or CSL-JSON (``.json``) bytes."""
        from rag_core.collections.metadata import export_records

        return export_records(self.documents(name), path_name)

    def info(self, name: str) -> CollectionInfo:
        settings = self.settings(name)
        docs = self.documents(name)
        notes = list(getattr(self.store, "notes", lambda _n: [])(name))
        status = self.store.embedding_status(name)
        return CollectionInfo(
            name=settings.get("name", name), documents=len(docs), pages=sum(d.get("pages", 0) for d in docs),
            chunks=sum(d.get("chunks", 0) for d in docs), chunk_size=settings["chunk_size"],
            overlap=settings["overlap"], embedding_model=settings["embedding_model"],
            created=settings["created"], updated=settings["updated"], version=self.version(name),
            embedded_chunks=status.done, notes=notes,
        )

    def list(self) -> list[CollectionInfo]:
        """Every collection; a damaged one is listed with ``error`` set, so it can be repaired or removed."""
        infos = []
        for name in self.names():
            try:
                infos.append(self.info(name))
            except CollectionNotFoundError:
                continue  # renamed or deleted while we listed
            except CollectionError as exc:
                infos.append(CollectionInfo(name, 0, 0, 0, CHUNK_SIZE_CHARS, CHUNK_OVERLAP_CHARS, "", 0.0, 0.0,
                                            None, error=str(exc)))
        return infos

    def load_index(self, name: str) -> RagIndex | None:
        """The collection's index (with every dense vector computed so far), or None when empty."""
        return self.store.load_index(name)

    def pdf_path(self, name: str, doc_id: str) -> Path | None:
        """The stored original PDF of a document (by doc_id or source name), for page images."""
        doc = self.document(name, doc_id)
        return None if doc is None else self.store.pdf_path(name, doc["sha256"])

    def pdf_bytes(self, name: str, doc_id: str) -> bytes | None:
        doc = self.document(name, doc_id)
        return None if doc is None else self.store.read_pdf(name, doc["sha256"])

    def ocr_layer(self, name: str, doc_id: str) -> dict | None:
        """The words OCR read on a scanned document's pages, with their boxes (by doc_id or source
        name; :mod:`rag_core.collections.ingest.ocr_layers`), for marking a passage on its page image;
        None for a document with a text layer."""
        doc = self.document(name, doc_id)
        if doc is None or not doc.get("ocr"):
            return None
        return read_layer(self.store, name, doc["sha256"])

    def document(self, name: str, doc_id: str) -> dict | None:
        for doc in self.documents(name):
            if doc_id in (doc["doc_id"], doc["source"]):
                return doc
        return None

    def embedding_status(self, name: str) -> EmbeddingStatus:
        return self.store.embedding_status(name)

    def check(self, name: str, *, repair: bool = False) -> CheckReport:
        """Verify every stored file of a collection (checksums included); ``repair`` fixes what it can,
        rebuilding from the stored PDFs when no complete version is left (:mod:`rag_core.collections.repair`)."""
        return check_collection(self.store, name, repair=repair)

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
        """Make an empty collection (names are unique without regard to case). With
        ``exist_ok``, a collection of exactly this name is fine, even one another process made
        at the same moment."""
        name = validate_collection_name(name)
        if exist_ok and self.exists(name):
            return self.info(name)
        try:
            size, lap = validate_chunk_settings(chunk_size, overlap, collection=True)
        except ValueError as exc:
            raise CollectionError(str(exc)) from None
        from rag_core.models.loading import planned_encoder

        try:
            stored = self.store.create(name, {"chunk_size": size, "overlap": lap, "embedding_model": embedding_model,
                                              "encoder": planned_encoder()})
        except CollectionExistsError:
            if exist_ok and self.exists(name):  # made by another process meanwhile
                return self.info(name)
            raise
        return self.info(stored)

    def rename(self, old: str, new: str) -> CollectionInfo:
        return self.info(self.store.rename(old, new))

    def delete(self, name: str, *, force: bool = False) -> None:
        """Delete a collection; ``force`` removes a damaged one whatever state it is in."""
        self.store.delete(name, force=force)

    def add_pdfs(
        self,
        name: str,
        files: Iterable,
        *,
        progress: Callable[[IngestProgress], None] | None = None,
        create: bool = True,
        compute_embeddings: bool = True,
        embed: str | None = None,
        ocr: str = "auto",
        ocr_lang: str = OCR_LANG,
    ) -> IngestReport:
        """Extract, chunk and index PDFs into ``name``; one bad file never stops the others.

        ``files``: paths or ``(name, bytes)`` pairs. Files already in the collection (same
        SHA-256) are reported as duplicates; chunks already embedded are not embedded
        again. ``embed``: "now" (default) returns once the dense vectors are computed,
        "background" returns as soon as the files are searchable by TF-IDF, BM25 and
        exact search and embeds in a thread, "none" leaves the vectors for later
        (``compute_embeddings=False`` means "none"). A collection this call created is
        removed again when no file could be added. ``ocr``: "auto" reads scanned pages (those
        without a usable text layer) with Tesseract, after the other files are searchable;
        "force" reads every page by OCR (for a bad OCR layer); "off" none. ``ocr_lang``:
        Tesseract's languages, such as ``eng`` or ``eng+deu``.
        """
        embed = embed or ("now" if compute_embeddings else "none")
        created = False
        if not self.exists(name):
            if not create:
                self.store.read_settings(name)  # raises the not-found error with the list of names
            created = self.create_for_ingest(name)
        report = ingest_files(self.store, validate_collection_name(name), files, progress=progress, embed=embed,
                              ocr=ocr, ocr_lang=ocr_lang)
        if created and not report.added:
            try:
                if not self.documents(name):
                    self.delete(name)
                    report.collection_removed = True
            except CollectionError:
                pass
        return report

    def create_for_ingest(self, name: str) -> bool:
        """Make collection ``name`` for a first ingest; True when this call made it, False when
        another process made it at the same moment (two first uploads into a new shared collection:
        both add to that one). A clash in case only ("Papers" for "papers") stays an error."""
        try:
            self.create(name)
            return True
        except CollectionExistsError:
            if not self.exists(name):
                raise
            return False

    def embed_pending(self, name: str, *, progress: Callable[[int, int], None] | None = None) -> EmbeddingStatus:
        """Compute the dense vectors the collection still lacks (resumes an interrupted run)."""
        return embed_pending(self.store, name, progress=progress)

    def embedding_in_background(self, name: str) -> bool:
        """Whether this process runs a background embedder of ``name`` (from its start on)."""
        return background_embedding_alive(self.store, name)

    def embed_in_background(self, name: str) -> bool:
        """Start computing missing vectors in a thread of this process (False: one is running)."""
        if self.store.embedding_status(name).complete:
            return False
        return start_background_embedding(self.store, name)

    def remove_documents(self, name: str, documents: Iterable[str]) -> list[str]:
        """Remove documents by doc_id or source name; returns the removed sources."""
        import numpy as np

        wanted = set(documents)
        with self.store.writing(name):
            docs = self.store.read_documents(name)
            removed = [d for d in docs if d["doc_id"] in wanted or d["source"] in wanted]
            missing = wanted - {d["doc_id"] for d in removed} - {d["source"] for d in removed}
            if missing:
                raise CollectionError(
                    f"Not in collection {name!r}: {', '.join(sorted(missing))}. "
                    f"`rag-core list {name!r}` shows its {len(docs)} document(s)."
                )
            index = self.store.load_index(name)
            gone = {d["doc_id"] for d in removed}
            chunks = [] if index is None else index.chunks
            keep = [i for i, c in enumerate(chunks) if c.get("doc_id") not in gone]
            embeddings = dense_mask = None
            if index is not None and index.embeddings is not None:
                embeddings = np.asarray(index.embeddings, dtype=np.float32)[keep]
                if index.dense_mask is not None:
                    dense_mask = index.dense_mask[keep]
            self.store.commit(
                name, documents=[d for d in docs if d["doc_id"] not in gone], chunks=[chunks[i] for i in keep],
                embeddings=embeddings, dense_mask=dense_mask, new_files={},
                dropped_files=[d["sha256"] for d in removed],
            )
            for doc in removed:  # the OCR layer goes with its document
                if doc.get("ocr"):
                    self.store.write_data(name, layer_key(doc["sha256"]), None)
        return [d["source"] for d in removed]
