"""Searchers and ingests on one collection at once: errors, lost documents, latencies.

    python benchmarks/stress_store.py --readers 8 --writers 2 --seconds 300 [--store URL] [--json]

Each reader process loops: load the collection's index, a TF-IDF search, an exact
search, list the documents and the collections. Each writer process loops: add one PDF
(lexical only, so the CPU goes to the readers), remove it again, and rename a second
collection there and back. At the end the collection must hold exactly its first
document, every stored file must verify, and no reader may have seen an error.
Prints one JSON object (with --json) or a short table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PDFS = REPO.parent / "shared" / "data" / "pdfs"
BASE = "awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf"
WRITES = ("phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf", "awkward_apl2011_custom_font_encoding_2col.pdf")

READER = """
import json, sys, time
from rag_core.collections.library import Library
from rag_core.retrieval.ranking import search
from rag_core.retrieval.exact import search_exact
lib = Library(sys.argv[1], store=sys.argv[3] or None)
errors, latencies = [], []
stop = time.time() + float(sys.argv[2])
while time.time() < stop:
    t = time.perf_counter()
    try:
        index = lib.load_index("c")
        search("solitary waves in a plasma", index, rerank=False, top=3)
        search_exact("waves", index, max_hits=2)
        lib.documents("c")
        lib.list()
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    latencies.append((time.perf_counter() - t) * 1000)
print(json.dumps({"errors": errors[:20], "n_errors": len(errors), "latencies_ms": latencies}))
"""

WRITER = """
import json, sys, time
from pathlib import Path
from rag_core.collections.library import Library
lib = Library(sys.argv[1], store=sys.argv[3] or None)
pdf = sys.argv[4]
stop = time.time() + float(sys.argv[2])
rounds, errors, seconds = 0, [], []
while time.time() < stop:
    t = time.perf_counter()
    try:
        report = lib.add_pdfs("c", [pdf], compute_embeddings=False)
        assert report.files[0].status == "ok", report.files[0]
        lib.remove_documents("c", [Path(pdf).name])
        side = sys.argv[5]
        lib.rename(side, side + "-x")
        lib.rename(side + "-x", side)
        rounds += 1
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    seconds.append(time.perf_counter() - t)
print(json.dumps({"rounds": rounds, "errors": errors[:20], "n_errors": len(errors), "round_s": seconds}))
"""


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(readers: int, writers: int, seconds: float, data_dir: str, store: str | None) -> dict:
    from rag_core.collections.library import Library

    library = Library(data_dir, store=store)
    library.add_pdfs("c", [PDFS / BASE], compute_embeddings=False)
    for n in range(writers):
        library.create(f"side{n}")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", READER, data_dir, str(seconds), store or ""],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(readers)]
    time.sleep(1)
    procs += [subprocess.Popen([sys.executable, "-c", WRITER, data_dir, str(seconds), store or "",
                                str(PDFS / WRITES[n % len(WRITES)]), f"side{n}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
              for n in range(writers)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=seconds + 600)
        if proc.returncode != 0:
            outputs.append({"crashed": proc.returncode, "stderr": err[-2000:]})
        else:
            outputs.append(json.loads(out))
    reads = outputs[:readers]
    writes = outputs[readers:]
    latencies = [x for r in reads for x in r.get("latencies_ms", [])]
    documents = [d["source"] for d in library.documents("c")]
    check = library.check("c")
    return {
        "readers": readers, "writers": writers, "seconds": seconds, "store": library.store.kind,
        "searches": len(latencies), "read_errors": sum(r.get("n_errors", 1) for r in reads),
        "write_errors": sum(w.get("n_errors", 1) for w in writes),
        "write_rounds": sum(w.get("rounds", 0) for w in writes),
        "examples": [e for o in outputs for e in o.get("errors", [])][:10] + [o["stderr"] for o in outputs
                                                                             if "stderr" in o][:3],
        "search_ms_p50": round(percentile(latencies, 0.5), 1), "search_ms_p95": round(percentile(latencies, 0.95), 1),
        "round_s_p50": round(statistics.median([s for w in writes for s in w.get("round_s", [])] or [float("nan")]), 2),
        "documents_at_end": documents, "lost_documents": sorted({BASE} - set(documents)),
        "extra_documents": sorted(set(documents) - {BASE}), "check_ok": check.ok, "check_problems": check.problems,
        "load_average": os.getloadavg(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--store", help="a postgresql:// URL (default: a folder store in a temporary folder)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rag-core-stress-") as data_dir:
        result = run(args.readers, args.writers, args.seconds, data_dir, args.store)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for key, value in result.items():
            print(f"{key:18s} {value}")
    ok = not (result["read_errors"] or result["write_errors"] or result["lost_documents"]
              or result["extra_documents"] or not result["check_ok"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
