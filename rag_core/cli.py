"""The ``rag-core`` command line: ingest, search, list, remove, and evaluation."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

from .render import page_label, terminal_safe
from .settings import DATA_DIR_ENV, DEFAULT_POOL

SEARCH_MODES = ("tfidf", "bm25", "dense", "hybrid", "exact")
EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A mistake in how the command was called (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, not a usage dump
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _library(args):
    from .library import Library

    return Library(args.data_dir or None, store=args.store)


def _expand_files(paths: list[str]):
    """The PDF files to ingest, and what was passed over in the given folders."""
    from .ingest import collect_pdf_files

    scan = collect_pdf_files(paths)
    if not scan.files:
        raise UsageError(f"no PDF files in {', '.join(paths)}")
    return scan


STAGE_WORDS = {"read": "reading", "extract": "extracting", "index": "indexing", "embed": "embedding",
               "done": "done"}


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
        else:
            parts.append(f"{event.files_done}/{event.files_total} files")
            if event.pages_total:
                parts.append(f"{event.pages_done:,}/{event.pages_total:,} pages")
        if event.eta_s is not None:
            parts.append(f"~{event.eta_s:.0f} s left")
        bar.set_description_str(", ".join(parts)[:100], refresh=True)

    return update, bar


def cmd_ingest(args) -> int:
    library = _library(args)
    scan = _expand_files(args.files)
    show = not args.json and not args.no_progress and sys.stderr.isatty()
    update, bar = _progress_bar(show)
    try:
        report = library.add_pdfs(args.collection, scan.files, progress=update,
                                  embed="none" if args.no_embed else "now")
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
            detail = f"{f.pages} pages, {f.chunks} chunks" if f.ok else _line(f.reason)
            print(f"{f.status:15s} {name:{width}s}  {detail}")
        if scan.skipped:
            print(f"\nskipped {len(scan.skipped)} file(s) in the folder(s):")
            for path, why in scan.skipped:
                print(f"  {_line(path)}: {why}")
        added = len(report.added)
        collection = _line(repr(report.collection))
        print(f"\n{added} of {len(report.files)} files added to {collection}: "
              f"{report.chunks_added} chunks in {report.seconds:.1f} s"
              + (f" (searchable after {report.searchable_after_s:.1f} s)." if report.searchable_after_s else "."))
        if report.collection_removed:
            print(f"No file could be added, so the new collection {collection} was not kept.")
        if report.embedding is not None and not report.embedding.complete:
            print(f"Dense vectors: {report.embedding.done:,} of {report.embedding.total:,} chunks; "
                  f"`rag-core embed {collection}` computes the rest.")
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


def cmd_search(args) -> int:
    from .exact import search_exact
    from .retrieval import search, search_dense, search_lexical

    library = _library(args)
    index = library.load_index(args.collection)
    if index is None:
        raise RuntimeError(f"Collection {args.collection!r} has no documents yet; add PDFs with `rag-core ingest`.")
    sources = args.source or None
    if args.mode == "exact":
        mode = "regex" if args.regex else ("normalized" if args.normalized else "literal")
        rows = search_exact(args.query, index, max_hits=args.top, context=args.context, mode=mode, sources=sources)
        for rank, row in enumerate(rows, start=1):
            row["rank"] = rank
    elif args.mode in ("tfidf", "bm25"):
        rows = search_lexical(args.query, index, args.top, method=args.mode, sources=sources)
    elif args.mode == "dense":
        rows = search_dense(args.query, index, args.top, sources=sources)
    else:
        kwargs = {"cross_encoder_model": args.cross_encoder} if args.cross_encoder else {}
        rows = search(args.query, index, top=args.top, rerank=True, pool=args.pool, sources=sources, **kwargs)
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
        from .store.folder import CollectionDamagedError

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

    from .settings import default_data_dir
    from .store.local_server import start_local_server
    from .store.postgres import mask_url

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
    from .library import Library
    from .store.transfer import copy_collection

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
    from .models import resolve_model, select_device
    from .settings import DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_EMBEDDING_MODEL

    rows = []
    for role, name in (("bi-encoder", args.embedding_model or DEFAULT_EMBEDDING_MODEL),
                       ("cross-encoder", args.cross_encoder or DEFAULT_CROSS_ENCODER_MODEL)):
        source = resolve_model(name)
        rows.append({"role": role, "name": name, "origin": source.origin, "available": source.available,
                     "detail": source.detail})
    if args.json:
        print(json.dumps({"device": select_device(), "models": rows}, indent=1))
    else:
        print(f"device: {select_device()}")
        for r in rows:
            print(f"{r['role']:14s} {r['name']}: {r['origin']} - {r['detail']}")
    return EXIT_OK


def cmd_eval(args) -> int:
    from .evaluation import evaluate, format_table

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise UsageError("--methods is empty")
    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[eval] {message}", file=sys.stderr, flush=True)

    kwargs = {"cross_encoder_model": args.cross_encoder} if args.cross_encoder else {}
    results = evaluate(args.dataset, methods=methods, split=args.split, progress=progress, **kwargs)
    print(json.dumps(results, indent=1) if args.json else format_table(results))
    return EXIT_OK


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
    p.add_argument("--no-embed", action="store_true",
                   help="return once the files are searchable by TF-IDF, BM25 and exact search; "
                        "compute dense vectors later with `rag-core embed`")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("search", parents=[common], help="search a collection")
    p.add_argument("collection")
    p.add_argument("query")
    p.add_argument("--mode", choices=SEARCH_MODES, default="hybrid")
    p.add_argument("--top", type=int, default=5)
    p.add_argument("--pool", type=int, default=DEFAULT_POOL, help="candidates per first-stage list (hybrid)")
    p.add_argument("--regex", action="store_true", help="exact mode: the query is an RE2 regular expression")
    p.add_argument("--normalized", action="store_true",
                   help="exact mode: fold ligatures, hyphenation, spacing, quotes and dashes")
    p.add_argument("--context", type=int, default=150, help="exact mode: characters around each match")
    p.add_argument("--source", action="append", help="restrict to this document (repeatable)")
    p.add_argument("--cross-encoder", help="cross-encoder name or local folder (hybrid)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)

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
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("eval", parents=[common], help="evaluate retrieval methods on a BEIR-format dataset")
    p.add_argument("dataset", help="folder with corpus.jsonl(.gz), queries.jsonl and qrels/")
    p.add_argument("--methods", default="tfidf,bm25,dense,hybrid")
    p.add_argument("--split", choices=("test", "train", "dev"), default="test")
    p.add_argument("--cross-encoder", help="cross-encoder name or local folder (method hybrid_ce)")
    p.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            raise UsageError("a command is needed: ingest, search, list, remove, rename, embed, check-store, copy, "
                             "serve-db, models or eval")
        args.data_dir = getattr(args, "data_dir", None)
        args.store = getattr(args, "store", None)
        if hasattr(args, "top") and args.top <= 0:
            raise UsageError("--top must be at least 1")
        if hasattr(args, "pool") and args.pool <= 0:
            raise UsageError("--pool must be at least 1")
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
