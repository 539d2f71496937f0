"""Reading a collection folder (see the package docstring for its layout): its settings, its
version records and segments, and which version is live."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from rag_core.collections.store.base import check_documents, check_settings, damaged
from rag_core.collections.store.index_files import MANIFEST, file_digest
from rag_core.errors import CollectionError

VERSION_FORMAT = "rag_core.version"
VERSION_FILE = "version.json"
SETTINGS_FILE = "collection.json"
PROGRESS_FILE = "progress.json"
SEGMENTS_DIR = "segments"
LOCK_FILES = (".lock", ".embed.lock")
VERSION_RE = re.compile(r"v\d{6}")
SEGMENT_RE = re.compile(r"s\d{6}")
VECTOR_RE = re.compile(r"[0-9a-f]{32}\.npy")
# Folders where writers keep their temporary files (names starting with a dot).
_WORK_FOLDERS = ("", "files", "versions", "data", SEGMENTS_DIR)


def read_json(path: Path, what: str, name: str):
    """A stored JSON file (``FileNotFoundError`` when missing; the damaged error when unreadable)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise damaged(name, f"{what} ({path.name}) is not valid UTF-8 JSON ({exc})") from None
    except OSError as exc:
        raise damaged(name, f"{what} ({path.name}) cannot be read ({exc.strerror or exc})") from None


def version_record(name: str, folder: Path) -> dict:
    """The version's record: documents and settings (format 2), or documents.json (format 1)."""
    record_path = folder / VERSION_FILE
    if record_path.is_file():
        record = read_json(record_path, f"version {folder.name}", name)
        if not isinstance(record, dict) or record.get("format") != VERSION_FORMAT:
            raise damaged(name, f"{folder.name}/{VERSION_FILE} is malformed")
        record["documents"] = check_documents(record.get("documents"), name, f"{folder.name}/{VERSION_FILE}")
        return record
    legacy = folder / "documents.json"
    if legacy.is_file():
        docs = check_documents(read_json(legacy, "the document list", name), name, f"{folder.name}/documents.json")
        return {"format": VERSION_FORMAT, "format_version": 1, "version": folder.name, "documents": docs}
    raise damaged(name, f"version {folder.name} is incomplete (no {VERSION_FILE})")


def complete_versions(path: Path) -> list[str]:
    """Version folders that hold a readable version record, newest first."""
    versions = path / "versions"
    if not versions.is_dir():
        return []
    found = []
    for folder in versions.iterdir():
        if not VERSION_RE.fullmatch(folder.name) or not folder.is_dir():
            continue
        try:
            version_record(path.name, folder)
        except (CollectionError, OSError):
            continue
        found.append(folder.name)
    return sorted(found, reverse=True)


def version_segments(path: Path, folder: Path, record: dict) -> list[tuple[Path, dict]]:
    """``(index folder, segment record)`` of each segment of a version, in order.

    A version of the older layout (index files in the version folder) is its own one segment.
    """
    segments = record.get("segments")
    if segments is None:
        return [(folder, {"id": None})] if (folder / MANIFEST).is_file() else []
    if not isinstance(segments, list) or not all(
            isinstance(seg, dict) and isinstance(seg.get("id"), str) and SEGMENT_RE.fullmatch(seg["id"])
            for seg in segments):
        raise damaged(path.name, f"{folder.name}/{VERSION_FILE} has a malformed segment list")
    return [(path / SEGMENTS_DIR / seg["id"], seg) for seg in segments]


def read_settings_at(path: Path) -> dict:
    """The settings of the collection in ``path``: collection.json, else the newest version's copy."""
    try:
        return check_settings(read_json(path / SETTINGS_FILE, "its settings", path.name), path.name)
    except FileNotFoundError:
        pass
    for version in complete_versions(path):
        record = version_record(path.name, path / "versions" / version)
        if isinstance(record.get("settings"), dict):
            return check_settings({**record["settings"], "name": path.name}, path.name)
    raise damaged(path.name, "collection.json is missing")


class Resolved:
    """The live version of a collection as found on disk."""

    def __init__(self, path: Path, version: str | None, notes: list[str]):
        self.path = path
        self.version = version
        self.notes = notes

    @property
    def folder(self) -> Path | None:
        return None if self.version is None else self.path / "versions" / self.version


def read_current(path: Path) -> str | None:
    """What ``CURRENT`` says: None when it is missing, "" when it cannot be read."""
    try:
        return (path / "CURRENT").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return ""


def resolve(path: Path) -> Resolved:
    """The live version: ``CURRENT``, or when it is missing or wrong, the newest complete version."""
    notes: list[str] = []
    value = read_current(path)
    if value and VERSION_RE.fullmatch(value) and (path / "versions" / value).is_dir():
        return Resolved(path, value, notes)
    newest = complete_versions(path)
    if value is None and not newest:
        return Resolved(path, None, notes)  # a new, empty collection
    if not newest:
        raise damaged(path.name, f"CURRENT names {value[:40]!r} and no complete version exists (its PDFs "
                                 f"are kept in {path / 'files'})")
    if value is None:
        what = "is missing"
    else:
        what = f"names {value[:40]!r}, which does not exist" if value else "is empty or unreadable"
    notes.append(f"CURRENT {what}; using the newest complete version {newest[0]} "
                 f"(`rag-core check-store {path.name!r} --repair` fixes the pointer).")
    return Resolved(path, newest[0], notes)


# Manifest digests checked in this process: (path, inode, size, mtime) -> sha256.
_manifest_digests: dict[tuple, str] = {}


def checked_manifest_digest(folder: Path) -> str:
    """The SHA-256 of a segment's manifest, hashed once per process for an unchanged file."""
    info = (folder / MANIFEST).stat()
    key = (str(folder), info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _manifest_digests:
        _manifest_digests[key] = file_digest(folder / MANIFEST)
    return _manifest_digests[key]


def leftovers(path: Path) -> list[Path]:
    """Temporary files and folders of writes (a dead writer's, or a running one's)."""
    return [item for sub in _WORK_FOLDERS if (path / sub).is_dir()
            for item in (path / sub).iterdir() if item.name.startswith(".") and item.name not in LOCK_FILES]


def clean_leftovers(path: Path) -> list[str]:
    """Remove what writers that died left behind (the caller holds the writer lock)."""
    removed = []
    for item in leftovers(path):
        try:
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
            removed.append(str(item.relative_to(path)))
        except OSError:
            pass
    return removed
