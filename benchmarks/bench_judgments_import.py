"""Judgments imports at scale and under attack (not a test): time, peak memory, and how long an
ingest into the same collection waits.

    HF_HUB_OFFLINE=1 python benchmarks/bench_judgments_import.py [--beir-rows 16000] [--csv-rows 1000000]
        [--store URL|postgres] [--skip-hostile] [--skip-ingest]

One collection of the shared PDFs (TF-IDF and BM25 only) is built in a temporary data folder
(or in ``--store``). Then, each in a new process (its peak memory is that process's ``ru_maxrss``):

* **BEIR** -- a folder of ``--beir-rows`` qrels (20 passages a query) imported with
  ``rag-core judgments import``;
* **CSV** -- a spreadsheet of ``--csv-rows`` rows (100 a query; 9 in 10 give the exact place,
  ``document`` holding the document's id prefix, 1 in 10 a quote of the passage), about 33 MB
  at a million rows, imported the same way; then imported again over the stored judgments;
* **ingest meanwhile** -- while the CSV import runs, another process ingests a PDF into the same
  collection: how long the import held the writer lock, and how long the ingest took against
  the same ingest alone;
* **hostile files** -- each malformed input of issue 22 (an over-long cell, 1e309 and inf, a
  queries.jsonl line that is a list or has no ``_id``, a bad CRC, a zip whose size fields lie,
  a FIFO, a link to /dev/zero, a 4 GB sparse file, a 49 MiB zero bomb, 10,001 zip entries):
  the exit code, the seconds, the peak memory and the one line printed.

Prints JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parents[1]
PDFS = REPO.parent / "shared" / "data" / "pdfs"
LATE_PDF = "ml_tableformer_yang2022_acl.pdf"  # ingested while the import runs (not in the collection)

# One import in its own process: seconds, peak memory, what it printed. The writer lock's hold
# time is measured by wrapping the store's writing() for the judgments commit.
IMPORTER = textwrap.dedent("""
    import json, resource, sys, time
    from contextlib import contextmanager
    from rag_core.collections.library import Library
    from rag_core.lab.transfer import import_judgments
    store, name, source = sys.argv[1], sys.argv[2], sys.argv[3]
    lib = Library(store=store)
    held = []
    real = lib.store.writing
    @contextmanager
    def timed(n):
        with real(n):
            t = time.perf_counter()
            try:
                yield
            finally:
                held.append(time.perf_counter() - t)
    lib.store.writing = timed
    t = time.perf_counter()
    started = time.time()
    report = import_judgments(lib, name, source)
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": round(seconds, 2), "started": started, "rows": report.rows,
                      "first_problems": [f"{report.where(n)}: {text}" for n, text in report.problems[:3]],
                      "added": report.added, "replaced": report.replaced, "rejected": report.rejected,
                      "lock_held_s": [round(h, 2) for h in held],
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
""")

INGESTER = textwrap.dedent("""
    import json, sys, time
    from rag_core.collections.library import Library
    store, name, pdf = sys.argv[1], sys.argv[2], sys.argv[3]
    lib = Library(store=store)
    t = time.perf_counter()
    started = time.time()
    report = lib.add_pdfs(name, [pdf], embed="none")
    print(json.dumps({"seconds": round(time.perf_counter() - t, 2), "started": started,
                      "status": report.files[0].status}))
    if report.files[0].ok:
        lib.remove_documents(name, [report.files[0].source])
""")


def run_json(code: str, *argv: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def passages(library, name: str):
    index = library.load_index(name)
    docs = {d["doc_id"]: d["sha256"] for d in library.documents(name)}
    return [(docs[c["doc_id"]], c["start"], c["end"], c["text"]) for c in index.chunks]


def write_beir(folder: Path, places, rows: int) -> None:
    rng = random.Random(7)
    (folder / "qrels").mkdir(parents=True)
    n_queries = max(1, rows // 20)
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as q:
        for k in range(n_queries):
            q.write(json.dumps({"_id": f"q{k}", "text": f"benchmark question number {k}"}) + "\n")
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for k in range(rows):
            sha, start, end, _ = places[rng.randrange(len(places))]
            out.write(f"q{k // 20}\t{sha[:16]}:{start}-{end}\t{rng.randrange(4)}\n")


def write_csv(path: Path, places, rows: int) -> None:
    """query, document (the id prefix), quote, grade, doc_sha256, start, end: 9 in 10 rows by place."""
    rng = random.Random(11)
    quoted = {}
    for sha, start, end, text in places:
        words = text.split()
        middle = len(words) // 2
        phrase = " ".join(words[middle:middle + 6])
        quoted[(sha, start, end)] = phrase if len(phrase) >= 20 and '"' not in phrase else None
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write("query,document,quote,grade,doc_sha256,start,end\r\n")
        for k in range(rows):
            sha, start, end, _ = places[rng.randrange(len(places))]
            query = f"q{k // 100}"
            if k % 10 == 9 and quoted[(sha, start, end)]:
                out.write(f'{query},{sha[:12]},"{quoted[(sha, start, end)]}",{rng.randrange(4)},,,\r\n')
            else:
                out.write(f"{query},{sha[:12]},,{rng.randrange(4)},,{start},{end}\r\n")


def hostile_files(folder: Path, places, beir: Path) -> dict[str, Path]:
    folder.mkdir()
    out: dict[str, Path] = {}
    sha, start, end, _ = places[0]
    (folder / "big-cell.csv").write_text("query,document,quote,grade\nq,x," + "y" * 200_000 + ",2\n")
    out["cell over 128 KB"] = folder / "big-cell.csv"
    (folder / "numbers.csv").write_text(f"query,document,quote,grade,doc_sha256,start,end\nq,{sha[:12]},,inf,{sha},"
                                        f"{start},{end}\nq,{sha[:12]},,2,{sha},1e309,1e309\n")
    out["1e309 and inf"] = folder / "numbers.csv"
    for name, line in (("list", b"[1, 2]\n"), ("no-id", b'{"text": "x"}\n')):
        target = folder / f"beir-{name}"
        shutil.copytree(beir, target)
        with open(target / "queries.jsonl", "ab") as handle:
            handle.write(line)
        out[f"queries.jsonl line {name}"] = target
    sparse = folder / "sparse-beir"
    shutil.copytree(beir, sparse)
    os.unlink(sparse / "queries.jsonl")
    with open(sparse / "queries.jsonl", "wb") as handle:
        handle.truncate(4 * 1024 ** 3)
    out["4 GB sparse queries.jsonl"] = sparse
    with open(folder / "sparse.csv", "wb") as handle:
        handle.truncate(4 * 1024 ** 3)
    out["4 GB sparse csv"] = folder / "sparse.csv"
    os.mkfifo(folder / "fifo.csv")
    out["FIFO"] = folder / "fifo.csv"
    (folder / "zero.csv").symlink_to("/dev/zero")
    out["link to /dev/zero"] = folder / "zero.csv"
    members = {"queries.jsonl": (beir / "queries.jsonl").read_bytes(),
               "qrels/test.tsv": (beir / "qrels" / "test.tsv").read_bytes()}
    good = zip_of(members)
    out["bad CRC"] = write(folder / "bad-crc.zip", patch(good, "queries.jsonl", 16, b"\0\0\0\0"))
    out["size field says 10 bytes"] = write(folder / "lie-small.zip", patch(good, "queries.jsonl", 24,
                                                                            struct.pack("<I", 10)))
    out["size field says 4 GB"] = write(folder / "lie-large.zip", patch(good, "queries.jsonl", 24,
                                                                        struct.pack("<I", 0xFFFF0000)))
    bomb = {"queries.jsonl": b"\n" * (49 * 1024 * 1024), "qrels/test.tsv": members["qrels/test.tsv"]}
    out["49 MiB zero bomb (honest size)"] = write(folder / "bomb.zip", zip_of(bomb))
    liar = zip_of({"queries.jsonl": b"\n" * (1 << 30), "qrels/test.tsv": members["qrels/test.tsv"]})
    out["1 GiB bomb declared 1 KiB"] = write(folder / "bomb-liar.zip", patch(liar, "queries.jsonl", 24,
                                                                            struct.pack("<I", 1024)))
    out["10,001 zip entries"] = write(folder / "entries.zip", zip_of({f"x{i}": b"" for i in range(10_001)},
                                                                     zipfile.ZIP_STORED))
    return out


def zip_of(files: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def patch(data: bytes, member: str, offset: int, value: bytes) -> bytes:
    data = bytearray(data)
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack("<H", data[at + 28:at + 30])[0]
        if data[at + 46:at + 46 + length].decode() == member:
            data[at + offset:at + offset + len(value)] = value
        at = data.find(b"PK\x01\x02", at + 1)
    return bytes(data)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def cli_import(store: str, name: str, path: Path) -> dict:
    """``rag-core judgments import`` in a new process, under /usr/bin/time for its peak memory."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "rag_core", "--store", store, "judgments",
                          "import", name, str(path)], env=env, capture_output=True, text=True, timeout=600)
    lines = run.stderr.strip().splitlines()
    peak = int(lines[-1]) if lines and lines[-1].isdigit() else None
    said = [line for line in lines[:-1] if line.strip() and not line.startswith("Command exited with")]
    if not said:  # rows refused: the summary, then one line a row
        said = run.stdout.strip().splitlines()[1:] or run.stdout.strip().splitlines()
    return {"exit": run.returncode, "seconds": round(time.perf_counter() - t, 2),
            "peak_rss_mb": None if peak is None else round(peak / 1024), "lines": len(said),
            "said": " | ".join(line.strip()[:160] for line in said[:2])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beir-rows", type=int, default=16_000)
    parser.add_argument("--csv-rows", type=int, default=1_000_000)
    parser.add_argument("--store", help="a postgresql:// URL, or 'postgres' for a throw-away pgserver (default: a "
                                        "temporary data folder)")
    parser.add_argument("--skip-hostile", action="store_true")
    parser.add_argument("--skip-ingest", action="store_true")
    args = parser.parse_args(argv)
    from rag_core.collections.library import Library

    work = Path(tempfile.mkdtemp(prefix="rag-core-judgments-bench-"))
    server = None
    store = args.store or str(work / "data")
    if store == "postgres":
        from rag_core.collections.store.local_server import start_local_server

        server, store = start_local_server(work / "pg")
    library = Library(store=store)
    name = f"lab-{time.strftime('%H%M%S')}"
    pdfs = [p for p in sorted(PDFS.glob("*.pdf")) if p.name != LATE_PDF]
    t = time.perf_counter()
    library.add_pdfs(name, pdfs, embed="none")
    places = passages(library, name)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
              "store": library.store.kind, "collection": {"documents": len(library.documents(name)),
                                                         "passages": len(places),
                                                         "build_s": round(time.perf_counter() - t, 1)}}
    print(f"collection: {report['collection']}", file=sys.stderr, flush=True)

    beir = work / "beir"
    write_beir(beir, places, args.beir_rows)
    report["beir"] = {"rows": args.beir_rows, **run_json(IMPORTER, store, name, str(beir))}
    print(f"beir: {report['beir']}", file=sys.stderr, flush=True)

    sheet = work / "sheet.csv"
    write_csv(sheet, places, args.csv_rows)
    report["csv"] = {"rows": args.csv_rows, "mb": round(sheet.stat().st_size / 1e6, 1)}
    if not args.skip_ingest:
        alone = run_json(INGESTER, store, name, str(PDFS / LATE_PDF))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        importer = subprocess.Popen([sys.executable, "-c", IMPORTER, store, name, str(sheet)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3)  # the import is reading and placing its rows: the ingest must not wait for that
        meanwhile = run_json(INGESTER, store, name, str(PDFS / LATE_PDF))
        out, err = importer.communicate(timeout=3600)
        imported = json.loads(out.strip().splitlines()[-1]) if importer.returncode == 0 else {"error": err[-2000:]}
        report["csv"].update(imported)
        report["ingest_meanwhile"] = {"alone_s": alone.get("seconds"), "during_import_s": meanwhile.get("seconds"),
                                      "status": meanwhile.get("status"),
                                      "started_after_import_s": round(meanwhile.get("started", 0)
                                                                      - imported.get("started", 0), 1)}
    else:
        report["csv"].update(run_json(IMPORTER, store, name, str(sheet)))
    print(f"csv: {report['csv']}", file=sys.stderr, flush=True)
    report["csv_again"] = run_json(IMPORTER, store, name, str(sheet))  # over a million stored judgments
    print(f"csv again: {report['csv_again']}", file=sys.stderr, flush=True)
    if not args.skip_hostile:
        report["hostile"] = {what: cli_import(store, name, path)
                             for what, path in hostile_files(work / "hostile", places, beir).items()}
    print(json.dumps(report, indent=1, ensure_ascii=False))
    library.store.close()
    if server is not None:
        server.cleanup()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
