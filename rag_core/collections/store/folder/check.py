"""Check and repair of a collection folder: every file against its checksum, the live pointer,
the originals of the live documents, vector files, side data (against its recorded checksums:
:mod:`.side_data`), leftovers of killed writes.

A repair does what the folder alone can: it writes lost settings again, points ``CURRENT`` at
a complete version holding the committed documents, and removes what is damaged. When no
complete version holds them, it names them in :attr:`CheckReport.rebuild`, for the caller
above the store to rebuild from their stored originals (:mod:`rag_core.collections.repair`).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rag_core.atomic import write_bytes_atomic, write_json_atomic
from rag_core.collections.store.base import (
    COLLECTION_FORMAT,
    COLLECTION_FORMAT_VERSION,
    CheckReport,
    check_settings,
    default_settings,
)
from rag_core.collections.store.folder.layout import (
    SETTINGS_FILE,
    VERSION_RE,
    clean_leftovers,
    leftovers,
    read_current,
    read_json,
    version_record,
    version_segments,
)
from rag_core.collections.store.folder.side_data import FolderSideData
from rag_core.collections.store.folder.vectors import damaged_vector_files
from rag_core.collections.store.index_files import MANIFEST, file_digest, load_index, read_manifest, verify_index_files
from rag_core.errors import CollectionError, IndexFormatError

if TYPE_CHECKING:
    from contextlib import AbstractContextManager


class FolderStore(Protocol):
    """What the check uses of :class:`~rag_core.collections.store.folder.store.FolderStore` (named
    here, not imported: the store imports this module)."""

    def dir_for_removal(self, name: str) -> Path: ...

    def writing(self, name: str) -> AbstractContextManager[None]: ...


def check_collection(store: FolderStore, name: str, *, repair: bool) -> CheckReport:
    """What :meth:`FolderStore.check` reports; a repair takes the writer lock (after removing a
    ``.lock`` that is not a file, which would keep every writer out)."""
    path = store.dir_for_removal(name)
    report = CheckReport(name=path.name)
    lock_path = path / ".lock"
    if lock_path.exists() and not lock_path.is_file():
        report.problems.append(".lock is not a file")
        if repair:
            shutil.rmtree(lock_path) if lock_path.is_dir() else lock_path.unlink()
            report.repaired.append("removed the .lock that was not a file")
    if repair:
        with store.writing(path.name):
            return _check_locked(store, path, report, repair=True)
    return _check_locked(store, path, report, repair=False)


def _check_locked(store: FolderStore, path: Path, report: CheckReport, *, repair: bool) -> CheckReport:
    problem, fixed = report.problems.append, report.repaired.append
    name = path.name
    # settings
    settings = None
    try:
        settings = check_settings(read_json(path / SETTINGS_FILE, "its settings", name), name)
    except FileNotFoundError:
        problem("collection.json is missing")
    except CollectionError as exc:
        problem(str(exc))
    # versions: every file checked against its checksum
    versions_dir = path / "versions"
    good: list[str] = []
    broken: list[str] = []
    for folder in sorted(versions_dir.iterdir(), reverse=True) if versions_dir.is_dir() else []:
        if not VERSION_RE.fullmatch(folder.name):
            continue
        issues = _check_version(name, folder)
        if issues:
            problem(f"version {folder.name}: {'; '.join(issues)}")
            broken.append(folder.name)
        else:
            good.append(folder.name)
    report.versions = good
    if settings is None and repair:
        write_json_atomic(path / SETTINGS_FILE, _settings_from_versions(path, good))
        fixed("wrote collection.json again" + (" from the newest version" if good else " with default settings"))
    # the live pointer
    current = read_current(path)
    if current in good:
        report.version = current
    elif current is None and not good and not broken:
        report.version = None  # a new, empty collection
    else:
        what = ("missing" if current is None else f"{(current or '')[:40]!r}, " +
                ("a damaged version" if current in broken else "not a complete version"))
        problem(f"CURRENT is {what}")
        if repair:
            _repair_live_version(path, good, current if current in broken else None, report)
    if repair:
        for version in broken:
            if version != report.version:
                shutil.rmtree(versions_dir / version, ignore_errors=True)
                fixed(f"removed the damaged version {version}")
    # originals of the live documents
    if report.version:
        for doc in version_record(name, versions_dir / report.version)["documents"]:
            pdf = path / "files" / f"{doc['sha256']}.pdf"
            if not pdf.is_file():
                problem(f"the original of {doc['source']!r} is missing (page images cannot be shown)")
                report.originals[doc["source"]] = "missing"
            elif file_digest(pdf) != doc["sha256"]:
                problem(f"the original of {doc['source']!r} was altered (its checksum differs)")
                report.originals[doc["source"]] = "altered"
    # vectors written behind
    for item in damaged_vector_files(path):
        problem(f"vectors/{item.name} is damaged")
        if repair:
            item.unlink(missing_ok=True)
            fixed(f"removed vectors/{item.name} (it will be computed again)")
    FolderSideData(path).check(report, repair=repair)  # the relevance lab's judgments and snapshots
    if leftovers(path):
        problem(f"{len(leftovers(path))} temporary file(s) left by interrupted writes")
        if repair:
            clean_leftovers(path)
            fixed("removed the temporary files of interrupted writes")
    return report


def _check_version(name: str, folder: Path) -> list[str]:
    """The problems of one version: its record, and every file of its segments against its checksum."""
    path = folder.parent.parent
    try:
        record = version_record(name, folder)
        segments = version_segments(path, folder, record)
    except CollectionError as exc:
        return [str(exc)]
    if not segments:
        return [] if not record["documents"] else ["its documents have no index"]
    problems: list[str] = []
    for index_folder, info in segments:
        label = f"segment {info['id']}: " if info.get("id") else ""
        try:
            manifest = read_manifest(index_folder)
        except (IndexFormatError, OSError) as exc:
            problems.append(f"{label}{exc}")
            continue
        expected = info.get("manifest_sha256") or (record.get("index_manifest") or {}).get("sha256")
        if expected and file_digest(index_folder / MANIFEST) != expected:
            problems.append(f"{label}manifest.json was altered after it was written")
            continue
        found = verify_index_files(index_folder, full=True, manifest=manifest)
        if not found:
            try:
                load_index(index_folder, verify="full")
            except IndexFormatError as exc:
                found.append(str(exc))
        problems += [f"{label}{p}" for p in found]
    if not problems and sum(int(d.get("chunks", 0)) for d in record["documents"]) != sum(
            int(read_manifest(f).get("n_chunks", -1)) for f, _ in segments):
        problems.append("its documents and its index disagree on the number of chunks")
    return problems


def _settings_from_versions(path: Path, good: list[str]) -> dict:
    """Settings to write again: the newest complete version's, else the defaults."""
    settings = {**default_settings(), "created": time.time()}
    for version in good:
        record = version_record(path.name, path / "versions" / version)
        if isinstance(record.get("settings"), dict):
            settings.update(record["settings"])
            break
    now = time.time()
    return check_settings({"format": COLLECTION_FORMAT, "format_version": COLLECTION_FORMAT_VERSION,
                           "name": path.name, "updated": now, **settings}, path.name)


def _repair_live_version(path: Path, good: list[str], damaged_current: str | None, report: CheckReport) -> None:
    """Make a complete version live again without losing a committed document, or say which
    documents must be rebuilt from their stored originals.

    The documents to keep are those of the damaged live version when its record can
    still be read, else those of the newest complete version plus every stored
    original no version accounts for. A complete version holding exactly them becomes
    live; otherwise they go into ``report.rebuild``.
    """
    wanted: dict[str, str] | None = None
    if damaged_current is not None:
        try:
            record = version_record(path.name, path / "versions" / damaged_current)
            wanted = {d["sha256"]: d["source"] for d in record["documents"]}
        except (CollectionError, OSError):
            wanted = None
    if wanted is None:
        wanted = {}
        if good:
            wanted = {d["sha256"]: d["source"]
                      for d in version_record(path.name, path / "versions" / good[0])["documents"]}
        stored = {p.stem for p in (path / "files").glob("*.pdf")} if (path / "files").is_dir() else set()
        for sha in stored - set(wanted):
            wanted[sha] = ""
    for version in good:
        docs = version_record(path.name, path / "versions" / version)["documents"]
        if {d["sha256"] for d in docs} == set(wanted):
            write_bytes_atomic(path / "CURRENT", f"{version}\n".encode())
            report.version = version
            report.repaired.append(f"CURRENT now names {version}, a complete version with the same documents")
            return
    report.rebuild = wanted
