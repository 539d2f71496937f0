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
from rag_core.safe_files import read_regular_file
from rag_core.settings import MAX_RECORDS, MAX_RECORDS_FILE_BYTES

__all__ = ["RECORD_FILE_TYPES", "RecordsFile", "parse_records", "read_records"]

RECORD_FILE_TYPES = (".bib", ".biblatex", ".json", ".csl", ".ris")


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            raise InputFileError(f"{name}: not UTF-8 text.") from None


def parse_records(data: bytes, name: str) -> RecordsFile:
    """The records of a file's bytes, by its name's type."""
    from rag_core.records.bibtex import parse_bibtex
    from rag_core.records.csl import parse_csl_json
    from rag_core.records.ris import parse_ris

    suffix = Path(name).suffix.lower()
    if len(data) > MAX_RECORDS_FILE_BYTES:
        raise InputFileError(f"{name}: larger than {MAX_RECORDS_FILE_BYTES // 2**20} MiB; import it in parts.")
    text = _decode(data, name)
    notes: list[str] = []
    if suffix in (".bib", ".biblatex"):
        records, failed = parse_bibtex(text)
        kind = "BibTeX"
        if failed:
            notes.append(f"{failed} block(s) of {name} could not be read as BibTeX entries and were passed over.")
    elif suffix in (".json", ".csl"):
        try:
            records = parse_csl_json(json.loads(text))
        except (ValueError, RecursionError) as exc:
            raise InputFileError(f"{name}: not CSL-JSON ({str(exc)[:160]}).") from None
        kind = "CSL-JSON"
    elif suffix == ".ris":
        records, skipped = parse_ris(text)
        kind = "RIS"
        if skipped:
            notes.append(f"{skipped} line(s) of {name} are not RIS tags and were passed over.")
    else:
        raise InputFileError(f"{name}: not a records file (use a .bib, a CSL-JSON .json, a .ris, or a Zotero "
                             "data folder).")
    if len(records) > MAX_RECORDS:
        raise InputFileError(f"{name}: more than {MAX_RECORDS:,} records; import it in parts.")
    return RecordsFile(name, kind, records, notes)


def read_records(path: str | os.PathLike) -> RecordsFile:
    """The records of a file or a Zotero data folder (one holding ``zotero.sqlite``)."""
    path = Path(path).expanduser()
    if path.is_dir() or path.name == "zotero.sqlite":
        from rag_core.records.zotero import read_zotero

        return read_zotero(path if path.is_dir() else path.parent)
    data = read_regular_file(path, max_bytes=MAX_RECORDS_FILE_BYTES, label=str(path))
    return parse_records(data, path.name)
