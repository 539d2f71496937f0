"""``rag-core ingest`` (PDFs into a collection, with a progress bar) and ``rag-core embed``."""

from __future__ import annotations

import os
import sys

from rag_core.cli.common import EXIT_FAILURE, EXIT_OK, UsageError, json_text, line, open_library


def _expand_files(paths: list[str]):
    """The PDF files to ingest (folders expanded) and what was passed over in the folders, with why.

    A path that does not exist is a usage error, named as given, before anything is read.
    """
    from rag_core.collections.ingest.inputs import collect_pdf_files

    missing = [raw for raw in paths if not os.path.lexists(raw)]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(line(m) for m in missing)}; nothing was ingested")
    scan = collect_pdf_files(paths)
    if not scan.files:
        raise UsageError(f"no PDF files in {', '.join(line(p) for p in paths)}")
    return scan


def _skipped_message(skipped: list[tuple[str, str]], shown: int = 5) -> str:
    names = ", ".join(f"{line(path)} ({why})" for path, why in skipped[:shown])
    more = f" and {len(skipped) - shown} more" if len(skipped) > shown else ""
    return f"rag-core: skipped {len(skipped)} file(s) in the folder(s): {names}{more}"


STAGE_WORDS = {"read": "reading", "extract": "extracting", "index": "indexing", "ocr": "reading scans by OCR",
               "embed": "embedding", "done": "done"}


def _progress_bar(enabled: bool):
    if not enabled:
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=1000, bar_format="{percentage:3.0f}% |{bar:30}| {desc}", file=sys.stderr, leave=False)

    def update(event):
        bar.n = int(event.fraction * 1000)
        parts = [STAGE_WORDS.get(event.stage, event.stage)]
        if event.stage == "embed":
            parts.append(f"{event.chunks_done:,}/{event.chunks_total:,} chunks")
        elif event.stage == "ocr":
            parts.append(f"{event.ocr_pages_done:,}/{event.ocr_pages_total:,} pages")
        else:
            parts.append(f"{event.files_done}/{event.files_total} files")
            if event.pages_total:
                parts.append(f"{event.pages_done:,}/{event.pages_total:,} pages")
        if event.eta_s is not None:
            parts.append(f"~{event.eta_s:.0f} s left")
        bar.set_description_str(", ".join(parts)[:100], refresh=True)

    return update, bar


def _ocr_options(args) -> tuple[str, str]:
    """``--ocr`` and ``--ocr-lang`` checked: a missing Tesseract (for force) or language pack is a usage error."""
    from rag_core.pdf.ocr import OcrError, check_ocr_options

    try:
        return check_ocr_options(args.ocr, args.ocr_lang)
    except OcrError as exc:
        raise UsageError(str(exc)) from None


def _ocr_text(ocr: dict | None) -> str:
    """``"; OCR: 1 page, mean confidence 95"`` with the pages under the confidence floor, or ``""``."""
    if not ocr:
        return ""
    from rag_core.pdf.extraction import ocr_reason

    return ocr_reason(ocr).replace("; ocr:", "; OCR:", 1)


def cmd_ingest(args) -> int:
    ocr, ocr_lang = _ocr_options(args)
    scan = _expand_files(args.files)
    if scan.skipped:
        print(_skipped_message(scan.skipped), file=sys.stderr)
    library = open_library(args)
    show = not args.json and not args.no_progress and sys.stderr.isatty()
    update, bar = _progress_bar(show)
    try:
        report = library.add_pdfs(args.collection, scan.files, progress=update,
                                  embed="none" if args.no_embed else "now", ocr=ocr, ocr_lang=ocr_lang)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        payload = report.to_dict()
        payload["skipped"] = [{"path": path, "reason": why} for path, why in scan.skipped]
        print(json_text(payload))
    else:
        names = [line(f.source) for f in report.files]
        width = max((len(n) for n in names), default=10)
        for f, name in zip(report.files, names, strict=True):
            detail = (f"{f.pages} page{'' if f.pages == 1 else 's'}, {f.chunks} chunk{'' if f.chunks == 1 else 's'}"
                      f"{_ocr_text(f.ocr)}" if f.ok else line(f.reason))
            print(f"{f.status:15s} {name:{width}s}  {detail}")
        added = len(report.added)
        collection = line(repr(report.collection))
        print(f"\n{added} of {len(report.files)} files added to {collection}: "
              f"{report.chunks_added} chunk{'' if report.chunks_added == 1 else 's'} in {report.seconds:.1f} s"
              + (f" (searchable after {report.searchable_after_s:.1f} s)." if report.searchable_after_s else "."))
        if report.collection_removed:
            print(f"No file could be added, so the new collection {collection} was not kept.")
        if report.embedding is not None and not report.embedding.complete:
            print(f"Dense vectors: {report.embedding.done:,} of {report.embedding.total:,} chunks; "
                  f"`rag-core embed {collection}` computes the rest.")
    if report.store_lost:
        print(f"rag-core: note: {line(report.store_lost)}", file=sys.stderr)
    usable = [f for f in report.files if f.status in ("ok", "duplicate")]
    return EXIT_OK if usable else EXIT_FAILURE


def cmd_embed(args) -> int:
    library = open_library(args)
    show = not args.json and sys.stderr.isatty()
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=0, unit="chunk", file=sys.stderr, leave=False, desc="embedding")

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total, bar.n = total, done
            bar.refresh()

    try:
        status = library.embed_pending(args.collection, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json_text(status.to_dict()))
    elif status.running and not status.complete:
        print(f"Another process is embedding {line(repr(args.collection))} "
              f"({status.done:,} of {status.total:,} chunks so far).")
    else:
        print(f"{line(repr(args.collection))}: {status.done:,} of {status.total:,} chunks have dense vectors.")
    return EXIT_OK


def add_parsers(sub, common) -> None:
    """The sub-commands ``ingest``, ``embed``."""
    p = sub.add_parser("ingest", parents=[common], help="add PDFs (files or folders) to a collection")
    p.add_argument("collection")
    p.add_argument("files", nargs="+", metavar="FILES")
    p.add_argument("--json", action="store_true", help="print the per-file report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--ocr", choices=("auto", "force", "off"), default="auto",
                   help="read scanned pages with Tesseract: auto (only pages without a usable text layer, after the "
                        "other files are searchable; default), force (every page, for a bad OCR layer), off")
    p.add_argument("--ocr-lang", default="eng", metavar="LANGS",
                   help="Tesseract's languages for OCR, installed language packs joined by + (default eng)")
    p.add_argument("--no-embed", action="store_true",
                   help="return once the files are searchable by TF-IDF, BM25 and exact search; "
                        "compute dense vectors later with `rag-core embed`")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("embed", parents=[common], help="compute the dense vectors a collection still lacks")
    p.add_argument("collection")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_embed)
