"""Settings kept in the data folder: chunking of new collections and the cross-encoder.

Stored as ``<data dir>/preferences.json`` (written atomically). A missing or damaged
file gives the defaults, so the app always starts.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .atomic import write_json_atomic
from .settings import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_CROSS_ENCODER_MODEL,
    DEFAULT_EMBEDDING_MODEL,
    default_data_dir,
)

PREFERENCES_FILE = "preferences.json"
MIN_CHUNK_SIZE = 200
MAX_CHUNK_SIZE = 20_000


@dataclass(frozen=True)
class Preferences:
    """``cross_encoder_model``: a hub name or a local folder; empty means "no cross-encoder"."""

    chunk_size: int = CHUNK_SIZE_CHARS
    overlap: int = CHUNK_OVERLAP_CHARS
    cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL
    embedding_model: str = DEFAULT_EMBEDDING_MODEL

    def to_dict(self) -> dict:
        return asdict(self)


def preferences_path(data_dir: str | os.PathLike | None = None) -> Path:
    root = Path(data_dir).expanduser() if data_dir else default_data_dir()
    return root / PREFERENCES_FILE


def validate_chunking(chunk_size: int, overlap: int) -> tuple[int, int]:
    """``(chunk_size, overlap)`` as ints, or ``ValueError`` saying what is allowed."""
    try:
        size, lap = int(chunk_size), int(overlap)
    except (TypeError, ValueError):
        raise ValueError(f"Chunk size and overlap must be whole numbers (got {chunk_size!r}, {overlap!r}).") from None
    if not MIN_CHUNK_SIZE <= size <= MAX_CHUNK_SIZE:
        raise ValueError(
            f"Chunk size must be between {MIN_CHUNK_SIZE:,} and {MAX_CHUNK_SIZE:,} characters (got {size:,})."
        )
    if not 0 <= lap <= size // 2:
        raise ValueError(f"Overlap must be between 0 and half the chunk size ({size // 2:,}), got {lap:,}.")
    return size, lap


def load_preferences(data_dir: str | os.PathLike | None = None) -> Preferences:
    """The saved preferences, or the defaults for anything missing or unreadable."""
    path = preferences_path(data_dir)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Preferences()
    if not isinstance(raw, dict):
        return Preferences()
    defaults = Preferences()
    values = {}
    for f in fields(Preferences):
        value = raw.get(f.name, getattr(defaults, f.name))
        values[f.name] = value if isinstance(value, type(getattr(defaults, f.name))) else getattr(defaults, f.name)
    try:
        values["chunk_size"], values["overlap"] = validate_chunking(values["chunk_size"], values["overlap"])
    except ValueError:
        values["chunk_size"], values["overlap"] = defaults.chunk_size, defaults.overlap
    values["cross_encoder_model"] = values["cross_encoder_model"].strip()
    values["embedding_model"] = values["embedding_model"].strip() or defaults.embedding_model
    return Preferences(**values)


def save_preferences(prefs: Preferences, data_dir: str | os.PathLike | None = None) -> Path:
    """Validate and write ``prefs`` atomically; returns the file written."""
    size, lap = validate_chunking(prefs.chunk_size, prefs.overlap)
    prefs = Preferences(chunk_size=size, overlap=lap, cross_encoder_model=str(prefs.cross_encoder_model).strip(),
                        embedding_model=str(prefs.embedding_model).strip() or DEFAULT_EMBEDDING_MODEL)
    path = preferences_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, prefs.to_dict())
    return path


def update_preferences(data_dir: str | os.PathLike | None = None, **changes) -> Preferences:
    """Load, change the given fields, validate and save; returns the saved preferences."""
    current = load_preferences(data_dir).to_dict()
    unknown = set(changes) - set(current)
    if unknown:
        raise ValueError(f"Unknown preference(s): {', '.join(sorted(unknown))}.")
    current.update(changes)
    prefs = Preferences(**current)
    save_preferences(prefs, data_dir)
    return load_preferences(data_dir)
