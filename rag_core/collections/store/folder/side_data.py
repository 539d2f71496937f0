"""The folder store's side data: committed generations with checksums, and copies
(the rules are in :mod:`rag_core.collections.store.side_data`).

Files of a collection folder::

    data/<key>.json                          the live value (what earlier versions wrote and read)
    data-records.json                        each key's committed generation and SHA-256
    data-history/<key>.history/g000012.<sha256>.json
                                             copies of the last SIDE_DATA_GENERATIONS generations

A write (the caller holds the writer lock) writes the copy, then the records (the commit), then
the live file, each atomically. A crash before the records leaves the previous generation
committed (the extra copy is pruned later); a crash after them leaves the live file one
generation behind, and reads take the committed copy until a write or a repair puts it back.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from rag_core.atomic import write_bytes_atomic, write_json_atomic
from rag_core.collections.store.base import CheckReport, check_data_key, damaged
from rag_core.collections.store.side_data import (
    SIDE_DATA_FORMAT,
    SIDE_DATA_FORMAT_VERSION,
    DataRecord,
    canonical_bytes,
    prepare_value,
    sha256_hex,
    what,
)
from rag_core.errors import CollectionError
from rag_core.settings import SIDE_DATA_GENERATIONS

DATA_DIR = "data"
RECORDS_FILE = "data-records.json"
HISTORY_DIR = "data-history"
_COPY_RE = re.compile(r"g(\d{6,})\.([0-9a-f]{64})\.json")


class FolderSideData:
    """The side data of the collection folder ``path`` (named ``name`` in messages)."""

    def __init__(self, path: Path):
        self.path = path
        self.name = path.name

    # ---------------------------------------------------------------- paths
    def live_path(self, key: str) -> Path:
        return self.path / DATA_DIR / f"{check_data_key(key)}.json"

    def history_dir(self, key: str) -> Path:
        return self.path / HISTORY_DIR / f"{check_data_key(key)}.history"

    def copy_path(self, key: str, record: DataRecord) -> Path:
        return self.history_dir(key) / f"g{record.generation:06d}.{record.sha256}.json"

    def _copies(self, key: str) -> list[tuple[int, str, Path]]:
        """``(generation, sha256, path)`` of the key's copies, newest first."""
        folder = self.history_dir(key)
        found = []
        for item in folder.iterdir() if folder.is_dir() else ():
            match = _COPY_RE.fullmatch(item.name)
            if match and item.is_file():
                found.append((int(match.group(1)), match.group(2), item))
        return sorted(found, reverse=True)

    # ---------------------------------------------------------------- records
    def records(self) -> dict[str, DataRecord] | None:
        """Each key's committed record; None when no record was ever written (an earlier version's data)."""
        file = self.path / RECORDS_FILE
        try:
            raw = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise damaged(self.name, f"{RECORDS_FILE}, the checksums of its side data, cannot be read ({exc})") \
                from None
        keys = raw.get("keys") if isinstance(raw, dict) and raw.get("format") == SIDE_DATA_FORMAT else None
        if not isinstance(keys, dict):
            raise damaged(self.name, f"{RECORDS_FILE}, the checksums of its side data, is malformed")
        out = {}
        for key, value in keys.items():
            record = DataRecord.from_dict(value)
            if record is None or not isinstance(key, str):
                raise damaged(self.name, f"{RECORDS_FILE} has a malformed record for {str(key)[:60]!r}")
            out[key] = record
        return out

    def _write_records(self, records: dict[str, DataRecord]) -> None:
        write_json_atomic(self.path / RECORDS_FILE, {
            "format": SIDE_DATA_FORMAT, "format_version": SIDE_DATA_FORMAT_VERSION,
            "keys": {key: records[key].to_dict() for key in sorted(records)}})

    def _live_keys(self) -> list[str]:
        folder = self.path / DATA_DIR
        if not folder.is_dir():
            return []
        return sorted(p.relative_to(folder).as_posix()[:-5] for p in folder.rglob("*.json")
                      if not p.name.startswith("."))

    # ---------------------------------------------------------------- reading
    def read(self, key: str):
        """The committed value of ``key`` (None when there is none); see the module docstring."""
        records = self.records()
        record = None if records is None else records.get(key)
        if record is None:  # written before records existed: read as it is
            return self._load_unrecorded(key)
        if record.deleted:
            return None
        for path in (self.live_path(key), self.copy_path(key, record)):
            data = _read_bytes(path)
            if data is not None and sha256_hex(data) == record.sha256:
                return _parse(data, self.name, key)
        raise damaged(self.name, f"{what(key)} ({DATA_DIR}/{key}.json) is missing or altered, and so is its "
                                 f"committed copy (generation {record.generation})")

    def _load_unrecorded(self, key: str):
        path = self.live_path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise damaged(self.name, f"{what(key)} ({path.name}) cannot be read ({exc.strerror or exc})") from None
        return _parse(data, self.name, key)

    def token(self, key: str) -> str:
        """Changes whenever the key's value does (for a writer that merges outside the lock)."""
        records = self.records()
        record = None if records is None else records.get(key)
        if record is not None:
            return f"g{record.generation}"
        try:
            info = self.live_path(key).stat()
        except FileNotFoundError:
            return "absent"
        return f"unrecorded:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"

    def keys(self, prefix: str = "") -> list[str]:
        records = self.records() or {}
        keys = {k for k, r in records.items() if not r.deleted}
        keys |= {k for k in self._live_keys() if k not in records}
        return sorted(k for k in keys if k.startswith(prefix))

    # ---------------------------------------------------------------- writing (writer lock held)
    def write(self, key: str, value) -> None:
        """Commit ``value`` (or a :class:`PreparedValue`) as the key's next generation; None deletes it."""
        check_data_key(key)
        records = self.records()
        if records is None:
            records = self._adopt()
        previous = records.get(key)
        generation = (previous.generation if previous else 0) + 1
        if value is None:
            if previous is None and not self.live_path(key).exists():
                return
            records[key] = DataRecord(generation, None)
            self._write_records(records)
            self.live_path(key).unlink(missing_ok=True)
            shutil.rmtree(self.history_dir(key), ignore_errors=True)
            return
        prepared = prepare_value(value)
        self._commit(records, key, DataRecord(generation, prepared.sha256, len(prepared.data)), prepared.data)

    def _commit(self, records: dict[str, DataRecord], key: str, record: DataRecord, data: bytes) -> None:
        copy = self.copy_path(key, record)
        copy.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(copy, data)
        records[key] = record
        self._write_records(records)  # the commit
        live = self.live_path(key)
        live.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(live, data)
        self._prune(key, record.generation)

    def _prune(self, key: str, generation: int) -> None:
        """Copies older than the kept generations, and those of writes that never committed."""
        for gen, _sha, path in self._copies(key):
            if gen <= generation - SIDE_DATA_GENERATIONS or gen > generation:
                path.unlink(missing_ok=True)

    def _adopt(self) -> dict[str, DataRecord]:
        """Record every value written before records existed (those that read as JSON), with a copy."""
        records: dict[str, DataRecord] = {}
        for key in self._live_keys():
            try:
                check_data_key(key)
                value = self._load_unrecorded(key)
            except (CollectionError, ValueError):
                continue  # not valid JSON, or not a key: check reports it
            data = canonical_bytes(value)
            record = DataRecord(1, sha256_hex(data), len(data))
            copy = self.copy_path(key, record)
            copy.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(copy, data)
            write_bytes_atomic(self.live_path(key), data)
            records[key] = record
        self._write_records(records)
        return records

    # ---------------------------------------------------------------- check and repair
    def check(self, report: CheckReport, *, repair: bool) -> None:
        """Add what is wrong with the side data to ``report`` (and, with ``repair``, what was restored)."""
        problem, fixed = report.problems.append, report.repaired.append
        try:
            records = self.records()
        except CollectionError as exc:
            problem(str(exc))
            if repair:
                self._rebuild_records(report)
            return
        if records is None:
            if any(_COPY_RE.fullmatch(p.name) for p in (self.path / HISTORY_DIR).rglob("g*.json")):
                problem(f"{RECORDS_FILE}, the checksums of its side data, is missing")
                if repair:
                    self._rebuild_records(report)
                return
            bad = self._check_unrecorded(self._live_keys(), report)
            if repair and len(bad) < len(self._live_keys()):
                self._adopt()
                fixed("recorded the checksums of its side data (written by an earlier version)")
            return
        for key, record in sorted(records.items()):
            if record.deleted:
                if self.live_path(key).exists():
                    problem(f"{what(key)} ({DATA_DIR}/{key}.json) was deleted, but the file is there again")
                    if repair:
                        self._restore_unrecorded(records, key, report)
                continue
            self._check_key(records, key, record, report, repair=repair)
        stray = [k for k in self._live_keys() if k not in records]
        if stray:
            for key in self._check_unrecorded(stray, report, written_behind=True):
                stray.remove(key)
            if repair:
                for key in stray:
                    self._restore_unrecorded(records, key, report)

    def _check_key(self, records: dict[str, DataRecord], key: str, record: DataRecord, report: CheckReport, *,
                   repair: bool) -> None:
        for gen, sha, path in self._copies(key):  # earlier generations' copies: a repair falls back on them
            data = _read_bytes(path)
            if gen < record.generation and (data is None or sha256_hex(data) != sha):
                report.problems.append(f"the copy of generation {gen} of {what(key)} is damaged")
                if repair:
                    path.unlink(missing_ok=True)
                    report.repaired.append(f"removed the damaged copy of generation {gen} of {what(key)}")
        live = _read_bytes(self.live_path(key))
        live_ok = live is not None and sha256_hex(live) == record.sha256
        copy = _read_bytes(self.copy_path(key, record))
        copy_ok = copy is not None and sha256_hex(copy) == record.sha256
        if live_ok and copy_ok:
            return
        name = f"{what(key)} ({DATA_DIR}/{key}.json)"
        if live_ok:
            report.problems.append(f"the committed copy of {name}, generation {record.generation}, is missing or "
                                   "damaged")
            if repair:
                self._commit(records, key, record, live)
                report.repaired.append(f"wrote the copy of {name} again")
            return
        state = "missing" if live is None else ("emptied" if not live.strip() else
                                               f"altered (its checksum differs from generation {record.generation}'s)")
        report.problems.append(f"{name} is {state}")
        if not repair:
            return
        if copy_ok:
            live_path = self.live_path(key)
            live_path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(live_path, copy)
            report.repaired.append(f"restored {name} from its committed copy (generation {record.generation})")
            return
        for gen, sha, path in self._copies(key):
            data = _read_bytes(path)
            if gen < record.generation and data is not None and sha256_hex(data) == sha:
                self.copy_path(key, record).unlink(missing_ok=True)  # damaged: nothing to keep
                self._commit(records, key, DataRecord(record.generation + 1, sha, len(data)), data)
                report.repaired.append(f"restored {name} from generation {gen}, the newest intact copy (the copy "
                                       f"of generation {record.generation} is damaged too)")
                return
        report.problems.append(f"no intact copy of {what(key)} is left to restore it from")

    def _check_unrecorded(self, keys: list[str], report: CheckReport, *, written_behind: bool = False) -> list[str]:
        """Report unrecorded values that do not read as JSON; returns their keys."""
        bad = []
        for key in keys:
            try:
                self._load_unrecorded(key)
            except (CollectionError, ValueError):
                report.problems.append(f"{DATA_DIR}/{key}.json is not valid JSON ({what(key)})")
                bad.append(key)
                continue
            if written_behind:
                report.problems.append(f"{what(key)} ({DATA_DIR}/{key}.json) has no checksum record: it was not "
                                       "written by rag_core")
        return bad

    def _restore_unrecorded(self, records: dict[str, DataRecord], key: str, report: CheckReport) -> None:
        """Keep a value written behind the store's back as a new generation (never drop a person's data)."""
        value = self._load_unrecorded(key)
        data = canonical_bytes(value)
        previous = records.get(key)
        self._commit(records, key, DataRecord((previous.generation if previous else 0) + 1, sha256_hex(data),
                                              len(data)), data)
        report.repaired.append(f"recorded {DATA_DIR}/{key}.json as it is now (its checksum was not recorded)")

    def _rebuild_records(self, report: CheckReport) -> None:
        """Records again from the newest intact copy of each key (and values without copies as they are)."""
        records: dict[str, DataRecord] = {}
        history = self.path / HISTORY_DIR
        restored = 0
        for folder in sorted(history.rglob("*.history")) if history.is_dir() else []:
            key = folder.relative_to(history).as_posix()[:-len(".history")]
            try:
                check_data_key(key)
            except ValueError:
                continue
            for gen, sha, path in self._copies(key):
                data = _read_bytes(path)
                if data is None or sha256_hex(data) != sha:
                    path.unlink(missing_ok=True)  # a damaged copy: nothing to keep
                    continue
                if key not in records:
                    records[key] = DataRecord(gen, sha, len(data))
                    live = self.live_path(key)
                    if _read_bytes(live) != data:
                        live.parent.mkdir(parents=True, exist_ok=True)
                        write_bytes_atomic(live, data)
                        restored += 1
        for key in self._live_keys():
            if key in records:
                continue
            try:
                check_data_key(key)
                data = canonical_bytes(self._load_unrecorded(key))
            except (CollectionError, ValueError):
                report.problems.append(f"{DATA_DIR}/{key}.json is not valid JSON ({what(key)}), and no intact copy "
                                       "of it is left to restore it from")
                continue
            records[key] = DataRecord(1, sha256_hex(data), len(data))
            copy = self.copy_path(key, records[key])
            copy.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(copy, data)
        self._write_records(records)
        report.repaired.append(f"wrote {RECORDS_FILE} again from the kept copies of {len(records)} side-data "
                               f"value(s)" + (f", restoring {restored} of them" if restored else ""))


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError:
        return None


def _parse(data: bytes, name: str, key: str):
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise damaged(name, f"{what(key)} ({DATA_DIR}/{key}.json) is not valid UTF-8 JSON "
                            f"({str(exc)[:120]})") from None
