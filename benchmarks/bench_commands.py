"""Time ``rag-core search`` and ``rag-core check`` as a user meets them (not a test): whole processes.

    python benchmarks/bench_commands.py [--data-dir DIR] [--runs 5] [--json FILE]

The goals of issue 21: on the 25 shared PDFs (1,374 passages), the median of ``--runs`` whole
``rag-core`` processes (Python's start, imports, loading the collection, the search, the
output) of ``search --mode exact`` and ``--mode tfidf`` <= 0.5 s, ``--mode bm25`` <= 0.6 s,
``--mode hybrid`` <= 0.8 s, and ``check COLLECTION -`` of one statement <= 1.0 s. A bare
``python -c pass`` is timed beside them.

The collection is made first when ``--data-dir`` has none (``rag-core ingest papers
../shared/data/pdfs``, embeddings included: a few minutes), and one untimed run of each
command warms the page cache, as a user's second command finds it. Each process is also run
once under ``python -X importtime``: the slowest imports are printed, and whether scikit-learn,
scipy.stats, torch or onnxruntime was imported at all.
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
COLLECTION = "papers"
QUERY = "dense passage retrieval for open-domain question answering"
STATEMENT = "Dense passage retrieval outperforms a strong Lucene-BM25 system on open-domain QA [1].\n"
HEAVY = ("sklearn", "scipy.stats", "torch", "onnxruntime", "transformers")

CASES = [  # name, arguments after `rag-core --data-dir DIR`, goal in seconds
    ("search --mode exact", ["search", COLLECTION, QUERY, "--mode", "exact"], 0.5),
    ("search --mode tfidf", ["search", COLLECTION, QUERY, "--mode", "tfidf"], 0.5),
    ("search --mode bm25", ["search", COLLECTION, QUERY, "--mode", "bm25"], 0.6),
    ("search --mode hybrid", ["search", COLLECTION, QUERY, "--mode", "hybrid"], 0.8),
    ("check COLLECTION - (one statement)", ["check", COLLECTION, "-"], 1.0),
]


def command(data_dir: Path, args: list[str], *python_flags: str) -> list[str]:
    return [sys.executable, *python_flags, "-m", "rag_core", "--data-dir", str(data_dir), *args]


def run(argv: list[str], stdin: str | None) -> tuple[float, subprocess.CompletedProcess]:
    # Bytecode cached as an installed package has it (a session may set PYTHONDONTWRITEBYTECODE:
    # compiling rag_core's sources again was ~0.2 s of every process); kept outside the checkout.
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPYCACHEPREFIX=str(Path(tempfile.gettempdir()) / "rag-core-bench-pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 3):  # check exits 3 only with --fail-on
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, done


def imports(data_dir: Path, args: list[str], stdin: str | None) -> dict:
    """Which heavy modules the command imported, and its slowest imports (cumulative ms)."""
    _, done = run(command(data_dir, args, "-X", "importtime"), stdin)
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = (part.strip() for part in line[len("import time:"):].split("|"))
            if cumulative.isdigit():
                rows.append((int(cumulative) / 1000, name))
    names = {name for _, name in rows}
    top = sorted((r for r in rows if "." not in r[1]), reverse=True)[:6]  # top-level packages
    return {"heavy_imported": [m for m in HEAVY if m in names],
            "slowest_top_level_ms": [[n, round(ms)] for ms, n in top]}


def ensure_collection(data_dir: Path) -> None:
    if (data_dir / "collections" / COLLECTION).is_dir():
        return
    print(f"making the collection {COLLECTION!r} in {data_dir} (a few minutes)...", file=sys.stderr, flush=True)
    run(command(data_dir, ["ingest", COLLECTION, str(PDFS)]), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/rag-core-bench-commands"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    ensure_collection(args.data_dir)
    figures: dict = {"runs": args.runs, "load_before": os.getloadavg(), "cases": {}}
    bare = [run([sys.executable, "-c", "pass"], None)[0] for _ in range(args.runs)]
    figures["bare_python_s"] = round(statistics.median(bare), 3)
    for name, argv, goal in CASES:
        stdin = STATEMENT if argv[0] == "check" else None
        full = command(args.data_dir, argv)
        run(full, stdin)  # warm the page cache
        times = [run(full, stdin)[0] for _ in range(args.runs)]
        figures["cases"][name] = {"goal_s": goal, "median_s": round(statistics.median(times), 3),
                                  "min_s": round(min(times), 3), "max_s": round(max(times), 3),
                                  **imports(args.data_dir, argv, stdin)}
    figures["load_after"] = os.getloadavg()
    print(f"load average before {figures['load_before'][0]:.2f}, after {figures['load_after'][0]:.2f}; "
          f"bare python {figures['bare_python_s']:.3f} s; median of {args.runs} whole processes")
    print(f"{'command':38s} {'goal':>7s} {'median':>8s} {'min-max':>13s}  heavy imports")
    for name, f in figures["cases"].items():
        met = "met" if f["median_s"] <= f["goal_s"] else "NOT MET"
        print(f"{name:38s} {f['goal_s']:6.2f}s {f['median_s']:7.3f}s {f['min_s']:5.2f}-{f['max_s']:5.2f}s  "
              f"{','.join(f['heavy_imported']) or '-':24s} {met}")
    for name, f in figures["cases"].items():
        print(f"  {name}: slowest imports {', '.join(f'{n} {ms} ms' for n, ms in f['slowest_top_level_ms'])}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
