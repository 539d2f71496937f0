"""BEIR datasets: read a folder (corpus, queries, qrels) and chunk its documents as PDFs are.

A BEIR folder holds ``corpus.jsonl`` (or ``corpus.jsonl.gz``), ``queries.jsonl`` and
``qrels/<split>.tsv``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_core.settings import CHUNK_OVERLAP_CHARS, CHUNK_SIZE_CHARS
from rag_core.text.chunking import chunk_text

TITLE_MODES = ("prefix", "every_chunk", "none")
DEFAULT_TITLE_MODE = "prefix"


@dataclass
class BeirDataset:
    """A BEIR dataset: ``corpus`` id -> {"title", "text"}, ``queries`` id -> text (only
    the queries judged in ``qrels``), ``qrels`` query id -> {doc id: relevance}."""

    corpus: dict[str, dict]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    name: str = ""
    split: str = "test"
    folder: Path | None = None


def _open_text(path: Path):
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _read_jsonl(path: Path) -> Iterable[dict]:
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {number} is not valid JSON ({exc.msg})") from None


def _find(folder: Path, names: Sequence[str], what: str) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(
        f"{folder} is not a complete BEIR folder: no {what} (looked for {', '.join(names)})."
    )


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """``query-id<TAB>corpus-id<TAB>score`` lines (a header line and CRLF endings are fine)."""
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            row = [cell.strip() for cell in row]
            if not row or not any(row):
                continue
            if len(row) == 4:  # TREC format: qid 0 docid rel
                row = [row[0], row[2], row[3]]
            if len(row) != 3:
                raise ValueError(
                    f"{path}: line {number} has {len(row)} columns, expected 3 (query-id, corpus-id, score)"
                )
            try:
                score = int(float(row[2]))
            except ValueError:
                if number == 1:  # the header line
                    continue
                raise ValueError(f"{path}: line {number}: score {row[2]!r} is not a number") from None
            qrels.setdefault(row[0], {})[row[1]] = score
    return qrels


def load_beir(folder: str | Path, split: str = "test") -> BeirDataset:
    """Read a BEIR folder; only queries judged in ``qrels/<split>.tsv`` are kept."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"BEIR dataset folder {folder} does not exist.")
    corpus_path = _find(folder, ("corpus.jsonl", "corpus.jsonl.gz"), "corpus")
    queries_path = _find(folder, ("queries.jsonl", "queries.jsonl.gz"), "queries file")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (folder / "qrels").glob("*.tsv")) if (folder / "qrels").is_dir() else []
        raise FileNotFoundError(
            f"{folder}: no qrels for split {split!r} ({qrels_path} is missing; "
            f"splits present: {', '.join(available) or 'none'})."
        )
    corpus = {
        str(doc["_id"]): {"title": doc.get("title") or "", "text": doc.get("text") or ""}
        for doc in _read_jsonl(corpus_path)
    }
    all_queries = {str(q["_id"]): q.get("text") or "" for q in _read_jsonl(queries_path)}
    qrels = read_qrels(qrels_path)
    queries = {qid: all_queries[qid] for qid in qrels if qid in all_queries}
    qrels = {qid: rels for qid, rels in qrels.items() if qid in queries}
    if not queries:
        raise ValueError(f"{folder}: none of the {split} qrels' query ids is in {queries_path.name}.")
    return BeirDataset(corpus, queries, qrels, name=folder.name, split=split, folder=folder)


def document_chunks(
    corpus: Mapping[str, dict],
    *,
    title_mode: str = DEFAULT_TITLE_MODE,
    chunk_size: int = CHUNK_SIZE_CHARS,
    overlap: int = CHUNK_OVERLAP_CHARS,
) -> list[dict]:
    """Chunks of every document, as for a PDF's text; each chunk knows its ``doc_id``.

    ``title_mode``: ``prefix`` (``title. text``, then chunking), ``every_chunk`` (the
    text is chunked, the title put in front of each chunk) or ``none``.
    """
    if title_mode not in TITLE_MODES:
        raise ValueError(f"title_mode must be one of {TITLE_MODES}, got {title_mode!r}")
    chunks: list[dict] = []
    for doc_id, doc in corpus.items():
        title = (doc.get("title") or "").strip()
        text = doc.get("text") or ""
        if title_mode == "prefix" and title:
            sep = " " if title[-1] in ".?!:" else ". "
            pieces = chunk_text(title + sep + text, doc_id, chunk_size, overlap)
        else:
            pieces = chunk_text(text, doc_id, chunk_size, overlap)
            if title_mode == "every_chunk" and title:
                sep = " " if title[-1] in ".?!:" else ". "
                for piece in pieces:
                    piece["text"] = title + sep + piece["text"]
            if not pieces and title:
                pieces = chunk_text(title, doc_id, chunk_size, overlap)
        for piece in pieces:
            piece["doc_id"] = doc_id
        chunks.extend(pieces)
    return chunks
