"""``rag-core meta``: a collection's bibliographic records shown, corrected, imported and exported.

* ``rag-core meta show COLLECTION`` -- each document's title, authors, year, DOI and where each
  field came from (pdf, arxiv, file name, import, edited);
* ``rag-core meta import COLLECTION FILE_OR_ZOTERO_FOLDER`` -- a ``.bib``, CSL-JSON ``.json`` or
  ``.ris`` file, or a Zotero data folder (its stored PDFs added, ``--zotero-collection NAME`` for
  one collection), matched by DOI, then arXiv id, then normalised title; says what matched
  nothing, both ways;
* ``rag-core meta set COLLECTION DOCUMENT --title --authors --year --doi`` -- a hand correction;
* ``rag-core meta export COLLECTION refs.bib|refs.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rag_core.cli.common import EXIT_OK, UsageError, json_text, open_library
from rag_core.output.render import terminal_safe

__all__ = ["add_parsers", "cmd_meta"]

_ORIGIN_FIELDS = ("title", "authors", "year", "doi", "arxiv_id", "venue")


def add_parsers(sub, common) -> None:
    """The sub-command ``meta`` and its actions."""
    p = sub.add_parser("meta", parents=[common], help="show, correct, import or export the documents' "
                                                      "bibliographic records")
    actions = p.add_subparsers(dest="meta_action", metavar="ACTION")
    show = actions.add_parser("show", parents=[common], help="each document's record and where each field came from")
    show.add_argument("collection")
    show.add_argument("--json", action="store_true")
    imp = actions.add_parser("import", parents=[common],
                             help="records from a .bib, CSL-JSON .json, .ris file or a Zotero data folder")
    imp.add_argument("collection")
    imp.add_argument("source", metavar="FILE_OR_ZOTERO_FOLDER")
    imp.add_argument("--zotero-collection", metavar="NAME", help="a Zotero folder: only this collection's items")
    imp.add_argument("--no-pdfs", action="store_true", help="a Zotero folder: records only, add none of its PDFs")
    imp.add_argument("--no-embed", action="store_true", help="a Zotero folder: add its PDFs without dense vectors")
    imp.add_argument("--json", action="store_true")
    put = actions.add_parser("set", parents=[common], help="correct a document's record by hand")
    put.add_argument("collection")
    put.add_argument("document", help="the document's file name (as `rag-core list COLLECTION` shows it)")
    put.add_argument("--title")
    put.add_argument("--authors", help='"Patrick Lewis; Ethan Perez" (separated by semicolons)')
    put.add_argument("--year")
    put.add_argument("--doi")
    put.add_argument("--arxiv-id", dest="arxiv_id")
    put.add_argument("--venue")
    put.add_argument("--key", help="the citation key the document is exported with")
    out = actions.add_parser("export", parents=[common], help="write the records as BibTeX (.bib) or CSL-JSON (.json)")
    out.add_argument("collection")
    out.add_argument("file", help="refs.bib or refs.json (- prints BibTeX)")
    p.set_defaults(func=cmd_meta)


def cmd_meta(args) -> int:
    action = getattr(args, "meta_action", None)
    if action is None:
        raise UsageError("meta needs an action: show, import, set or export")
    library = open_library(args)
    zotero = action == "import" and Path(args.source).expanduser().is_dir() and not args.no_pdfs
    if not library.exists(args.collection) and not zotero:  # a Zotero folder's PDFs may start a collection
        raise ValueError(f"No collection named {args.collection!r}.")
    if action == "show":
        return _show(library, args)
    if action == "set":
        fields = {k: getattr(args, k) for k in ("title", "authors", "year", "doi", "arxiv_id", "venue", "key")
                  if getattr(args, k) is not None}
        if not fields:
            raise UsageError("meta set needs at least one of --title, --authors, --year, --doi, --arxiv-id, "
                              "--venue, --key")
        changed = library.set_record(args.collection, args.document, **fields)
        for key, value in changed.items():
            shown = "; ".join(value) if isinstance(value, list) else ("(cleared)" if value is None else value)
            print(f"{terminal_safe(args.document)}: {key} = {terminal_safe(shown)} (edited)")
        return EXIT_OK
    if action == "export":
        data = library.export_records(args.collection, "refs.bib" if args.file == "-" else args.file)
        if args.file == "-":
            sys.stdout.write(terminal_safe(data.decode("utf-8")))
            return EXIT_OK
        from rag_core.atomic import write_bytes_atomic

        write_bytes_atomic(Path(args.file), data)
        print(f"Wrote {len(library.documents(args.collection))} records to {terminal_safe(args.file)}.")
        return EXIT_OK
    return _import(library, args)


def _import(library, args) -> int:
    report = library.import_records(args.collection, args.source, collection=args.zotero_collection,
                                    add_pdfs=not args.no_pdfs, compute_embeddings=not args.no_embed)
    if args.json:
        print(json_text({
            "source": report.source, "kind": report.kind, "records": report.records, "added": report.added,
            "matched": [list(m) for m in report.matched],
            "ambiguous": [[label, fits] for label, fits in report.ambiguous],
            "unmatched_records": report.unmatched_records, "unmatched_documents": report.unmatched_documents,
            "notes": report.notes}))
        return EXIT_OK
    safe = terminal_safe
    for note in report.notes:
        print(f"note: {safe(note)}", file=sys.stderr)
    if report.added:
        print(f"Added {len(report.added)} PDF(s) from the Zotero folder.")
    print(f"{report.records} {report.kind} record(s) from {safe(report.source)}: {len(report.matched)} matched.")
    for source, label, how in report.matched:
        print(f"  {safe(source)} <- {safe(label)} (by {how})")
    if report.ambiguous:
        print(f"{len(report.ambiguous)} record(s) fit several documents (nothing changed for them):")
        for label, fits in report.ambiguous:
            print(f"  {safe(label)}: {safe(', '.join(fits))}")
    print(f"{len(report.unmatched_records)} record(s) match no document of the collection:")
    for label in report.unmatched_records[:50]:
        print(f"  {safe(label)}")
    if len(report.unmatched_records) > 50:
        print(f"  ... and {len(report.unmatched_records) - 50} more")
    print(f"{len(report.unmatched_documents)} document(s) match no record:")
    for source in report.unmatched_documents:
        print(f"  {safe(source)}")
    return EXIT_OK


def _show(library, args) -> int:
    docs = library.documents(args.collection)
    if args.json:
        keys = ("source", "title", "authors", "year", "doi", "arxiv_id", "venue", "origin", "no_record")
        print(json_text([{k: d.get(k) for k in keys} for d in docs]))
        return EXIT_OK
    for doc in docs:
        origin = doc.get("origin") or {}
        print(terminal_safe(doc["source"]))
        if doc.get("no_record") and not (doc.get("title") or doc.get("authors")):
            print(f"  no record ({terminal_safe(doc['no_record'], one_line=True)}); shown by its file name")
        for key in _ORIGIN_FIELDS:
            value = doc.get(key)
            if value in (None, [], ""):
                continue
            shown = "; ".join(value) if isinstance(value, list) else str(value)
            print(f"  {key:9s} {terminal_safe(shown, one_line=True)[:200]}  [{origin.get(key, 'pdf')}]")
    return EXIT_OK
