"""Exact-phrase search: a plain scan of the chunks' raw text, no model, no vectors.

Three modes:

* ``"literal"`` -- the pattern as a literal string, case-insensitive.
* ``"regex"`` -- the pattern as a regular expression in RE2 syntax, case-sensitive as
  written (``(?i)`` turns case-insensitivity on).  RE2 runs in linear time, so no
  pattern can hang the search; it has no backreferences and no lookaround.
* ``"normalized"`` -- for quotes copied out of a PDF.  Pattern and text are both folded
  (ligatures, curly quotes, dashes, soft hyphens, non-breaking and zero-width spaces, white
  space, case, Unicode compatibility characters; hyphens between letters, so that a word broken
  at a line end matches its joined, hyphenated and spaced readings) and offsets are mapped back
  to the original text.

Each chunk gives at most one hit (its first match), and a place in the overlap of two chunks
is reported once (the later chunk gives its next match instead).  Offsets (``start``/``end``)
are Python ``str`` indices into ``chunk["text"]`` and ``match == chunk["text"][start:end]``.

:func:`find_places` searches whole documents (put back together from their chunks, see
:class:`DocumentText`) and returns every place a folded quote occurs, once each, with its pages.

For speed, the texts of a chunk list are joined once into one string (per mode) and
cached for the last few chunk lists searched; the cache is checked against the chunk
texts on every call, so editing the chunks is safe.  ``clear_cache()`` empties it.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Collection, Sequence

import numpy as np
import re2

from rag_core.errors import RagCoreError
from rag_core.index.chunk_table import ChunkTable, chunk_sources_mask
from rag_core.settings import MAX_PATTERN_CHARS, MAX_QUOTE_CHARS
from rag_core.text.back_matter import back_matter_mask
from rag_core.text.chunking import page_at
from rag_core.text.documents import DocumentText, assemble_documents
from rag_core.text.folding import fold_text, normalize_for_matching
from rag_core.text.query import check_unicode
from rag_core.types import ExactHit

__all__ = [
    "MAX_PATTERN_CHARS",
    "MODES",
    "REGEX_ENGINE",
    "ExactSearchError",
    "clear_cache",
    "document_texts",
    "find_exact",
    "find_places",
    "place_from_span",
    "search_exact",
]

MODES = ("literal", "regex", "normalized")
REGEX_ENGINE = "re2"
# Memory RE2 may use for one compiled pattern (its DFA cache included).
_RE2_MAX_MEM = 64 << 20
_CACHE_SIZE = 16  # joined texts of this many chunk lists (a segmented index has one per segment)


class ExactSearchError(RagCoreError):
    """The pattern is empty, too long, invalid, or uses syntax RE2 does not support."""


# --------------------------------------------------------------------------- cache


class _Corpus:
    """Joined texts of one chunk list, built lazily per mode."""

    def __init__(self, chunks: object, texts: list[str]):
        self.chunks = chunks  # kept so that id(chunks) cannot be reused while cached
        self.texts = texts
        self._views: dict[str, tuple] = {}
        self._lock = threading.Lock()

    def view(self, kind: str) -> tuple:
        got = self._views.get(kind)
        if got is None:
            with self._lock:
                got = self._views.get(kind)
                if got is None:
                    got = self._build(kind)
                    self._views[kind] = got
        return got

    def _build(self, kind: str) -> tuple:
        if kind == "documents":
            return (assemble_documents(self.chunks),)
        if kind == "doc_folded":
            documents = self.view("documents")[0]
            return _join([fold_text(d.match_text) for d in documents], "\n")
        if kind == "folded":
            pieces, sep = [fold_text(t) for t in self.texts], "\n"
        elif kind == "utf8":
            if isinstance(self.chunks, ChunkTable):  # already one UTF-8 buffer on disk: no copy
                buffer, offsets = self.chunks.utf8()
                return buffer, [int(x) for x in offsets[:-1]], [int(x) for x in offsets[1:]]
            pieces = [t.encode("utf-8", "surrogatepass") for t in self.texts]
            return _join(pieces, b"\n")
        else:  # pragma: no cover - internal
            raise KeyError(kind)
        return _join(pieces, sep)


def _join(pieces: list, sep):
    """The pieces joined by ``sep``, with the start and end offset of each piece."""
    starts: list[int] = []
    ends: list[int] = []
    offset = 0
    step = len(sep)
    for piece in pieces:
        starts.append(offset)
        offset += len(piece)
        ends.append(offset)
        offset += step
    return sep.join(pieces), starts, ends


_cache: OrderedDict[int, _Corpus] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget the joined texts kept for recently searched chunk lists."""
    with _cache_lock:
        _cache.clear()


def _corpus(chunks: Sequence[dict], texts: Sequence[str]) -> _Corpus:
    key = id(chunks)
    with _cache_lock:
        entry = _cache.get(key)
        # a ChunkTable is read-only: the same object has the same texts
        if entry is not None and entry.chunks is chunks and (isinstance(chunks, ChunkTable) or entry.texts == texts):
            _cache.move_to_end(key)
            return entry
        entry = _Corpus(chunks, texts)
        _cache[key] = entry
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
        return entry


# --------------------------------------------------------------------------- regex

_UNSUPPORTED = (
    (re.compile(r"\\[1-9]|\\g[<{]?\d|\\k[<{'\w]|\(\?P=\w"), "backreferences (\\1, (?P=name), \\k<name>)"),
    (re.compile(r"\(\?<?[=!]"), "lookahead/lookbehind ((?=...), (?!...), (?<=...), (?<!...))"),
    (re.compile(r"\(\?>"), "atomic groups ((?>...))"),
    (re.compile(r"[*+?}]\+"), "possessive quantifiers (a++, a*+)"),
    (re.compile(r"\\[GZ]"), "the anchors \\G and \\Z (use $ or \\z)"),
)


def _regex_error(pattern: str, engine_message: str) -> ExactSearchError:
    found = [what for rx, what in _UNSUPPORTED if rx.search(pattern)]
    if found:
        return ExactSearchError(
            "Regex patterns must use RE2 syntax (linear-time matching); RE2 does not support "
            + "; ".join(found)
            + f". RE2 said: {engine_message}"
        )
    return ExactSearchError(f"Invalid regex pattern {pattern!r}: {engine_message} (RE2 syntax)")


def _compile_literal(pattern: str):
    """RE2 in literal mode, case-insensitive (Unicode simple case folding)."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _RE2_MAX_MEM
    options.literal = True
    options.case_sensitive = False
    return re2.compile(pattern.encode("utf-8", "surrogatepass"), options)


def _compile_regex(pattern: str):
    if "\\C" in pattern.replace("\\\\", ""):
        raise ExactSearchError(
            "Regex patterns must use RE2 syntax; \\C (any single byte) is not supported here"
        )
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _RE2_MAX_MEM
    try:
        return re2.compile(pattern.encode("utf-8", "surrogatepass"), options)
    except re2.error as exc:
        message = exc.args[0] if exc.args else str(exc)
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        raise _regex_error(pattern, str(message)) from None


def _needs_isolation(pattern: str) -> bool:
    """Whether the pattern has a text anchor (^ $ \\A \\z) outside a character class.

    Such a pattern is matched chunk by chunk; any other is matched on the joined text,
    where a line break separates the chunks (so (?m) anchors and \\b behave the same).
    Errs on the side of True.
    """
    n = len(pattern)
    i = 0
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt == "Q":
                stop = pattern.find("\\E", i + 2)
                i = n if stop < 0 else stop + 2
                continue
            if not in_class and nxt in ("A", "z"):
                return True
            i += 2
            continue
        if in_class:
            if c == "[" and pattern[i + 1 : i + 2] == ":":
                stop = pattern.find(":]", i + 2)
                i = n if stop < 0 else stop + 2
                continue
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            i += 1
            if pattern[i : i + 1] == "^":
                i += 1
            if pattern[i : i + 1] == "]":
                i += 1
            continue
        elif c in "^$":
            return True
        i += 1
    return False


def _char_offset(data, start: int, end: int) -> int:
    """Number of characters in the UTF-8 bytes ``data[start:end]``."""
    return len(bytes(data[start:end]).decode("utf-8", "surrogatepass"))


# --------------------------------------------------------------------------- search


def _check_args(pattern, mode: str, max_hits, context) -> None:
    if mode not in MODES:
        raise ExactSearchError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if not isinstance(pattern, str):
        raise ExactSearchError(f"pattern must be a string, got {type(pattern).__name__}")
    if not pattern.strip():
        raise ExactSearchError("The exact-search pattern is empty; give a phrase or regex to look for")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ExactSearchError(
            f"The exact-search pattern is too long ({len(pattern)} characters; "
            f"at most {MAX_PATTERN_CHARS})"
        )
    if isinstance(max_hits, bool) or not isinstance(max_hits, int) or max_hits <= 0:
        raise ValueError(f"max_hits must be a positive integer, got {max_hits!r}")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ValueError(f"context must be an integer of at least 0, got {context!r}")


def _make_hit(chunk: dict, index: int, text: str, start: int, end: int, mode: str, context: int) -> ExactHit:
    lo = max(0, start - context)
    hi = min(len(text), end + context)
    snippet = ("..." if lo > 0 else "") + text[lo:hi] + ("..." if hi < len(text) else "")
    page_start = page_at(chunk, start)
    page_end = page_at(chunk, max(start, end - 1))
    chunk_start = chunk.get("start")
    has_start = isinstance(chunk_start, int) and not isinstance(chunk_start, bool)
    return {
        "source": chunk.get("source"),
        "chunk_index": index,
        "match": text[start:end],
        "snippet": snippet,
        "start": start,
        "end": end,
        "truncated": False,
        "mode": mode,
        "page": page_start,
        "page_start": page_start,
        "page_end": page_end,
        "page_label": chunk.get("page_label"),
        "doc_chunk": chunk.get("doc_chunk"),
        "doc_start": chunk_start + start if has_start else None,
        "doc_end": chunk_start + end if has_start else None,
        **({"ocr": True} if chunk.get("ocr") else {}),  # text read by OCR from a scan
    }


def _scan_literal(corpus: _Corpus, pattern: str, allowed):
    """Yield ``(chunk index, start, end)`` of the first literal match in each chunk."""
    return _scan_re2(corpus, _compile_literal(pattern), False, allowed)


def _scan_regex(corpus: _Corpus, pattern: str, allowed):
    """Yield ``(chunk index, start, end)`` of the first regex match in each chunk."""
    return _scan_re2(corpus, _compile_regex(pattern), _needs_isolation(pattern), allowed)


def _runs(allowed, n: int) -> list[tuple[int, int]]:
    """``(first, last)`` chunk indices of each run of consecutive chunks to scan.

    ``allowed``: None (all), a boolean array, or a function of the chunk index.
    """
    if allowed is None:
        return [(0, n - 1)] if n else []
    if isinstance(allowed, np.ndarray):
        edges = np.flatnonzero(np.diff(np.concatenate([[False], allowed, [False]]).astype(np.int8)))
        return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2], strict=True)]
    runs: list[tuple[int, int]] = []
    for i in range(n):
        if allowed(i):
            if runs and runs[-1][1] == i - 1:
                runs[-1] = (runs[-1][0], i)
            else:
                runs.append((i, i))
    return runs


def _scan_re2(corpus: _Corpus, compiled, isolate: bool, allowed):
    data, starts, ends = corpus.view("utf8")
    runs = _runs(allowed, len(starts))
    if isolate:
        view = memoryview(data)
        for first, last in runs:
            for i in range(first, last + 1):
                piece = view[starts[i] : ends[i]]
                m = compiled.search(piece)
                if m is not None:
                    s = _char_offset(piece, 0, m.start())
                    yield i, s, s + _char_offset(piece, m.start(), m.end())
        return
    for first, last in runs:
        pos, stop = starts[first], ends[last]
        while pos <= stop:
            m = compiled.search(data, pos, stop)
            if m is None:
                break
            j = m.start()
            i = bisect_right(starts, j) - 1
            chunk_start, chunk_end = starts[i], ends[i]
            pos = starts[i + 1] if i + 1 < len(starts) else stop + 1  # the next chunk (texts may abut)
            if m.end() > chunk_end:  # runs past the chunk: look again inside it only
                m = compiled.search(data, j, chunk_end)
                if m is None:
                    continue
            s = _char_offset(data, chunk_start, m.start())
            yield i, s, s + _char_offset(data, m.start(), m.end())


def _scan_normalized(corpus: _Corpus, pattern: str, allowed):
    needle = normalize_for_matching(pattern)[0].strip()
    if not needle:
        raise ExactSearchError("The exact-search pattern is empty once normalised")
    joined, starts, ends = corpus.view("folded")
    size = len(needle)
    for first, last in _runs(allowed, len(starts)):
        pos, stop = starts[first], ends[last]
        while True:
            j = joined.find(needle, pos, stop)  # the needle has no "\n", the separator
            if j < 0:
                break
            i = bisect_right(starts, j) - 1
            pos = ends[i] + 1
            folded, origin = normalize_for_matching(corpus.texts[i])
            local = j - starts[i]
            if folded[local : local + size] != needle:  # cannot happen; stay correct anyway
                local = folded.find(needle)
                if local < 0:
                    continue
            yield i, origin[local], origin[local + size - 1] + 1


def document_texts(chunks: Sequence[dict]) -> list[DocumentText]:
    """The documents of a chunk list, put together once and cached like the joined texts."""
    if not isinstance(chunks, Sequence):
        chunks = list(chunks)
    return _corpus(chunks, _texts(chunks)).view("documents")[0]


def find_places(
    pattern: str,
    chunks: Sequence[dict],
    *,
    max_places: int = 50,
    context: int = 300,
    sources: Collection[str] | None = None,
) -> list[dict]:
    """Every place where the folded ``pattern`` occurs in the documents of ``chunks``.

    Unlike :func:`find_exact`, the search runs over each document's whole text, so a quote
    that crosses a chunk boundary or lies in the overlap of two chunks is found once, at one
    place. Each place has the keys of an exact hit (``mode`` "normalized"; ``chunk_index``,
    ``start`` and ``end`` refer to the chunk that holds the place, ``end`` may run past it for
    a quote longer than the chunk overlap) plus ``doc_id``, ``page_end_label`` and ``pages``:
    the span cut at page starts (see :meth:`DocumentText.segments`). Places come in document
    order; the last has ``truncated: True`` when ``max_places`` was reached.
    """
    if isinstance(pattern, str) and len(pattern) > MAX_PATTERN_CHARS:  # quotes may be longer than patterns
        if len(pattern) > MAX_QUOTE_CHARS:
            raise ExactSearchError(f"The quote is too long ({len(pattern)} characters; at most {MAX_QUOTE_CHARS})")
        _check_args(pattern[:MAX_PATTERN_CHARS], "normalized", max_places, context)
    else:
        _check_args(pattern, "normalized", max_places, context)
    if not isinstance(chunks, Sequence):
        chunks = list(chunks)
    if not chunks:
        return []
    needle = normalize_for_matching(pattern)[0].strip()
    if not needle:
        raise ExactSearchError("The exact-search pattern is empty once normalised")
    texts = _texts(chunks)
    corpus = _corpus(chunks, texts)
    documents = corpus.view("documents")[0]
    joined, starts, ends = corpus.view("doc_folded")
    allowed = None
    if sources is not None:
        wanted = {sources} if isinstance(sources, str) else set(sources)
        allowed = lambda k: documents[k].source in wanted  # noqa: E731
    places: list[dict] = []
    for first, last in _runs(allowed, len(documents)):
        pos, stop = starts[first], ends[last]
        while True:
            j = joined.find(needle, pos, stop)
            if j < 0:
                break
            k = bisect_right(starts, j) - 1
            pos = j + len(needle)
            doc = documents[k]
            origin = doc.folded_with_map()[1]
            local = j - starts[k]
            doc_start, doc_end = origin[local], origin[local + len(needle) - 1] + 1
            places.append(place_from_span(doc, chunks, doc_start, doc_end, context=context))
            if len(places) >= max_places:
                places[-1]["truncated"] = True
                return places
    return places


def place_from_span(doc: DocumentText, chunks: Sequence[dict], doc_start: int, doc_end: int, *,
                    context: int = 300, mode: str = "normalized") -> dict:
    """A hit dict for the span ``[doc_start, doc_end)`` of ``doc`` (see :func:`find_places`)."""
    text = doc.text
    chunk_index, local = doc.chunk_for(doc_start, doc_end)
    chunk = chunks[chunk_index]
    lo, hi = max(0, doc_start - context), min(len(text), doc_end + context)
    snippet = ("..." if lo > 0 else "") + text[lo:hi] + ("..." if hi < len(text) else "")
    page, label = doc.page_at(doc_start)
    page_end, end_label = doc.page_at(max(doc_start, doc_end - 1))
    return {
        "source": doc.source,
        "doc_id": doc.doc_id,
        "chunk_index": chunk_index,
        "match": text[doc_start:doc_end],
        "snippet": snippet,
        "start": local,
        "end": local + (doc_end - doc_start),
        "truncated": False,
        "mode": mode,
        "page": page if page is not None else chunk.get("page_start"),
        "page_start": page if page is not None else chunk.get("page_start"),
        "page_end": page_end if page_end is not None else chunk.get("page_end"),
        "page_label": label,
        "page_end_label": end_label,
        "doc_chunk": chunk.get("doc_chunk"),
        "doc_start": doc_start,
        "doc_end": doc_end,
        "pages": doc.segments(doc_start, doc_end),
        **({"ocr": True} if chunk.get("ocr") else {}),  # text read by OCR from a scan
    }


_SCANNERS = {"literal": _scan_literal, "regex": _scan_regex, "normalized": _scan_normalized}


def find_exact(
    pattern: str,
    chunks: Sequence[dict],
    *,
    mode: str = "literal",
    max_hits: int = 10,
    context: int = 300,
    sources: Collection[str] | None = None,
    every_match: bool = False,
    back_matter: bool = True,
) -> list[ExactHit]:
    """Find ``pattern`` in the raw text of ``chunks``; at most one hit (the first) per chunk, or
    with ``every_match`` one hit per occurrence (a phrase twice in a passage is two hits).

    ``mode`` is ``"literal"`` (case-insensitive), ``"regex"`` (RE2 syntax, case-sensitive)
    or ``"normalized"`` (folded quote matching).  Hits come in chunk order; when
    ``max_hits`` is reached the scan stops and the last hit has ``truncated: True``.
    ``sources`` restricts the scan to chunks whose ``source`` is in it; ``back_matter=False``
    leaves out the chunks marked as back matter (:mod:`rag_core.text.back_matter`).
    """
    if mode == "normalised":
        mode = "normalized"
    _check_args(pattern, mode, max_hits, context)
    if not isinstance(chunks, Sequence):
        chunks = list(chunks)
    if mode == "regex":
        _compile_regex(pattern)  # report a bad pattern even when there are no chunks
    if not chunks:
        return []
    if hasattr(chunks, "parts") and hasattr(chunks, "offsets"):  # a segmented index
        return _find_in_segments(pattern, chunks, mode=mode, max_hits=max_hits, context=context, sources=sources,
                                 every_match=every_match, back_matter=back_matter)
    texts = _texts(chunks)
    corpus = _corpus(chunks, texts)

    allowed = None
    if sources is not None:
        allowed = chunk_sources_mask(chunks, {sources} if isinstance(sources, str) else set(sources))
    if not back_matter:
        back = back_matter_mask(chunks)
        if back is not None:
            allowed = ~back if allowed is None else allowed & ~back

    hits: list[ExactHit] = []
    seen: set[tuple] = set()  # places already reported, so overlapping chunks count a place once

    def report(i: int, start: int, end: int) -> bool:
        """Add the hit unless its place was reported already."""
        place = _place(chunks[i], start, end)
        if place is not None:
            if place in seen:
                return False
            seen.add(place)
        hits.append(_make_hit(chunks[i], i, texts[i], start, end, mode, context))
        return True

    for i, start, end in _SCANNERS[mode](corpus, pattern, allowed):
        place = _place(chunks[i], start, end)
        while place is not None and place in seen:
            found = _next_in_chunk(mode, pattern, texts[i], start)
            if found is None:
                break
            start, end = found
            place = _place(chunks[i], start, end)
        if not report(i, start, end):
            continue
        while every_match and len(hits) < max_hits:  # the passage's later occurrences
            found = _next_in_chunk(mode, pattern, texts[i], max(start, end - 1))
            if found is None:
                break
            start, end = found
            report(i, start, end)
        if len(hits) >= max_hits:
            hits[-1]["truncated"] = True
            break
    if isinstance(chunks, ChunkTable) and mode in ("literal", "regex"):
        chunks.release_text()  # the scan read the mapped texts: they need not stay resident
    return hits


def _find_in_segments(pattern: str, chunks, *, mode: str, max_hits: int, context: int,
                      sources: Collection[str] | None, every_match: bool = False,
                      back_matter: bool = True) -> list[ExactHit]:
    """:func:`find_exact` over each segment, ``SEGMENT_THREADS`` segments at a time (RE2 and
    ``bytes.find`` release the GIL), the hits put back in chunk order; segments after the one
    that fills ``max_hits`` are not scanned."""
    from rag_core.index.segments import segment_pool

    def one(offset: int, part) -> list[ExactHit]:
        found = find_exact(pattern, part, mode=mode, max_hits=max_hits, context=context, sources=sources,
                           every_match=every_match, back_matter=back_matter)
        for hit in found:
            hit["chunk_index"] += offset
        return found

    segments = list(zip(chunks.offsets, chunks.parts, strict=False))
    hits: list[ExactHit] = []
    futures = [segment_pool().submit(one, offset, part) for offset, part in segments]
    try:
        for future in futures:
            hits.extend(future.result())
            if len(hits) >= max_hits:
                break
    finally:
        for future in futures:
            future.cancel()  # the segments not started yet
    for hit in hits:
        hit["truncated"] = False
    if len(hits) >= max_hits:
        hits = hits[:max_hits]
        hits[-1]["truncated"] = True
    return hits


class _ChunkTexts(Sequence):
    """The texts of a :class:`ChunkTable`, read one at a time (never all in memory at once)."""

    def __init__(self, table: ChunkTable):
        self.table = table

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.table.text(j) for j in range(*i.indices(len(self)))]
        return self.table.text(i)


def _texts(chunks: Sequence[dict]) -> Sequence[str]:
    """The chunks' texts: a stored table's read from its text column (not chunk dicts, which
    cost ten times as much to build), others' from the dicts."""
    return _ChunkTexts(chunks) if isinstance(chunks, ChunkTable) else [c.get("text") or "" for c in chunks]


def _place(chunk: dict, start: int, end: int) -> tuple | None:
    """``(document, doc_start, doc_end)`` of a match, or None when the chunk has no offset."""
    offset = chunk.get("start")
    if not isinstance(offset, int) or isinstance(offset, bool):
        return None
    return (chunk.get("doc_id") or chunk.get("source"), offset + start, offset + end)


def _next_in_chunk(mode: str, pattern: str, text: str, after: int) -> tuple[int, int] | None:
    """The first match in ``text`` that starts after offset ``after`` (None when there is none)."""
    if mode == "normalized":
        needle = normalize_for_matching(pattern)[0].strip()
        folded, origin = normalize_for_matching(text)
        j = folded.find(needle)
        while j >= 0:
            if origin[j] > after:
                return origin[j], origin[j + len(needle) - 1] + 1
            j = folded.find(needle, j + 1)
        return None
    compiled = _compile_literal(pattern) if mode == "literal" else _compile_regex(pattern)
    data = text.encode("utf-8", "surrogatepass")
    pos = len(text[: after + 1].encode("utf-8", "surrogatepass"))
    m = compiled.search(data, pos)
    if m is None:
        return None
    s = _char_offset(data, 0, m.start())
    return s, s + _char_offset(data, m.start(), m.end())


def search_exact(
    pattern: str,
    index,
    regex: bool = False,
    max_hits: int = 10,
    context: int = 300,
    *,
    mode: str | None = None,
    sources: Collection[str] | None = None,
    every_match: bool = False,
    back_matter: bool = True,
) -> list[ExactHit]:
    """Public contract wrapper: :func:`find_exact` over ``index.chunks``.

    ``mode=None`` means ``"regex"`` when ``regex`` is true, else ``"literal"``. A pattern that
    is not valid Unicode raises :class:`rag_core.errors.QueryError`. ``every_match``: every
    occurrence in a chunk is a hit (the contract's default: the first one only). ``back_matter=False``:
    no hits in reference lists and other back matter.
    """
    if isinstance(pattern, str):
        check_unicode(pattern, "pattern")
    if mode is None:
        mode = "regex" if regex else "literal"
    elif regex and mode != "regex":
        raise ExactSearchError(f"regex=True conflicts with mode={mode!r}")
    chunks = getattr(index, "chunks", None)
    if chunks is None:
        raise TypeError("index must have a .chunks list")
    return find_exact(
        pattern, chunks, mode=mode, max_hits=max_hits, context=context, sources=sources, every_match=every_match,
        back_matter=back_matter,
    )
