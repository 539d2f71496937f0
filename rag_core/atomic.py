"""Atomic file writes: a temporary file in the same folder, fsync, then ``os.replace``."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never half."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | os.PathLike, data) -> None:
    """Write ``data`` as UTF-8 JSON to ``path`` atomically."""
    write_bytes_atomic(path, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"))
