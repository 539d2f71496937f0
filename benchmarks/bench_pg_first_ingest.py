"""Two first ingests into one new collection at the same moment (not a test): a lab's first shared upload.

    HF_HUB_OFFLINE=1 python benchmarks/bench_pg_first_ingest.py --rounds 20 [--stores postgres,folder]

Each round names a collection that does not exist yet and starts two ``rag-core ingest``
processes at once, each adding another small real PDF (``--no-embed``). A round counts as
landed when both processes exit 0 with their file "ok" and the collection then holds both
documents and passes ``check``. Without ``--url`` a throw-away PostgreSQL 16 with pgvector is
started with pgserver. Prints JSON: rounds landed per store, the errors, the seconds a round took.
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

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parents[1]
PDFS = REPO.parent / "shared" / "data" / "pdfs"
PAIR = ["phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf", "awkward_apl2011_custom_font_encoding_2col.pdf"]


def one_round(store: str, name: str) -> tuple[bool, list[str], float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    children = [subprocess.Popen([sys.executable, "-m", "rag_core", "--store", store, "ingest", name, str(PDFS / pdf),
                                  "--no-embed", "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for pdf in PAIR]
    errors = []
    for child, pdf in zip(children, PAIR, strict=True):
        out, err = child.communicate(timeout=600)
        try:
            status = json.loads(out)["files"][0]["status"]
        except (ValueError, KeyError, IndexError):
            status = None
        if child.returncode != 0 or status != "ok":
            errors.append(f"{name} / {pdf}: exit {child.returncode}, status {status}: {err.strip()[-300:]}")
    seconds = time.perf_counter() - started
    from rag_core.collections.library import Library

    library = Library(store=store)
    try:
        held = sorted(d["source"] for d in library.documents(name))
        check_ok = library.check(name).ok
    except Exception as exc:  # noqa: BLE001 - a benchmark reports whatever went wrong
        held, check_ok = [], False
        errors.append(f"{name}: {type(exc).__name__}: {exc}")
    if held != sorted(PAIR):
        errors.append(f"{name}: holds {held}")
    return not errors and check_ok, errors, seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--stores", default="postgres", help="comma-separated: postgres, folder")
    parser.add_argument("--url", help="a postgresql:// URL (default: a throw-away pgserver)")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="rag-core-first-ingest-"))
    server = None
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
              "rounds": args.rounds, "stores": {}}
    for kind in [k.strip() for k in args.stores.split(",") if k.strip()]:
        if kind == "postgres":
            store = args.url
            if store is None:
                from rag_core.collections.store.local_server import start_local_server

                server, store = start_local_server(workdir / "pg")
        else:
            store = str(workdir / "folder")
        landed, errors, seconds = 0, [], []
        stamp = time.strftime("%H%M%S")
        for r in range(args.rounds):
            ok, round_errors, took = one_round(store, f"first upload {stamp}-{r}")
            landed += ok
            errors += round_errors
            seconds.append(took)
            print(f"[{kind}] round {r + 1}: {'both landed' if ok else 'FAILED'} ({took:.1f} s)", file=sys.stderr,
                  flush=True)
        report["stores"][kind] = {"landed": landed, "of": args.rounds, "errors": errors,
                                  "round_seconds_median": round(statistics.median(seconds), 2),
                                  "round_seconds_max": round(max(seconds), 2)}
    print(json.dumps(report, indent=1))
    if server is not None:
        server.cleanup()
    return 0 if all(s["landed"] == s["of"] for s in report["stores"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
