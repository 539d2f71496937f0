"""Hostile manuscripts at every door of ``rag-core check`` (not a test): seconds, peak memory, the answer.

    HF_HUB_OFFLINE=1 python benchmarks/bench_manuscripts.py [--code DIR] [--timeout 120] [--memory-mb 4096]
        [--only NAME,...] [--skip-doors] [--skip-parse] [--json FILE]

Every input runs in a new process (its peak memory is that process's ``ru_maxrss``, from ``wait4``;
it is killed at ``--timeout`` seconds, and its address space is limited to ``--memory-mb``):

* **parse** -- each hostile manuscript of :func:`rag_core.testing.hostile_manuscripts` (the
  adversarial inputs of issue 22, at the sizes the issue measured and at 1 MB, and those found
  while fixing them) given to ``rag-core check`` against a small collection, and, apart, to
  ``read_manuscript(...).statements()`` alone (the seconds printed are the parse's own);
* **doors** -- a FIFO, a link to ``/dev/zero``, 60 MiB on standard input, a .docx zip bomb (a
  3 MB file with a 3 GB member), a .docx with an entity reference in a run, a PDF whose pages
  take seconds each to read: each given to ``rag-core check``.

``--code DIR`` runs the children on another checkout's ``rag_core`` (``git archive`` of an older
commit, for the figures before a change); the inputs are made by this checkout's
:mod:`rag_core.testing`. Prints a table, and JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PDFS = REPO.parent / "shared" / "data" / "pdfs"
COLLECTION_PDFS = ("ml_bert_devlin2018_arxiv1810.04805.pdf", "ml_dpr_karpukhin2020_arxiv2004.04906.pdf")
KB, MB = 1000, 1000 * 1000

# The sizes each input is run at: the issue's own sizes, and 1 MB (the 2 s per MB goal).
SIZES = {
    "hyphenated-capitals": (25 * KB, 50 * KB, 100 * KB, MB),
    "cite-brackets": (MB,),
    "initials": (200 * KB, MB),
    "short-paragraphs": (1_600 * KB, 3_200 * KB),
}
DEFAULT_SIZES = (MB,)

PARSE = textwrap.dedent("""
    import json, sys, time
    from rag_core.citations.manuscript import read_manuscript
    started = time.perf_counter()
    try:
        manuscript = read_manuscript(sys.argv[1])
        statements = manuscript.statements()
        answer = f"{len(statements)} statements, {len(manuscript.references)} references"
    except Exception as exc:
        answer = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"parse_s": round(time.perf_counter() - started, 3), "answer": answer[:300]}))
""")


def run(argv: list[str], *, code: Path, timeout: float, memory_mb: int, stdin: Path | None = None) -> dict:
    """One child process: exit code, seconds, peak memory (MB), and what it said (one line)."""
    env = dict(os.environ, PYTHONPATH=str(code), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    limit = memory_mb * 1024 * 1024

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            open(stdin if stdin else os.devnull, "rb") as source:
        started = time.monotonic()
        child = subprocess.Popen(argv, stdin=source, stdout=out, stderr=err, env=env, cwd=code,
                                 preexec_fn=limit_memory)
        killed = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > timeout:
                child.kill()
                killed = True
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.02)
        seconds = time.monotonic() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if killed:
        said = f"killed at {timeout:.0f} s"
    elif "Traceback" in stderr:
        said = "traceback: " + (lines[-1] if lines else "")
    elif child.returncode not in (0, 3):
        said = lines[-1] if lines else ""
    else:
        said = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    return {"rc": None if killed else child.returncode, "seconds": round(seconds, 2),
            "peak_mb": round(usage.ru_maxrss / 1024), "said": said[:300], "stdout": stdout}


def check_summary(result: dict) -> str:
    """``rag-core check --json``'s answer as a count of statements (or what it said instead)."""
    if result["rc"] in (0, 3):
        try:
            rows = json.loads(result["stdout"])
            return f"{len(rows)} statements checked"
        except ValueError:
            pass
    return result["said"]


def build_collection(data: Path, code: Path, timeout: float) -> None:
    argv = [sys.executable, "-m", "rag_core", "--data-dir", str(data), "ingest", "c",
            *(str(PDFS / name) for name in COLLECTION_PDFS), "--no-embed"]
    done = run(argv, code=code, timeout=max(timeout, 300), memory_mb=8192)
    if done["rc"] != 0:
        raise SystemExit(f"could not build the collection: {done['said']}")


def parse_cases(folder: Path, only: set[str] | None) -> list[tuple[str, int, Path]]:
    from rag_core.testing import hostile_manuscripts

    cases = []
    names = hostile_manuscripts(1000)
    for name in names:
        if only and name not in only:
            continue
        for size in SIZES.get(name, DEFAULT_SIZES):
            suffix, data = hostile_manuscripts(size)[name]
            path = folder / f"{name}-{size // KB}k{suffix}"
            path.write_bytes(data)
            cases.append((name, len(data), path))
    return cases


def door_cases(folder: Path, only: set[str] | None) -> list[tuple[str, Path, Path | None, str]]:
    """(name, manuscript argument, standard input, what it is)."""
    from rag_core.testing import docx_with_entity, slow_pdf, write_docx_bomb

    cases = []

    def wanted(name: str) -> bool:
        return not only or name in only

    if wanted("fifo"):
        fifo = folder / "draft-fifo.md"
        os.mkfifo(fifo)
        cases.append(("fifo", fifo, None, "a FIFO nobody writes to"))
    if wanted("dev-zero"):
        zero = folder / "draft-zero.txt"
        zero.symlink_to("/dev/zero")
        cases.append(("dev-zero", zero, None, "a link to /dev/zero"))
    if wanted("stdin-60mib"):
        big = folder / "stdin.txt"
        with open(big, "wb") as handle:
            line = b"A plain line of a manuscript with nothing to check in it at all.\n"
            handle.write(line * (60 * 1024 * 1024 // len(line) + 1))
        cases.append(("stdin-60mib", Path("-"), big, "60 MiB on standard input"))
    if wanted("docx-bomb"):
        bomb = write_docx_bomb(folder / "bomb.docx")
        cases.append(("docx-bomb", bomb, None, f"a {bomb.stat().st_size / MB:.1f} MB .docx with a 3 GB member"))
    if wanted("docx-xml-bomb"):
        bomb = write_docx_bomb(folder / "xml-bomb.docx", inflated_bytes=1 << 30, member="word/document.xml")
        cases.append(("docx-xml-bomb", bomb, None, f"a {bomb.stat().st_size / MB:.1f} MB .docx whose "
                      "document.xml inflates to 1 GB"))
    if wanted("docx-entity"):
        entity = folder / "entity.docx"
        entity.write_bytes(docx_with_entity("BERT \u201cobtains new state-of-the-art results on ", "x",
                                            " eleven natural language processing tasks\u201d [1]."))
        cases.append(("docx-entity", entity, None, "a .docx with an entity reference inside a quote"))
    if wanted("slow-pdf"):
        pdf = folder / "slow.pdf"
        pdf.write_bytes(slow_pdf(pages=50))
        cases.append(("slow-pdf", pdf, None, f"a {pdf.stat().st_size / KB:.0f} KB PDF whose 50 pages take "
                      "seconds each to read"))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose rag_core the children run")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--memory-mb", type=int, default=4096, help="address-space limit of each child")
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--skip-doors", action="store_true")
    parser.add_argument("--skip-parse", action="store_true", help="only rag-core check, not the parse alone")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    only = {name.strip() for name in args.only.split(",") if name.strip()} or None
    code = args.code.resolve()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-manuscripts-") as tmp:
        folder = Path(tmp)
        data = folder / "data"
        build_collection(data, code, args.timeout)
        check = [sys.executable, "-m", "rag_core", "--data-dir", str(data), "check", "c"]
        for name, size, path in parse_cases(folder, only):
            row = {"case": name, "bytes": size}
            done = run([*check, str(path), "--json"], code=code, timeout=args.timeout, memory_mb=args.memory_mb)
            row["check"] = {k: done[k] for k in ("rc", "seconds", "peak_mb")} | {"said": check_summary(done)}
            if not args.skip_parse:
                alone = run([sys.executable, "-c", PARSE, str(path)], code=code, timeout=args.timeout,
                            memory_mb=args.memory_mb)
                try:
                    parsed = json.loads(alone["stdout"].strip().splitlines()[-1])
                except (ValueError, IndexError):
                    parsed = {"parse_s": None, "answer": alone["said"]}
                row["parse"] = {"seconds": parsed["parse_s"], "peak_mb": alone["peak_mb"], "said": parsed["answer"]}
            results.append(row)
            print(json.dumps(row, ensure_ascii=False), flush=True)
        if not args.skip_doors:
            for name, path, stdin, what in door_cases(folder, only):
                done = run([*check, str(path), "--json"], code=code, timeout=args.timeout,
                           memory_mb=args.memory_mb, stdin=stdin)
                row = {"case": name, "what": what,
                       "check": {k: done[k] for k in ("rc", "seconds", "peak_mb")} | {"said": check_summary(done)}}
                if name == "docx-entity" and done["rc"] == 0:
                    rows = json.loads(done["stdout"])
                    row["check"]["statements"] = [r["statement"] for r in rows]
                results.append(row)
                print(json.dumps(row, ensure_ascii=False), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"code": str(code), "timeout_s": args.timeout,
                                         "memory_limit_mb": args.memory_mb, "results": results},
                                        indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
