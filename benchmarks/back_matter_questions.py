"""Reference lists in hybrid's top 5 for the judged PDF questions, back matter in and out (not a test).

    python benchmarks/back_matter_questions.py [--pdf-dir ../shared/data/pdfs]

The 25 shared PDFs are extracted and chunked as ingest does (each chunk's ``back_matter`` marked),
embedded (cached in ``~/.cache/rag_core/eval``) and searched with the package's hybrid defaults
and no cross-encoder, for each question of ``benchmarks/data/pdf_questions.csv`` (none of them was
looked at while the detector was written). Counted in each top 5: passages that are reference
lists by the hand labels (``benchmarks/data/back_matter_pages.json``, half of the passage or more)
and passages marked as back matter, with back matter searched (as before) and left out (the
app's and the CLI's default now).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from back_matter import LABELS, covered, labelled_spans  # noqa: E402

from rag_core.evaluation import cached_embeddings  # noqa: E402
from rag_core.index.build import build_index_from_chunks, index_text  # noqa: E402
from rag_core.pdf.extraction import extract_pdf  # noqa: E402
from rag_core.retrieval.ranking import search_with_spec  # noqa: E402
from rag_core.retrieval.search_spec import SearchSpec  # noqa: E402
from rag_core.settings import CHUNK_OVERLAP_CHARS, CHUNK_SIZE_CHARS  # noqa: E402
from rag_core.text.passage_context import chunk_pdf  # noqa: E402

QUESTIONS = ROOT / "benchmarks" / "data" / "pdf_questions.csv"


def main(argv=None) -> int:
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf-dir", default=str(ROOT.parent / "shared" / "data" / "pdfs"))
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args(argv)
    labels = json.loads(LABELS.read_text(encoding="utf-8"))["files"]
    chunks, truth = [], []
    for path in sorted(Path(args.pdf_dir).glob("*.pdf")):
        extraction = extract_pdf(path)
        if not extraction.ok:
            continue
        spans = [s for s in labelled_spans(extraction.pages, labels.get(path.name, [])) if s[2] == "references"]
        for chunk in chunk_pdf(extraction.pages, path.name, CHUNK_SIZE_CHARS, CHUNK_OVERLAP_CHARS,
                               metadata_title=(extraction.metadata or {}).get("title")):
            chunks.append(chunk)
            truth.append(covered(chunk["start"], chunk["end"], spans) * 2 >= chunk["end"] - chunk["start"])
    print(f"[{time.strftime('%H:%M:%S')}] {len(chunks)} chunks; embedding", file=sys.stderr, flush=True)
    embeddings = cached_embeddings([{"text": index_text(c)} for c in chunks], long_text="truncate")
    index = build_index_from_chunks(chunks, embeddings=embeddings, compute_embeddings=False)
    with open(QUESTIONS, encoding="utf-8", newline="") as handle:
        questions = list(dict.fromkeys(row["query"] for row in csv.DictReader(handle)))
    spec = SearchSpec(cross_encoder_model=None)
    for back_matter in (True, False):
        labelled = marked = with_any = 0
        for question in questions:
            rows = search_with_spec(question, index, spec, top=args.top, back_matter=back_matter)
            hits = sum(truth[r["chunk_index"]] for r in rows)
            labelled += hits
            with_any += hits > 0
            marked += sum(bool(index.chunks[r["chunk_index"]].get("back_matter")) for r in rows)
        print(f"back matter {'searched' if back_matter else 'left out'}: {len(questions)} questions, "
              f"{with_any} with a reference-list passage (hand labels) in hybrid's top {args.top}; "
              f"{labelled} such passages, {marked} marked as back matter")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
