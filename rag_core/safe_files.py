"""Files a user names, read without blocking, without following them into devices, and never
past a size cap; zip archives opened only when their directory is small, and their members
inflated only up to the size they declare.

* :func:`read_regular_file` -- only a regular file is opened (a FIFO would block, a link to
  ``/dev/zero`` never ends): ``stat`` first, its size checked before a byte is read (a sparse
  4 GB file is refused unread), then ``fstat`` on what was opened, and at most the cap read.
* :func:`open_zip` -- a zip archive from a path or bytes: the end record is read first and an
  archive whose directory declares too many entries or too many bytes is refused before it
  is parsed.
* :func:`read_zip_member` -- a member's declared size is checked before it is inflated, it is
  inflated in blocks and never past that size or the cap, and a bad CRC, a lying size field
  or an unknown compression is one message naming the member.

Every refusal is an :class:`~rag_core.errors.InputFileError` whose message names the file (and
the member) and what is wrong.
"""

from __future__ import annotations

import io
import os
import stat
import struct
import zipfile
import zlib

from rag_core.errors import InputFileError
from rag_core.settings import MAX_ZIP_DIRECTORY_BYTES, MAX_ZIP_ENTRIES

_READ_BLOCK = 1 << 20
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
# The compressions a member may use: stored and deflated (what every zip writer uses by default).
_COMPRESSIONS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError, RuntimeError,
               struct.error, UnicodeDecodeError, OverflowError)


def size_text(n: int) -> str:
    """A byte count for a message: "3.2 MiB", "512 bytes"."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    if n < 1024 ** 3:
        return f"{n / (1024 * 1024):.1f} MiB"
    return f"{n / 1024 ** 3:.1f} GiB"


def over_limit_text(size: int, limit: int) -> str:
    """ "60.0 MiB, over the limit of 50.0 MiB"; in bytes when the two would read the same
    ("52,428,801 bytes, over the limit of 52,428,800 bytes (50.0 MiB)")."""
    shown, cap = size_text(size), size_text(limit)
    if shown == cap:
        return f"{size:,} bytes, over the limit of {limit:,} bytes ({cap})"
    return f"{shown}, over the limit of {cap}"


def regular_file_size(path: str | os.PathLike, *, label: str | None = None) -> int:
    """The size of ``path`` when it is a regular file (links followed), without opening it;
    :class:`InputFileError` when it is missing, a folder, or anything but a regular file."""
    label = label or str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputFileError(f"{label}: no such file.") from None
    except OSError as exc:
        raise InputFileError(f"{label}: cannot be read ({exc.strerror or exc}).") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputFileError(f"{label}: is a folder, not a file.")
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(f"{label}: is not a regular file (a pipe, device or socket, or a link to one); "
                             "it was not opened.")
    return info.st_size


def read_regular_file(path: str | os.PathLike, *, max_bytes: int, label: str | None = None) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (see the module docstring)."""
    label = label or str(path)
    size = regular_file_size(path, label=label)
    if size > max_bytes:
        raise InputFileError(f"{label}: is {over_limit_text(size, max_bytes)}; "
                             "split it.")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise InputFileError(f"{label}: cannot be opened ({exc.strerror or exc}).") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since the stat
            raise InputFileError(f"{label}: is not a regular file; it was not read.")
        blocks, total = [], 0
        while total <= max_bytes:
            block = os.read(fd, min(_READ_BLOCK, max_bytes + 1 - total))
            if not block:
                break
            blocks.append(block)
            total += len(block)
    except OSError as exc:
        raise InputFileError(f"{label}: cannot be read ({exc.strerror or exc}).") from None
    finally:
        os.close(fd)
    if total > max_bytes:
        raise InputFileError(f"{label}: grew past the limit of {size_text(max_bytes)} while it was read.")
    return b"".join(blocks)


def open_zip(source: str | os.PathLike | bytes, *, max_bytes: int, label: str | None = None) -> zipfile.ZipFile:
    """A zip archive (a path to a regular file, or bytes) whose directory is within the caps."""
    if isinstance(source, (bytes, bytearray)):
        label = label or "the zip file"
        if len(source) > max_bytes:
            raise InputFileError(f"{label}: is {over_limit_text(len(source), max_bytes)}.")
        handle = io.BytesIO(source)
    else:
        label = label or str(source)
        size = regular_file_size(source, label=label)
        if size > max_bytes:
            raise InputFileError(f"{label}: is {over_limit_text(size, max_bytes)}.")
        try:
            fd = os.open(source, _OPEN_FLAGS)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise InputFileError(f"{label}: is not a regular file; it was not read.")
            handle = os.fdopen(fd, "rb")
        except OSError as exc:
            raise InputFileError(f"{label}: cannot be opened ({exc.strerror or exc}).") from None
    try:
        _check_directory(handle, label)
        handle.seek(0)
        return zipfile.ZipFile(handle)
    except InputFileError:
        handle.close()
        raise
    except _ZIP_ERRORS as exc:
        handle.close()
        raise InputFileError(f"{label}: is not a readable zip file ({_reason(exc)}).") from None


def _check_directory(handle, label: str) -> None:
    """Refuse an archive whose end record declares more entries or directory bytes than the caps,
    before :mod:`zipfile` reads the whole directory into memory."""
    end = zipfile._EndRecData(handle)
    if end is None:
        raise InputFileError(f"{label}: is not a zip file (no end-of-archive record).")
    entries, directory = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]
    if entries > MAX_ZIP_ENTRIES:
        raise InputFileError(f"{label}: declares {entries:,} entries, over the limit of {MAX_ZIP_ENTRIES:,}.")
    if directory > MAX_ZIP_DIRECTORY_BYTES:
        raise InputFileError(f"{label}: its directory declares {size_text(directory)}, over the limit of "
                             f"{size_text(MAX_ZIP_DIRECTORY_BYTES)}.")


def read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, max_bytes: int,
                    label: str = "the zip file") -> bytes:
    """A member's bytes: its declared size checked first, inflated in blocks up to that size."""
    where = f"{label}, member {info.filename}"
    if info.flag_bits & 0x1:
        raise InputFileError(f"{where}: is encrypted; export it again without a password.")
    if info.compress_type not in _COMPRESSIONS:
        raise InputFileError(f"{where}: uses compression method {info.compress_type}; only stored and deflated "
                             "members are read.")
    if info.file_size > max_bytes:
        raise InputFileError(f"{where}: declares {over_limit_text(info.file_size, max_bytes)}; it was not inflated.")
    blocks, total = [], 0
    try:
        with archive.open(info) as member:
            while True:
                block = member.read(min(_READ_BLOCK, max_bytes + 1 - total))
                if not block:
                    break
                total += len(block)
                if total > info.file_size or total > max_bytes:
                    raise InputFileError(f"{where}: inflates past the size it declares "
                                         f"({size_text(info.file_size)}); the archive is damaged or forged.")
                blocks.append(block)
    except InputFileError:
        raise
    except _ZIP_ERRORS as exc:
        raise InputFileError(f"{where}: is damaged ({_reason(exc)}).") from None
    if total != info.file_size:
        raise InputFileError(f"{where}: holds {size_text(total)} where it declares {size_text(info.file_size)}; "
                             "the archive is damaged.")
    return b"".join(blocks)


def find_member(archive: zipfile.ZipFile, suffixes: tuple[str, ...]) -> zipfile.ZipInfo | None:
    """The first member whose name ends with one of ``suffixes`` (tried in order), at most one
    folder deeper than the suffix itself (an export zipped with its folder)."""
    infos = [info for info in archive.infolist() if not info.is_dir()]
    for suffix in suffixes:
        for info in infos:
            name = info.filename
            if (name == suffix or name.endswith("/" + suffix)) and name.count("/") <= suffix.count("/") + 1:
                return info
    return None


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:200]
    return text or type(exc).__name__

