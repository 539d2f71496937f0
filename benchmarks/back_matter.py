"""Back-matter detection against hand labels (not a test): precision and recall per chunk and per page.

    python benchmarks/back_matter.py [--pdf-dir ../shared/data/pdfs] [--per-file]

Each shared PDF is extracted (``ocr="off"``: the scans have no back matter) and chunked as ingest
does (:func:`rag_core.text.passage_context.chunk_pdf`, which marks ``back_matter``). The labels in
``benchmarks/data/back_matter_pages.json`` are spans written by hand from the pages' text; a chunk
or a page is back matter when at least half of its characters lie in a labelled span. A chunk is
predicted back matter when ingest marked it; a page when at least half of its characters lie in
marked chunks. Printed: true/false positives and negatives, precision and recall, per kind.
The heuristics' thresholds were set looking at these same PDFs: the figures are not held out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.pdf.extraction import extract_pdf  # noqa: E402
from rag_core.settings import CHUNK_OVERLAP_CHARS, CHUNK_SIZE_CHARS  # noqa: E402
from rag_core.text.chunking import join_pages  # noqa: E402
from rag_core.text.passage_context import chunk_pdf  # noqa: E402

LABELS = ROOT / "benchmarks" / "data" / "back_matter_pages.json"


def labelled_spans(pages, spans: list[dict]) -> list[tuple[int, int, str]]:
    """The labels' spans as offsets into the joined text of ``pages``."""
    text, starts = join_pages(pages)
    page_at = {number: offset for offset, number, _ in starts}
    ends = {number: (starts[k + 1][0] if k + 1 < len(starts) else len(text)) for k, (_, number, _) in enumerate(starts)}

    def place(where, after: int) -> int:
        if where is None:
            return len(text)
        page, marker = where
        if page not in page_at:  # an empty page: the next page with text
            later = [n for n in page_at if n > page]
            return page_at[min(later)] if later else len(text)
        base = max(page_at[page], after)
        if marker is None:
            return page_at[page]
        found = text.find(marker, base, ends[page])
        if found < 0:
            raise ValueError(f"label marker {marker!r} not found on page {page}")
        return found

    out = []
    for span in spans:
        start = place(span["from"], 0)
        out.append((start, place(span["to"], start + 1), span["kind"]))
    return out


def covered(start: int, end: int, spans) -> int:
    return sum(max(0, min(e, end) - max(s, start)) for s, e, *_ in spans)


def score(pairs) -> dict:
    tp = sum(1 for truth, guess in pairs if truth and guess)
    fp = sum(1 for truth, guess in pairs if guess and not truth)
    fn = sum(1 for truth, guess in pairs if truth and not guess)
    tn = len(pairs) - tp - fp - fn
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf-dir", default=str(ROOT.parent / "shared" / "data" / "pdfs"))
    parser.add_argument("--per-file", action="store_true", help="list each file's misses and false finds")
    args = parser.parse_args(argv)
    labels = json.loads(LABELS.read_text(encoding="utf-8"))["files"]
    chunk_pairs, page_pairs, kind_pairs = [], [], {}
    for name in sorted(labels):
        extraction = extract_pdf(Path(args.pdf_dir) / name, ocr="off")
        pages = extraction.pages
        if not pages:
            continue
        truth = labelled_spans(pages, labels[name])
        chunks = chunk_pdf(pages, name, CHUNK_SIZE_CHARS, CHUNK_OVERLAP_CHARS,
                           metadata_title=(extraction.metadata or {}).get("title"))
        marked = [(c["start"], c["end"]) for c in chunks if c.get("back_matter")]
        misses = []
        for chunk in chunks:
            s, e = chunk["start"], chunk["end"]
            is_true = covered(s, e, truth) * 2 >= e - s
            chunk_pairs.append((is_true, bool(chunk.get("back_matter"))))
            if is_true != bool(chunk.get("back_matter")):
                misses.append(f"  {'missed' if is_true else 'false'} chunk p{chunk['page_start']}: "
                              f"{' '.join(chunk['text'][:70].split())!r}")
            kinds = {k for s0, e0, k in truth if min(e0, e) - max(s0, s) > 0}
            for kind in kinds | ({chunk["back_matter"]} if chunk.get("back_matter") else set()):
                kind_pairs.setdefault(kind, []).append((is_true and kind in kinds, chunk.get("back_matter") == kind))
        text, starts = join_pages(pages)
        for k, (offset, _number, _) in enumerate(starts):
            end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
            if end - offset < 200:  # a page of a header line only
                continue
            page_pairs.append((covered(offset, end, truth) * 2 >= end - offset,
                               covered(offset, end, marked) * 2 >= end - offset))
        if args.per_file and misses:
            print(name)
            print("\n".join(misses))
    print(f"{len(labels)} PDFs, {len(chunk_pairs)} chunks, {len(page_pairs)} pages with text (>= 200 characters)")
    for what, pairs in (("chunks", chunk_pairs), ("pages", page_pairs)):
        s = score(pairs)
        print(f"{what:7s} precision {s['precision']:.3f}  recall {s['recall']:.3f}  "
              f"(tp {s['tp']}, fp {s['fp']}, fn {s['fn']}, tn {s['tn']})")
    for kind in sorted(kind_pairs):
        s = score(kind_pairs[kind])
        print(f"  chunks, {kind:16s} precision {s['precision']:.3f}  recall {s['recall']:.3f}  "
              f"(tp {s['tp']}, fp {s['fp']}, fn {s['fn']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
