"""The ``rag-core`` command line: ingest, search, list, remove, and evaluation."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

from rag_core.output.render import page_label, terminal_safe
from rag_core.settings import DATA_DIR_ENV, DEFAULT_POOL

SEARCH_MODES = ("tfidf", "bm25", "dense", "hybrid", "exact")
EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
DEFAULT_CONTEXT = 150  # characters shown around an exact match in the terminal
# Search options that only one mode reads: given with another mode, they are a usage error.
MODE_OPTIONS = {"regex": "exact", "normalized": "exact", "literal": "exact", "context": "exact", "pool": "hybrid",
                "cross_encoder": "hybrid"}


class UsageError(Exception):
    """A mistake in how the command was called (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, not a usage dump
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _library(args):
    from rag_core.collections.library import Library

    return Library(args.data_dir or None, store=args.store)


def _expand_files(paths: list[str]):
    """The PDF files to ingest (folders expanded) and what was passed over in the folders, with why.

    A path that does not exist is a usage error, named as given, before anything is read.
    """
    from rag_core.collections.ingest.inputs import collect_pdf_files

    missing = [raw for raw in paths if not os.path.lexists(raw)]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(_line(m) for m in missing)}; nothing was ingested")
    scan = collect_pdf_files(paths)
    if not scan.files:
        raise UsageError(f"no PDF files in {', '.join(_line(p) for p in paths)}")
    return scan


def _skipped_message(skipped: list[tuple[str, str]], shown: int = 5) -> str:
    names = ", ".join(f"{_line(path)} ({why})" for path, why in skipped[:shown])
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
    library = _library(args)
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
        print(json.dumps(payload, ensure_ascii=False, indent=1))
    else:
        names = [_line(f.source) for f in report.files]
        width = max((len(n) for n in names), default=10)
        for f, name in zip(report.files, names, strict=True):
            detail = (f"{f.pages} page{'' if f.pages == 1 else 's'}, {f.chunks} chunk{'' if f.chunks == 1 else 's'}"
                      f"{_ocr_text(f.ocr)}" if f.ok else _line(f.reason))
            print(f"{f.status:15s} {name:{width}s}  {detail}")
        added = len(report.added)
        collection = _line(repr(report.collection))
        print(f"\n{added} of {len(report.files)} files added to {collection}: "
              f"{report.chunks_added} chunk{'' if report.chunks_added == 1 else 's'} in {report.seconds:.1f} s"
              + (f" (searchable after {report.searchable_after_s:.1f} s)." if report.searchable_after_s else "."))
        if report.collection_removed:
            print(f"No file could be added, so the new collection {collection} was not kept.")
        if report.embedding is not None and not report.embedding.complete:
            print(f"Dense vectors: {report.embedding.done:,} of {report.embedding.total:,} chunks; "
                  f"`rag-core embed {collection}` computes the rest.")
    if report.store_lost:
        print(f"rag-core: note: {_line(report.store_lost)}", file=sys.stderr)
    usable = [f for f in report.files if f.status in ("ok", "duplicate")]
    return EXIT_OK if usable else EXIT_FAILURE


def _line(text: object) -> str:
    """Text from a document or a user, safe to print on one terminal line (no control characters)."""
    return terminal_safe(text, one_line=True)


def _page_text(row: dict) -> str:
    if not (row.get("page") or row.get("page_start")):
        return ""
    return _line(page_label(row))


def _print_rows(rows: list[dict], mode: str) -> None:
    if not rows:
        print("No results.")
        return
    for row in rows:
        if mode == "exact":
            print(f"#{row['rank']:<3} {_line(row['source'])}  {_page_text(row)}  chunk {row['chunk_index']} "
                  f"[{row['start']}:{row['end']}]")
            body = row["snippet"]
        else:
            extra = ""
            if row.get("dense_cosine") is not None:
                extra += f"  dense {row['dense_cosine']:.3f}"
            if row.get("found_by"):
                extra += f"  [{row['found_by']}]"
            print(f"#{row['rank']:<3} score {row['score']:.4f} ({row['score_type']})  cosine {row['cosine']:.3f}"
                  f"{extra}  {_line(row['source'])}  {_page_text(row)}")
            body = row["text"]
        snippet = _line(" ".join(body.split()))
        print(textwrap.indent(textwrap.fill(snippet[:400] + ("…" if len(snippet) > 400 else ""), 96), "     "))


def _check_search_args(args) -> None:
    """Usage errors of ``search``, found before the collection is loaded."""
    from rag_core.errors import QueryError
    from rag_core.text.query import check_query

    try:
        check_query(args.query)  # empty, too long, or not valid text (bytes that are not UTF-8)
    except QueryError as exc:
        raise UsageError(str(exc)) from None
    for option, mode in MODE_OPTIONS.items():
        value = getattr(args, option)
        if value not in (None, False) and args.mode != mode:
            flag = "--" + option.replace("_", "-")
            raise UsageError(f"{flag} applies to --mode {mode} only (the mode is {args.mode})")
    chosen = [flag for flag, on in (("--regex", args.regex), ("--normalized", args.normalized),
                                    ("--literal", args.literal)) if on]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} cannot be combined: choose one way to match")


def _warm_query_encoder(library, collection: str) -> None:
    """Start loading the collection's bi-encoder in a thread while the collection is read (the
    two overlap: ~0.1 s of a command). Only the ONNX encoder: torch takes seconds, which a
    collection without vectors would then wait for at exit."""
    from rag_core.errors import RagCoreError
    from rag_core.models.loading import warm_up_bi_encoder

    try:
        settings = library.settings(collection)
    except (RagCoreError, OSError, ValueError):
        return  # the command itself says what is wrong
    model, encoder = settings.get("embedding_model"), settings.get("encoder")
    if isinstance(model, str) and isinstance(encoder, str) and encoder.startswith("onnx"):
        warm_up_bi_encoder(model, encoder=encoder)


def cmd_search(args) -> int:
    _check_search_args(args)
    library = _library(args)
    if args.mode in ("dense", "hybrid"):
        _warm_query_encoder(library, args.collection)
    from rag_core.retrieval.exact import search_exact
    from rag_core.retrieval.ranking import search_dense, search_lexical, search_with_spec

    index = library.load_index(args.collection)
    if index is None:
        raise RuntimeError(f"Collection {args.collection!r} has no documents yet; add PDFs with `rag-core ingest`.")
    sources = args.source or None
    if args.mode == "exact":
        # folded by default, as the app searches (and as the snippets it prints read: "cor-\nrect")
        mode = "regex" if args.regex else ("literal" if args.literal else "normalized")
        context = DEFAULT_CONTEXT if args.context is None else args.context
        rows = search_exact(args.query, index, max_hits=args.top, context=context, mode=mode, sources=sources,
                            every_match=True)
        for rank, row in enumerate(rows, start=1):
            row["rank"] = rank
    elif args.mode in ("tfidf", "bm25"):
        rows = search_lexical(args.query, index, args.top, method=args.mode, sources=sources)
    elif args.mode == "dense":
        rows = search_dense(args.query, index, args.top, sources=sources)
    else:
        from rag_core.retrieval.search_spec import SearchSpec

        spec = SearchSpec.for_collection(library.settings(args.collection))  # the collection's saved default
        if args.pool is not None:
            spec = spec.with_changes(pool=args.pool)
        if args.cross_encoder:
            spec = spec.with_changes(cross_encoder_model=args.cross_encoder)
        rows = search_with_spec(args.query, index, spec, top=args.top, sources=sources)
    if args.json:
        payload = {"collection": args.collection, "query": args.query, "mode": args.mode, "results": rows}
        if args.mode == "hybrid" and rows:
            payload["reranker"] = rows[0]["reranker"]
            payload["reranker_detail"] = rows[0]["reranker_detail"]
        print(json.dumps(payload, ensure_ascii=False, indent=1))
        return EXIT_OK
    if args.mode == "hybrid" and rows:
        print(f"Reranker: {_line(rows[0]['reranker_detail'])}\n")
    _print_rows(rows, args.mode)
    return EXIT_OK


def cmd_list(args) -> int:
    library = _library(args)
    if args.collection:
        docs = library.documents(args.collection)
        if args.json:
            print(json.dumps(docs, ensure_ascii=False, indent=1))
        elif not docs:
            print(f"Collection {_line(repr(args.collection))} has no documents; add PDFs with `rag-core ingest`.")
        else:
            for d in docs:
                print(f"{_line(d['doc_id'])}  {d['pages']:4d} pages  {d['chunks']:5d} chunks  {_line(d['source'])}")
        return EXIT_OK
    infos = library.list()
    if args.json:
        print(json.dumps([i.to_dict() for i in infos], ensure_ascii=False, indent=1))
    elif not infos:
        print(f"No collections in {_line(library.store.location)}. Create one with `rag-core ingest NAME FILES...`.")
    else:
        for i in infos:
            if i.error:
                print(f"{_line(i.name):30s} DAMAGED: {_line(i.error)}")
                continue
            embedded = "" if i.embedded_chunks >= i.chunks else f" ({i.embedded_chunks:,} embedded so far)"
            print(f"{_line(i.name):30s} {i.documents:4d} documents {i.pages:6d} pages {i.chunks:7d} chunks{embedded}")
            for note in i.notes:
                print(f"{'':30s} note: {_line(note)}")
    return EXIT_OK


def cmd_remove(args) -> int:
    library = _library(args)
    if not args.documents:
        if not args.yes:
            raise UsageError(f"to delete the whole collection {args.collection!r}, add --yes; "
                             "to remove documents, name them")
        from rag_core.errors import CollectionDamagedError

        try:
            library.delete(args.collection)
        except CollectionDamagedError:
            library.delete(args.collection, force=True)  # however broken, it can go
        print(f"Deleted collection {_line(repr(args.collection))}.")
        return EXIT_OK
    removed = library.remove_documents(args.collection, args.documents)
    print(f"Removed {len(removed)} document(s) from {_line(repr(args.collection))}: {_line(', '.join(removed))}")
    return EXIT_OK


def cmd_check_store(args) -> int:
    library = _library(args)
    names = [args.collection] if args.collection else library.names()
    if not names:
        print(f"No collections in {_line(library.store.location)}.")
        return EXIT_OK
    reports = [library.check(name, repair=args.repair) for name in names]
    if args.json:
        print(json.dumps([r.to_dict() for r in reports], ensure_ascii=False, indent=1))
    else:
        for r in reports:
            state = "ok" if not r.problems else ("repaired" if r.ok else "DAMAGED")
            print(f"{_line(r.name)}: {state}" + (f" (live version {r.version})" if r.version else ""))
            for p in r.problems:
                print(f"  problem: {_line(p)}")
            for p in r.repaired:
                print(f"  repaired: {_line(p)}")
            for action in r.actions:
                print(f"  to fix: {_line(action)}")
        if any(not r.ok for r in reports) and not args.repair:
            print("Run again with --repair to fix what can be fixed.")
    return EXIT_OK if all(r.ok for r in reports) else EXIT_FAILURE


def cmd_embed(args) -> int:
    library = _library(args)
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
        print(json.dumps(status.to_dict(), indent=1))
    elif status.running and not status.complete:
        print(f"Another process is embedding {_line(repr(args.collection))} "
              f"({status.done:,} of {status.total:,} chunks so far).")
    else:
        print(f"{_line(repr(args.collection))}: {status.done:,} of {status.total:,} chunks have dense vectors.")
    return EXIT_OK


def cmd_rename(args) -> int:
    info = _library(args).rename(args.old, args.new)
    print(f"Renamed {_line(repr(args.old))} to {_line(repr(info.name))}.")
    return EXIT_OK


def cmd_serve_db(args) -> int:
    import signal
    import time

    from rag_core.collections.store.local_server import start_local_server
    from rag_core.collections.store.postgres.connection import mask_url
    from rag_core.settings import default_data_dir

    folder = Path(args.data).expanduser() if args.data else (
        Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()) / "postgres"
    server, url = start_local_server(folder)
    print(f"PostgreSQL with pgvector is running; its data is in {_line(str(folder))}.")
    print("Point the app and the command line at it with:\n")
    print(f"RAG_CORE_STORE={mask_url(url)}\n", flush=True)
    print("It accepts connections from this machine only. Press Ctrl-C to stop it.", flush=True)

    def stop(_signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.cleanup()
    print("Stopped.")
    return EXIT_OK


def cmd_copy(args) -> int:
    from rag_core.collections.library import Library
    from rag_core.collections.store.copying import copy_collection

    source = Library(args.data_dir or None, store=args.source_store or args.store).store
    target = Library(args.data_dir or None, store=args.target_store or args.store).store
    report = copy_collection(source, args.collection, target, args.dest)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    else:
        print(f"from {_line(repr(report.source))} in {_line(report.source_store)}")
        print(f"to   {_line(repr(report.target))} in {_line(report.target_store)}\n")
        print(f"{'':24s} {'source':>18s} {'copy':>18s}")
        for what, a, b, same in report.rows():
            print(f"{what:24s} {a:>18s} {b:>18s}  {'same' if same else 'DIFFERENT'}")
        for note in report.notes:
            print(f"note: {_line(note)}")
        for problem in report.problems:
            print(f"problem: {_line(problem)}")
        print("\nCopied; nothing was lost." if report.ok else "\nThe copy is not complete.")
    return EXIT_OK if report.ok else EXIT_FAILURE


def cmd_models(args) -> int:
    from rag_core.models.loading import resolve_model, select_device
    from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_EMBEDDING_MODEL

    rows = []
    for role, name in (("bi-encoder", args.embedding_model or DEFAULT_EMBEDDING_MODEL),
                       ("cross-encoder", args.cross_encoder or DEFAULT_CROSS_ENCODER_MODEL)):
        source = resolve_model(name)
        rows.append({"role": role, "name": name, "origin": source.origin, "available": source.available,
                     "detail": source.detail})
    encoder = _encoder_report(args.embedding_model or DEFAULT_EMBEDDING_MODEL, prepare=args.prepare)
    if args.json:
        print(json.dumps({"device": select_device(import_torch=False), "models": rows, "encoder": encoder},
                         indent=1))
    else:
        print(f"device: {select_device(import_torch=False)}")
        for r in rows:
            print(f"{r['role']:14s} {r['name']}: {r['origin']} - {r['detail']}")
        print(f"{'encoder':14s} {encoder['variant']} (asked: {encoder['requested']})")
        for variant, state in encoder["onnx"].items():
            print(f"{'':14s} {variant}: {state}")
        if encoder["fallback"]:
            print(f"{'':14s} using torch instead of {encoder['planned']}: {encoder['fallback']}")
    return EXIT_OK


def _encoder_report(name: str, *, prepare: bool) -> dict:
    """Which bi-encoder variant runs, the state of each ONNX conversion, and why torch runs if it does."""
    import importlib.util
    import os

    from rag_core.models.loading import planned_encoder, resolve_model
    from rag_core.settings import ENCODER_ENV

    planned = planned_encoder()
    report = {"requested": os.environ.get(ENCODER_ENV) or "auto", "planned": planned, "variant": planned,
              "onnx": {}, "fallback": None}
    source = resolve_model(name)
    if not source.available:
        return report
    from rag_core.models.onnx_encoder import (
        ONNX_VARIANTS,
        OnnxEncoderError,
        cache_state,
        prepare_onnx_model,
        read_layout,
    )

    try:
        read_layout(source.location)
    except OnnxEncoderError as exc:
        report["onnx"] = dict.fromkeys(ONNX_VARIANTS, f"not possible for this model: {exc}")
    else:
        for variant in ONNX_VARIANTS:
            if prepare:
                try:
                    prepare_onnx_model(source.location, variant)
                except OnnxEncoderError as exc:
                    report["onnx"][variant] = f"conversion failed: {exc}"
                    continue
            report["onnx"][variant] = cache_state(source.location, variant)
    if planned != "torch":
        if importlib.util.find_spec("onnxruntime") is None:
            report["fallback"] = "onnxruntime is not installed (pip install onnxruntime)"
        elif report["onnx"].get(planned, "").startswith(("conversion failed", "not possible")):
            report["fallback"] = report["onnx"][planned]
        if report["fallback"]:
            report["variant"] = "torch"
    return report


def cmd_eval(args) -> int:
    if args.collection:
        return cmd_eval_collection(args)
    if not args.dataset:
        raise UsageError("give a BEIR dataset folder, or --collection NAME to evaluate a collection's judgments")
    from rag_core.evaluation import METHODS, evaluate, format_table
    from rag_core.evaluation.methods import current_name

    methods = [current_name(m.strip()) for m in args.methods.split(",") if m.strip()]  # earlier names too
    if not methods:
        raise UsageError(f"--methods is empty; choose from {', '.join(METHODS)}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise UsageError(f"unknown method {', '.join(_line(m) for m in unknown)} in --methods; "
                         f"choose from {', '.join(METHODS)}")
    if args.cross_encoder and "hybrid_ce" not in methods:
        raise UsageError("--cross-encoder is read by method hybrid_ce only; add it to --methods")

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[eval] {message}", file=sys.stderr, flush=True)

    kwargs = {"cross_encoder_model": args.cross_encoder} if args.cross_encoder else {}
    results = evaluate(args.dataset, methods=methods, split=args.split, progress=progress, **kwargs)
    print(json.dumps(results, indent=1) if args.json else format_table(results))
    return EXIT_OK


def cmd_check(args) -> int:
    """Check a manuscript's quotes and cited claims against a collection (rag_core.cli_check)."""
    from rag_core.cli_check import check_manuscript

    def open_library(args):
        library = _library(args)
        _warm_query_encoder(library, args.collection)
        return library

    return check_manuscript(args, open_library)


def cmd_meta(args) -> int:
    """``rag-core meta show|import|set|export`` (rag_core.cli_meta)."""
    from rag_core.cli_meta import cmd_meta as run

    return run(args, _library, UsageError)


def cmd_eval_collection(args) -> int:
    """``eval --collection``: the collection's own judgments, with the figures the app shows."""
    from rag_core.lab.queryset import evaluate_collection, format_summary, summary_json

    if args.dataset:
        raise UsageError("give either a dataset folder or --collection, not both")
    library = _library(args)
    methods = None if args.methods == DEFAULT_EVAL_METHODS else args.methods
    spec = None  # the collection's own
    if args.cross_encoder:
        from rag_core.retrieval.search_spec import SearchSpec

        spec = SearchSpec.for_collection(library.settings(args.collection)).with_changes(
            cross_encoder_model=args.cross_encoder)

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[eval] {_line(message)}", file=sys.stderr, flush=True)

    run = evaluate_collection(library, args.collection, spec=spec, methods=methods, progress=progress)
    print(json.dumps(summary_json(run), ensure_ascii=False, indent=1) if args.json else _text(format_summary(run)))
    return EXIT_OK


def _text(text: str) -> str:
    """Several lines of text that may hold a collection's or document's words, safe to print."""
    return terminal_safe(text)


def cmd_judgments(args) -> int:
    from rag_core.lab.judgments import load_judgments
    from rag_core.lab.transfer import export_judgments, import_judgments

    library = _library(args)
    if args.action == "export":
        if not args.file:
            raise UsageError("give the file to write: a .csv, a .zip or a folder (BEIR layout)")
        result = export_judgments(library, args.collection, args.file)
        if args.json:
            print(json.dumps(result, ensure_ascii=False, indent=1))
        else:
            extra = (f", {result['qrels']} qrels over {result['passages']:,} passages"
                     if "qrels" in result else "")
            print(f"Wrote {result['judgments']} judgment(s) of {result['queries']} queries to "
                  f"{_line(result['path'])} ({result['format']}{extra}).")
            if result.get("left_out"):
                print(f"{result['left_out']} judgment(s) are about documents no longer in the collection: kept in "
                      "the collection, left out of the BEIR files (a .csv export has them).")
        return EXIT_OK
    if args.action == "import":
        if not args.file:
            raise UsageError("give the file to read: a .csv (query, document, quote, grade) or a BEIR folder/zip")
        report = import_judgments(library, args.collection, args.file)  # a file it cannot read: one line, exit 1
        if args.json:
            print(json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
        else:
            print(report.summary())
            for row, problem in report.problems:
                print(f"  {_line(report.where(row))}: {_line(problem)}")
            for row, warning in report.warnings:
                print(f"  {_line(report.where(row))} (note): {_line(warning)}")
        return EXIT_FAILURE if report.rejected or (report.rows and not report.imported) else EXIT_OK
    judgments = load_judgments(library, args.collection)  # list
    queries = judgments.queries()
    if args.json:
        print(json.dumps([{"query": q, "judgments": [j.to_dict() for j in judgments.for_query(q)]} for q in queries],
                         ensure_ascii=False, indent=1))
    elif not queries:
        print(f"Collection {_line(repr(args.collection))} has no judgments yet.")
    else:
        for q in queries:
            grades = [j.grade for j in judgments.for_query(q)]
            counts = " ".join(f"{g}:{grades.count(g)}" for g in range(4) if grades.count(g))
            print(f"{len(grades):4d} judged  [{counts}]  {_line(q)}")
    return EXIT_OK


DEFAULT_EVAL_METHODS = "tfidf,bm25,dense,hybrid"


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=argparse.SUPPRESS,
                        help=f"data folder holding the collections (default: ${DATA_DIR_ENV} or the user data folder)")
    common.add_argument("--store", default=argparse.SUPPRESS, metavar="URL",
                        help="where the collections live: a postgresql:// URL or a data folder "
                             "(default: $RAG_CORE_STORE, else the data folder)")
    parser = _Parser(prog="rag-core", description="Ground claims in scientific PDFs: ingest, search, evaluate.",
                     parents=[common])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

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

    p = sub.add_parser("search", parents=[common], help="search a collection")
    p.add_argument("collection")
    p.add_argument("query")
    p.add_argument("--mode", choices=SEARCH_MODES, default="hybrid")
    p.add_argument("--top", type=int, default=5, help="number of results (default 5)")
    p.add_argument("--pool", type=int, default=None,
                   help=f"candidates per first-stage list (hybrid; default: the collection's saved setting, else "
                        f"{DEFAULT_POOL})")
    p.add_argument("--regex", action="store_true", help="exact mode: the query is an RE2 regular expression")
    p.add_argument("--normalized", action="store_true",
                   help="exact mode: fold ligatures, hyphenation, spacing, quotes and dashes (the default)")
    p.add_argument("--literal", action="store_true",
                   help="exact mode: the raw text, case-insensitive, nothing folded")
    p.add_argument("--context", type=int, default=None,
                   help=f"exact mode: characters shown around each match (default {DEFAULT_CONTEXT})")
    p.add_argument("--source", action="append", help="restrict to this document (repeatable)")
    p.add_argument("--cross-encoder", help="hybrid mode: cross-encoder name or local folder")
    p.add_argument("--json", action="store_true", help="print stable JSON for scripts")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("check", parents=[common],
                       help="check the quotes and cited claims of a manuscript against a collection")
    p.add_argument("collection")
    p.add_argument("file", help="the manuscript: .txt, .md, .tex, .pdf or .docx (- reads text from standard input)")
    p.add_argument("--top", type=int, default=3, help="close passages kept per statement not found word for word")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per statement")
    p.add_argument("--fail-on", metavar="OUTCOMES",
                   help="exit 3 when any statement has one of these outcomes (comma-separated: "
                        "changed, unclear (the meaning), verbatim, near_verbatim, related, not_found, "
                        "misattributed), e.g. --fail-on changed,not_found before submission")
    p.add_argument("--bib", metavar="FILE",
                   help="a .bib (or CSL-JSON .json, .ris) whose keys resolve \\cite{key} and pandoc's [@key] "
                        "(default for a .tex: the .bib its \\bibliography{} names beside it)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("list", parents=[common], help="list collections, or the documents of one")
    p.add_argument("collection", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("remove", parents=[common], help="remove documents, or a whole collection with --yes")
    p.add_argument("collection")
    p.add_argument("documents", nargs="*", help="document names or ids")
    p.add_argument("--yes", action="store_true", help="confirm deleting the whole collection")
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("rename", parents=[common], help="rename a collection")
    p.add_argument("old")
    p.add_argument("new")
    p.set_defaults(func=cmd_rename)

    p = sub.add_parser("check-store", parents=[common],
                       help="verify every stored file of a collection (or all); --repair fixes what it can")
    p.add_argument("collection", nargs="?")
    p.add_argument("--repair", action="store_true", help="repair: roll back or rebuild from the stored PDFs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check_store)

    p = sub.add_parser("embed", parents=[common], help="compute the dense vectors a collection still lacks")
    p.add_argument("collection")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_embed)

    p = sub.add_parser("copy", parents=[common],
                       help="copy a collection between stores (a folder and PostgreSQL), checking nothing is lost")
    p.add_argument("collection", help="the collection to copy")
    p.add_argument("dest", nargs="?", help="the copy's name (default: the same name)")
    p.add_argument("--from", dest="source_store", metavar="STORE",
                   help="the store to copy from: a folder or a postgresql:// URL (default: --store)")
    p.add_argument("--to", dest="target_store", metavar="STORE",
                   help="the store to copy into (default: --store)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_copy)

    p = sub.add_parser("serve-db", parents=[common],
                       help="run a local PostgreSQL with pgvector for the shared store, until Ctrl-C")
    p.add_argument("--data", metavar="DIR", help="the database's folder (default: <data folder>/postgres)")
    p.set_defaults(func=cmd_serve_db)

    p = sub.add_parser("models", parents=[common], help="show where each model loads from")
    p.add_argument("--embedding-model")
    p.add_argument("--cross-encoder")
    p.add_argument("--json", action="store_true")
    p.add_argument("--prepare", action="store_true",
                   help="convert the bi-encoder to ONNX (fp32 and int8) now instead of at first use")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("eval", parents=[common], help="evaluate retrieval methods on a BEIR-format dataset, "
                                                       "or on a collection's own judgments (--collection)")
    p.add_argument("dataset", nargs="?", help="folder with corpus.jsonl(.gz), queries.jsonl and qrels/")
    p.add_argument("--collection", help="evaluate this collection's judgments instead (the relevance lab's figures; "
                                        "methods default to every one that can run)")
    p.add_argument("--methods", default=DEFAULT_EVAL_METHODS,
                   help="comma-separated: tfidf, bm25, dense, hybrid, hybrid_mmr, hybrid_ce (default "
                        "tfidf,bm25,dense,hybrid; the earlier names mmr and cross_encoder work too)")
    p.add_argument("--split", choices=("test", "train", "dev"), default="test")
    p.add_argument("--cross-encoder", help="cross-encoder name or local folder (method hybrid_ce)")
    p.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("judgments", parents=[common],
                       help="import, export or list a collection's relevance judgments")
    p.add_argument("action", choices=("import", "export", "list"))
    p.add_argument("collection")
    p.add_argument("file", nargs="?", help="export: .csv, .zip or a folder (BEIR layout); import: .csv "
                                           "(query, document, quote, grade) or an exported BEIR folder/zip")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_judgments)

    from rag_core.cli_meta import add_meta_parser

    add_meta_parser(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    import logging

    # A database connection lost is reported once, as one line; the pool's own retries stay quiet.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            raise UsageError("a command is needed: ingest, search, check, list, remove, rename, embed, check-store, "
                             "copy, serve-db, models, eval, judgments or meta")
        args.data_dir = getattr(args, "data_dir", None)
        args.store = getattr(args, "store", None)
        if hasattr(args, "top") and args.top <= 0:
            raise UsageError("--top must be at least 1")
        if getattr(args, "pool", None) is not None and args.pool <= 0:
            raise UsageError("--pool must be at least 1")
        if getattr(args, "context", None) is not None and args.context < 0:
            raise UsageError("--context must be 0 or more")
        return args.func(args)
    except UsageError as exc:
        print(f"rag-core: error: {terminal_safe(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("rag-core: interrupted; the collection keeps its previous version.", file=sys.stderr)
        return 130
    except (ValueError, RuntimeError, OSError, ImportError) as exc:
        print(f"rag-core: error: {terminal_safe(exc)}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
