"""The ``rag-core`` command line: ingest, search, list, remove, and evaluation."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

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

    return Library(args.data_dir) if args.data_dir else Library()


def _expand_files(paths: list[str]) -> list[str]:
    files: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(str(p) for p in path.rglob("*") if p.is_file() and p.suffix.lower() == ".pdf")
            if not found:
                raise UsageError(f"no PDF files in folder {raw}")
            files.extend(found)
        else:
            files.append(raw)
    return files


def _progress_bar(enabled: bool):
    if not enabled:
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=1000, bar_format="{percentage:3.0f}% |{bar:30}| {desc}", file=sys.stderr, leave=False)

    def update(event):
        bar.n = int(event.fraction * 1000)
        parts = [f"{event.stage}: {event.files_done}/{event.files_total} files"]
        if event.stage == "embed":
            parts.append(f"embedding {event.chunks_done}/{event.chunks_total} chunks")
        elif event.current_file:
            parts.append(event.current_file)
        if event.eta_s is not None:
            parts.append(f"{event.eta_s:.0f} s left")
        bar.set_description_str(", ".join(parts)[:100], refresh=True)

    return update, bar


def cmd_ingest(args) -> int:
    library = _library(args)
    files = _expand_files(args.files)
    show = not args.json and not args.no_progress and sys.stderr.isatty()
    update, bar = _progress_bar(show)
    try:
        report = library.add_pdfs(args.collection, files, progress=update)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    else:
        width = max((len(f.source) for f in report.files), default=10)
        for f in report.files:
            detail = f"{f.pages} pages, {f.chunks} chunks" if f.ok else f.reason
            print(f"{f.status:15s} {f.source:{width}s}  {detail}")
        added = len(report.added)
        print(f"\n{added} of {len(report.files)} files added to {report.collection!r}: "
              f"{report.chunks_added} chunks in {report.seconds:.1f} s.")
    usable = [f for f in report.files if f.status in ("ok", "duplicate")]
    return EXIT_OK if usable else EXIT_FAILURE


def _page_text(row: dict) -> str:
    page = row.get("page") or row.get("page_start")
    if page is None:
        return ""
    end = row.get("page_end")
    text = f"p. {page}" if not end or end == page or row.get("page") else f"pp. {page}-{end}"
    if row.get("page_label") and str(row["page_label"]) != str(page):
        text += f" (printed {row['page_label']})"
    return text


def _print_rows(rows: list[dict], mode: str) -> None:
    if not rows:
        print("No results.")
        return
    for row in rows:
        if mode == "exact":
            print(f"#{row['rank']:<3} {row['source']}  {_page_text(row)}  chunk {row['chunk_index']} "
                  f"[{row['start']}:{row['end']}]")
            body = row["snippet"]
        else:
            extra = ""
            if row.get("dense_cosine") is not None:
                extra += f"  dense {row['dense_cosine']:.3f}"
            if row.get("found_by"):
                extra += f"  [{row['found_by']}]"
            print(f"#{row['rank']:<3} score {row['score']:.4f} ({row['score_type']})  cosine {row['cosine']:.3f}"
                  f"{extra}  {row['source']}  {_page_text(row)}")
            body = row["text"]
        snippet = " ".join(body.split())
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
        print(f"Reranker: {rows[0]['reranker_detail']}\n")
    _print_rows(rows, args.mode)
    return EXIT_OK


def cmd_list(args) -> int:
    library = _library(args)
    if args.collection:
        docs = library.documents(args.collection)
        if args.json:
            print(json.dumps(docs, ensure_ascii=False, indent=1))
        elif not docs:
            print(f"Collection {args.collection!r} has no documents; add PDFs with `rag-core ingest`.")
        else:
            for d in docs:
                print(f"{d['doc_id']}  {d['pages']:4d} pages  {d['chunks']:5d} chunks  {d['source']}")
        return EXIT_OK
    infos = library.list()
    if args.json:
        print(json.dumps([i.to_dict() for i in infos], ensure_ascii=False, indent=1))
    elif not infos:
        print(f"No collections in {library.root}. Create one with `rag-core ingest NAME FILES...`.")
    else:
        for i in infos:
            print(f"{i.name:30s} {i.documents:4d} documents {i.pages:6d} pages {i.chunks:7d} chunks")
    return EXIT_OK


def cmd_remove(args) -> int:
    library = _library(args)
    if not args.documents:
        if not args.yes:
            raise UsageError(f"to delete the whole collection {args.collection!r}, add --yes; "
                             "to remove documents, name them")
        library.delete(args.collection)
        print(f"Deleted collection {args.collection!r}.")
        return EXIT_OK
    removed = library.remove_documents(args.collection, args.documents)
    print(f"Removed {len(removed)} document(s) from {args.collection!r}: {', '.join(removed)}")
    return EXIT_OK


def cmd_rename(args) -> int:
    info = _library(args).rename(args.old, args.new)
    print(f"Renamed {args.old!r} to {info.name!r}.")
    return EXIT_OK


def cmd_models(args) -> int:
    from .models import resolve_model, select_device
    from .settings import DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_EMBEDDING_MODEL

    rows = []
    for role, name in (("bi-encoder", args.embedding_model or DEFAULT_EMBEDDING_MODEL),
                       ("cross-encoder", args.cross_encoder or DEFAULT_CROSS_ENCODER_MODEL)):
        source = resolve_model(name)
        rows.append({"role": role, "name": name, "origin": source.origin, "available": source.available,
                     "detail": source.detail})
    encoder = _encoder_report(args.embedding_model or DEFAULT_EMBEDDING_MODEL, prepare=args.prepare)
    if args.json:
        print(json.dumps({"device": select_device(), "models": rows, "encoder": encoder}, indent=1))
    else:
        print(f"device: {select_device()}")
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

    from .models import ENCODER_ENV, planned_encoder, resolve_model

    planned = planned_encoder()
    report = {"requested": os.environ.get(ENCODER_ENV) or "auto", "planned": planned, "variant": planned,
              "onnx": {}, "fallback": None}
    source = resolve_model(name)
    if not source.available:
        return report
    from .onnx_encoder import ONNX_VARIANTS, OnnxEncoderError, cache_state, prepare_onnx_model, read_layout

    try:
        read_layout(source.location)
    except OnnxEncoderError as exc:
        report["onnx"] = {v: f"not possible for this model: {exc}" for v in ONNX_VARIANTS}
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
    parser = _Parser(prog="rag-core", description="Ground claims in scientific PDFs: ingest, search, evaluate.",
                     parents=[common])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("ingest", parents=[common], help="add PDFs (files or folders) to a collection")
    p.add_argument("collection")
    p.add_argument("files", nargs="+", metavar="FILES")
    p.add_argument("--json", action="store_true", help="print the per-file report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
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

    p = sub.add_parser("models", parents=[common], help="show where each model loads from")
    p.add_argument("--embedding-model")
    p.add_argument("--cross-encoder")
    p.add_argument("--json", action="store_true")
    p.add_argument("--prepare", action="store_true",
                   help="convert the bi-encoder to ONNX (fp32 and int8) now instead of at first use")
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
            raise UsageError("a command is needed: ingest, search, list, remove, rename, models or eval")
        args.data_dir = getattr(args, "data_dir", None)
        if hasattr(args, "top") and args.top <= 0:
            raise UsageError("--top must be at least 1")
        if hasattr(args, "pool") and args.pool <= 0:
            raise UsageError("--pool must be at least 1")
        return args.func(args)
    except UsageError as exc:
        print(f"rag-core: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("rag-core: interrupted; the collection keeps its previous version.", file=sys.stderr)
        return 130
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"rag-core: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
