"""Ingesting the 25 shared PDFs: searchable when, embedded when, and how honest the time estimate was.

    python benchmarks/bench_ingest.py [--json] [--cold] [--background]

Runs ``Library.add_pdfs`` on ../shared/data/pdfs/ into a fresh data folder, exactly as
``rag-core ingest`` and the app do (extraction in two worker processes, the lexical commit,
then the embeddings), and records every progress event. Reports:

* seconds until the documents are searchable by TF-IDF, BM25 and exact search, and until
  every chunk has its embedding (issue 9: <= 20 s and <= 90 s on this 2-core machine);
* extraction pages per second and embedding chunks per second;
* the time estimate's error: at 10%, 25% and 50% of the elapsed total, the estimated time
  left against the time that was really left (goal: within +-30% from 10% on).

``--cold`` forgets the rates remembered by earlier runs (the first estimate then comes from
the built-in defaults). ``--background`` ingests as the app does (the call returns when the
documents are searchable, the embeddings follow in a thread): the estimate checked is then
that of the time to searchable, the one the app's upload bar shows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PDFS = REPO.parent / "shared" / "data" / "pdfs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cold", action="store_true", help="forget the rates measured by earlier ingests")
    parser.add_argument("--background", action="store_true", help="embed in the background, as the app does")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="rag-core-bench-ingest-"))
    if args.cold:
        os.environ["RAG_CORE_RATES_FILE"] = str(workdir / "rates.json")
    from rag_core.collections.library import Library
    from rag_core.models.loading import load_bi_encoder

    load_bi_encoder()  # the model load is not part of an upload the app serves (it loads at start)
    events = []
    started = time.perf_counter()
    library = Library(workdir / "data")
    files = sorted(PDFS.glob("*.pdf"))
    report = library.add_pdfs("papers", files, progress=lambda e: events.append((time.perf_counter() - started, e)),
                              embed="background" if args.background else "now")
    total = time.perf_counter() - started
    if args.background:
        from rag_core.collections.ingest.embedding import wait_for_background_embedding

        wait_for_background_embedding(library.store, "papers")
    embedded_after = time.perf_counter() - started
    shutil.rmtree(workdir, ignore_errors=True)
    pages = sum(f.pages for f in report.files if f.ok)
    extract_done = max((t for t, e in events if e.stage in ("extract", "read")), default=0.0)
    embed_events = [(t, e) for t, e in events if e.stage == "embed"]
    embed_s = embed_events[-1][0] - embed_events[0][0] if len(embed_events) > 1 else float("nan")
    embedded = embed_events[-1][1].chunks_done - embed_events[0][1].chunks_done if embed_events else 0
    checkpoints = {}
    for share in (0.1, 0.25, 0.5, 0.75):
        at = next(((t, e) for t, e in events if t >= share * total and e.eta_s is not None), None)
        if at is not None:
            truly_left = total - at[0]
            checkpoints[f"{int(share * 100)}%"] = {
                "elapsed_s": round(at[0], 1), "estimated_left_s": round(at[1].eta_s, 1),
                "truly_left_s": round(truly_left, 1),
                "error": round((at[1].eta_s - truly_left) / truly_left, 3) if truly_left > 0 else None,
            }
    figures = {
        "files": len(files), "added": len(report.added), "pages": pages, "chunks": report.chunks_added,
        "searchable_after_s": round(report.searchable_after_s or float("nan"), 1),
        "embedded_after_s": round(embedded_after, 1), "background": args.background,
        "extraction_pages_per_s": round(pages / extract_done, 1) if extract_done else None,
        "embedding_chunks_per_s": round(embedded / embed_s, 1) if embed_s == embed_s and embed_s > 0 else None,
        "eta": checkpoints, "load_average": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M"),
        "cold_rates": args.cold,
    }
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        print(f"{'goal':40s} {'target':>10s}  measured")
        print(f"{'lexically searchable after':40s} {'<= 20 s':>10s}  {figures['searchable_after_s']} s")
        print(f"{'fully embedded after':40s} {'<= 90 s':>10s}  {figures['embedded_after_s']} s")
        print(f"{'extraction (2 workers)':40s} {'':>10s}  {figures['extraction_pages_per_s']} pages/s")
        print(f"{'embedding':40s} {'':>10s}  {figures['embedding_chunks_per_s']} chunks/s")
        for share, point in checkpoints.items():
            print(f"{'time left estimated at ' + share:40s} {'+-30%':>10s}  {point['estimated_left_s']} s "
                  f"for {point['truly_left_s']} s ({point['error']:+.0%})")
        print(f"load average {figures['load_average']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
