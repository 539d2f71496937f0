"""Reading the ingest's inputs safely: paths or uploaded ``(name, bytes)`` pairs, and folders.

Only regular files are opened (no FIFOs, devices or sockets), their size is checked with
``stat`` before a byte is read, and at most the size limit is ever read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.safe_files import over_limit_text
from rag_core.settings import MAX_PDF_BYTES

_READ_BLOCK = 1 << 20


@dataclass
class InputFile:
    """One input, read: ``data`` is None when it could not or must not be read (``status`` says why)."""

    name: str
    given: str
    data: bytes | None = None
    status: str | None = None
    reason: str | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data or b"").hexdigest()


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def read_input(item, *, max_bytes: int = MAX_PDF_BYTES) -> InputFile:
    """Read a path or a ``(name, bytes)`` pair without ever blocking or reading past the limit."""
    if isinstance(item, tuple) and len(item) == 2:
        raw_name, data = item
        name = Path(str(raw_name).replace("\\", "/")).name or "document.pdf"
        data = bytes(data)
        given = str(raw_name)
        if not data:
            return InputFile(name, given, None, "empty", "The file is empty (0 bytes).")
        if len(data) > max_bytes:
            return InputFile(name, given, None, "too_large",
                             f"The file is {over_limit_text(len(data), max_bytes)}.")
        return InputFile(name, given, data)
    if not isinstance(item, (str, os.PathLike)):
        raise TypeError(
            f"files must be paths or (name, bytes) pairs, got {type(item).__name__}; "
            "convert uploads with (upload.name, upload.getvalue())"
        )
    path = Path(item)
    given = str(item)

    def refuse(status: str, reason: str) -> InputFile:
        return InputFile(path.name or given, given, None, status, reason)

    try:
        info = os.stat(path)
    except FileNotFoundError:
        return refuse("unreadable_file", f"File not found: {given}.")
    except OSError as exc:
        return refuse("unreadable_file", f"{given} cannot be read ({exc.strerror or exc}).")
    if stat.S_ISDIR(info.st_mode):
        return refuse("unreadable_file", f"{given} is a folder, not a file.")
    if not stat.S_ISREG(info.st_mode):
        return refuse("unreadable_file",
                      f"{given} is not a regular file (a pipe, device or socket); it was not opened.")
    if info.st_size == 0:
        return refuse("empty", "The file is empty (0 bytes).")
    if info.st_size > max_bytes:
        return refuse("too_large", f"The file is {over_limit_text(info.st_size, max_bytes)}.")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return refuse("unreadable_file", f"{given} cannot be opened ({exc.strerror or exc}).")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped for something else since the stat
            return refuse("unreadable_file", f"{given} is not a regular file; it was not opened.")
        chunks, total = [], 0
        while total <= max_bytes:
            block = os.read(fd, min(_READ_BLOCK, max_bytes + 1 - total))
            if not block:
                break
            chunks.append(block)
            total += len(block)
    except OSError as exc:
        return refuse("unreadable_file", f"{given} cannot be read ({exc.strerror or exc}).")
    finally:
        os.close(fd)
    if total > max_bytes:
        return refuse("too_large", f"The file grew past the limit of {_mib(max_bytes)} while it was read.")
    if total == 0:
        return refuse("empty", "The file is empty (0 bytes).")
    return InputFile(path.name, given, b"".join(chunks))


@dataclass
class FolderScan:
    """The PDF files found in the given paths, and what was passed over and why."""

    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def collect_pdf_files(paths: Iterable[str | os.PathLike]) -> FolderScan:
    """Expand folders to the ``.pdf`` files inside (recursively); files are kept as given.

    Inside a folder, other files and links that lead out of the folder are skipped, with
    the reason.
    """
    scan = FolderScan()
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            scan.files.append(str(raw))
            continue
        top = path.resolve()
        for item in sorted(path.rglob("*")):
            if item.is_dir():
                continue
            if item.suffix.lower() != ".pdf":
                scan.skipped.append((str(item), "not a .pdf file"))
                continue
            if item.is_symlink():
                target = item.resolve()
                if top not in target.parents:
                    scan.skipped.append((str(item), "a link to a file outside the folder"))
                    continue
            scan.files.append(str(item))
    return scan
