"""The chunks of a stored index, kept by column and memory-mapped.

A list of a million chunk dicts costs gigabytes before a query runs. On disk the chunks
are columns instead: every text in one UTF-8 file with its byte offsets, the numbers of
each chunk (document, pages, offsets) in one integer matrix, the repeated strings (file
names, document ids, page labels) in small tables. :class:`ChunkTable` maps those files
and builds a chunk's dict only when it is asked for, so a loaded index costs what a
query touches. It is a ``Sequence[dict]``: code that reads ``index.chunks[i]`` or
iterates the chunks works unchanged; the hot paths use its column helpers.

Files (all written by :func:`write_chunk_table`)::

    chunk_text.bin           every chunk's text, UTF-8, one after the other
    chunk_offsets.npy        int64 (n + 1): where each text starts in chunk_text.bin
    chunk_columns.npy        int64 (n x 9): see COLUMNS (-1 where a chunk has no value)
    chunk_strings.json       {"source": [...], "doc_id": [...], "page_label": [...]}
    chunk_breaks.npy         int64 (m x 2): every chunk's page_breaks, one after the other
    chunk_break_offsets.npy  int64 (n + 1): where each chunk's breaks start
    chunk_context.npy        int64 (n): each chunk's ``context`` (title and section heading,
                             :mod:`rag_core.text.passage_context`) as an id into the "context"
                             string table, -1 for none (only if any chunk has one)
    chunk_back_matter.npy    int64 (n): each chunk's ``back_matter`` (:mod:`rag_core.text.back_matter`)
                             as an id into the "back_matter" string table, -1 for None, -2 for a
                             chunk without the key (only if any chunk has it; without the file,
                             no chunk is back matter)
    chunk_extra.jsonl        keys outside the known ones, {"row": i, ...} (only if any)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from rag_core.index.mapped import release

COLUMNS = ("source", "doc_id", "page_label", "doc_chunk", "start", "end", "page_start", "page_end", "present")
_STRING_KEYS = ("source", "doc_id", "page_label")
_INT_KEYS = ("doc_chunk", "start", "end", "page_start", "page_end")
_COLUMN_OF = {key: j for j, key in enumerate(COLUMNS)}
_PRESENT = _COLUMN_OF["present"]
# Bit i of "present" is set when the chunk dict had KEY_ORDER[i] (so a round trip keeps
# absent keys absent and None values None).
KEY_ORDER = ("text", "source", "doc_chunk", "start", "end", "page_start", "page_end", "page_label", "page_breaks",
             "doc_id")
FILES = ("chunk_text.bin", "chunk_offsets.npy", "chunk_columns.npy", "chunk_strings.json", "chunk_breaks.npy",
         "chunk_break_offsets.npy")
EXTRA_FILE = "chunk_extra.jsonl"
CONTEXT_FILE = "chunk_context.npy"
BACK_MATTER_FILE = "chunk_back_matter.npy"
_ABSENT = -2


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def write_chunk_table(chunks: Sequence[dict], folder: str | Path) -> None:
    """Write ``chunks`` as the column files of a :class:`ChunkTable` into ``folder``."""
    folder = Path(folder)
    n = len(chunks)
    tables: dict[str, dict[str, int]] = {key: {} for key in _STRING_KEYS}
    columns = np.full((n, len(COLUMNS)), -1, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    break_offsets = np.zeros(n + 1, dtype=np.int64)
    breaks: list[list[int]] = []
    extras: list[dict] = []
    contexts: dict[str, int] = {}  # the same title and heading repeat over many chunks: a string table
    context_ids = np.full(n, -1, dtype=np.int64)
    kinds: dict[str, int] = {}
    kind_ids = np.full(n, _ABSENT, dtype=np.int64)
    with open(folder / "chunk_text.bin", "wb") as handle:
        position = 0
        for i, chunk in enumerate(chunks):
            data = str(chunk["text"]).encode("utf-8", "surrogatepass")
            handle.write(data)
            position += len(data)
            offsets[i + 1] = position
            present = 0
            extra = {}
            for bit, key in enumerate(KEY_ORDER):
                if key in chunk:
                    present |= 1 << bit
            for key in _STRING_KEYS:
                value = chunk.get(key)
                if isinstance(value, str):
                    table = tables[key]
                    columns[i, COLUMNS.index(key)] = table.setdefault(value, len(table))
                elif value is not None:
                    extra[key] = value
            for key in _INT_KEYS:
                value = chunk.get(key)
                if _is_int(value):
                    columns[i, COLUMNS.index(key)] = value
                elif value is not None:
                    extra[key] = value
            page_breaks = chunk.get("page_breaks")
            if isinstance(page_breaks, list) and all(
                    isinstance(b, (list, tuple)) and len(b) == 2 and all(_is_int(x) for x in b) for b in page_breaks):
                breaks.extend([int(b[0]), int(b[1])] for b in page_breaks)
            elif page_breaks is not None:
                extra["page_breaks"] = page_breaks
            break_offsets[i + 1] = len(breaks)
            columns[i, COLUMNS.index("present")] = present
            context = chunk.get("context")
            if isinstance(context, str):
                context_ids[i] = contexts.setdefault(context, len(contexts))
            if "back_matter" in chunk and (chunk["back_matter"] is None or isinstance(chunk["back_matter"], str)):
                kind = chunk["back_matter"]
                kind_ids[i] = -1 if kind is None else kinds.setdefault(kind, len(kinds))
            extra.update({k: v for k, v in chunk.items()
                          if k not in KEY_ORDER and not (k == "context" and isinstance(v, str))
                          and not (k == "back_matter" and kind_ids[i] != _ABSENT)})
            if extra:
                extras.append({"row": i, **extra})
    np.save(folder / "chunk_offsets.npy", offsets, allow_pickle=False)
    np.save(folder / "chunk_columns.npy", columns, allow_pickle=False)
    np.save(folder / "chunk_breaks.npy", np.asarray(breaks, dtype=np.int64).reshape(-1, 2), allow_pickle=False)
    np.save(folder / "chunk_break_offsets.npy", break_offsets, allow_pickle=False)
    strings = {key: sorted(table, key=table.__getitem__) for key, table in tables.items()}
    if contexts:
        strings["context"] = sorted(contexts, key=contexts.__getitem__)
        np.save(folder / CONTEXT_FILE, context_ids, allow_pickle=False)
    if (kind_ids != _ABSENT).any():
        strings["back_matter"] = sorted(kinds, key=kinds.__getitem__)
        np.save(folder / BACK_MATTER_FILE, kind_ids, allow_pickle=False)
    (folder / "chunk_strings.json").write_text(json.dumps(strings, ensure_ascii=False), encoding="utf-8")
    if extras:
        with open(folder / EXTRA_FILE, "w", encoding="utf-8") as handle:
            for extra in extras:
                handle.write(json.dumps(extra, ensure_ascii=False) + "\n")


class ChunkTable(Sequence):
    """Chunks read by column from the files of :func:`write_chunk_table` (see the module docstring)."""

    def __init__(self, folder: str | Path, *, mmap: bool = True):
        folder = Path(folder)
        mode = "r" if mmap else None
        self._offsets = np.load(folder / "chunk_offsets.npy", allow_pickle=False, mmap_mode=mode)
        self._columns = np.load(folder / "chunk_columns.npy", allow_pickle=False, mmap_mode=mode)
        self._breaks = np.load(folder / "chunk_breaks.npy", allow_pickle=False, mmap_mode=mode)
        self._break_offsets = np.load(folder / "chunk_break_offsets.npy", allow_pickle=False, mmap_mode=mode)
        strings = json.loads((folder / "chunk_strings.json").read_text(encoding="utf-8"))
        n = len(self._offsets) - 1
        if not (isinstance(strings, dict) and all(isinstance(strings.get(k), list) for k in _STRING_KEYS)):
            raise ValueError("chunk_strings.json is not a table of strings")
        if self._columns.shape != (n, len(COLUMNS)) or len(self._break_offsets) != n + 1 or n < 0 \
                or self._breaks.ndim != 2 or self._breaks.shape[1:] != (2,):
            raise ValueError("the chunk column files disagree on the number of chunks")
        self._strings = {key: strings[key] for key in _STRING_KEYS}
        for key in _STRING_KEYS:
            column = self._columns[:, COLUMNS.index(key)]
            if n and (int(column.max()) >= len(self._strings[key]) or int(column.min()) < -1):
                raise ValueError(f"chunk_columns.npy points outside the {key} table")
        size = (folder / "chunk_text.bin").stat().st_size
        if n and (int(self._offsets[-1]) != size or int(self._offsets[0]) != 0):
            raise ValueError("chunk_offsets.npy does not match chunk_text.bin")
        self._text = np.memmap(folder / "chunk_text.bin", dtype=np.uint8, mode="r") if size and mmap else (
            np.fromfile(folder / "chunk_text.bin", dtype=np.uint8) if size else np.zeros(0, dtype=np.uint8))
        self._context = None
        if (folder / CONTEXT_FILE).is_file():
            self._context = np.load(folder / CONTEXT_FILE, allow_pickle=False, mmap_mode=mode)
            table = strings.get("context")
            if not isinstance(table, list) or self._context.shape != (n,) or (
                    n and (int(self._context.max()) >= len(table) or int(self._context.min()) < -1)):
                raise ValueError(f"{CONTEXT_FILE} does not match the chunks or the context table")
            self._strings["context"] = table
        self._back_matter = None
        if (folder / BACK_MATTER_FILE).is_file():
            self._back_matter = np.load(folder / BACK_MATTER_FILE, allow_pickle=False, mmap_mode=mode)
            table = strings.get("back_matter")
            if not isinstance(table, list) or self._back_matter.shape != (n,) or (
                    n and (int(self._back_matter.max()) >= len(table) or int(self._back_matter.min()) < _ABSENT)):
                raise ValueError(f"{BACK_MATTER_FILE} does not match the chunks or the back-matter table")
            self._strings["back_matter"] = table
            self._back_matter = self._back_matter.view(np.ndarray)
        # Plain array views of the mapped columns (still mapped): a slice of a np.memmap runs
        # its __array_finalize__, ~90 us, and reading a chunk took five of them (issue 21: 0.7 s
        # of assembling 1,374 chunks into documents).
        self._offsets, self._columns, self._breaks, self._break_offsets = (
            a.view(np.ndarray) for a in (self._offsets, self._columns, self._breaks, self._break_offsets))
        if self._context is not None:
            self._context = self._context.view(np.ndarray)
        self._text_bytes = memoryview(self._text)
        self._extra: dict[int, dict] = {}
        if (folder / EXTRA_FILE).is_file():
            with open(folder / EXTRA_FILE, encoding="utf-8") as handle:
                for line in handle:
                    if line.strip():
                        item = json.loads(line)
                        if not isinstance(item, dict) or not _is_int(item.get("row")):
                            raise ValueError(f"{EXTRA_FILE} has a line that is not a row's extra keys")
                        self._extra[item.pop("row")] = item

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def text(self, i: int) -> str:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("chunk index out of range")
        start, end = self._offsets[i:i + 2].tolist()
        return bytes(self._text_bytes[start:end]).decode("utf-8", "surrogatepass")

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("chunk index out of range")
        # one .tolist() per array instead of a NumPy scalar per field: ~6x faster a chunk
        row = self._columns[i].tolist()
        present = row[_PRESENT]
        chunk: dict = {}
        for bit, key in enumerate(KEY_ORDER):
            if not present >> bit & 1:
                continue
            if key == "text":
                chunk[key] = self.text(i)
            elif key in _STRING_KEYS:
                value = row[_COLUMN_OF[key]]
                chunk[key] = None if value < 0 else self._strings[key][value]
            elif key == "page_breaks":
                lo, hi = self._break_offsets[i:i + 2].tolist()
                chunk[key] = self._breaks[lo:hi].tolist()
            else:
                value = row[_COLUMN_OF[key]]
                chunk[key] = None if value == -1 else value
        if self._context is not None:
            context = int(self._context[i])
            if context >= 0:
                chunk["context"] = self._strings["context"][context]
        if self._back_matter is not None:
            kind = int(self._back_matter[i])
            if kind != _ABSENT:
                chunk["back_matter"] = None if kind < 0 else self._strings["back_matter"][kind]
        extra = self._extra.get(i)
        if extra:
            chunk.update(extra)
        return chunk

    def __iter__(self) -> Iterator[dict]:
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other) -> bool:
        """Equal to any sequence of the same chunk dicts (a list of chunks, another table)."""
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  (mutable-style equality, like a list)

    # -- column helpers for the hot paths -------------------------------------------
    def column(self, key: str) -> np.ndarray:
        """A column of :data:`COLUMNS` (string columns as ids into :meth:`strings`)."""
        return self._columns[:, COLUMNS.index(key)]

    def back_matter_column(self) -> np.ndarray:
        """Which chunks are back matter (all False for a table stored without the column)."""
        mask = np.zeros(len(self), dtype=bool) if self._back_matter is None else self._back_matter >= 0
        for i, extra in self._extra.items():  # a value kept outside the column
            if "back_matter" in extra:
                mask[i] = bool(extra["back_matter"])
        return mask

    def strings(self, key: str) -> list[str]:
        return self._strings[key]

    def mask_of_sources(self, sources) -> np.ndarray:
        """Which chunks belong to one of ``sources`` (file names)."""
        wanted = {j for j, name in enumerate(self._strings["source"]) if name in set(sources)}
        return np.isin(self.column("source"), list(wanted)) if wanted else np.zeros(len(self), dtype=bool)

    def texts(self) -> Iterator[str]:
        for i in range(len(self)):
            yield self.text(i)

    def utf8(self) -> tuple[memoryview, np.ndarray]:
        """Every text as one UTF-8 buffer (no copy) and the (n + 1) byte offsets into it."""
        return memoryview(self._text), self._offsets

    def release_text(self) -> None:
        """Drop the resident pages of the mapped texts (after a full scan; see :mod:`rag_core.index.mapped`)."""
        release(self._text)

    def locate(self, byte_offset: int) -> int:
        """The chunk whose text holds the byte at ``byte_offset`` of :meth:`utf8`'s buffer."""
        return int(np.searchsorted(self._offsets, byte_offset, side="right")) - 1


def chunk_places(chunks: Sequence[dict]) -> Iterator[tuple[str | None, str | None, int | None, int | None]]:
    """``(doc_id, source, start, end)`` of every chunk, in order: read by column from stored
    tables (several, for the segments of a large collection), from the dicts otherwise. Keying a
    collection's passages built a dict per chunk for these four values (~70 ms of 1,374)."""
    parts = getattr(chunks, "parts", None)
    if parts is not None:
        for part in parts:
            yield from chunk_places(part)
        return
    if not isinstance(chunks, ChunkTable):
        for chunk in chunks:
            yield chunk.get("doc_id"), chunk.get("source"), chunk.get("start"), chunk.get("end")
        return
    doc_ids, sources = chunks.strings("doc_id"), chunks.strings("source")
    columns = [chunks.column(key).tolist() for key in ("doc_id", "source", "start", "end")]
    for i, (doc, source, start, end) in enumerate(zip(*columns, strict=True)):
        if i in chunks._extra:  # a value stored outside the columns: the chunk as it was
            chunk = chunks[i]
            yield chunk.get("doc_id"), chunk.get("source"), chunk.get("start"), chunk.get("end")
            continue
        yield (None if doc < 0 else doc_ids[doc], None if source < 0 else sources[source],
               None if start == -1 else start, None if end == -1 else end)


def chunk_sources_mask(chunks: Sequence[dict], sources) -> np.ndarray:
    """Which chunks belong to one of ``sources``, by column where the chunks are stored so."""
    if hasattr(chunks, "mask_of_sources"):
        return chunks.mask_of_sources(sources)
    wanted = set(sources)
    return np.fromiter((c.get("source") in wanted for c in chunks), dtype=bool, count=len(chunks))
