"""The ingest pipeline: files in, a searchable collection out, dense vectors filled in behind.

:func:`ingest_files` runs its steps in order:

1. **Read** each input safely (:mod:`rag_core.collections.ingest.inputs`) and skip what the
   collection already holds (same SHA-256).
2. **Extract** each new file in a worker process under a time and a memory budget
   (:mod:`rag_core.pdf.pool`). The collection's lock is not held
   meanwhile, so other ingests go on. Files with pages to read by OCR wait for step 4b.
3. **Chunk** each file read.
4. **Commit** the new documents under the collection's lock: chunks, TF-IDF and BM25 over
   the whole collection (or a new segment of a large one). From here on the documents are
   searchable by TF-IDF, BM25 and exact search.
4b. **Read the scans**: the files with pages without a usable text layer are read again,
   those pages by OCR (on every core), chunked and committed, with their OCR layers
   (:mod:`rag_core.collections.ingest.ocr_layers`). So the files with a text layer are searchable as
   soon as before, and the scans follow.
5. **Embed** the chunks that have no dense vector yet (:mod:`rag_core.collections.ingest.embedding`):
   now, in the background, or later.

Progress events and the time left come from :mod:`rag_core.collections.ingest.progress`.
:func:`rebuild_from_originals` makes a version from a collection's stored original PDFs
(``check-store --repair``).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rag_core.collections.ingest.embedding import embed_pending, start_background_embedding
from rag_core.collections.ingest.inputs import InputFile, read_input
from rag_core.collections.ingest.ocr_layers import flag_chunks, layer_key, record_summary
from rag_core.collections.ingest.progress import IngestProgress, _Clock
from rag_core.collections.ingest.rates import _remember_index_rate, remember_rates
from rag_core.collections.store.base import CollectionStore, EmbeddingStatus
from rag_core.errors import StoreConnectionError
from rag_core.pdf.extraction import PdfExtraction
from rag_core.pdf.ocr import OCR_MODES
from rag_core.pdf.pool import ExtractionPool, PageCounter
from rag_core.settings import EXTRACT_WORKERS, OCR_LANG, OCR_RATE_MIN_SECONDS, SEGMENT_MAX_CHUNKS, ocr_threads
from rag_core.text.passage_context import chunk_pdf

if TYPE_CHECKING:
    from rag_core.index.build import RagIndex

EMBED_MODES = ("now", "background", "none")


@dataclass
class FileReport:
    """What happened to one file of an ingest: ``status`` "ok", "duplicate" or a problem."""

    source: str
    status: str
    reason: str
    pages: int = 0
    chunks: int = 0
    doc_id: str | None = None
    seconds: float = 0.0
    # pages read by OCR: pages, mean_confidence, low_confidence_pages, engine, lang (None: none were)
    ocr: dict | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class IngestReport:
    """What an ingest did: a report per file, in the order given, and how far the collection is embedded."""

    collection: str
    files: list[FileReport] = field(default_factory=list)
    chunks_added: int = 0
    seconds: float = 0.0
    version: str | None = None
    searchable_after_s: float | None = None
    embedding: EmbeddingStatus | None = None
    collection_removed: bool = False  # created by this ingest and removed again: nothing could be added
    # The store could not be reached after the commit (a database server lost right after it): the
    # documents are in the version committed; what was left undone (the dense vectors) and why.
    store_lost: str | None = None

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
            "searchable_after_s": None if self.searchable_after_s is None else round(self.searchable_after_s, 3),
            "version": self.version,
            "embedding": None if self.embedding is None else self.embedding.to_dict(),
            "collection_removed": self.collection_removed,
            "store_lost": self.store_lost,
        }


# The new files of one call, each with its position among the inputs.
_Uploads = list[tuple[int, InputFile]]
# The files read and chunked, by position among the inputs.
_Chunked = dict[int, tuple[InputFile, PdfExtraction, list[dict]]]
# Each input's report, by its position; None until the step that decides it.
_Slots = list[FileReport | None]


def ingest_files(
    store: CollectionStore,
    name: str,
    files: Iterable,
    *,
    progress: Callable[[IngestProgress], None] | None = None,
    embed: str = "now",
    pool: ExtractionPool | None = None,
    ocr: str = "auto",
    ocr_lang: str = OCR_LANG,
) -> IngestReport:
    """Add PDFs to an existing collection; one bad file never stops the others.

    ``embed``: "now" computes the dense vectors before returning, "background" in a thread
    of this process, "none" leaves them for a later :func:`embed_pending`. ``ocr``: "auto"
    reads the pages without a usable text layer by OCR, after the other files are committed;
    "force" reads every page by OCR; "off" none. ``ocr_lang``: Tesseract's languages (``eng+deu``).
    """
    if embed not in EMBED_MODES:
        raise ValueError(f"embed must be one of {EMBED_MODES}, got {embed!r}")
    if ocr not in OCR_MODES:
        raise ValueError(f"ocr must be one of {OCR_MODES}, got {ocr!r}")
    files = list(files)
    started = time.perf_counter()
    report = IngestReport(collection=name)
    settings = store.read_settings(name)
    clock = _Clock(len(files), min(EXTRACT_WORKERS, max(len(files), 1)), embed == "now", progress,
                   encoder=_planned_variant(settings) if embed == "now" else None)
    documents = store.read_documents(name)
    clock.existing_chunks = sum(int(d.get("chunks", 0)) for d in documents)
    slots: _Slots = [None] * len(files)

    uploads = _read_inputs(files, {d["sha256"]: d["source"] for d in documents}, slots, clock)
    if uploads:
        own_pool = pool is None
        pool = pool or ExtractionPool(workers=min(EXTRACT_WORKERS, len(uploads)))
        try:
            # with "auto", a first pass lists the pages to read by OCR: the other files are committed first
            extractions = _extract(uploads, clock, pool=pool, ocr="defer" if ocr == "auto" else ocr,
                                   ocr_lang=ocr_lang)
            scans = [(u, e) for u, e in zip(uploads, extractions, strict=True) if e.ocr_needed]
            ready = [(u, e) for u, e in zip(uploads, extractions, strict=True) if not e.ocr_needed]
            clock.ocr_known = {n: len(e.ocr_needed) for (n, _), e in scans}
            chunked = _chunk([u for u, _ in ready], [e for _, e in ready], settings, slots, clock)
            _remember_read_rates(chunked, clock)
            if chunked:
                _commit(store, name, chunked, slots, report, clock)
                report.searchable_after_s = time.perf_counter() - started
            if scans:
                _read_scans(store, name, [u for u, _ in scans], settings, slots, report, clock, pool=pool,
                            ocr_lang=ocr_lang)
                if report.searchable_after_s is None and report.version is not None:
                    report.searchable_after_s = time.perf_counter() - started
        finally:
            if own_pool:
                pool.close()
    for n, slot in enumerate(slots):  # each file's reading time (its worker's, OCR pass included)
        if slot is not None and n in clock.file_seconds:
            slot.seconds = clock.file_seconds[n]
    report.files.extend(slot for slot in slots if slot is not None)
    try:
        report.embedding = _embed(store, name, embed, clock)
    except StoreConnectionError as exc:
        if report.version is None:
            raise
        # the commit landed; a store lost afterwards leaves only the vectors to compute
        report.store_lost = (f"{str(exc).rstrip('.')}. The documents were committed (version {report.version}) "
                             "before the store was lost; their dense vectors are computed by "
                             f"`rag-core embed {name}` once it is back.")
    report.seconds = time.perf_counter() - started
    clock.emit("done")
    return report


def _read_inputs(files: list, known: dict[str, str], slots: _Slots, clock: _Clock) -> _Uploads:
    """Step 1: read and hash each input. A file that cannot be read, or whose content the
    collection (``known``: SHA-256 to source) or an earlier input already holds, gets its
    report in ``slots`` now; the others are returned with their positions."""
    uploads: _Uploads = []
    seen: dict[str, str] = {}
    for n, item in enumerate(files):
        clock.emit("read", None)
        upload = read_input(item)
        if upload.data is None:
            slots[n] = FileReport(upload.name, upload.status or "unreadable_file", upload.reason or "")
            clock.files_done += 1
            continue
        sha = upload.sha256
        if sha in known or sha in seen:
            where = known.get(sha) or seen[sha]
            slots[n] = FileReport(upload.name, "duplicate", f"Same content as {where!r}, already in the collection; "
                                  "skipped.", doc_id=sha[:16])
            clock.files_done += 1
            continue
        seen[sha] = upload.name
        uploads.append((n, upload))
    return uploads


def _extract(uploads: _Uploads, clock: _Clock, *, pool: ExtractionPool, ocr: str,
             ocr_lang: str) -> list[PdfExtraction]:
    """Step 2: read the new files in worker processes of ``pool``, outside the collection's
    lock, telling the clock each page. While a progress callback listens, a page counter
    counts the files no reader has opened yet."""
    clock.extract_started = time.perf_counter()
    clock.file_bytes = {job: len(upload.data or b"") for job, (_, upload) in enumerate(uploads)}

    def on_event(kind: str, job: int, info: dict) -> None:
        if kind == "page":
            clock.page_read(job, info["done"], info["total"])
        elif kind == "ocr":
            clock.ocr_read(uploads[job][0], info["done"], info["total"])
        elif kind == "done":
            n = uploads[job][0]
            clock.file_seconds[n] = clock.file_seconds.get(n, 0.0) + float(info.get("seconds") or 0.0)
            if not info.get("ocr_needed"):  # a file whose scanned pages are still to read is not done
                clock.files_done += 1
            clock.pages_done[job] = clock.pages_known.setdefault(job, info["pages"])
        clock.emit("ocr" if kind == "ocr" else "extract", uploads[job][1].name)

    jobs = [(u.name, u.data) for _, u in uploads]
    counter = clock.counter = PageCounter(jobs) if len(jobs) > 1 and clock.callback is not None else None
    try:
        with counter or contextlib.nullcontext():
            return pool.run(jobs, on_event=on_event, ocr=ocr, ocr_lang=ocr_lang)
    finally:
        clock.counter = None


def _read_scans(store: CollectionStore, name: str, scans: _Uploads, settings: dict, slots: _Slots,
                report: IngestReport, clock: _Clock, *, pool: ExtractionPool, ocr_lang: str) -> None:
    """Step 4b: read the files the first pass found pages to OCR in (their pages already
    counted), every core on them, then chunk and commit them."""
    clock.emit("ocr")
    t_ocr = time.perf_counter()

    def on_event(kind: str, job: int, info: dict) -> None:
        n, upload = scans[job]
        if kind == "ocr":
            clock.ocr_read(n, info["done"], info["total"])
            clock.emit("ocr", upload.name)
        elif kind == "done":
            clock.files_done += 1
            clock.file_seconds[n] = clock.file_seconds.get(n, 0.0) + float(info.get("seconds") or 0.0)
            clock.ocr_done[n] = clock.ocr_known.get(n, 0)
            clock.emit("ocr", upload.name)

    extractions = pool.run([(u.name, u.data) for _, u in scans], on_event=on_event, ocr="auto", ocr_lang=ocr_lang)
    clock.ocr_chunked = True
    chunked = _chunk(scans, extractions, settings, slots, clock)
    read = sum(len((e.ocr or {}).get("pages") or []) for e in extractions)
    _remember_ocr_rate(read, time.perf_counter() - t_ocr)
    if chunked:
        _commit(store, name, chunked, slots, report, clock)


def _chunk(uploads: _Uploads, extractions: list[PdfExtraction], settings: dict, slots: _Slots,
           clock: _Clock) -> _Chunked:
    """Step 3: chunk each file read with the collection's chunk settings. A file that could
    not be read, or holds no text, gets its report in ``slots`` now."""
    chunked: _Chunked = {}
    for (n, upload), extraction in zip(uploads, extractions, strict=True):
        if not extraction.ok:
            slots[n] = FileReport(upload.name, extraction.status, extraction.reason, pages=extraction.n_pages,
                                  ocr=record_summary(extraction.ocr), warnings=list(extraction.warnings or []))
            continue
        chunks = chunk_pdf(extraction.pages, upload.name, settings["chunk_size"], settings["overlap"],
                           metadata_title=_metadata_title(extraction))
        if not chunks:
            slots[n] = FileReport(upload.name, "no_text", "No text to index was found.", pages=extraction.n_pages)
            continue
        flag_chunks(chunks, (extraction.ocr or {}).get("pages") or [])
        chunked[n] = (upload, extraction, chunks)
        clock.chunks_new += len(chunks)
    return chunked


def _remember_read_rates(chunked: _Chunked, clock: _Clock) -> None:
    """Remember the pages read a second per reader and the passages a page, for the next
    estimate (not from fewer than 20 pages)."""
    pages_read = sum(e.n_pages for _, e, _ in chunked.values())
    # measured from the first page read, as the clock measures it (not from starting the readers)
    first = clock.first_page[0] if clock.first_page is not None else clock.extract_started
    seconds = time.perf_counter() - first
    if pages_read >= 20:
        remember_rates(pages_per_s=pages_read / seconds / max(clock.workers, 1),
                       chunks_per_page=clock.chunks_new / max(pages_read, 1))


def _remember_ocr_rate(pages: int, seconds: float) -> None:
    """Remember the pages OCR read a second per core it had (not from a short run of reading)."""
    if pages and seconds >= OCR_RATE_MIN_SECONDS:
        remember_rates(ocr_pages_per_s=pages / seconds / min(ocr_threads(), pages))


def _commit(store: CollectionStore, name: str, chunked: _Chunked, slots: _Slots, report: IngestReport,
            clock: _Clock) -> None:
    """Step 4: add the chunked files to the collection as a new version, under its lock;
    whatever another ingest added meanwhile is a duplicate now. Sets the report's version
    and chunks added, and remembers the index rate."""
    clock.emit("index")
    t_index = time.perf_counter()
    with store.writing(name):
        store.read_settings(name)  # read again under the lock, as always: a collection damaged meanwhile fails here
        documents = store.read_documents(name)
        new_docs, new_chunks, new_files = _new_documents(documents, chunked, slots)
        if new_docs:
            layers = {upload.sha256: e.ocr_layer for upload, e, _ in chunked.values() if e.ocr_layer}
            for doc in new_docs:  # before the version that names them: a crash between leaves an unused layer
                if doc["sha256"] in layers:
                    store.write_data(name, layer_key(doc["sha256"]), layers[doc["sha256"]])
            report.version, indexed = _write_version(store, name, documents, new_docs, new_chunks, new_files)
            report.chunks_added += len(new_chunks)
            _remember_index_rate(time.perf_counter() - t_index, indexed)


def _new_documents(documents: list[dict], chunked: _Chunked,
                   slots: _Slots) -> tuple[list[dict], list[dict], dict[str, bytes]]:
    """The records, chunks and original files of the chunked files the collection (its
    ``documents``, read under the lock) does not hold yet; each file's report goes into
    ``slots``. A file whose name is taken is stored under a numbered one."""
    known = {d["sha256"]: d["source"] for d in documents}
    taken = {d["source"] for d in documents}
    new_docs: list[dict] = []
    new_chunks: list[dict] = []
    new_files: dict[str, bytes] = {}
    for n in sorted(chunked):
        upload, extraction, chunks = chunked[n]
        sha = upload.sha256
        if sha in known:
            slots[n] = FileReport(upload.name, "duplicate", f"Same content as {known[sha]!r}, added by "
                                  "another ingest meanwhile; skipped.", doc_id=sha[:16])
            continue
        source = _unique_source(upload.name, taken)
        taken.add(source)
        known[sha] = source
        doc_id = sha[:16]
        for chunk in chunks:
            chunk["source"] = source
            chunk["doc_id"] = doc_id
        new_chunks.extend(chunks)
        new_files[sha] = upload.data
        new_docs.append(_document_record(doc_id, source, upload, extraction, len(chunks)))
        reason = extraction.reason if source == upload.name else f"{extraction.reason}; stored as {source!r}"
        slots[n] = FileReport(upload.name, "ok", reason, pages=extraction.n_pages, chunks=len(chunks),
                              doc_id=doc_id, ocr=record_summary(extraction.ocr),
                              warnings=list(extraction.warnings or []))
    return new_docs, new_chunks, new_files


def _write_version(store: CollectionStore, name: str, documents: list[dict], new_docs: list[dict],
                   new_chunks: list[dict], new_files: dict[str, bytes]) -> tuple[str, int]:
    """Write the collection's next version (writer lock held); returns it and the chunks it indexed.

    In a large collection the new chunks go into a segment of their own and nothing is
    refitted; otherwise every chunk is refitted, the dense vectors computed so far kept.
    """
    total = sum(int(d.get("chunks", 0)) for d in documents) + len(new_chunks)
    if hasattr(store, "append") and total > SEGMENT_MAX_CHUNKS:
        version = store.append(name, documents=documents + new_docs, chunks=new_chunks, new_files=new_files)
        return version, len(new_chunks)
    index = store.load_index(name)
    old_chunks = [] if index is None else list(index.chunks)
    embeddings, dense_mask = _vectors_kept(index, len(new_chunks))
    version = store.commit(
        name, documents=documents + new_docs, chunks=old_chunks + new_chunks, embeddings=embeddings,
        dense_mask=dense_mask, new_files=new_files,
    )
    return version, len(old_chunks) + len(new_chunks)


def _vectors_kept(index: RagIndex | None, n_new: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The index's dense vectors and mask, with ``n_new`` rows still to compute (zeros, masked
    out) at the end; (None, None) when it has none."""
    if index is None or index.embeddings is None:
        return None, None
    dim = index.embeddings.shape[1]
    embeddings = np.vstack([np.asarray(index.embeddings, dtype=np.float32), np.zeros((n_new, dim), dtype=np.float32)])
    old_mask = np.ones(len(index.chunks), dtype=bool) if index.dense_mask is None else index.dense_mask
    return embeddings, np.concatenate([old_mask, np.zeros(n_new, dtype=bool)])


def _embed(store: CollectionStore, name: str, embed: str, clock: _Clock) -> EmbeddingStatus | None:
    """Step 5: the dense vectors of the chunks that have none: computed "now" (the clock told
    of each passage), started in a thread of this process ("background"), or left for a
    later :func:`embed_pending` ("none": no status)."""
    if embed == "now":
        def on_embed(done: int, total: int) -> None:
            if clock.embed_started is None:
                clock.embed_started, clock.embed_base = time.perf_counter(), done
            clock.embed_done, clock.embed_total = done, total
            clock.emit("embed")

        return embed_pending(store, name, progress=on_embed)
    if embed == "background":
        start_background_embedding(store, name)
        return store.embedding_status(name)
    return None


def _planned_variant(settings: dict) -> str | None:
    """The bi-encoder variant an embedding run will use (None if that cannot be told)."""
    from rag_core.models.loading import planned_encoder

    try:
        return planned_encoder(settings.get("encoder"))
    except ValueError:
        return None


def _unique_source(name: str, taken: set[str]) -> str:
    """``name``, or ``name (2).pdf``, ``name (3).pdf``... when ``taken`` holds it."""
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


def _metadata_title(extraction: PdfExtraction) -> str | None:
    """The title the PDF's own metadata gives, if any."""
    return (getattr(extraction, "metadata", None) or {}).get("title")


def _document_record(doc_id: str, source: str, upload: InputFile, extraction: PdfExtraction, n_chunks: int) -> dict:
    """The collection's record of one document."""
    metadata = dict(getattr(extraction, "metadata", None) or {})
    return {
        "doc_id": doc_id, "source": source, "file_name": upload.name, "sha256": upload.sha256,
        "pages": extraction.n_pages, "chunks": n_chunks, "bytes": len(upload.data or b""),
        "has_page_labels": any(p.label for p in extraction.pages), "added": time.time(),
        "warnings": list(extraction.warnings or []),
        "title": metadata.get("title"), "authors": metadata.get("authors"), "year": metadata.get("year"),
        "doi": metadata.get("doi"), "arxiv_id": metadata.get("arxiv_id"), "venue": metadata.get("venue"),
        "origin": dict(metadata.get("origin") or {}),
        **({"no_record": metadata["no_record"]} if metadata.get("no_record") else {}),
        **({"ocr": record_summary(extraction.ocr)} if record_summary(extraction.ocr) else {}),
    }


def rebuild_from_originals(
    store: CollectionStore, name: str, settings: dict, wanted: dict[str, str]
) -> tuple[str | None, int, list[str]]:
    """Make a new live version from the stored original PDFs (the caller holds the writer lock).

    ``wanted`` maps each document's SHA-256 to its source name ("" when unknown). Used by
    ``check-store --repair`` when no complete version holds the committed documents.
    Returns the new version, how many documents it holds, and the documents that could
    not be restored. Dense vectors are left to be filled in behind.
    """
    originals, missing = [], []
    for sha, source in sorted(wanted.items(), key=lambda t: t[1]):
        data = store.read_pdf(name, sha)
        label = source or f"{sha[:16]}.pdf"
        if data is None or hashlib.sha256(data).hexdigest() != sha:
            missing.append(label)
            continue
        originals.append(InputFile(label, label, data))
    documents, chunks, taken = [], [], set()
    if originals:
        with ExtractionPool(workers=min(EXTRACT_WORKERS, len(originals))) as pool:
            results = pool.run([(u.name, u.data) for u in originals])
        for upload, extraction in zip(originals, results, strict=True):
            doc_chunks = chunk_pdf(extraction.pages, upload.name, settings["chunk_size"], settings["overlap"],
                                   metadata_title=_metadata_title(extraction)) if extraction.ok else []
            if not doc_chunks:
                missing.append(upload.name)
                continue
            flag_chunks(doc_chunks, (extraction.ocr or {}).get("pages") or [])
            if extraction.ocr_layer:
                store.write_data(name, layer_key(upload.sha256), extraction.ocr_layer)
            source = _unique_source(upload.name, taken)
            taken.add(source)
            for chunk in doc_chunks:
                chunk["source"] = source
                chunk["doc_id"] = upload.sha256[:16]
            chunks.extend(doc_chunks)
            documents.append(_document_record(upload.sha256[:16], source, upload, extraction, len(doc_chunks)))
    version = store.commit(name, documents=documents, chunks=chunks, embeddings=None, dense_mask=None, new_files={})
    return version, len(documents), missing
