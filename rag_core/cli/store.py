"""The collections and their stores: ``rag-core list``, ``remove``, ``rename``, ``check-store``,
``copy`` and ``serve-db``."""

from __future__ import annotations

from pathlib import Path

from rag_core.cli.common import EXIT_FAILURE, EXIT_OK, UsageError, json_text, line, open_library


def cmd_list(args) -> int:
    library = open_library(args)
    if args.collection:
        docs = library.documents(args.collection)
        if args.json:
            print(json_text(docs))
        elif not docs:
            print(f"Collection {line(repr(args.collection))} has no documents; add PDFs with `rag-core ingest`.")
        else:
            for d in docs:
                print(f"{line(d['doc_id'])}  {d['pages']:4d} pages  {d['chunks']:5d} chunks  {line(d['source'])}")
        return EXIT_OK
    infos = library.list()
    if args.json:
        print(json_text([i.to_dict() for i in infos]))
    elif not infos:
        print(f"No collections in {line(library.store.location)}. Create one with `rag-core ingest NAME FILES...`.")
    else:
        for i in infos:
            if i.error:
                print(f"{line(i.name):30s} DAMAGED: {line(i.error)}")
                continue
            embedded = "" if i.embedded_chunks >= i.chunks else f" ({i.embedded_chunks:,} embedded so far)"
            print(f"{line(i.name):30s} {i.documents:4d} documents {i.pages:6d} pages {i.chunks:7d} chunks{embedded}")
            for note in i.notes:
                print(f"{'':30s} note: {line(note)}")
    return EXIT_OK


def cmd_remove(args) -> int:
    library = open_library(args)
    if not args.documents:
        if not args.yes:
            raise UsageError(f"to delete the whole collection {args.collection!r}, add --yes; "
                             "to remove documents, name them")
        from rag_core.errors import CollectionDamagedError

        try:
            library.delete(args.collection)
        except CollectionDamagedError:
            library.delete(args.collection, force=True)  # however broken, it can go
        print(f"Deleted collection {line(repr(args.collection))}.")
        return EXIT_OK
    removed = library.remove_documents(args.collection, args.documents)
    print(f"Removed {len(removed)} document(s) from {line(repr(args.collection))}: {line(', '.join(removed))}")
    return EXIT_OK


def cmd_rename(args) -> int:
    info = open_library(args).rename(args.old, args.new)
    print(f"Renamed {line(repr(args.old))} to {line(repr(info.name))}.")
    return EXIT_OK


def cmd_check_store(args) -> int:
    library = open_library(args)
    names = [args.collection] if args.collection else library.names()
    if not names:
        print(f"No collections in {line(library.store.location)}.")
        return EXIT_OK
    reports = [library.check(name, repair=args.repair) for name in names]
    if args.json:
        print(json_text([r.to_dict() for r in reports]))
    else:
        for r in reports:
            state = "ok" if not r.problems else ("repaired" if r.ok else "DAMAGED")
            print(f"{line(r.name)}: {state}" + (f" (live version {r.version})" if r.version else ""))
            for p in r.problems:
                print(f"  problem: {line(p)}")
            for p in r.repaired:
                print(f"  repaired: {line(p)}")
            for action in r.actions:
                print(f"  to fix: {line(action)}")
        if any(not r.ok for r in reports) and not args.repair:
            print("Run again with --repair to fix what can be fixed.")
    return EXIT_OK if all(r.ok for r in reports) else EXIT_FAILURE


def cmd_copy(args) -> int:
    from rag_core.collections.library import Library
    from rag_core.collections.store.copying import copy_collection

    source = Library(args.data_dir or None, store=args.source_store or args.store).store
    target = Library(args.data_dir or None, store=args.target_store or args.store).store
    report = copy_collection(source, args.collection, target, args.dest)
    if args.json:
        print(json_text(report.to_dict()))
    else:
        print(f"from {line(repr(report.source))} in {line(report.source_store)}")
        print(f"to   {line(repr(report.target))} in {line(report.target_store)}\n")
        print(f"{'':24s} {'source':>18s} {'copy':>18s}")
        for what, a, b, same in report.rows():
            print(f"{what:24s} {a:>18s} {b:>18s}  {'same' if same else 'DIFFERENT'}")
        for note in report.notes:
            print(f"note: {line(note)}")
        for problem in report.problems:
            print(f"problem: {line(problem)}")
        print("\nCopied; nothing was lost." if report.ok else "\nThe copy is not complete.")
    return EXIT_OK if report.ok else EXIT_FAILURE


def cmd_serve_db(args) -> int:
    import signal
    import time

    from rag_core.collections.store.local_server import start_local_server
    from rag_core.collections.store.postgres.connection import mask_url
    from rag_core.settings import default_data_dir

    folder = Path(args.data).expanduser() if args.data else (
        Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()) / "postgres"
    server, url = start_local_server(folder)
    print(f"PostgreSQL with pgvector is running; its data is in {line(str(folder))}.")
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


def add_parsers(sub, common) -> None:
    """The sub-commands ``list``, ``remove``, ``rename``, ``check-store``, ``copy``, ``serve-db``."""
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
