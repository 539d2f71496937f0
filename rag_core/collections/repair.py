"""Checking a collection, and the part of a repair that lies above the store.

A store's ``check(repair=True)`` fixes what it can alone (rolls back to a complete version,
removes what is damaged) and names in ``CheckReport.rebuild`` the documents that only their
stored original PDFs can restore. Re-reading PDFs is the ingest pipeline's job, so it is done
here, and the report completed: ``rag-core check-store --repair``, the app and scripts all
come through :meth:`rag_core.collections.library.Library.check`, which calls
:func:`check_collection`.
"""

from __future__ import annotations

import shlex

from rag_core.collections.ingest.pipeline import rebuild_from_originals
from rag_core.collections.store.base import CheckReport, CollectionStore
from rag_core.errors import CollectionError


def check_collection(store: CollectionStore, name: str, *, repair: bool = False) -> CheckReport:
    """Verify every stored part of collection ``name``; ``repair`` fixes what can be fixed,
    rebuilding from the stored originals when no complete version holds the committed documents.
    What no repair can fix (an original PDF lost or altered) is named in ``report.actions``, by
    document, with the commands that fix it."""
    report = store.check(name, repair=repair)
    if repair and report.rebuild is not None:
        rebuild_documents(store, report)
    for source, state in sorted(report.originals.items()):
        report.actions.append(readd_advice(report.name, source, state))
    return report


def readd_advice(name: str, source: str, state: str) -> str:
    """One line: a document only the user's copy of its PDF can restore, and the commands that do
    (its judgments are kept: they follow the file's content). ``state``: "missing", "altered",
    or "lost" (a rebuild could not restore it, so it is no longer in the collection)."""
    add = f"`rag-core ingest {shlex.quote(name)} {shlex.quote('PATH/TO/' + source)}`"
    if state == "lost":
        return (f"{source!r}: its stored original PDF is missing or unreadable, so the repair could not rebuild "
                f"it and it left the collection; add your copy of the PDF again: {add} (its relevance judgments "
                "are kept)")
    return (f"{source!r}: its stored original PDF is {state}; remove the document and add your copy of the PDF "
            f"again: `rag-core remove {shlex.quote(name)} {shlex.quote(source)}`, then {add} (its relevance "
            "judgments are kept)")


def rebuild_documents(store: CollectionStore, report: CheckReport) -> None:
    """Make a new live version from the stored originals ``report.rebuild`` names, and say so
    in the report: what was rebuilt, and what could not be."""
    with store.writing(report.name):
        try:
            live = store.current_version(report.name)
        except CollectionError:
            live = None  # still damaged, as the store's repair left it
        if live is not None and live not in report.versions:  # a commit landed since the store's repair
            report.problems.append(f"another process committed version {live} during the repair; run "
                                   f"`rag-core check-store {report.name!r} --repair` again")
            return
        version, restored, missing = rebuild_from_originals(store, report.name, store.read_settings(report.name),
                                                            report.rebuild)
    report.rebuild = None
    report.version = version
    if version:
        report.repaired.append(f"rebuilt the index from {restored} stored PDF(s); dense vectors are computed "
                               "again by the next ingest or `rag-core embed`")
    if missing:
        report.problems.append(f"{len(missing)} document(s) could not be restored (original missing or "
                               f"unreadable): {', '.join(sorted(missing))}")
        for source in missing:
            report.originals[source] = "lost"
