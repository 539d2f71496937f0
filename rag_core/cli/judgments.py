"""``rag-core judgments import|export|list``: a collection's relevance judgments."""

from __future__ import annotations

from rag_core.cli.common import EXIT_FAILURE, EXIT_OK, UsageError, json_text, line, open_library


def cmd_judgments(args) -> int:
    from rag_core.lab.judgments import load_judgments
    from rag_core.lab.transfer import export_judgments, import_judgments

    library = open_library(args)
    if args.action == "export":
        if not args.file:
            raise UsageError("give the file to write: a .csv, a .zip or a folder (BEIR layout)")
        result = export_judgments(library, args.collection, args.file)
        if args.json:
            print(json_text(result))
        else:
            extra = (f", {result['qrels']} qrels over {result['passages']:,} passages"
                     if "qrels" in result else "")
            print(f"Wrote {result['judgments']} judgment(s) of {result['queries']} queries to "
                  f"{line(result['path'])} ({result['format']}{extra}).")
            if result.get("left_out"):
                print(f"{result['left_out']} judgment(s) are about documents no longer in the collection: kept in "
                      "the collection, left out of the BEIR files (a .csv export has them).")
        return EXIT_OK
    if args.action == "import":
        if not args.file:
            raise UsageError("give the file to read: a .csv (query, document, quote, grade) or a BEIR folder/zip")
        report = import_judgments(library, args.collection, args.file)  # a file it cannot read: one line, exit 1
        if args.json:
            print(json_text(report.to_dict()))
        else:
            print(report.summary())
            for row, problem in report.problems:
                print(f"  {line(report.where(row))}: {line(problem)}")
            for row, warning in report.warnings:
                print(f"  {line(report.where(row))} (note): {line(warning)}")
        return EXIT_FAILURE if report.rejected or (report.rows and not report.imported) else EXIT_OK
    judgments = load_judgments(library, args.collection)  # list
    queries = judgments.queries()
    if args.json:
        print(json_text([{"query": q, "judgments": [j.to_dict() for j in judgments.for_query(q)]} for q in queries]))
    elif not queries:
        print(f"Collection {line(repr(args.collection))} has no judgments yet.")
    else:
        for q in queries:
            grades = [j.grade for j in judgments.for_query(q)]
            counts = " ".join(f"{g}:{grades.count(g)}" for g in range(4) if grades.count(g))
            print(f"{len(grades):4d} judged  [{counts}]  {line(q)}")
    return EXIT_OK


def add_parsers(sub, common) -> None:
    """The sub-commands ``judgments``."""
    p = sub.add_parser("judgments", parents=[common],
                       help="import, export or list a collection's relevance judgments")
    p.add_argument("action", choices=("import", "export", "list"))
    p.add_argument("collection")
    p.add_argument("file", nargs="?", help="export: .csv, .zip or a folder (BEIR layout); import: .csv "
                                           "(query, document, quote, grade) or an exported BEIR folder/zip")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_judgments)
