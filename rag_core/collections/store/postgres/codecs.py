"""Values PostgreSQL cannot hold as given, and vectors on the wire.

jsonb and text refuse NUL characters, lone surrogates and NaN: such values are stored
escaped and come back unchanged. Dense vectors travel in pgvector's binary format, both
ways, so no vector is ever turned into text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import psycopg
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format

_ESCAPED = "__rag_core_json__"

# --------------------------------------------------------------------------- JSON and text


def dumps_for_pg(value) -> str:
    """JSON text jsonb accepts, for any JSON-able value: text with NUL or lone surrogates,
    NaN or infinities are wrapped (as escaped JSON inside a string) and come back unchanged."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
        if "\\u0000" not in text:
            return text
    except (ValueError, UnicodeEncodeError):
        pass
    return json.dumps({_ESCAPED: json.dumps(value, ensure_ascii=True)})


def opaque_for_pg(json_text: str) -> str:
    """jsonb text holding ``json_text`` (a JSON document) as one string, as :func:`dumps_for_pg`
    escapes a value: PostgreSQL parses one long string much faster than millions of numbers, and
    :func:`loads_from_pg` gives the value back."""
    return json.dumps({_ESCAPED: json_text})


def loads_from_pg(value):
    """A jsonb value as :func:`dumps_for_pg` was given it."""
    if isinstance(value, dict) and len(value) == 1 and _ESCAPED in value:
        return json.loads(value[_ESCAPED])
    return value


def text_for_pg(text: str) -> tuple[str, bool]:
    """Chunk text as stored, and whether it had to be escaped (NUL characters, lone surrogates)."""
    if "\x00" not in text:
        try:
            text.encode("utf-8")
            return text, False
        except UnicodeEncodeError:
            pass
    return json.dumps(text, ensure_ascii=True), True


def chunk_from_row(text: str, escaped: bool, meta) -> dict:
    """A chunk dict from its stored text and the other keys."""
    chunk = dict(loads_from_pg(meta))
    chunk["text"] = json.loads(text) if escaped else text
    return chunk


# --------------------------------------------------------------------------- vectors


def vector_bytes(row: np.ndarray) -> bytes:
    """pgvector's binary format: dimension and a reserved word (uint16 each), float32 big-endian."""
    row = np.asarray(row, dtype=">f4").ravel()
    return np.array([row.size, 0], dtype=">u2").tobytes() + row.tobytes()


class RawVectorLoader(Loader):
    """Loads a binary ``vector`` as its raw bytes, to be stacked into a matrix at once."""

    format = Format.BINARY

    def load(self, data):
        return bytes(data)


def vectors_from_raw(rows: Sequence[bytes | None], dim: int | None) -> tuple[np.ndarray | None, np.ndarray]:
    """A float32 matrix (zeros where missing) and a mask of the rows that have a vector."""
    mask = np.fromiter((r is not None for r in rows), dtype=bool, count=len(rows))
    if not mask.any():
        return None, mask
    if dim is None:
        dim = int(np.frombuffer(next(r for r in rows if r is not None)[:2], dtype=">u2")[0])
    blank = b"\0" * (4 * (dim + 1))
    raw = b"".join(r if r is not None else blank for r in rows)
    matrix = np.frombuffer(raw, dtype=">f4").reshape(len(rows), dim + 1)[:, 1:].astype(np.float32)
    return matrix, mask


COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\0"


def vectors_from_copy(data: bytes, dim: int) -> tuple[np.ndarray | None, np.ndarray]:
    """:func:`vectors_from_raw` from one column of pgvector vectors in PostgreSQL's binary COPY
    format: a fixed-size record per row when every row has a vector (read as one array), else
    walked row by row."""
    if not data.startswith(COPY_SIGNATURE) or len(data) < 21:
        raise ValueError("not PostgreSQL binary COPY data")
    start = 19 + int.from_bytes(data[15:19], "big")  # past the header and its extension area
    body = data[start:len(data) - 2]  # the trailer is a field count of -1
    if data[-2:] != b"\xff\xff":
        raise ValueError("PostgreSQL binary COPY data without its trailer")
    record = np.dtype([("fields", ">i2"), ("length", ">i4"), ("dim", ">u2"), ("unused", ">u2"), ("v", ">f4", (dim,))])
    if len(body) % record.itemsize == 0:
        rows = np.frombuffer(body, dtype=record)
        if (rows["fields"] == 1).all() and (rows["length"] == 4 + 4 * dim).all() and (rows["dim"] == dim).all():
            return rows["v"].astype(np.float32), np.ones(len(rows), dtype=bool)
    raw: list[bytes | None] = []
    at = 0
    while at < len(body):
        length = int.from_bytes(body[at + 2:at + 6], "big", signed=True)
        at += 6
        if length < 0:
            raw.append(None)
        else:
            raw.append(body[at:at + length])
            at += length
    return vectors_from_raw(raw, dim)


class VectorParam:
    """A dense vector as a query parameter (placeholder ``%b``), sent in pgvector's binary
    format; the server reads it as the ``vector`` its context asks for."""

    __slots__ = ("data",)

    def __init__(self, vector: np.ndarray):
        self.data = vector_bytes(vector)


class _VectorParamDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: VectorParam):
        return obj.data


psycopg.adapters.register_dumper(VectorParam, _VectorParamDumper)


# --------------------------------------------------------------------------- binary COPY


class _JsonText(str):
    """JSON text (from :func:`dumps_for_pg`) to be sent as a binary jsonb value."""


class _VectorBytes(bytes):
    """A vector already in pgvector's binary format."""


class _JsonbTextDumper(Dumper):
    format = Format.BINARY
    oid = 3802  # jsonb

    def dump(self, obj):
        return b"\x01" + obj.encode("utf-8")  # jsonb's binary format: version 1, then the text


class _RawDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj):
        return obj


def register_copy_dumpers(cursor: psycopg.Cursor, vector_oid: int | None) -> None:
    """Make a binary COPY on ``cursor`` send JSON text as jsonb and bytes from :func:`vector_bytes`
    as ``vector`` unchanged: :meth:`psycopg.Copy.set_types` picks the dumper by the column's oid."""
    cursor.adapters.register_dumper(_JsonText, _JsonbTextDumper)
    cursor.adapters.register_dumper(_VectorBytes, type("_VectorOidDumper", (_RawDumper,), {"oid": vector_oid}))
