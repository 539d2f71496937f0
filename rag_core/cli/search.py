"""``rag-core search``: a collection searched by TF-IDF, BM25, dense, hybrid or exact search."""

from __future__ import annotations

import textwrap

from rag_core.cli.common import EXIT_OK, UsageError, json_text, line, open_library, warm_query_encoder
from rag_core.output.render import page_label
from rag_core.settings import DEFAULT_POOL

SEARCH_MODES = ("tfidf", "bm25", "dense", "hybrid", "exact")


DEFAULT_CONTEXT = 150  # characters shown around an exact match in the terminal


MODE_OPTIONS = {"regex": "exact", "normalized": "exact", "literal": "exact", "context": "exact", "pool": "hybrid",
                "cross_encoder": "hybrid"}


def _page_text(row: dict) -> str:
    if not (row.get("page") or row.get("page_start")):
        return ""
    return line(page_label(row))


def print_rows(rows: list[dict], mode: str) -> None:
    if not rows:
        print("No results.")
        return
    for row in rows:
        if mode == "exact":
            print(f"#{row['rank']:<3} {line(row['source'])}  {_page_text(row)}  chunk {row['chunk_index']} "
                  f"[{row['start']}:{row['end']}]")
            body = row["snippet"]
        else:
            extra = ""
            if row.get("dense_cosine") is not None:
                extra += f"  dense {row['dense_cosine']:.3f}"
            if row.get("found_by"):
                extra += f"  [{row['found_by']}]"
            print(f"#{row['rank']:<3} score {row['score']:.4f} ({row['score_type']})  cosine {row['cosine']:.3f}"
                  f"{extra}  {line(row['source'])}  {_page_text(row)}")
            body = row["text"]
        if row.get("back_matter"):
            print(f"     ({line(row['back_matter'])}: back matter)")
        snippet = line(" ".join(body.split()))
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
    if args.query_head is not None and args.mode not in ("dense", "hybrid"):
        raise UsageError(f"--query-head applies to --mode dense and hybrid only (the mode is {args.mode})")
    chosen = [flag for flag, on in (("--regex", args.regex), ("--normalized", args.normalized),
                                    ("--literal", args.literal)) if on]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} cannot be combined: choose one way to match")


def cmd_search(args) -> int:
    _check_search_args(args)
    if args.query_head is not None:  # this process's query head (the setting's variable, as the library reads it)
        import os

        from rag_core.settings import QUERY_HEAD_ENV

        os.environ[QUERY_HEAD_ENV] = args.query_head
    library = open_library(args)
    if args.mode in ("dense", "hybrid"):
        warm_query_encoder(library, args.collection)
    from rag_core.retrieval.exact import search_exact
    from rag_core.retrieval.ranking import search_dense, search_lexical, search_with_spec

    index = library.load_index(args.collection)
    if index is None:
        raise RuntimeError(f"Collection {args.collection!r} has no documents yet; add PDFs with `rag-core ingest`.")
    sources = args.source or None
    back_matter = args.include_back_matter
    if args.mode == "exact":
        # folded by default, as the app searches (and as the snippets it prints read: "cor-\nrect")
        mode = "regex" if args.regex else ("literal" if args.literal else "normalized")
        context = DEFAULT_CONTEXT if args.context is None else args.context
        rows = search_exact(args.query, index, max_hits=args.top, context=context, mode=mode, sources=sources,
                            every_match=True, back_matter=back_matter)
        for rank, row in enumerate(rows, start=1):
            row["rank"] = rank
    elif args.mode in ("tfidf", "bm25"):
        rows = search_lexical(args.query, index, args.top, method=args.mode, sources=sources, back_matter=back_matter)
    elif args.mode == "dense":
        rows = search_dense(args.query, index, args.top, sources=sources, back_matter=back_matter)
    else:
        from rag_core.retrieval.search_spec import SearchSpec

        spec = SearchSpec.for_collection(library.settings(args.collection))  # the collection's saved default
        if args.pool is not None:
            spec = spec.with_changes(pool=args.pool)
        if args.cross_encoder:
            spec = spec.with_changes(cross_encoder_model=args.cross_encoder)
        rows = search_with_spec(args.query, index, spec, top=args.top, sources=sources, back_matter=back_matter)
    if args.json:
        payload = {"collection": args.collection, "query": args.query, "mode": args.mode, "results": rows}
        if args.mode == "hybrid" and rows:
            payload["reranker"] = rows[0]["reranker"]
            payload["reranker_detail"] = rows[0]["reranker_detail"]
        if args.mode in ("dense", "hybrid") and rows:
            payload["query_encoder"] = rows[0].get("query_encoder")
        print(json_text(payload))
        return EXIT_OK
    if args.mode == "hybrid" and rows:
        print(f"Reranker: {line(rows[0]['reranker_detail'])}\n")
    elif args.mode == "dense" and rows and "query head" in (rows[0].get("query_encoder") or ""):
        print(f"Query vectors: {line(rows[0]['query_encoder'])}\n")
    print_rows(rows, args.mode)
    return EXIT_OK


def add_parsers(sub, common) -> None:
    """The sub-commands ``search``."""
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
    p.add_argument("--query-head", default=None, metavar="NAME|none",
                   help="dense and hybrid: put the query vector through this learned query head (a name under "
                        "rag_core/models/trained/ or a folder; none: plain vectors; default: $RAG_CORE_QUERY_HEAD, "
                        "else the package's)")
    p.add_argument("--json", action="store_true", help="print stable JSON for scripts")
    p.add_argument("--include-back-matter", action="store_true",
                   help="search reference lists, acknowledgements and other back matter too (left out by default)")
    p.set_defaults(func=cmd_search)
