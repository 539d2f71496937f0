"""Relevance judgments: a grade for a (collection, query, passage), kept with the collection.

A passage is named by its document's content (the SHA-256 of the file, ``sha256`` in the
document record; ``doc_id`` is its first 16 hex digits) and its character span in the
document's text (``start``/``end`` of the chunk). So a judgment survives adding or removing
other documents, and removing and re-adding the same file. When a collection is rebuilt
with other chunk settings, a judged span no longer matches a passage exactly; it then
grades the passages it overlaps by at least half of the shorter of the two (or, when the
judgment carries a located quote, the passages that hold the whole quote): those grades are
*mapped* and shown as such.

Grades follow Quepid's graded scale: 0 not relevant, 1 related, 2 relevant, 3 exactly what
was asked. Judgments are side data of the collection (key ``judgments``), written under its
writer lock with the time each was made.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from rag_core.errors import RagCoreError

DATA_KEY = "judgments"
FORMAT = "rag_core.judgments"
FORMAT_VERSION = 1
GRADES = {0: "not relevant", 1: "related", 2: "relevant", 3: "exactly what was asked"}
GRADE_SHORT = {0: "0 not relevant", 1: "1 related", 2: "2 relevant", 3: "3 exact"}
MAX_QUERY_CHARS = 2_000
QUOTE_CHARS = 120
MAP_OVERLAP = 0.5  # a judged span grades a passage it overlaps by this share of the shorter one


class JudgmentError(RagCoreError):
    """A judgment that cannot be kept (bad grade, empty query, unknown passage)."""


def normalise_query(query: str) -> str:
    """The query as judged: white space collapsed (case and words kept)."""
    if not isinstance(query, str):
        raise JudgmentError(f"A query must be text, got {type(query).__name__}.")
    text = " ".join(query.split())
    if not text:
        raise JudgmentError("A judgment needs a query: it is empty.")
    if len(text) > MAX_QUERY_CHARS:
        raise JudgmentError(f"A judged query can have at most {MAX_QUERY_CHARS:,} characters (got {len(text):,}).")
    return text


def query_id(query: str) -> str:
    """A stable id for a query: "q" and 10 hex digits of its SHA-256."""
    return "q" + hashlib.sha256(normalise_query(query).encode("utf-8")).hexdigest()[:10]


def check_grade(grade) -> int:
    if isinstance(grade, bool):
        raise JudgmentError(f"A grade is 0, 1, 2 or 3, got {grade!r}.")
    if isinstance(grade, float) and grade.is_integer():
        grade = int(grade)
    if isinstance(grade, str) and grade.strip().lstrip("'").strip() in {"0", "1", "2", "3", "0.0", "1.0", "2.0", "3.0"}:
        grade = int(float(grade.strip().lstrip("'")))
    if not isinstance(grade, int) or grade not in GRADES:
        raise JudgmentError(f"A grade is 0, 1, 2 or 3 (0 not relevant … 3 exactly what was asked), got {grade!r}.")
    return grade


# --------------------------------------------------------------------------- passages


@dataclass(frozen=True, order=True)
class PassageKey:
    """A passage: its document's SHA-256 and its character span in the document's text."""

    doc: str
    start: int
    end: int

    @property
    def id(self) -> str:
        """"<doc_id>:<start>-<end>" (doc_id: 16 hex digits of the document's SHA-256)."""
        return f"{self.doc[:16]}:{self.start}-{self.end}"

    def overlap(self, start: int, end: int) -> int:
        return max(0, min(self.end, end) - max(self.start, start))


_PASSAGE_ID = re.compile(r"^([0-9a-f]{16,64}):(\d+)-(\d+)$")


def parse_passage_id(passage_id: str) -> tuple[str, int, int] | None:
    """``(doc prefix, start, end)`` of a passage id, or None when it is not one."""
    found = _PASSAGE_ID.match(str(passage_id).strip())
    if not found:
        return None
    start, end = int(found.group(2)), int(found.group(3))
    return (found.group(1), start, end) if end > start else None


def quote_span(text: str, *, chars: int = QUOTE_CHARS) -> tuple[int, int]:
    """Where a phrase of about ``chars`` characters sits in the middle of ``text``, cut at
    spaces: away from both ends, so not in the overlap a passage shares with its neighbours."""
    text = text or ""
    if len(text) <= chars:
        return 0, len(text)
    begin = max(0, len(text) // 2 - chars // 2)
    space = text.find(" ", begin)
    if 0 <= space < begin + 30:
        begin = space + 1
    end = min(len(text), begin + chars)
    cut = text.rfind(" ", begin + chars // 2, end)
    if cut > 0:
        end = cut
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    return begin, end


def quote_from(text: str, *, chars: int = QUOTE_CHARS) -> str:
    """The phrase :func:`quote_span` picks, white space collapsed."""
    begin, end = quote_span(text, chars=chars)
    return " ".join((text or "")[begin:end].split())


@dataclass
class Passages:
    """The passages of one index with their keys: ``keys[i]`` belongs to ``index.chunks[i]``."""

    keys: list[PassageKey]
    by_key: dict[PassageKey, int]
    by_doc: dict[str, list[int]]
    sources: dict[str, str]  # document SHA-256 -> its source name
    documents: dict[str, dict] = field(default_factory=dict)  # SHA-256 -> document record

    def chunk_of(self, key: PassageKey) -> int | None:
        return self.by_key.get(key)

    def find_doc(self, reference: str) -> str | None:
        """A document's SHA-256 from its SHA-256, doc_id, id prefix, source or file name."""
        reference = str(reference or "").strip()
        if not reference:
            return None
        if reference in self.sources:
            return reference
        lowered = reference.lower()
        for sha in self.sources:
            if len(lowered) >= 12 and sha.startswith(lowered):
                return sha
        for sha, source in self.sources.items():
            if source == reference:
                return sha
        for sha, doc in self.documents.items():
            if doc.get("file_name") == reference:
                return sha
        folded = reference.casefold()
        matches = [sha for sha, source in self.sources.items() if source.casefold() == folded]
        return matches[0] if len(matches) == 1 else None


def passages_of(index, documents: Sequence[Mapping] = ()) -> Passages:
    """Key every chunk of ``index`` (documents: the collection's records, for their SHA-256);
    ``index`` None (an empty collection) has no passages."""
    sha_by_doc_id = {d["doc_id"]: d["sha256"] for d in documents if d.get("sha256")}
    keys: list[PassageKey] = []
    by_key: dict[PassageKey, int] = {}
    by_doc: dict[str, list[int]] = {}
    sources: dict[str, str] = {}
    for i, chunk in enumerate(index.chunks if index is not None else ()):
        doc = sha_by_doc_id.get(chunk.get("doc_id") or "") or chunk.get("doc_id") or (
            "source:" + hashlib.sha256(chunk["source"].encode("utf-8", "surrogatepass")).hexdigest())
        start, end = chunk.get("start"), chunk.get("end")
        if not isinstance(start, int) or not isinstance(end, int):
            start, end = 0, len(chunk["text"])  # an index without spans: the passage is its chunk
        key = PassageKey(doc, start, end)
        keys.append(key)
        by_key.setdefault(key, i)
        by_doc.setdefault(doc, []).append(i)
        sources.setdefault(doc, chunk["source"])
    docs = {d["sha256"]: dict(d) for d in documents if d.get("sha256")}
    return Passages(keys, by_key, by_doc, sources, docs)


# --------------------------------------------------------------------------- judgments


@dataclass(frozen=True)
class Judgment:
    """One grade. ``quote`` is a phrase of the passage (to find it again, e.g. after an export);
    ``quote_start``/``quote_end`` are set when the quote is the evidence someone gave (an
    imported spreadsheet row): a passage holding it then has this grade whatever its span."""

    query: str
    doc: str
    start: int
    end: int
    grade: int
    time: float
    source: str = ""
    quote: str = ""
    quote_start: int | None = None
    quote_end: int | None = None
    by: str = "app"

    @property
    def key(self) -> PassageKey:
        return PassageKey(self.doc, self.start, self.end)

    @property
    def query_id(self) -> str:
        return query_id(self.query)

    def to_dict(self) -> dict:
        out = asdict(self)
        return {k: v for k, v in out.items() if v not in (None, "")}

    @classmethod
    def from_dict(cls, raw: Mapping) -> Judgment:
        try:
            return cls(
                query=normalise_query(raw["query"]), doc=str(raw["doc"]), start=int(raw["start"]),
                end=int(raw["end"]), grade=check_grade(raw["grade"]), time=float(raw.get("time") or 0.0),
                source=str(raw.get("source") or ""), quote=str(raw.get("quote") or ""),
                quote_start=None if raw.get("quote_start") is None else int(raw["quote_start"]),
                quote_end=None if raw.get("quote_end") is None else int(raw["quote_end"]),
                by=str(raw.get("by") or "app"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise JudgmentError(f"A stored judgment is malformed ({exc}).") from None


@dataclass(frozen=True)
class Grade:
    """A passage's grade for one query, and whether it was mapped from another span."""

    grade: int
    mapped: bool = False
    judged_at: float = 0.0

    @property
    def label(self) -> str:
        return ("≈" if self.mapped else "") + str(self.grade)


class Judgments:
    """A collection's judgments, latest per (query, passage)."""

    def __init__(self, records: Iterable[Judgment] = ()):
        self._by: dict[tuple[str, PassageKey], Judgment] = {}
        for record in records:
            self._by[(record.query, record.key)] = record

    def __len__(self) -> int:
        return len(self._by)

    def __iter__(self):
        return iter(self._by.values())

    def records(self) -> list[Judgment]:
        return sorted(self._by.values(), key=lambda j: (j.query, j.doc, j.start, j.end))

    def queries(self) -> list[str]:
        """Judged queries, in the order of their first judgment."""
        first: dict[str, float] = {}
        for j in self._by.values():
            first[j.query] = min(first.get(j.query, j.time), j.time)
        return sorted(first, key=lambda q: (first[q], q))

    def for_query(self, query: str) -> list[Judgment]:
        query = normalise_query(query)
        return [j for (q, _), j in self._by.items() if q == query]

    def get(self, query: str, key: PassageKey) -> Judgment | None:
        return self._by.get((normalise_query(query), key))

    def with_judgment(self, judgment: Judgment) -> Judgments:
        out = Judgments(self._by.values())
        out._by[(judgment.query, judgment.key)] = judgment
        return out

    def without(self, query: str, key: PassageKey) -> Judgments:
        out = Judgments(self._by.values())
        out._by.pop((normalise_query(query), key), None)
        return out

    def to_payload(self) -> dict:
        return {"format": FORMAT, "format_version": FORMAT_VERSION,
                "judgments": [j.to_dict() for j in self.records()]}

    @property
    def token(self) -> str:
        """Changes whenever a judgment does (a cache key)."""
        digest = hashlib.sha256()
        for j in self.records():
            digest.update(f"{j.query}\0{j.doc}\0{j.start}\0{j.end}\0{j.grade}\n".encode("utf-8", "surrogatepass"))
        return digest.hexdigest()[:16]

    # ------------------------------------------------------------------ against an index
    def grades(self, query: str, passages: Passages) -> dict[int, Grade]:
        """Chunk index -> grade for ``query`` in the index ``passages`` describes.

        A judgment with an evidence quote grades every passage that holds the whole quote;
        otherwise a judged span that is a passage grades it, and failing that the passages
        that overlap it by at least half of the shorter span. Grades of passages other than
        the judged one are ``mapped``; a passage's own judgment wins over mapped ones, and
        among mapped ones the highest grade counts.
        """
        out: dict[int, Grade] = {}
        mapped: dict[int, Grade] = {}
        for j in self.for_query(query):
            exact = passages.by_key.get(j.key)
            holding = _holding_quote(j, passages)
            if holding:
                for i in holding:
                    if i == exact:
                        out[i] = Grade(j.grade, False, j.time)
                    elif i not in mapped or mapped[i].grade < j.grade:
                        mapped[i] = Grade(j.grade, True, j.time)
                continue
            if exact is not None:
                out[exact] = Grade(j.grade, False, j.time)
                continue
            for i in _overlapping(j, passages):
                if i not in mapped or mapped[i].grade < j.grade:
                    mapped[i] = Grade(j.grade, True, j.time)
        for i, grade in mapped.items():
            out.setdefault(i, grade)
        return out

    def qrels(self, passages: Passages, queries: Iterable[str] | None = None) -> dict[str, dict[int, Grade]]:
        """Query -> chunk index -> grade, for every judged query (or those given)."""
        return {q: self.grades(q, passages) for q in (queries if queries is not None else self.queries())}


def _holding_quote(j: Judgment, passages: Passages) -> list[int]:
    """The passages that hold the judgment's evidence quote whole (none without one)."""
    if j.quote_start is None or j.quote_end is None or j.quote_end <= j.quote_start:
        return []
    return [i for i in passages.by_doc.get(j.doc, [])
            if passages.keys[i].start <= j.quote_start and j.quote_end <= passages.keys[i].end]


def _overlapping(j: Judgment, passages: Passages) -> list[int]:
    """The passages that overlap the judged span by at least half of the shorter of the two."""
    length = max(j.end - j.start, 1)
    out = []
    for i in passages.by_doc.get(j.doc, []):
        key = passages.keys[i]
        shorter = max(min(length, key.end - key.start), 1)
        if key.overlap(j.start, j.end) >= MAP_OVERLAP * shorter:
            out.append(i)
    return out


# --------------------------------------------------------------------------- the store


def _store(store_or_library):
    return getattr(store_or_library, "store", store_or_library)


def load_judgments(store, name: str) -> Judgments:
    """The collection's judgments (none yet: empty)."""
    raw = _store(store).read_data(name, DATA_KEY)
    if raw is None:
        return Judgments()
    if not isinstance(raw, Mapping) or raw.get("format") != FORMAT or not isinstance(raw.get("judgments"), list):
        raise JudgmentError(f"The judgments of collection {name!r} are not in a format this version reads.")
    return Judgments(Judgment.from_dict(r) for r in raw["judgments"])


def _write(store, name: str, judgments: Judgments) -> None:
    store.write_data(name, DATA_KEY, judgments.to_payload() if len(judgments) else None)


def make_judgment(query: str, passages: Passages, chunk_index: int, grade: int, chunk_text: str = "", *,
                  by: str = "app", quote: str = "", quote_at: tuple[int, int] | None = None,
                  when: float | None = None) -> Judgment:
    """A judgment of the passage at ``chunk_index`` of the index ``passages`` describes."""
    if not 0 <= int(chunk_index) < len(passages.keys):
        raise JudgmentError(f"There is no passage {chunk_index} in this index.")
    key = passages.keys[int(chunk_index)]
    if chunk_text and not quote:  # a phrase to find the passage again by; not evidence, so no quote_at
        quote = quote_from(chunk_text)
    return Judgment(
        query=normalise_query(query), doc=key.doc, start=key.start, end=key.end, grade=check_grade(grade),
        time=time.time() if when is None else float(when), source=passages.sources.get(key.doc, ""),
        quote=quote, quote_start=quote_at[0] if quote_at else None,
        quote_end=quote_at[1] if quote_at else None, by=by,
    )


def set_grade(store, name: str, judgment: Judgment | None = None, *, query: str | None = None,
              key: PassageKey | None = None) -> Judgments:
    """Keep ``judgment`` (replacing an earlier grade of the same passage for the same query),
    or, with ``query`` and ``key`` and no judgment, forget that grade. Returns all judgments."""
    store = _store(store)
    with store.writing(name):
        judgments = load_judgments(store, name)
        if judgment is not None:
            judgments = judgments.with_judgment(judgment)
        elif query is not None and key is not None:
            judgments = judgments.without(query, key)
        else:
            raise ValueError("give a judgment, or a query and a passage key to forget")
        _write(store, name, judgments)
    return judgments


def add_judgments(store, name: str, records: Iterable[Judgment]) -> tuple[Judgments, int, int]:
    """Merge many judgments at once; returns all, how many were new, how many replaced a grade."""
    store = _store(store)
    added = replaced = 0
    with store.writing(name):
        judgments = load_judgments(store, name)
        for record in records:
            if judgments.get(record.query, record.key) is None:
                added += 1
            else:
                replaced += 1
            judgments = judgments.with_judgment(record)
        _write(store, name, judgments)
    return judgments, added, replaced
