"""A SQLite database another program owns (Zotero's ``zotero.sqlite``, Better BibTeX's), read safely.

The rules, in one place, for every read of a foreign database:

* **never written, never locked**: the file is opened read-only and immutable
  (``file:...?mode=ro&immutable=1``): no lock is taken and no journal is made, so a running
  Zotero is not disturbed;
* **what is committed to its -wal file is read too**: an immutable reader ignores the
  write-ahead log, where a running Zotero keeps its newest changes until it checkpoints them
  (measured: an item committed there is not seen), and a plain read-only reader is refused while
  Zotero holds its exclusive lock ("database is locked") or else takes shared locks on the live
  file. So when a ``-wal`` file beside the database is not empty, the database and its log are
  copied into a private temporary folder and the copy is read: SQLite recovers the committed
  frames of the copy, nothing of the owner's files is touched. When the copy cannot be made (no
  room) or the files changed while they were copied, the original is read immutable and a note
  says that the newest changes may be missing;
* **only real tables with the expected columns**: each expected name must be a table in
  ``sqlite_master`` (a view or a virtual table of that name is refused, so no query of ours runs
  a view's endless recursion), with its columns stored, not generated; a missing table or column
  is one clear :class:`~rag_core.errors.InputFileError` naming it. Triggers never fire (nothing is
  written) and ``trusted_schema`` is off;
* **budgets while reading**: every value is at most :data:`~rag_core.settings.FOREIGN_SQLITE_MAX_VALUE_BYTES`
  (SQLite's length limit: a larger one is an error, not an allocation), :meth:`ForeignDatabase.rows`
  stops at a row budget as it reads (never after reading every row), and a time budget
  (:data:`~rag_core.settings.FOREIGN_SQLITE_SECONDS`, sqlite3's progress handler) interrupts any
  query that runs past it.

Every :class:`sqlite3.Error` becomes an ``InputFileError`` naming the file: never a traceback.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from rag_core.errors import InputFileError
from rag_core.safe_files import regular_file_size, size_text
from rag_core.settings import FOREIGN_SQLITE_MAX_VALUE_BYTES, FOREIGN_SQLITE_SECONDS

__all__ = ["ForeignDatabase", "open_foreign_sqlite"]

_PROGRESS_STEPS = 10_000  # SQLite virtual-machine steps between two looks at the clock


class ForeignDatabase:
    """An open foreign database (see the module's text): :meth:`rows` and :meth:`one` read it
    within the budgets; ``notes`` says what a reader should know (the -wal file read, or not)."""

    def __init__(self, connection: sqlite3.Connection, label: str, *, seconds: float, notes: list[str],
                 scratch: Path | None) -> None:
        self.connection = connection
        self.label = label
        self.notes = notes
        self._scratch = scratch
        self._seconds = seconds
        self._deadline = time.monotonic() + seconds
        connection.set_progress_handler(self._over_time, _PROGRESS_STEPS)

    def _over_time(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def _error(self, exc: sqlite3.Error) -> InputFileError:
        if isinstance(exc, sqlite3.OperationalError) and "interrupted" in str(exc):
            return InputFileError(f"{self.label}: reading it took longer than {self._seconds:g} s, and was stopped "
                                  "(a library this large: import one collection at a time).")
        if "too big" in str(exc):
            return InputFileError(f"{self.label}: holds a value larger than "
                                  f"{size_text(FOREIGN_SQLITE_MAX_VALUE_BYTES)}; it was not read.")
        return InputFileError(f"{self.label}: cannot be read ({exc}).")

    def rows(self, sql: str, params: Sequence = (), *, budget: int, over: str | None = None) -> Iterator[tuple]:
        """The rows of ``sql``, read one by one; at row ``budget + 1`` an ``InputFileError``
        (``over``, or a message naming the budget) is raised before more is read."""
        try:
            cursor = self.connection.execute(sql, tuple(params))
            for n, row in enumerate(cursor, 1):
                if n > budget:
                    raise InputFileError(over or f"{self.label}: more than {budget:,} rows where this reads at most "
                                                 f"{budget:,}.")
                yield row
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def all(self, sql: str, params: Sequence = (), *, budget: int, over: str | None = None) -> list[tuple]:
        return list(self.rows(sql, params, budget=budget, over=over))

    def close(self) -> None:
        try:
            self.connection.close()
        finally:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None

    def __enter__(self) -> ForeignDatabase:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _uri(path: Path, *, immutable: bool) -> str:
    return f"file:{quote(str(path.resolve()))}?mode=ro" + ("&immutable=1" if immutable else "")


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def _private_copy(database: Path, wal: Path, max_bytes: int) -> Path | None:
    """A folder holding a copy of the database and its -wal file taken while neither changed, or
    None (not a regular file, larger than the database may be, no room, or the owner kept writing)."""
    try:
        size, log = regular_file_size(database), regular_file_size(wal)
    except InputFileError:
        return None
    if log > max_bytes:
        return None
    needed = (size + log) * 2  # the copy, and what SQLite recovers
    base = Path(tempfile.gettempdir())
    try:
        if shutil.disk_usage(base).free < needed:
            return None
    except OSError:
        return None
    for _attempt in range(3):
        before = (_stamp(database), _stamp(wal))
        folder = Path(tempfile.mkdtemp(prefix="rag-core-sqlite-"))
        try:
            shutil.copyfile(database, folder / database.name)
            shutil.copyfile(wal, folder / wal.name)
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            return None
        if (_stamp(database), _stamp(wal)) == before:
            return folder
        shutil.rmtree(folder, ignore_errors=True)
    return None


def _connect(uri: str) -> sqlite3.Connection:
    connection = sqlite3.connect(uri, uri=True, timeout=0, check_same_thread=False)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, FOREIGN_SQLITE_MAX_VALUE_BYTES)
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    connection.execute("PRAGMA trusted_schema = OFF")
    connection.execute("PRAGMA query_only = ON")
    return connection


def open_foreign_sqlite(path: str | os.PathLike, *, tables: Mapping[str, Sequence[str]], max_bytes: int,
                        owner: str = "its program", label: str | None = None,
                        seconds: float | None = None) -> ForeignDatabase:
    """``path`` opened by the rules of the module's text; ``tables`` maps each table it must
    have to the columns read from it. Raises :class:`InputFileError` saying what is wrong."""
    database = Path(path)
    label = label or str(database)
    size = regular_file_size(database, label=label)
    if size > max_bytes:
        raise InputFileError(f"{label}: is {size_text(size)}, larger than the {size_text(max_bytes)} this reads.")
    notes: list[str] = []
    scratch: Path | None = None
    wal = database.with_name(database.name + "-wal")
    opened = database
    if (_stamp(wal) or (0, 0))[0] > 0:
        scratch = _private_copy(database, wal, max_bytes)
        if scratch is not None:
            opened = scratch / database.name
            notes.append(f"{wal.name} holds changes {owner} has not yet written into {database.name} ({owner} is "
                         "probably running): they were read from a private copy of both files.")
        else:
            notes.append(f"{wal.name} holds changes {owner} has not yet written into {database.name}, and they could "
                         "not be read (no room for a private copy, a log that is not a regular file or too large, or "
                         f"{owner} kept writing): the newest changes may be missing; import again with {owner} "
                         "closed.")
    try:
        connection = _connect(_uri(opened, immutable=scratch is None))
    except sqlite3.Error as exc:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise InputFileError(f"{label}: cannot be opened as a SQLite database ({exc}).") from None
    db = ForeignDatabase(connection, label, seconds=FOREIGN_SQLITE_SECONDS if seconds is None else seconds,
                         notes=notes, scratch=scratch)
    try:
        _check_tables(db, tables, owner)
    except BaseException:
        db.close()
        raise
    return db


def _check_tables(db: ForeignDatabase, tables: Mapping[str, Sequence[str]], owner: str) -> None:
    """Each expected table a real table (not a view, not virtual) with its expected columns stored."""
    try:
        schema = {name: (kind, sql or "") for kind, name, sql in db.connection.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view')")}
    except sqlite3.DatabaseError as exc:
        raise InputFileError(f"{db.label}: not a SQLite database {owner} wrote ({exc}).") from None
    missing, wrong = [], []
    for name, columns in tables.items():
        kind, sql = schema.get(name, (None, ""))
        if kind is None:
            missing.append(name)
            continue
        if kind != "table" or sql.lstrip().upper().startswith("CREATE VIRTUAL"):
            wrong.append(f"{name} is a {'view' if kind == 'view' else 'virtual table'}, not a table")
            continue
        try:
            info = db.connection.execute(f'PRAGMA table_xinfo("{name}")').fetchall()
        except sqlite3.Error as exc:
            raise db._error(exc) from None
        stored = {row[1] for row in info if row[6] in (0, 1)}  # hidden 2 and 3: generated columns
        generated = {row[1] for row in info if row[6] not in (0, 1)}
        for column in columns:
            if column in generated:
                wrong.append(f"{name}.{column} is a generated column")
            elif column not in stored:
                wrong.append(f"{name} has no column {column}")
    if missing or wrong:
        what = "; ".join(([f"no table {', '.join(missing)}"] if missing else []) + wrong)
        raise InputFileError(f"{db.label}: not a database {owner} wrote, or not one of the versions this reads "
                             f"({what}).")
