"""A records file read by its format, safely: ``.bib`` (BibTeX/BibLaTeX), ``.json`` (CSL-JSON),
``.ris`` (RIS), or a Zotero data folder (:mod:`rag_core.records.zotero`).

Only a regular file is read, and never past ``MAX_RECORDS_FILE_BYTES`` (:mod:`rag_core.safe_files`);
a file that is not what its name says is one :class:`~rag_core.errors.InputFileError` naming it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rag_core.errors import InputFileError
from rag_core.records.record import RecordsFile
from rag_core.safe_files import over_limit_text, read_regular_file
from rag_core.settings import MAX_RECORDS, MAX_RECORDS_FILE_BYTES

__all__ = ["RECORD_FILE_TYPES", "RecordsFile", "parse_records", "read_records"]

RECORD_FILE_TYPES = (".bib", ".biblatex", ".json", ".csl", ".ris")


def parse_records(data: bytes, name: str) -> RecordsFile:
    """The records of a file's bytes, by its name's type (its encoding decided by
    :func:`rag_core.text.encoding.decode_text`: a byte-order mark, UTF-16, strict UTF-8)."""
    from rag_core.records.bibtex import TooManyRecordsError, read_bibtex
    from rag_core.records.csl import parse_csl_json
    from rag_core.records.ris import read_ris
    from rag_core.text.encoding import TextEncodingError, decode_text

    suffix = Path(name).suffix.lower()
    if suffix not in RECORD_FILE_TYPES:
        raise InputFileError(f"{name}: not a records file (use a .bib, a CSL-JSON .json, a .ris, or a Zotero "
                             "data folder).")
    if len(data) > MAX_RECORDS_FILE_BYTES:
        raise InputFileError(f"{name}: is {over_limit_text(len(data), MAX_RECORDS_FILE_BYTES)}; import it in parts.")
    try:
        decoded = decode_text(data, label=name)
    except TextEncodingError as exc:
        raise InputFileError(str(exc)) from None
    text = decoded.text
    notes: list[str] = [decoded.note] if decoded.note else []
    if suffix in (".bib", ".biblatex"):
        try:
            records, more = read_bibtex(text, name=name)
        except TooManyRecordsError as exc:
            raise InputFileError(str(exc)) from None
        notes.extend(more)
        kind = "BibTeX"
    elif suffix in (".json", ".csl"):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise InputFileError(f"{name}: not CSL-JSON ({str(exc)[:160]}).") from None
        items = value.get("items") if isinstance(value, dict) else value
        if isinstance(items, list) and len(items) > MAX_RECORDS:
            raise InputFileError(f"{name}: has {len(items):,} items, more than the {MAX_RECORDS:,} records this "
                                 "reads; import it in parts.")
        try:
            records = parse_csl_json(value)
        except (ValueError, RecursionError) as exc:
            raise InputFileError(f"{name}: not CSL-JSON ({str(exc)[:160]}).") from None
        kind = "CSL-JSON"
    else:
        try:
            records, more = read_ris(text, name=name)
        except ValueError as exc:
            raise InputFileError(str(exc)) from None
        notes.extend(more)
        kind = "RIS"
    if len(records) > MAX_RECORDS:
        raise InputFileError(f"{name}: more than {MAX_RECORDS:,} records; import it in parts.")
    if not records and text.strip() and not notes:
        notes.append(f"{name}: no {kind} record was found in it.")
    return RecordsFile(name, kind, records, notes)


def read_records(path: str | os.PathLike) -> RecordsFile:
    """The records of a file or a Zotero data folder (one holding ``zotero.sqlite``)."""
    path = Path(path).expanduser()
    if path.is_dir() or path.name == "zotero.sqlite":
        from rag_core.records.zotero import read_zotero

        return read_zotero(path if path.is_dir() else path.parent)
    data = read_regular_file(path, max_bytes=MAX_RECORDS_FILE_BYTES, label=str(path))
    return parse_records(data, path.name)
