"""Checking a collection, and the part of a repair that lies above the store.

A store's ``check(repair=True)`` fixes what it can alone (rolls back to a complete version,
removes what is damaged) and names in ``CheckReport.rebuild`` the documents that only their
stored original PDFs can restore. Re-reading PDFs is the ingest pipeline's job, so it is done
here, and the report completed: ``rag-core check-store --repair``, the app and scripts all
come through :meth:`rag_core.collections.library.Library.check`, which calls
:func:`check_collection`.
"""

from __future__ import annotations

from rag_core.collections.ingest.pipeline import rebuild_from_originals
from rag_core.collections.store.base import CheckReport, CollectionStore
from rag_core.errors import CollectionError


def check_collection(store: CollectionStore, name: str, *, repair: bool = False) -> CheckReport:
    """Verify every stored part of collection ``name``; ``repair`` fixes what can be fixed,
    rebuilding from the stored originals when no complete version holds the committed documents."""
    report = store.check(name, repair=repair)
    if repair and report.rebuild is not None:
        rebuild_documents(store, report)
    return report


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
