"""Judgments in and out: CSV for spreadsheets, and the BEIR layout ``rag-core eval`` reads.

* :func:`judgments_csv` — one row per judgment: ``query, document, quote, grade`` (what a
  person writes in a spreadsheet) then the exact place (``doc_sha256, start, end``), page,
  title, time and the passage. UTF-8 with a byte-order mark; every text cell that a
  spreadsheet would run as a formula is neutralised (:func:`rag_core.output.render.spreadsheet_safe`).
* :func:`write_beir` — ``corpus.jsonl`` (every passage of the collection, ``_id`` = passage
  id ``<doc_id>:<start>-<end>``), ``queries.jsonl``, ``qrels/test.tsv`` (BEIR) and
  ``qrels.txt`` (TREC: ``query 0 passage grade``), as a folder or a zip file.
* :func:`import_judgments` — a CSV with at least ``query``, ``document`` (file name),
  ``quote`` (a phrase of the passage, found with the normalised exact search) and ``grade``;
  rows exported by this module go back to their exact passages. Also a BEIR folder or zip
  written by :func:`write_beir`. A row that cannot be placed is reported and nothing
  already judged is lost.
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.lab.judgments import (
    Judgment,
    JudgmentError,
    Judgments,
    Passages,
    add_judgments,
    check_grade,
    load_judgments,
    normalise_query,
    parse_passage_id,
    passages_of,
    query_id,
    quote_from,
)
from rag_core.output.render import page_label, short_title, spreadsheet_safe

CSV_COLUMNS = ("query", "document", "quote", "grade", "page", "title", "judged_at", "doc_sha256", "start", "end",
               "quote_start", "quote_end", "by", "passage")
REQUIRED_COLUMNS = ("query", "document", "grade")
MAX_IMPORT_BYTES = 50 * 1024 * 1024
MAX_ZIP_MEMBER_BYTES = 200 * 1024 * 1024
BEIR_QRELS_HEADER = "query-id\tcorpus-id\tscore"


# --------------------------------------------------------------------------- export


def _chunk_text(index, passages: Passages, j: Judgment) -> tuple[str, dict | None]:
    if index is None:
        return "", None
    i = passages.by_key.get(j.key)
    if i is None:
        return "", None
    return index.chunks[i]["text"], index.chunks[i]


def judgment_records(judgments: Judgments, index=None, documents=()) -> list[dict]:
    """One flat record per judgment (see ``CSV_COLUMNS``)."""
    passages = passages_of(index, documents) if index is not None else None
    docs = {d["sha256"]: d for d in documents if d.get("sha256")}
    out = []
    for j in judgments.records():
        text, chunk = _chunk_text(index, passages, j) if passages is not None else ("", None)
        doc = docs.get(j.doc, {})
        out.append({
            "query": j.query, "document": doc.get("source") or j.source, "quote": j.quote or quote_from(text),
            "grade": j.grade, "page": page_label(chunk) if chunk else "", "title": short_title(doc) if doc else "",
            "judged_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(j.time)) if j.time else "",
            "doc_sha256": j.doc if len(j.doc) == 64 else "", "start": j.start, "end": j.end,
            "quote_start": j.quote_start, "quote_end": j.quote_end, "by": j.by, "passage": text,
        })
    return out


def judgments_csv(judgments: Judgments, index=None, documents=()) -> bytes:
    """The judgments as CSV a spreadsheet opens safely (UTF-8 with BOM, formulas neutralised)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\r\n")
    writer.writeheader()
    for record in judgment_records(judgments, index, documents):
        writer.writerow({k: spreadsheet_safe("" if v is None else v) for k, v in record.items()})
    return out.getvalue().encode("utf-8-sig")


@dataclass
class BeirExport:
    """What :func:`beir_files` wrote: file name -> bytes, and the counts."""

    files: dict[str, bytes]
    queries: int
    qrels: int
    passages: int
    left_out: int  # judgments of documents that are not in the collection now


def beir_files(judgments: Judgments, index, documents=()) -> BeirExport:
    """The BEIR layout of the collection's judgments, against its current passages."""
    passages = passages_of(index, documents)
    docs = {d["doc_id"]: d for d in documents}
    corpus = io.StringIO()
    for i, chunk in enumerate(index.chunks):
        doc = docs.get(chunk.get("doc_id") or "")
        title = short_title(doc) if doc else chunk["source"]
        corpus.write(json.dumps({"_id": passages.keys[i].id, "title": title, "text": chunk["text"],
                                 "metadata": {"source": chunk["source"], "page": page_label(chunk)}},
                                ensure_ascii=False) + "\n")
    queries = io.StringIO()
    beir = io.StringIO()
    beir.write(BEIR_QRELS_HEADER + "\n")
    trec = io.StringIO()
    n_queries = n_qrels = 0
    for text in judgments.queries():
        grades = judgments.grades(text, passages)
        if not grades:
            continue
        qid = query_id(text)
        queries.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
        n_queries += 1
        for i, grade in sorted(grades.items()):
            pid = passages.keys[i].id
            beir.write(f"{qid}\t{pid}\t{grade.grade}\n")
            trec.write(f"{qid} 0 {pid} {grade.grade}\n")
            n_qrels += 1
    left_out = sum(1 for j in judgments if j.doc not in passages.by_doc)
    files = {"corpus.jsonl": corpus.getvalue().encode("utf-8"), "queries.jsonl": queries.getvalue().encode("utf-8"),
             "qrels/test.tsv": beir.getvalue().encode("utf-8"), "qrels.txt": trec.getvalue().encode("utf-8")}
    return BeirExport(files, n_queries, n_qrels, len(index.chunks), left_out)


def beir_zip(export: BeirExport) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in export.files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def write_beir(export: BeirExport, target: str | os.PathLike) -> Path:
    """Write the export as ``target`` (a ``.zip`` file, or a folder made for it)."""
    target = Path(target)
    if target.suffix.lower() == ".zip":
        _write_atomic(target, beir_zip(export))
        return target
    if target.exists() and not target.is_dir():
        raise JudgmentError(f"{target} exists and is not a folder; give a new folder or a .zip file name.")
    for name, data in export.files.items():
        _write_atomic(target / name, data)
    return target


def _write_atomic(path: Path, data: bytes) -> None:
    from rag_core.atomic import write_bytes_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, data)


# --------------------------------------------------------------------------- import


@dataclass
class ImportReport:
    """What an import did: judgments added and replaced, and each row it could not place."""

    rows: int = 0
    added: int = 0
    replaced: int = 0
    problems: list[tuple[int, str]] = field(default_factory=list)  # (row number, what to do)
    warnings: list[tuple[int, str]] = field(default_factory=list)

    @property
    def imported(self) -> int:
        return self.added + self.replaced

    def to_dict(self) -> dict:
        return {"rows": self.rows, "added": self.added, "replaced": self.replaced,
                "problems": [{"row": r, "problem": p} for r, p in self.problems],
                "warnings": [{"row": r, "warning": w} for r, w in self.warnings]}

    def summary(self) -> str:
        text = (f"{self.imported} of {self.rows} row(s) imported ({self.added} new, {self.replaced} replaced an "
                f"earlier grade)")
        if self.problems:
            text += f"; {len(self.problems)} row(s) could not be placed"
        return text + "."


def _unsafe_prefix(value: str) -> str:
    """Undo :func:`spreadsheet_safe`'s leading apostrophe."""
    if value.startswith("'") and value[1:2] in ("=", "+", "-", "@", "\t", "\r"):
        return value[1:]
    return value


def _decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _grade(value: str):
    text = _unsafe_prefix(str(value or "").strip())
    if text[:1].isdigit() and (len(text) == 1 or not text[1].isdigit()) and text[1:2] != ".":
        text = text[:1]
    return check_grade(text)


def _int(value) -> int | None:
    text = str(value or "").strip()
    if not text:
        return None
    try:
        return int(float(text))
    except ValueError:
        return None


def parse_csv(data: bytes) -> list[dict]:
    """Rows of a spreadsheet CSV as dicts with lower-case column names (BOM, ``;`` or tab
    separators and Windows-1252 files are fine)."""
    if len(data) > MAX_IMPORT_BYTES:
        raise JudgmentError(f"The file is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB; split it.")
    text = _decode(data)
    first = text.split("\n", 1)[0]
    delimiter = max((",", ";", "\t"), key=first.count)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    if not reader.fieldnames:
        raise JudgmentError("The file is empty: it needs a header row with query, document, quote and grade.")
    names = {name: (name or "").strip().lower().lstrip("\ufeff") for name in reader.fieldnames}
    missing = [c for c in REQUIRED_COLUMNS if c not in names.values()]
    if missing or ("quote" not in names.values() and "start" not in names.values()):
        raise JudgmentError(
            f"The file's header has {', '.join(repr(n) for n in names.values())}; it needs the columns query, "
            "document, quote and grade (0 not relevant, 1 related, 2 relevant, 3 exactly what was asked).")
    return [{names[k]: (v or "") for k, v in row.items() if k is not None} for row in reader]


def _locate(index, passages: Passages, sha: str, quote: str) -> tuple[int, tuple[int, int], int] | None:
    """The first passage holding ``quote`` in document ``sha``, the quote's place in the
    document's text, and how many distinct places hold it."""
    from rag_core.retrieval.exact import search_exact

    source = passages.sources.get(sha)
    hits = search_exact(quote, index, mode="normalized", max_hits=500, context=0, sources=[source])
    hits = [h for h in hits if passages.keys[h["chunk_index"]].doc == sha]
    if not hits:
        return None
    places = sorted({(passages.keys[h["chunk_index"]].start + h["start"],
                      passages.keys[h["chunk_index"]].start + h["end"]) for h in hits})
    first = places[0]
    holder = next(h["chunk_index"] for h in hits
                  if passages.keys[h["chunk_index"]].start + h["start"] == first[0])
    return holder, first, len(places)


def judgments_from_rows(rows: list[dict], index, documents, *, by: str = "import",
                        report: ImportReport | None = None) -> tuple[list[Judgment], ImportReport]:
    """Place each CSV row on a passage of ``index``; rows that cannot be placed go to the report."""
    report = report or ImportReport()
    passages = passages_of(index, documents)
    out = []
    now = time.time()
    for n, row in enumerate(rows, start=2):  # row 1 is the header
        if not any(str(v).strip() for v in row.values()):
            continue
        report.rows += 1
        try:
            query = normalise_query(_unsafe_prefix(row.get("query", "")))
            grade = _grade(row.get("grade", ""))
        except JudgmentError as exc:
            report.problems.append((n, str(exc)))
            continue
        document = _unsafe_prefix(str(row.get("document", "")).strip())
        quote = " ".join(_unsafe_prefix(str(row.get("quote", ""))).split())
        sha = passages.find_doc(str(row.get("doc_sha256", "")).strip()) or passages.find_doc(document)
        if sha is None:
            known = ", ".join(sorted(passages.sources.values())[:5])
            report.problems.append((n, f"document {document!r} is not in the collection (it has e.g. {known}); "
                                       "give its file name as the Documents list shows it"))
            continue
        start, end = _int(row.get("start")), _int(row.get("end"))
        q_start, q_end = _int(row.get("quote_start")), _int(row.get("quote_end"))
        if str(row.get("doc_sha256", "")).strip() == sha and start is not None and end is not None and end > start:
            quote_at = (q_start, q_end) if q_start is not None and q_end is not None and q_end > q_start else None
            out.append(Judgment(query, sha, start, end, grade, _when(row.get("judged_at"), now),
                                passages.sources.get(sha, document), quote, *(quote_at or (None, None)),
                                by=str(row.get("by") or by)[:20]))
            continue
        if not quote:
            report.problems.append((n, "no quote: give a phrase copied from the passage so it can be found"))
            continue
        try:
            found = _locate(index, passages, sha, quote)
        except ValueError as exc:
            report.problems.append((n, f"the quote cannot be searched for: {exc}"))
            continue
        if found is None:
            report.problems.append((n, f"the quote was not found in {passages.sources.get(sha)!r} (even with "
                                       "ligatures, hyphenation, spacing and quote marks folded); copy it again "
                                       "from the passage"))
            continue
        chunk_index, place, count = found
        if count > 1:
            report.warnings.append((n, f"the quote occurs {count} times in {passages.sources.get(sha)!r}; the "
                                       "first place was used (a longer quote is unambiguous)"))
        key = passages.keys[chunk_index]
        out.append(Judgment(query, sha, key.start, key.end, grade, _when(row.get("judged_at"), now),
                            passages.sources.get(sha, document), quote, place[0], place[1], by=by))
    return out, report


def _when(value, default: float) -> float:
    """A ``judged_at`` cell (ISO 8601) as a time stamp; ``default`` when empty or unreadable."""
    from datetime import datetime

    text = str(value or "").strip()
    if not text:
        return default
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return default


def _read_beir(source: str | os.PathLike | bytes) -> tuple[dict[str, str], list[tuple[str, str, int]]]:
    """Queries and qrels of a BEIR folder or zip (the first qrels file found)."""
    def parse(queries_text: str, qrels_text: str):
        queries = {}
        for line in queries_text.splitlines():
            if line.strip():
                item = json.loads(line)
                queries[str(item["_id"])] = str(item.get("text") or "")
        qrels = []
        for line in qrels_text.splitlines():
            parts = line.split()
            if len(parts) == 4:
                parts = [parts[0], parts[2], parts[3]]
            if len(parts) != 3 or parts[0] == "query-id":
                continue
            qrels.append((parts[0], parts[1], int(float(parts[2]))))
        return queries, qrels

    if isinstance(source, bytes) or zipfile.is_zipfile(source):
        archive = zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source)
        names = {info.filename: info for info in archive.infolist()}

        def member(suffixes):
            for suffix in suffixes:
                for name, info in names.items():
                    if name.endswith(suffix) and name.count("/") <= suffix.count("/") + 1:
                        if info.file_size > MAX_ZIP_MEMBER_BYTES:
                            raise JudgmentError(f"{name} in the zip file is too large to read.")
                        return archive.read(name).decode("utf-8-sig")
            raise JudgmentError(f"The zip file has no {suffixes[0]}.")

        return parse(member(("queries.jsonl",)), member(("qrels/test.tsv", "qrels.txt")))
    folder = Path(source)
    qrels_path = next((p for p in (folder / "qrels" / "test.tsv", folder / "qrels.txt") if p.is_file()), None)
    if not (folder / "queries.jsonl").is_file() or qrels_path is None:
        raise JudgmentError(f"{folder} holds no queries.jsonl and qrels/test.tsv (the layout `rag-core judgments "
                            "export` writes).")
    return parse((folder / "queries.jsonl").read_text(encoding="utf-8-sig"),
                 qrels_path.read_text(encoding="utf-8-sig"))


def judgments_from_beir(source, index, documents, *, report: ImportReport | None = None,
                        by: str = "import") -> tuple[list[Judgment], ImportReport]:
    report = report or ImportReport()
    passages = passages_of(index, documents)
    queries, qrels = _read_beir(source)
    out = []
    now = time.time()
    for n, (qid, pid, grade) in enumerate(qrels, start=1):
        report.rows += 1
        parsed = parse_passage_id(pid)
        text = queries.get(qid)
        if text is None:
            report.problems.append((n, f"query id {qid!r} is not in queries.jsonl"))
            continue
        if parsed is None:
            report.problems.append((n, f"{pid!r} is not a passage id of the form <doc_id>:<start>-<end>"))
            continue
        sha = passages.find_doc(parsed[0])
        if sha is None:
            report.problems.append((n, f"document {parsed[0]!r} of passage {pid!r} is not in the collection"))
            continue
        try:
            out.append(Judgment(normalise_query(text), sha, parsed[1], parsed[2], check_grade(grade), now,
                                passages.sources.get(sha, ""), by=by))
        except JudgmentError as exc:
            report.problems.append((n, str(exc)))
    return out, report


def import_judgments(library, name: str, source: str | os.PathLike | bytes, *, kind: str | None = None,
                     index=None) -> ImportReport:
    """Import judgments into collection ``name`` from a CSV (bytes or a path), or a BEIR
    folder or zip; ``kind``: "csv" or "beir" (default: from the file). Nothing is written
    when no row can be placed; rows that can are merged with what is there."""
    index = index if index is not None else library.load_index(name)
    if index is None:
        raise JudgmentError(f"Collection {name!r} has no documents yet: add the PDFs the judgments are about first.")
    documents = library.documents(name)
    if kind is None:
        if isinstance(source, bytes):
            kind = "beir" if source[:2] == b"PK" else "csv"
        else:
            path = Path(source)
            kind = "csv" if path.suffix.lower() in (".csv", ".tsv", ".txt") and path.is_file() else "beir"
    if kind == "csv":
        data = source if isinstance(source, bytes) else _read_limited(Path(source))
        records, report = judgments_from_rows(parse_csv(data), index, documents)
    elif kind == "beir":
        records, report = judgments_from_beir(source, index, documents)
    else:
        raise ValueError(f"kind must be 'csv' or 'beir', got {kind!r}")
    if records:
        _, report.added, report.replaced = add_judgments(library, name, records)
    return report


def _read_limited(path: Path) -> bytes:
    if not path.is_file():
        raise JudgmentError(f"{path} is not a file.")
    if path.stat().st_size > MAX_IMPORT_BYTES:
        raise JudgmentError(f"{path} is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB; split it.")
    return path.read_bytes()


def export_judgments(library, name: str, target: str | os.PathLike) -> dict:
    """Write the collection's judgments to ``target``: ``.csv`` (spreadsheet), ``.zip`` or a
    folder (BEIR layout). Returns what was written."""
    judgments = load_judgments(library, name)
    if not len(judgments):
        raise JudgmentError(f"Collection {name!r} has no judgments to export.")
    index = library.load_index(name)
    documents = library.documents(name)
    target = Path(target)
    if target.suffix.lower() == ".csv":
        _write_atomic(target, judgments_csv(judgments, index, documents))
        return {"path": str(target), "format": "csv", "judgments": len(judgments),
                "queries": len(judgments.queries())}
    if index is None:
        raise JudgmentError(f"Collection {name!r} has no passages, so no BEIR corpus can be written; export a .csv.")
    export = beir_files(judgments, index, documents)
    write_beir(export, target)
    return {"path": str(target), "format": "beir-zip" if target.suffix.lower() == ".zip" else "beir-folder",
            "judgments": len(judgments), "queries": export.queries, "qrels": export.qrels,
            "passages": export.passages, "left_out": export.left_out}
