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
was asked. Judgments are side data of the collection (key ``judgments``) with the time each was
made: the store commits every write as a checksummed generation and keeps copies
(:mod:`rag_core.collections.store.side_data`), so a lost, emptied or replaced judgments file or
row is reported by ``check-store`` and restored by ``check-store --repair``. A change is prepared
outside the collection's writer lock and committed under it (prepared again only when another
writer committed meanwhile), so a large import holds the lock only for its write.

Stored payloads: format version 2 keeps the judgments by column (each query, document, source
and author once, then one list per field), a million judgments in some tens of megabytes;
version 1 (a list of objects, written by earlier versions) is read as well.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from rag_core.errors import RagCoreError
from rag_core.index.chunk_table import chunk_places

DATA_KEY = "judgments"
FORMAT = "rag_core.judgments"
FORMAT_VERSION = 2
READ_FORMAT_VERSIONS = (1, 2)
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


def judgeable(query: str) -> bool:
    """Whether judgments can be kept for ``query`` (text, not empty, at most MAX_QUERY_CHARS once its
    white space is collapsed): a longer question can be searched, never judged."""
    try:
        normalise_query(query)
    except JudgmentError:
        return False
    return True


def query_id(query: str) -> str:
    """A stable id for a query: "q" and 10 hex digits of its SHA-256."""
    return "q" + hashlib.sha256(normalise_query(query).encode("utf-8")).hexdigest()[:10]


# A grade as text: the digit (a spreadsheet may write 3.0), optionally followed by its label
# ("3 exact", "2 relevant"); nothing else ("3abc", "1e9", "0x3", "inf" are refused).
_GRADE_TEXT = re.compile(r"([0-3])(?:\.0+)?(?:\s+(.+))?")
_GRADE_LABELS = {g: {GRADES[g], GRADE_SHORT[g].split(" ", 1)[1]} for g in GRADES}


def grade_from_text(text: str) -> int | None:
    """The grade a cell names, or None when it names none exactly (see ``_GRADE_TEXT``)."""
    text = str(text).strip()
    if text.startswith("'"):  # a spreadsheet's text marker
        text = text[1:].strip()
    found = _GRADE_TEXT.fullmatch(text)
    if not found:
        return None
    grade = int(found.group(1))
    label = found.group(2)
    if label is not None and " ".join(label.split()).casefold() not in _GRADE_LABELS[grade]:
        return None
    return grade


def check_grade(grade) -> int:
    """A grade: an int 0-3, a float with such a value, or text :func:`grade_from_text` reads."""
    if isinstance(grade, bool):
        raise JudgmentError(f"A grade is 0, 1, 2 or 3, got {grade!r}.")
    if isinstance(grade, float) and grade.is_integer():
        grade = int(grade)
    if isinstance(grade, str):
        grade = grade_from_text(grade) if len(grade) <= 60 else None
    if not isinstance(grade, int) or grade not in GRADES:
        shown = repr(grade)[:40] if grade is not None else "text that names no grade"
        raise JudgmentError(f"A grade is 0, 1, 2 or 3 (0 not relevant … 3 exactly what was asked), got {shown}.")
    return grade


# --------------------------------------------------------------------------- passages


@dataclass(frozen=True, order=True, slots=True)
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
    chunks = index.chunks if index is not None else ()
    for i, (doc_id, source, start, end) in enumerate(chunk_places(chunks)):
        doc = sha_by_doc_id.get(doc_id or "") or doc_id or (
            "source:" + hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest())
        if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
            start, end = 0, len(chunks[i]["text"])  # an index without spans: the passage is its chunk
        key = PassageKey(doc, start, end)
        keys.append(key)
        by_key.setdefault(key, i)
        by_doc.setdefault(doc, []).append(i)
        sources.setdefault(doc, source)
    docs = {d["sha256"]: dict(d) for d in documents if d.get("sha256")}
    return Passages(keys, by_key, by_doc, sources, docs)


# --------------------------------------------------------------------------- judgments


@dataclass(frozen=True, slots=True)
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
    """A collection's judgments, latest per (query, passage); treat one as a value (the methods
    that change something return a new one, sharing what did not change)."""

    def __init__(self, records: Iterable[Judgment] = ()):
        self._by: dict[str, dict[PassageKey, Judgment]] = {}  # query -> passage -> judgment
        self._count = 0
        self._token: str | None = None
        for record in records:
            self._put(record)

    def _put(self, record: Judgment) -> bool:
        """Keep ``record`` (only on an inner dict this object owns); True when it is new."""
        inner = self._by.get(record.query)
        if inner is None:
            inner = self._by[record.query] = {}
        key = record.key
        new = key not in inner
        inner[key] = record
        self._count += new
        return new

    def _copy(self) -> Judgments:
        """A new object sharing the inner dicts (copy one with :meth:`_own` before changing it)."""
        out = Judgments()
        out._by = dict(self._by)
        out._count = self._count
        return out

    def _own(self, query: str) -> None:
        self._by[query] = dict(self._by.get(query, {}))

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        return (j for inner in self._by.values() for j in inner.values())

    def records(self) -> list[Judgment]:
        return sorted(self, key=lambda j: (j.query, j.doc, j.start, j.end))

    def queries(self) -> list[str]:
        """Judged queries, in the order of their first judgment."""
        first = {q: min(j.time for j in inner.values()) for q, inner in self._by.items() if inner}
        return sorted(first, key=lambda q: (first[q], q))

    def for_query(self, query: str) -> list[Judgment]:
        """The judgments of ``query``: none for a query that cannot be judged (:func:`judgeable`)."""
        return list(self._by.get(normalise_query(query), {}).values()) if judgeable(query) else []

    def get(self, query: str, key: PassageKey) -> Judgment | None:
        return self._by.get(normalise_query(query), {}).get(key) if judgeable(query) else None

    def with_judgment(self, judgment: Judgment) -> Judgments:
        out = self._copy()
        out._own(judgment.query)
        out._put(judgment)
        return out

    def without(self, query: str, key: PassageKey) -> Judgments:
        query = normalise_query(query)
        out = self._copy()
        if key in out._by.get(query, {}):
            out._own(query)
            del out._by[query][key]
            out._count -= 1
            if not out._by[query]:
                del out._by[query]
        return out

    def merged(self, records: Iterable[Judgment]) -> tuple[Judgments, int, int]:
        """These judgments with ``records`` merged in, in one pass (a later record of the same
        query and passage replaces an earlier one); and how many were new, how many replaced one."""
        out = self._copy()
        owned: set[str] = set()
        added = replaced = 0
        for record in records:
            if record.query not in owned:
                out._own(record.query)
                owned.add(record.query)
            if out._put(record):
                added += 1
            else:
                replaced += 1
        return out, added, replaced

    def to_payload(self) -> dict:
        """The stored form (format version 2: by column; see the module docstring)."""
        tables: dict[str, dict[str, int]] = {"queries": {}, "docs": {}, "sources": {}, "by": {}}

        def ref(table: str, value: str) -> int:
            found = tables[table].get(value)
            if found is None:
                found = tables[table][value] = len(tables[table])
            return found

        columns: dict[str, list] = {name: [] for name in _COLUMNS}
        for j in self.records():
            columns["query"].append(ref("queries", j.query))
            columns["doc"].append(ref("docs", j.doc))
            columns["start"].append(j.start)
            columns["end"].append(j.end)
            columns["grade"].append(j.grade)
            columns["time"].append(j.time)
            columns["source"].append(ref("sources", j.source))
            columns["quote"].append(j.quote)
            columns["quote_start"].append(j.quote_start)
            columns["quote_end"].append(j.quote_end)
            columns["by"].append(ref("by", j.by))
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "count": self._count,
                **{table: list(values) for table, values in tables.items()}, "columns": columns}

    @property
    def token(self) -> str:
        """Changes whenever a judgment does (a cache key)."""
        if self._token is None:
            digest = hashlib.sha256()
            for j in self.records():
                digest.update(f"{j.query}\0{j.doc}\0{j.start}\0{j.end}\0{j.grade}\n".encode("utf-8", "surrogatepass"))
            self._token = digest.hexdigest()[:16]
        return self._token

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
    return Judgments(judgments_from_payload(raw, name))


def judgments_from_payload(raw, name: str = "") -> list[Judgment]:
    """The judgments of a stored payload (format version 1 or 2), or ``JudgmentError``."""
    unreadable = JudgmentError(f"The judgments of collection {name!r} are not in a format this version reads.")
    if not isinstance(raw, Mapping) or raw.get("format") != FORMAT:
        raise unreadable
    if raw.get("format_version", 1) == 1 and isinstance(raw.get("judgments"), list):
        return [Judgment.from_dict(r) for r in raw["judgments"]]
    if raw.get("format_version") != 2:
        raise unreadable
    try:
        return _from_columns(raw)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise JudgmentError(f"The judgments of collection {name!r} are malformed ({str(exc)[:200]}).") from None


_COLUMNS = ("query", "doc", "start", "end", "grade", "time", "source", "quote", "quote_start", "quote_end", "by")


def _from_columns(raw: Mapping) -> list[Judgment]:
    count = raw["count"]
    columns = raw["columns"]
    tables = {t: raw[t] for t in ("queries", "docs", "sources", "by")}
    if not isinstance(count, int) or not all(isinstance(v, list) for v in tables.values()) \
            or not all(isinstance(columns.get(c), list) and len(columns[c]) == count for c in _COLUMNS):
        raise ValueError("its columns do not all hold one value per judgment")
    if not all(isinstance(v, str) for table in tables.values() for v in table):
        raise ValueError("a query, document, source or author is not text")
    queries = [normalise_query(q) for q in tables["queries"]]
    out = []
    for q, d, start, end, grade, when, src, quote, q_start, q_end, by in zip(*(columns[c] for c in _COLUMNS),
                                                                              strict=True):
        if not (_natural(start) and _natural(end) and end > start and _natural(q, small=True)
                and _natural(d, small=True) and _natural(src, small=True) and _natural(by, small=True)):
            raise ValueError(f"judgment {len(out) + 1} has a malformed place or reference")
        if (q_start is None) != (q_end is None) or (q_start is not None and not (_natural(q_start)
                                                                               and _natural(q_end))):
            raise ValueError(f"judgment {len(out) + 1} has a malformed quote place")
        if not isinstance(quote, str) or not isinstance(when, (int, float)) or isinstance(when, bool) \
                or not math.isfinite(when):
            raise ValueError(f"judgment {len(out) + 1} has a malformed quote or time")
        out.append(Judgment(queries[q], tables["docs"][d], start, end, check_grade(grade), float(when),
                            tables["sources"][src], quote, q_start, q_end, tables["by"][by]))
    return out


def _natural(value, *, small: bool = False) -> bool:
    """A non-negative int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0 and (not small or value < 2**31)


def commit_change(store, name: str, change: Callable[[Judgments], tuple]) -> tuple:
    """Apply ``change`` (current judgments -> ``(new judgments, ...)``) and commit the result.

    The change is prepared outside the writer lock from the judgments as they are, and committed
    under the lock when no other writer committed meanwhile (it is prepared again under the lock
    when one did, or when the store cannot tell). Returns what ``change`` returned."""
    from rag_core.collections.store.side_data import prepare_value

    store = _store(store)

    def prepare():
        result = change(load_judgments(store, name))
        return result, (prepare_value(result[0].to_payload()) if len(result[0]) else None)

    token = store.data_token(name, DATA_KEY)
    prepared = prepare() if token is not None else None
    with store.writing(name):
        if prepared is None or store.data_token(name, DATA_KEY) != token:
            prepared = prepare()
        store.write_data(name, DATA_KEY, prepared[1])  # serialised already: the lock is held for the write only
    return prepared[0]


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
    if judgment is not None:
        return commit_change(store, name, lambda current: (current.with_judgment(judgment),))[0]
    if query is not None and key is not None:
        return commit_change(store, name, lambda current: (current.without(query, key),))[0]
    raise ValueError("give a judgment, or a query and a passage key to forget")


def add_judgments(store, name: str, records: Iterable[Judgment]) -> tuple[Judgments, int, int]:
    """Merge many judgments at once (one pass, one write); returns all, how many were new, how
    many replaced a grade."""
    records = list(records)
    return commit_change(store, name, lambda current: current.merged(records))
