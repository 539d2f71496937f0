"""Judgments in: a spreadsheet CSV, or a BEIR folder or zip, every row validated.

* **Files.** Only regular files are opened (a FIFO, a link to ``/dev/zero``, a 4 GB sparse
  file are refused unread: :mod:`rag_core.safe_files`); a CSV, ``queries.jsonl`` or qrels file
  has at most ``MAX_IMPORT_BYTES``; a zip member's declared size is checked before it is
  inflated, and it is never inflated past it. A file that is not what it claims to be (an
  over-long cell, a bad CRC, a ``queries.jsonl`` line that is not an object with an ``_id``) is
  an :class:`ImportFileError` naming the file, the row or member and what is wrong, and nothing
  is written.
* **Rows.** Each row names one query, a grade that is exactly 0, 1, 2 or 3 (a digit, possibly
  with its label: "3 exact"; never "1e9", "3abc" or "0x3"), a document of the collection and
  one passage of it: either its exact place (``doc_sha256``, ``start``, ``end``, inside the
  document and exactly a passage of this collection) or a quote found in the document. A row
  that fails is reported by its number and changes nothing; the others are merged.
* **Scale.** Rows are read and placed in one pass (a document, a query or a quote is looked up
  once), merged in one pass and written once; the collection's writer lock is held only for
  that write (:func:`rag_core.lab.judgments.commit_change`).

A CSV written by :func:`rag_core.lab.transfer.judgments_csv` goes back to its exact passages with
every field (query, place, grade, time, quote and its place, author): the round trip is lossless.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.errors import InputFileError
from rag_core.lab.judgments import (
    Judgment,
    JudgmentError,
    PassageKey,
    Passages,
    add_judgments,
    grade_from_text,
    normalise_query,
    parse_passage_id,
    passages_of,
    quote_from,
)
from rag_core.safe_files import find_member, open_zip, read_regular_file, read_zip_member, regular_file_size
from rag_core.settings import (
    MAX_IMPORT_BY_CHARS,
    MAX_IMPORT_BYTES,
    MAX_IMPORT_CELL_CHARS,
    MAX_IMPORT_PROBLEMS_LISTED,
    MAX_IMPORT_QUOTE_CHARS,
    MAX_IMPORT_ZIP_BYTES,
)

REQUIRED_COLUMNS = ("query", "document", "grade")
CSV_SUFFIXES = (".csv", ".tsv", ".txt")
_OFFSET = re.compile(r"\d{1,15}")  # a character offset: digits only (no sign, no exponent, no "inf")
_NONBLANK = re.compile(r"[^\n]+")
_LATEST_TIME = 1e11  # seconds since 1970: the year 5138; later (or not finite) is not a time


class ImportFileError(JudgmentError):
    """A file to import that cannot be read as what it claims to be; nothing was imported."""


@dataclass
class ImportReport:
    """What an import did: judgments added and replaced, and each row it could not place."""

    rows: int = 0
    added: int = 0
    replaced: int = 0
    problems: list[tuple[int, str]] = field(default_factory=list)  # (row number, what to do)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    file: str = ""  # the file as the messages name it
    unit: str = "row"  # what the numbers count: rows of a CSV, lines of a qrels file
    rejected: int = 0  # rows refused (problems beyond MAX_IMPORT_PROBLEMS_LISTED are counted, not listed)

    @property
    def imported(self) -> int:
        return self.added + self.replaced

    def problem(self, n: int, text: str) -> None:
        self.rejected += 1
        if len(self.problems) < MAX_IMPORT_PROBLEMS_LISTED:
            self.problems.append((n, text))

    def warning(self, n: int, text: str) -> None:
        if len(self.warnings) < MAX_IMPORT_PROBLEMS_LISTED:
            self.warnings.append((n, text))

    def where(self, n: int) -> str:
        """"sheet.csv, row 7": how a message names one row."""
        return f"{self.file}, {self.unit} {n}" if self.file else f"{self.unit} {n}"

    def to_dict(self) -> dict:
        return {"rows": self.rows, "added": self.added, "replaced": self.replaced, "rejected": self.rejected,
                "file": self.file, "unit": self.unit,
                "problems": [{"row": r, "problem": p} for r, p in self.problems],
                "warnings": [{"row": r, "warning": w} for r, w in self.warnings]}

    def summary(self) -> str:
        text = (f"{self.imported} of {self.rows} row(s) imported ({self.added} new, {self.replaced} replaced an "
                f"earlier grade)")
        if self.rejected:
            text += f"; {self.rejected} row(s) could not be placed and changed nothing"
            if self.rejected > len(self.problems):
                text += f" (the first {len(self.problems)} are listed)"
        return text + "."


def _shown(text: str, limit: int = 60) -> str:
    text = str(text)
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _unsafe_prefix(value: str) -> str:
    """Undo :func:`rag_core.output.render.spreadsheet_safe`'s leading apostrophe."""
    if value.startswith("'") and value[1:2] in ("=", "+", "-", "@", "\t", "\r"):
        return value[1:]
    return value


def _offset(value: str) -> int | None:
    text = str(value or "").strip()
    return int(text) if _OFFSET.fullmatch(text) else None


def _time(row: dict, default: float) -> tuple[float, str | None]:
    """A row's time: its ``time`` cell (seconds since 1970, exact), else ``judged_at`` (ISO 8601),
    else ``default``; and a warning when a cell was given and unreadable."""
    from datetime import datetime

    exact = str(row.get("time") or "").strip()
    if exact:
        try:
            value = float(exact)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and 0 <= value < _LATEST_TIME:
            return value, None
    text = str(row.get("judged_at") or "").strip()
    if not text:
        return default, (f"the time {_shown(exact, 30)} is not a time; the import's time was used" if exact else None)
    try:
        value = datetime.fromisoformat(text).timestamp()
    except (ValueError, OverflowError, OSError):
        value = math.nan
    if math.isfinite(value) and 0 <= value < _LATEST_TIME:
        return value, None
    return default, f"judged_at {_shown(text, 40)} is not an ISO 8601 time; the import's time was used"


# --------------------------------------------------------------------------- reading CSV


def _encoding(data: bytes, label: str) -> str:
    """The codec by the one rule for imported text (:mod:`rag_core.text.encoding`: a byte-order mark,
    UTF-16, strict UTF-8, Windows-1252 for a spreadsheet saved without any UTF-8 in it)."""
    from rag_core.text.encoding import TextEncodingError, text_encoding

    try:
        return text_encoding(data, label=label)[0]
    except TextEncodingError as exc:
        raise ImportFileError(str(exc)) from None


def _text(data: bytes, label: str) -> str:
    return data.decode(_encoding(data, label)).removeprefix("\ufeff")


def csv_rows(data: bytes, *, label: str = "the file") -> Iterator[tuple[int, dict[str, str]]]:
    """``(row number, {lower-case column: cell})`` for each row of a spreadsheet CSV (row 1 is the
    header; BOM, ``;`` or tab separators and Windows-1252 files are fine), read in one pass (the
    text is decoded as it is read, so a file is never held twice). :class:`ImportFileError` for a
    file too large, without the needed columns, or with a row the CSV reader cannot read (an
    over-long cell)."""
    if len(data) > MAX_IMPORT_BYTES:
        raise ImportFileError(f"{label}: is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB; split it.")
    stream = io.TextIOWrapper(io.BytesIO(data), encoding=_encoding(data, label), newline="")
    first = stream.readline(MAX_IMPORT_CELL_CHARS)
    delimiter = max((",", ";", "\t"), key=first.count)
    stream.seek(0)
    reader = csv.reader(stream, delimiter=delimiter)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise ImportFileError(f"{label}, row 1: cannot be read as CSV ({_csv_detail(exc)}).") from None
    if not header:
        raise ImportFileError(f"{label}: is empty; it needs a header row with query, document, quote and grade.")
    names = [(name or "").strip().lower().lstrip("\ufeff") for name in header]
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing or ("quote" not in names and "start" not in names):
        raise ImportFileError(
            f"{label}: the header has {', '.join(_shown(n, 40) for n in names[:20])}; it needs the columns "
            "query, document, quote and grade (0 not relevant, 1 related, 2 relevant, 3 exactly what was asked).")
    return _records(reader, names, label)


def _records(reader, names: list[str], label: str) -> Iterator[tuple[int, dict[str, str]]]:
    row = 2  # the row being read
    try:
        for cells in reader:
            if cells:
                yield row, {name: cell for name, cell in zip(names, cells, strict=False) if name}
            row += 1
    except csv.Error as exc:
        raise ImportFileError(f"{label}, row {row}: cannot be read as CSV ({_csv_detail(exc)}); nothing was "
                              "imported.") from None


def _csv_detail(exc: csv.Error) -> str:
    detail = str(exc)
    if "field larger than field limit" in detail:
        return f"a cell is longer than {MAX_IMPORT_CELL_CHARS:,} characters"
    return detail


def parse_csv(data: bytes) -> list[dict]:
    """Rows of a spreadsheet CSV as dicts with lower-case column names (see :func:`csv_rows`)."""
    return [row for _, row in csv_rows(data)]


# --------------------------------------------------------------------------- placing rows


class _Placer:
    """Places rows on passages of one index, each document, query and quote looked up once."""

    def __init__(self, index, documents, report: ImportReport, by: str):
        self.index = index
        self.passages: Passages = passages_of(index, documents)
        self.report = report
        self.by = by
        self.now = time.time()
        self._queries: dict[str, str | JudgmentError] = {}
        self._docs: dict[str, str | None] = {}
        self._lengths: dict[str, int] = {}
        self._located: dict[tuple[str, str], tuple | str | None] = {}

    def query(self, text: str) -> str:
        found = self._queries.get(text)
        if found is None:
            try:
                found = normalise_query(text)
            except JudgmentError as exc:
                found = exc
            if len(self._queries) < 100_000:
                self._queries[text] = found
        if isinstance(found, JudgmentError):
            raise found
        return found

    def doc(self, reference: str) -> str | None:
        if reference not in self._docs:
            self._docs[reference] = self.passages.find_doc(reference) if len(reference) <= 1000 else None
        return self._docs[reference]

    def length(self, sha: str) -> int:
        """How many characters the document's text has (where its last passage ends)."""
        if sha not in self._lengths:
            self._lengths[sha] = max((self.passages.keys[i].end for i in self.passages.by_doc.get(sha, [])), default=0)
        return self._lengths[sha]

    def source(self, sha: str) -> str:
        return self.passages.sources.get(sha, "")

    def locate(self, sha: str, quote: str):
        """``(chunk index, (start, end), places)`` of the first passage of ``sha`` holding ``quote``,
        None when none holds it, or the reason it cannot be searched for."""
        key = (sha, quote)
        if key not in self._located:
            from rag_core.retrieval.exact import search_exact

            try:
                hits = search_exact(quote, self.index, mode="normalized", max_hits=500, context=0,
                                    sources=[self.source(sha)])
            except ValueError as exc:
                self._located[key] = str(exc)
                return self._located[key]
            keys = self.passages.keys
            hits = [h for h in hits if keys[h["chunk_index"]].doc == sha]
            if not hits:
                self._located[key] = None
            else:
                at = [(h["chunk_index"], keys[h["chunk_index"]].start) for h in hits]
                places = sorted({(base + h["start"], base + h["end"]) for (_, base), h in zip(at, hits, strict=True)})
                holder = next(chunk for (chunk, base), h in zip(at, hits, strict=True)
                              if base + h["start"] == places[0][0])
                self._located[key] = (holder, places[0], len(places))
        return self._located[key]

    # ------------------------------------------------------------------ a CSV row
    def csv_row(self, n: int, row: dict[str, str]) -> Judgment | None:
        problem, report = self.report.problem, self.report
        try:
            query = self.query(_unsafe_prefix(row.get("query", "")))
        except JudgmentError as exc:
            problem(n, str(exc))
            return None
        grade_cell = row.get("grade", "")
        grade = grade_from_text(_unsafe_prefix(grade_cell)) if len(grade_cell) <= 60 else None
        if grade is None:
            problem(n, f"the grade {_shown(grade_cell, 30)} is not 0, 1, 2 or 3 (0 not relevant, 1 related, "
                       "2 relevant, 3 exactly what was asked)")
            return None
        document = _unsafe_prefix(str(row.get("document", "")).strip())
        sha_cell = str(row.get("doc_sha256", "")).strip()
        sha = (self.doc(sha_cell) if sha_cell else None) or self.doc(document)
        if sha is None:
            known = ", ".join(sorted(self.passages.sources.values())[:5])
            problem(n, f"document {_shown(document)} is not in the collection (it has e.g. {known}); give its file "
                       "name as the Documents list shows it")
            return None
        when, late = _time(row, self.now)
        if late:
            report.warning(n, late)
        by = " ".join(str(row.get("by") or self.by).split())[:MAX_IMPORT_BY_CHARS] or self.by
        quote = " ".join(_unsafe_prefix(str(row.get("quote", ""))).split())
        start_cell, end_cell = row.get("start", "").strip(), row.get("end", "").strip()
        if start_cell or end_cell:
            placed = self._at_span(n, sha, start_cell, end_cell, row, quote, query, grade, when, by)
            if placed is not False:
                return placed
        return self._by_quote(n, sha, quote, query, grade, when)

    def _at_span(self, n: int, sha: str, start_cell: str, end_cell: str, row: dict, quote: str, query: str,
                 grade: int, when: float, by: str):
        """The judgment of an exact place; None (a problem was recorded), or False: place it by its quote."""
        problem = self.report.problem
        start, end = _offset(start_cell), _offset(end_cell)
        name = _shown(self.source(sha))
        if start is None or end is None or end <= start:
            problem(n, f"start {_shown(start_cell, 20)} and end {_shown(end_cell, 20)} are not a place in the "
                       "document (whole numbers of characters, start before end)")
            return None
        if end > self.length(sha):
            problem(n, f"the place {start}-{end} lies outside {name} (its text has {self.length(sha):,} characters)")
            return None
        key = PassageKey(sha, start, end)
        if key not in self.passages.by_key:
            if quote:
                self.report.warning(n, f"{start}-{end} is not a passage of {name} in this collection (other chunk "
                                       "settings?); the row was placed by its quote")
                return False
            problem(n, f"the place {start}-{end} is not one passage of {name} in this collection; give a quote "
                       "copied from the passage instead")
            return None
        q_cells = row.get("quote_start", "").strip(), row.get("quote_end", "").strip()
        quote_at = (None, None)
        if any(q_cells):
            q_start, q_end = _offset(q_cells[0]), _offset(q_cells[1])
            if q_start is None or q_end is None or not start <= q_start < q_end <= end:
                problem(n, f"the quote's place {_shown(q_cells[0], 20)}-{_shown(q_cells[1], 20)} is not inside the "
                           f"passage {start}-{end}")
                return None
            quote_at = (q_start, q_end)
        if len(quote) > MAX_IMPORT_QUOTE_CHARS:
            quote = quote_from(quote)
        return Judgment(query, sha, start, end, grade, when, self.source(sha), quote, *quote_at, by=by)

    def _by_quote(self, n: int, sha: str, quote: str, query: str, grade: int, when: float) -> Judgment | None:
        problem = self.report.problem
        name = _shown(self.source(sha))
        if not quote:
            problem(n, "no quote: give a phrase copied from the passage so it can be found")
            return None
        if len(quote) > MAX_IMPORT_QUOTE_CHARS:
            problem(n, f"the quote has {len(quote):,} characters; give at most {MAX_IMPORT_QUOTE_CHARS:,} (a "
                       "phrase of the passage is enough)")
            return None
        found = self.locate(sha, quote)
        if isinstance(found, str):
            problem(n, f"the quote cannot be searched for: {found}")
            return None
        if found is None:
            problem(n, f"the quote was not found in {name} (even with ligatures, hyphenation, spacing and quote "
                       "marks folded); copy it again from the passage")
            return None
        chunk, place, count = found
        if count > 1:
            self.report.warning(n, f"the quote occurs {count} times in {name}; the first place was used (a longer "
                                   "quote is unambiguous)")
        key = self.passages.keys[chunk]
        return Judgment(query, sha, key.start, key.end, grade, when, self.source(sha), quote, place[0], place[1],
                        by=self.by)

    # ------------------------------------------------------------------ a qrel
    def qrel(self, n: int, query_text: str | None, qid: str, pid: str, grade_cell: str) -> Judgment | None:
        problem = self.report.problem
        if query_text is None:
            problem(n, f"query id {_shown(qid, 40)} is not in queries.jsonl")
            return None
        grade = grade_from_text(grade_cell) if len(grade_cell) <= 20 else None
        if grade is None:
            problem(n, f"the score {_shown(grade_cell, 20)} is not a grade 0, 1, 2 or 3")
            return None
        parsed = parse_passage_id(pid) if len(pid) <= 200 else None
        if parsed is None:
            problem(n, f"{_shown(pid)} is not a passage id of the form <doc_id>:<start>-<end>")
            return None
        sha = self.doc(parsed[0])
        if sha is None:
            problem(n, f"document {parsed[0]!r} of passage {pid!r} is not in the collection")
            return None
        chunk = self.passages.by_key.get(PassageKey(sha, parsed[1], parsed[2]))
        if chunk is None:
            problem(n, f"{pid!r} is not one passage of {_shown(self.source(sha))} in this collection (an export "
                       "of a collection with other chunk settings?)")
            return None
        try:
            query = self.query(query_text)
        except JudgmentError as exc:
            problem(n, f"query {qid!r}: {exc}")
            return None
        return Judgment(query, sha, parsed[1], parsed[2], grade, self.now, self.source(sha),
                        quote_from(self.index.chunks[chunk]["text"]), by=self.by)


def judgments_from_rows(rows, index, documents, *, by: str = "import",
                        report: ImportReport | None = None) -> tuple[list[Judgment], ImportReport]:
    """Place each CSV row (dicts, or ``(row number, dict)`` pairs) on a passage of ``index``; rows
    that cannot be placed go to the report."""
    report = report or ImportReport()
    placer = _Placer(index, documents, report, by)
    out = []
    for n, row in enumerate(rows, start=2):  # row 1 is the header
        if isinstance(row, tuple):
            n, row = row
        if not any(str(v).strip() for v in row.values()):
            continue
        report.rows += 1
        judgment = placer.csv_row(n, row)
        if judgment is not None:
            out.append(judgment)
    return out, report


# --------------------------------------------------------------------------- reading BEIR


def _jsonl_queries(data: bytes, label: str) -> dict[str, str]:
    """queries.jsonl: ``_id`` -> text; :class:`ImportFileError` naming the first malformed line."""
    text = _text(data, label)
    queries: dict[str, str] = {}
    for n, line in _lines(text):
        try:
            item = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise ImportFileError(f"{label}, line {n}: is not JSON ({str(exc)[:100]}).") from None
        if not isinstance(item, dict):
            raise ImportFileError(f"{label}, line {n}: is a JSON {type(item).__name__}, not an object with _id and "
                                  "text.")
        qid, query = item.get("_id"), item.get("text", "")
        if isinstance(qid, bool) or not isinstance(qid, (str, int)) or str(qid).strip() == "":
            raise ImportFileError(f"{label}, line {n}: has no _id (a text or a number).")
        if not isinstance(query, str):
            raise ImportFileError(f"{label}, line {n}: its text is a {type(query).__name__}, not text.")
        queries[str(qid)] = query
    return queries


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of each line that is not blank (blank lines are skipped at C speed,
    however many there are)."""
    number, last = 1, 0
    for match in _NONBLANK.finditer(text):
        number += text.count("\n", last, match.start())
        last = match.start()
        line = match.group().strip()
        if line:
            yield number, line


def _qrel_lines(data: bytes, label: str) -> Iterator[tuple[int, list[str] | None]]:
    """``(line number, [query-id, corpus-id, score])`` of each qrel (None: a malformed line), from
    a BEIR (``qrels/test.tsv``, with its header) or TREC (``qrels.txt``) file."""
    text = _text(data, label)
    for n, line in _lines(text):
        parts = line.split()
        if parts[0] == "query-id":
            continue
        if len(parts) == 4:
            parts = [parts[0], parts[2], parts[3]]
        yield n, (parts if len(parts) == 3 else None)


def _beir_files(source: str | os.PathLike | bytes, label: str) -> tuple[bytes, bytes, str, str]:
    """The bytes of queries.jsonl and of the qrels file of a BEIR folder or zip, and their labels."""
    if isinstance(source, (bytes, bytearray)) or not Path(source).is_dir():
        try:
            archive = open_zip(source, max_bytes=MAX_IMPORT_ZIP_BYTES, label=label)
        except InputFileError as exc:
            raise ImportFileError(str(exc)) from None
        with archive:
            queries = find_member(archive, ("queries.jsonl",))
            qrels = find_member(archive, ("qrels/test.tsv", "qrels.txt"))
            if queries is None or qrels is None:
                raise ImportFileError(f"{label}: holds no queries.jsonl and qrels/test.tsv (the layout `rag-core "
                                      "judgments export` writes).")
            try:
                return (read_zip_member(archive, queries, max_bytes=MAX_IMPORT_BYTES, label=label),
                        read_zip_member(archive, qrels, max_bytes=MAX_IMPORT_BYTES, label=label),
                        f"{label}, member {queries.filename}", f"{label}, member {qrels.filename}")
            except InputFileError as exc:
                raise ImportFileError(str(exc)) from None
    folder = Path(source)
    queries_path = folder / "queries.jsonl"
    qrels_path = next((p for p in (folder / "qrels" / "test.tsv", folder / "qrels.txt") if os.path.lexists(p)),
                      None)
    if not os.path.lexists(queries_path) or qrels_path is None:
        raise ImportFileError(f"{label}: holds no queries.jsonl and qrels/test.tsv (the layout `rag-core judgments "
                              "export` writes).")
    try:
        return (read_regular_file(queries_path, max_bytes=MAX_IMPORT_BYTES, label=str(queries_path)),
                read_regular_file(qrels_path, max_bytes=MAX_IMPORT_BYTES, label=str(qrels_path)),
                str(queries_path), str(qrels_path))
    except InputFileError as exc:
        raise ImportFileError(str(exc)) from None


def read_beir(source: str | os.PathLike | bytes, label: str) -> tuple[dict[str, str], Iterator, str]:
    """The queries of a BEIR folder or zip, its qrels as ``(line number, fields)``, and how
    messages name the qrels file; :class:`ImportFileError` when either cannot be read."""
    queries_data, qrels_data, queries_label, qrels_label = _beir_files(source, label)
    queries = _jsonl_queries(queries_data, queries_label)
    return queries, _qrel_lines(qrels_data, qrels_label), qrels_label


def judgments_from_beir(source, index, documents, *, report: ImportReport | None = None, by: str = "import",
                        label: str | None = None, beir=None) -> tuple[list[Judgment], ImportReport]:
    """Place each qrel of a BEIR folder or zip (bytes, or a path; or ``beir``, what
    :func:`read_beir` read) on its passage of ``index``."""
    report = report or ImportReport()
    label = label or ("the zip file" if isinstance(source, (bytes, bytearray)) else str(source))
    queries, qrels, qrels_label = beir if beir is not None else read_beir(source, label)
    report.file, report.unit = qrels_label, "line"
    placer = _Placer(index, documents, report, by)
    out = []
    for n, parts in qrels:
        report.rows += 1
        if parts is None:
            report.problem(n, "a qrel is query-id, corpus-id and score (or TREC's query-id 0 corpus-id score)")
            continue
        judgment = placer.qrel(n, queries.get(parts[0]), parts[0], parts[1], parts[2])
        if judgment is not None:
            out.append(judgment)
    return out, report


# --------------------------------------------------------------------------- the import


def _kind_of(source: str | os.PathLike | bytes, label: str) -> str:
    """"csv" or "beir", from the bytes or the path; a path that is neither a folder nor a regular
    file is refused unopened."""
    if isinstance(source, (bytes, bytearray)):
        return "beir" if bytes(source[:2]) == b"PK" else "csv"
    path = Path(source)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ImportFileError(f"{label}: no such file or folder.") from None
    except OSError as exc:
        raise ImportFileError(f"{label}: cannot be read ({exc.strerror or exc}).") from None
    if stat.S_ISDIR(info.st_mode):
        return "beir"
    try:
        regular_file_size(path, label=label)
    except InputFileError as exc:
        raise ImportFileError(str(exc)) from None
    if path.suffix.lower() in CSV_SUFFIXES:
        return "csv"
    return "beir" if path.suffix.lower() == ".zip" else "csv"


def import_judgments(library, name: str, source: str | os.PathLike | bytes, *, kind: str | None = None,
                     index=None, label: str | None = None) -> ImportReport:
    """Import judgments into collection ``name`` from a CSV (bytes or a path), or a BEIR folder
    or zip; ``kind``: "csv" or "beir" (default: from the file). Rows that can be placed are merged
    with what is there, in one write; a row that cannot changes nothing and is reported; a file
    that cannot be read raises :class:`ImportFileError` and nothing is written."""
    label = label or ("the uploaded file" if isinstance(source, (bytes, bytearray)) else str(source))
    if kind is None:
        kind = _kind_of(source, label)
    elif not isinstance(source, (bytes, bytearray)) and not Path(source).is_dir():
        _kind_of(source, label)  # refuse what is not a regular file before opening it
    if kind not in ("csv", "beir"):
        raise ValueError(f"kind must be 'csv' or 'beir', got {kind!r}")
    # the file first (a file that cannot be read fails before the collection is loaded)
    if kind == "csv":
        if isinstance(source, (bytes, bytearray)):
            data = bytes(source)
        else:
            try:
                data = read_regular_file(source, max_bytes=MAX_IMPORT_BYTES, label=label)
            except InputFileError as exc:
                raise ImportFileError(str(exc)) from None
        rows = csv_rows(data, label=label)
    else:
        beir = read_beir(source, label)
    index = index if index is not None else library.load_index(name)
    if index is None:
        raise JudgmentError(f"Collection {name!r} has no documents yet: add the PDFs the judgments are about first.")
    documents = library.documents(name)
    if kind == "csv":
        records, report = judgments_from_rows(rows, index, documents, report=ImportReport(file=label))
    else:
        records, report = judgments_from_beir(source, index, documents, label=label, beir=beir)
    if records:
        _, report.added, report.replaced = add_judgments(library, name, records)
    return report
