"""Passage-level quality on the shared PDFs, measured with the relevance lab's judgments.

The judged questions (``benchmarks/data/pdf_questions.csv``: query, document, quote, grade;
the quote is located in each variant's passages with the normalised exact search) are run
against every variant of how PDFs are chunked and embedded:

* ``fixed``: :func:`rag_core.text.chunking.chunk_pages` at fixed strides (cuts words);
* ``words``: chunk boundaries between words (``word_boundaries=True``);
* ``+context``: each chunk carries its document title and section heading for BM25 and the
  bi-encoder (:mod:`rag_core.text.passage_context`); ``+title`` / ``+section``: only one of them;
  ``+title-bm25`` (etc.): BM25 reads it, the bi-encoder embeds the plain text;
* long-text mode of the bi-encoder: ``truncate`` or ``windows``.

Every method ranks as the product does (:func:`rag_core.lab.queryset.evaluate_judged`), with
the package's hybrid defaults and no cross-encoder. Embeddings are cached with the
evaluation's cache (``~/.cache/rag_core/eval``), so a second run only searches.

    python benchmarks/lab_pdf_quality.py [--variants fixed,words,fixed+context,words+context]
        [--long-text truncate,windows] [--json docs/results/pdf_questions.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from rag_core.evaluation import cached_embeddings  # noqa: E402
from rag_core.evaluation.methods import method_label  # noqa: E402
from rag_core.index.build import build_index_from_chunks, index_text  # noqa: E402
from rag_core.lab.judgments import Judgments  # noqa: E402
from rag_core.lab.queryset import evaluate_judged  # noqa: E402
from rag_core.lab.transfer import judgments_from_rows, parse_csv  # noqa: E402
from rag_core.retrieval.search_spec import SearchSpec  # noqa: E402
from rag_core.settings import CHUNK_OVERLAP_CHARS, CHUNK_SIZE_CHARS  # noqa: E402
from rag_core.text.passage_context import chunk_pdf, guess_title  # noqa: E402

METHODS = "tfidf,bm25,dense,hybrid,hybrid_mmr"
DEFAULT_PDFS = REPO.parent / "shared" / "data" / "pdfs"
DEFAULT_QUESTIONS = REPO / "benchmarks" / "data" / "pdf_questions.csv"


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def extract_all(folder: Path) -> list[tuple[str, str, list]]:
    """(source, sha256, pages) of every PDF with text (extraction as ingest does it)."""
    from rag_core.pdf.extraction import extract_pdf

    out = []
    for path in sorted(folder.glob("*.pdf")):
        extraction = extract_pdf(path)
        if extraction.ok:
            out.append((path.name, hashlib.sha256(path.read_bytes()).hexdigest(), extraction.pages))
    say(f"{len(out)} PDFs with text in {folder}")
    return out


def build(documents, *, word_boundaries: bool, context: str, long_text: str):
    """``context``: "" (none), "context" (title and section heading), "title" or "section"; with
    "-bm25" (e.g. "title-bm25") only BM25 reads it, the bi-encoder embeds the plain text."""
    bm25_only = context.endswith("-bm25")
    context = context.removesuffix("-bm25")
    chunks, records = [], []
    for source, sha, pages in documents:
        pieces = chunk_pdf(pages, source, CHUNK_SIZE_CHARS, CHUNK_OVERLAP_CHARS, word_boundaries=word_boundaries,
                           context=bool(context))
        if context in ("title", "section"):
            title = guess_title(next((p.text for p in pages if p.text.strip()), ""))
            for piece in pieces:
                parts = piece.get("context", "").split(" — ", 1) if title else ["", piece.get("context", "")]
                kept = (parts[0] if context == "title" else (parts[1] if len(parts) > 1 else "")).strip()
                if kept:
                    piece["context"] = kept
                else:
                    piece.pop("context", None)
        for piece in pieces:
            piece["doc_id"] = sha[:16]
        chunks.extend(pieces)
        records.append({"doc_id": sha[:16], "sha256": sha, "source": source})
    embedded = [{"text": c["text"] if bm25_only else index_text(c)} for c in chunks]
    embeddings = cached_embeddings(embedded, long_text=long_text, progress=lambda m: say(m))
    index = build_index_from_chunks(chunks, embeddings=embeddings, compute_embeddings=False, long_text=long_text)
    return index, records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdfs", type=Path, default=DEFAULT_PDFS)
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    parser.add_argument("--variants", default="fixed,words,fixed+context,words+context")
    parser.add_argument("--long-text", default="truncate")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--json", type=Path, help="write every figure (and per-query values) here")
    args = parser.parse_args(argv)
    documents = extract_all(args.pdfs)
    rows = parse_csv(args.questions.read_bytes())
    results = {}
    for variant in [v.strip() for v in args.variants.split(",") if v.strip()]:
        for long_text in [m.strip() for m in args.long_text.split(",") if m.strip()]:
            name = f"{variant}/{long_text}"
            say(f"{name}: chunking and embedding")
            context = variant.split("+", 1)[1] if "+" in variant else ""
            index, records = build(documents, word_boundaries=variant.startswith("words"), context=context,
                                   long_text=long_text)
            records_j, report = judgments_from_rows(rows, index, records)
            if report.problems:
                say(f"{name}: {len(report.problems)} question rows could not be placed: {report.problems[:3]}")
            # the package's hybrid search, no cross-encoder
            run = evaluate_judged(index, records, Judgments(records_j), spec=SearchSpec(cross_encoder_model=None),
                                  methods=args.methods, progress=None)
            summary = run.summary()
            results[name] = {
                "chunks": len(index.chunks), "queries": len(run.queries),
                "methods": {m: {k: e.to_dict() for k, e in row.items()} for m, row in summary.items()},
                "per_query": {m: {run.queries[q]: v for q, v in per.items()} for m, per in run.per_query.items()},
            }
            print(f"\n{name}: {len(index.chunks)} chunks, {len(run.queries)} questions")
            print(f"{'method':<14} {'nDCG@10 [95% CI]':>24} {'found in top 5':>15} {'MRR@10':>7} {'R@10':>6}")
            for method, row in summary.items():
                found = round((row["success@5"].mean or 0) * row["success@5"].n)
                print(f"{method_label(method):<14} {row['ndcg@10'].text():>24} {found:>9}/{row['success@5'].n:<5} "
                      f"{row['mrr@10'].mean:>7.3f} {row['recall@10'].mean:>6.3f}", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
