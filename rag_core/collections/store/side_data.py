"""Side data as every backend keeps it: committed generations with checksums, and copies.

A collection's side data (the relevance lab's judgments and snapshots, the documents' corrected
and imported bibliographic records) is a JSON value per key,
kept outside the collection's versions and replaced whole. The store does not know what a value
means (the lab does); it knows that a person's hours of grading must not vanish. So every write
of a key is a *generation*:

* the value's canonical bytes (:func:`canonical_bytes`: compact JSON, ASCII) and their SHA-256
  are recorded with the generation's number, in the same commit as the value itself;
* a copy of the bytes is kept for the last ``SIDE_DATA_GENERATIONS`` generations;
* a read checks the live value against its record: when it is missing, emptied or replaced,
  the committed copy is read instead (and ``check`` reports the live value as damaged);
* ``check`` compares every live value with its record and its copy; ``check --repair`` writes the
  newest intact copy back (an older generation's when the newest copy is damaged as well) and
  never drops a value it cannot restore;
* a value written before records existed (no record) is read as it is, and recorded by the
  next write or repair.

A deletion (``write_data(name, key, None)``) is a generation too, so a deleted key is not taken
for a lost one. The folder store keeps records and copies in files
(:mod:`rag_core.collections.store.folder.side_data`), PostgreSQL in a table
(:mod:`rag_core.collections.store.postgres.side_data`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

SIDE_DATA_FORMAT = "rag_core.side_data"
SIDE_DATA_FORMAT_VERSION = 1


def canonical_bytes(value) -> bytes:
    """The bytes a value is stored and checksummed as: compact JSON, ASCII only (a lone surrogate
    or a NUL character is escaped), key order kept, NaN written as JSON's ``NaN``."""
    return prepare_value(value).data


@dataclass(frozen=True)
class PreparedValue:
    """A side-data value serialised once (its canonical bytes and their SHA-256), so that a writer
    can do it before taking the writer lock: ``write_data`` takes one in place of the value."""

    value: object
    data: bytes
    sha256: str
    strict: bool  # standard JSON (no NaN or infinity): a backend may store the bytes as they are


def prepare_value(value) -> PreparedValue:
    """``value`` serialised for :meth:`CollectionStore.write_data` (a PreparedValue passes through)."""
    if isinstance(value, PreparedValue):
        return value
    try:
        text, strict = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False), True
    except ValueError:
        text, strict = json.dumps(value, ensure_ascii=True, separators=(",", ":")), False
    data = text.encode("ascii")
    return PreparedValue(value, data, sha256_hex(data), strict)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def what(key: str) -> str:
    """How a message names a key: "the relevance lab's judgments"."""
    if key.split("/")[0] == "records":
        return "the collection's corrected and imported records"
    return f"the relevance lab's {key.split('/')[0]}"


@dataclass(frozen=True)
class DataRecord:
    """The committed generation of one key: its number, and the SHA-256 of its canonical bytes
    (None: the key was deleted by that generation)."""

    generation: int
    sha256: str | None
    size: int = 0

    @property
    def deleted(self) -> bool:
        return self.sha256 is None

    def to_dict(self) -> dict:
        return {"generation": self.generation, "sha256": self.sha256, "bytes": self.size}

    @classmethod
    def from_dict(cls, raw) -> DataRecord | None:
        """The record, or None when ``raw`` is not one."""
        if not isinstance(raw, dict):
            return None
        generation, sha, size = raw.get("generation"), raw.get("sha256"), raw.get("bytes", 0)
        if not isinstance(generation, int) or isinstance(generation, bool) or generation < 1:
            return None
        if sha is not None and (not isinstance(sha, str) or len(sha) != 64):
            return None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            return None
        return cls(generation, sha, size)
