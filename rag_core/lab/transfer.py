"""Judgments out: CSV for spreadsheets, and the BEIR layout ``rag-core eval`` reads.

* :func:`judgments_csv` — one row per judgment: ``query, document, quote, grade`` (what a
  person writes in a spreadsheet) then the exact place (``doc_sha256, start, end``), page,
  title, time (``judged_at``, and ``time``: seconds since 1970, exact), who judged, and the
  passage. UTF-8 with a byte-order mark; every text cell that a spreadsheet would run as a
  formula is neutralised (:func:`rag_core.output.render.spreadsheet_safe`). Imported again
  (:mod:`rag_core.lab.importing`), it gives back the same judgments, field for field.
* :func:`write_beir` — ``corpus.jsonl`` (every passage of the collection, ``_id`` = passage
  id ``<doc_id>:<start>-<end>``), ``queries.jsonl``, ``qrels/test.tsv`` (BEIR) and
  ``qrels.txt`` (TREC: ``query 0 passage grade``), as a folder or a zip file.

Judgments in (CSV, a BEIR folder or zip, every row validated) are :mod:`rag_core.lab.importing`'s;
its names are importable from here too.
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from rag_core.lab.importing import (  # noqa: F401 - importable from here, as before
    REQUIRED_COLUMNS,
    ImportFileError,
    ImportReport,
    import_judgments,
    judgments_from_beir,
    judgments_from_rows,
    parse_csv,
)
from rag_core.lab.judgments import (
    Judgment,
    JudgmentError,
    Judgments,
    Passages,
    load_judgments,
    passages_of,
    query_id,
    quote_from,
)
from rag_core.output.render import page_label, short_title, spreadsheet_safe
from rag_core.settings import MAX_IMPORT_BYTES  # noqa: F401 - importable from here, as before

CSV_COLUMNS = ("query", "document", "quote", "grade", "page", "title", "judged_at", "doc_sha256", "start", "end",
               "quote_start", "quote_end", "by", "time", "passage")
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
            "quote_start": j.quote_start, "quote_end": j.quote_end, "by": j.by, "time": repr(j.time) if j.time else "",
            "passage": text,
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
