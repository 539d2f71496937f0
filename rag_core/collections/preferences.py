"""The app's preferences, kept in the data folder: chunking of new collections, the cross-encoder,
and how uploads read scanned pages (OCR).

Stored as ``<data dir>/preferences.json`` (written atomically). A missing or damaged
file gives the defaults, so the app always starts.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from rag_core.atomic import write_json_atomic
from rag_core.pdf.ocr import OCR_MODES
from rag_core.settings import (
    CHUNK_OVERLAP_CHARS,
    CHUNK_SIZE_CHARS,
    DEFAULT_CROSS_ENCODER_MODEL,
    DEFAULT_EMBEDDING_MODEL,
    OCR_LANG,
    default_data_dir,
)
from rag_core.text.chunking import validate_chunk_settings

PREFERENCES_FILE = "preferences.json"


@dataclass(frozen=True)
class Preferences:
    """``cross_encoder_model``: a hub name or a local folder; empty means "no cross-encoder".
    ``ocr_mode``: how uploads read scanned pages ("auto", "force", "off"); ``ocr_lang``: Tesseract's
    languages (``eng``, ``eng+deu``)."""

    chunk_size: int = CHUNK_SIZE_CHARS
    overlap: int = CHUNK_OVERLAP_CHARS
    cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    ocr_mode: str = "auto"
    ocr_lang: str = OCR_LANG

    def to_dict(self) -> dict:
        return asdict(self)


def preferences_path(data_dir: str | os.PathLike | None = None) -> Path:
    root = Path(data_dir).expanduser() if data_dir else default_data_dir()
    return root / PREFERENCES_FILE


def validate_chunking(chunk_size: int, overlap: int) -> tuple[int, int]:
    """``(chunk_size, overlap)`` as ints, or ``ValueError`` saying what is allowed."""
    return validate_chunk_settings(chunk_size, overlap, collection=True)


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
    if values["ocr_mode"] not in OCR_MODES:
        values["ocr_mode"] = defaults.ocr_mode
    values["ocr_lang"] = values["ocr_lang"].strip() or defaults.ocr_lang
    return Preferences(**values)


def save_preferences(prefs: Preferences, data_dir: str | os.PathLike | None = None) -> Path:
    """Validate and write ``prefs`` atomically; returns the file written."""
    size, lap = validate_chunking(prefs.chunk_size, prefs.overlap)
    if prefs.ocr_mode not in OCR_MODES:
        raise ValueError(f"OCR mode must be one of {', '.join(OCR_MODES)}, got {prefs.ocr_mode!r}")
    prefs = Preferences(chunk_size=size, overlap=lap, cross_encoder_model=str(prefs.cross_encoder_model).strip(),
                        embedding_model=str(prefs.embedding_model).strip() or DEFAULT_EMBEDDING_MODEL,
                        ocr_mode=prefs.ocr_mode, ocr_lang=str(prefs.ocr_lang).strip() or OCR_LANG)
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
