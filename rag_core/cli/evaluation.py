"""``rag-core eval``: retrieval methods on a BEIR dataset, or on a collection's own judgments."""

from __future__ import annotations

import sys

from rag_core.cli.common import EXIT_OK, UsageError, json_text, line, open_library, text

DEFAULT_EVAL_METHODS = "tfidf,bm25,dense,hybrid"


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
        raise UsageError(f"unknown method {', '.join(line(m) for m in unknown)} in --methods; "
                         f"choose from {', '.join(METHODS)}")
    if args.cross_encoder and "hybrid_ce" not in methods:
        raise UsageError("--cross-encoder is read by method hybrid_ce only; add it to --methods")

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[eval] {message}", file=sys.stderr, flush=True)

    kwargs = {"cross_encoder_model": args.cross_encoder} if args.cross_encoder else {}
    results = evaluate(args.dataset, methods=methods, split=args.split, progress=progress, **kwargs)
    print(json_text(results) if args.json else format_table(results))
    return EXIT_OK


def cmd_eval_collection(args) -> int:
    """``eval --collection``: the collection's own judgments, with the figures the app shows."""
    from rag_core.lab.queryset import evaluate_collection, format_summary, summary_json

    if args.dataset:
        raise UsageError("give either a dataset folder or --collection, not both")
    library = open_library(args)
    methods = None if args.methods == DEFAULT_EVAL_METHODS else args.methods
    spec = None  # the collection's own
    if args.cross_encoder:
        from rag_core.retrieval.search_spec import SearchSpec

        spec = SearchSpec.for_collection(library.settings(args.collection)).with_changes(
            cross_encoder_model=args.cross_encoder)

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[eval] {line(message)}", file=sys.stderr, flush=True)

    run = evaluate_collection(library, args.collection, spec=spec, methods=methods, progress=progress)
    print(json_text(summary_json(run)) if args.json else text(format_summary(run)))
    return EXIT_OK


def add_parsers(sub, common) -> None:
    """The sub-commands ``eval``."""
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
