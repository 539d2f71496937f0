"""Does a long manuscript check on Verify stall another person's comparison? (not a test)

    HF_HUB_OFFLINE=1 python benchmarks/bench_app_sessions.py [--paste hostile|manuscript|both] [--json FILE]

The app runs as the README starts it, on a data folder with one collection of two shared PDFs
(embedded). Two people, each in their own browser (two Chromium processes, two sessions):

* **A** asks questions on Compare, one after another, and times each: from the click to the
  hybrid list on screen;
* **B**, once A has a few comparisons alone, pastes 30 KB on Verify (manuscript mode), presses
  *Find the statements* and then *Check N statements*, and waits for the report.

``--code DIR`` runs the app of another checkout (``git archive`` of an older commit, for the
figures before a change). ``--paste hostile`` is issue 22's paste (a token of hyphenated capitals, then a year in
parentheses: Python's patterns took ~30 s on it, all of it holding the interpreter lock);
``--paste manuscript`` is a 30 KB manuscript of quotes and cited claims made from the two
papers (a long check: about 180 statements, a third of them claims with words changed). Prints
A's comparison times alone, while B's statements are found, and while B's check runs (median
and worst), and B's own times.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PDFS = REPO.parent / "shared" / "data" / "pdfs"
BERT, DPR = "ml_bert_devlin2018_arxiv1810.04805.pdf", "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"
QUESTIONS = ["how are passages retrieved for open-domain QA", "masked language model pre-training",
             "dense passage retrieval accuracy", "fine-tuning with one additional output layer",
             "BM25 compared with dense retrievers", "next sentence prediction objective",
             "in-batch negatives for training", "bidirectional transformer encoder representations",
             "top-20 passage retrieval accuracy", "question answering datasets used for evaluation"]
PASTE_BYTES = 30_000


def build_data(folder: Path) -> Path:
    from rag_core.collections.library import Library

    data = folder / "data"
    report = Library(data).add_pdfs("papers", [PDFS / BERT, PDFS / DPR])
    assert [f.status for f in report.files] == ["ok", "ok"], report.files
    return data


def manuscript_paste() -> str:
    """About 30 KB of quotes and cited claims made from sentences of the two papers, cited [1] and
    [2]: in turn a quote word for word, a claim with every third word changed (the slow path: close
    passages, their sentences read by the bi-encoder, the meaning layer), and the sentence as a claim."""
    import random

    from rag_core.pdf.extraction import extract_pdf
    from rag_core.text.sentences import split_sentences

    rng = random.Random(22)
    out, size = [], 0
    for marker, name in (("[1]", BERT), ("[2]", DPR)):
        text = " ".join(extract_pdf(PDFS / name).text.split())
        vocabulary = text.split()
        for a, b in split_sentences(text)[20:]:
            sentence = text[a:b].rstrip(".")
            words = sentence.split()
            if not 12 <= len(words) <= 40 or not sentence[:1].isupper() or '"' in sentence:
                continue
            if len(out) % 3 == 0:
                line = f"As the authors write, \u201c{sentence}\u201d {marker}."
            elif len(out) % 3 == 1:
                line = " ".join(rng.choice(vocabulary) if i % 3 == 2 else w for i, w in enumerate(words))
                line = f"{line} {marker}."
            else:
                line = f"{sentence} {marker}."
            out.append(line)
            size += len(line) + 1
            if size >= PASTE_BYTES * (1 if marker == "[2]" else 0.5):
                break
    references = ("\n\nReferences\n\n[1] J. Devlin, M. Chang, K. Lee, K. Toutanova. 2019. BERT: Pre-training of "
                  "deep bidirectional transformers for language understanding.\n[2] V. Karpukhin, B. Oguz. 2020. "
                  "Dense passage retrieval for open-domain question answering.\n")
    paragraphs = [" ".join(out[i:i + 5]) for i in range(0, len(out), 5)]
    return "\n\n".join(paragraphs) + references


def hostile_paste() -> str:
    from rag_core.testing import hostile_manuscripts

    return hostile_manuscripts(PASTE_BYTES)["hyphenated-capitals"][1].decode("utf-8")


def start_app(data: Path, code: Path) -> tuple[subprocess.Popen, str]:
    from rag_core.testing import free_port, wait_healthy

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, RAG_CORE_DATA_DIR=str(data), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=str(code))
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_healthy(url, server, poll=0.1)
    return server, url


def browser(playwright):
    from rag_core.testing import CHROMIUM, CHROMIUM_ARGS

    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


class Comparer(threading.Thread):
    """Person A: comparisons on Compare, one after another, until told to stop."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url, self.times, self.error = url, [], None
        self.ready, self.stop = threading.Event(), threading.Event()

    def run(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        try:
            with sync_playwright() as p:
                b = browser(p)
                page = b.new_page(viewport={"width": 1600, "height": 1000})
                page.set_default_timeout(600_000)
                page.goto(f"{self.url}/compare")
                expect(page.get_by_role("heading", name="Compare searches")).to_be_visible(timeout=180_000)
                n = 0
                while not self.stop.is_set():
                    query = f"{QUESTIONS[n % len(QUESTIONS)]} {n}"
                    page.get_by_role("textbox", name="Question, claim or key words").fill(query)
                    started = time.monotonic()
                    page.get_by_role("button", name="Compare", exact=True).click()
                    expect(page.get_by_text(f"Results for \u201c{query}\u201d")).to_be_visible(timeout=600_000)
                    # the hybrid list, the last to be ready (the exact list is empty when no phrase matches)
                    hybrid = page.locator('[class*="st-key-table_hybrid_"] [data-testid="stDataFrame"]')
                    expect(hybrid).to_have_count(1, timeout=600_000)
                    self.times.append((started, time.monotonic()))
                    n += 1
                    if n >= 2:  # the first ones load the index and the models
                        self.ready.set()
                b.close()
        except Exception as exc:  # noqa: BLE001 - reported in the results
            self.error = f"{type(exc).__name__}: {exc}"
            self.ready.set()


def checker(url: str, paste: str) -> dict:
    """Person B: paste on Verify, find the statements, check them; the moments each step ended."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        b = browser(p)
        page = b.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(1_800_000)
        page.goto(f"{url}/verify?mode=manuscript")
        expect(page.get_by_role("textbox", name="Manuscript text")).to_be_visible(timeout=180_000)
        page.get_by_role("textbox", name="Manuscript text").fill(paste)
        marks = {"find": time.monotonic()}
        page.get_by_role("button", name="Find the statements").click()
        found = page.get_by_text(re.compile(r"\d+ checkable statements? in pasted text"))
        expect(found).to_be_visible(timeout=1_800_000)
        marks["found"] = time.monotonic()
        statements = int(found.inner_text().split()[0])
        marks["statements"] = statements
        if statements:
            button = page.get_by_role("button", name=re.compile(r"^Check \d+ statements?$"))
            marks["check"] = time.monotonic()
            button.click()
            expect(page.get_by_text("checked in", exact=False)).to_be_visible(timeout=1_800_000)
            marks["checked"] = time.monotonic()
        b.close()
    return marks


def overlapping(times: list[tuple[float, float]], start: float, end: float) -> list[float]:
    """Seconds of the comparisons that ran (at least in part) between ``start`` and ``end``."""
    return [round(b - a, 2) for a, b in times if a < end and b > start]


def figures(seconds: list[float]) -> dict:
    if not seconds:
        return {"n": 0}
    return {"n": len(seconds), "median_s": round(statistics.median(seconds), 2), "max_s": round(max(seconds), 2)}


def measure(url: str, paste_name: str, paste: str) -> dict:
    comparer = Comparer(url)
    comparer.start()
    comparer.ready.wait(600)
    time.sleep(8)  # a few comparisons alone
    marks = checker(url, paste) if comparer.error is None else {}
    time.sleep(4)
    comparer.stop.set()
    comparer.join(900)
    alone_until = marks.get("find", float("inf"))
    times = comparer.times
    result = {
        "paste": paste_name, "paste_bytes": len(paste.encode("utf-8")), "error": comparer.error,
        "comparison_alone": figures([round(b - a, 2) for a, b in times[1:] if b <= alone_until]),
        "comparison_while_finding": figures(overlapping(times, marks.get("find", 0), marks.get("found", 0))),
        "comparison_while_checking": figures(overlapping(times, marks.get("check", 0), marks.get("checked", 0))),
        "statements": marks.get("statements"),
        "find_s": round(marks["found"] - marks["find"], 2) if "found" in marks else None,
        "check_s": round(marks["checked"] - marks["check"], 2) if "checked" in marks else None,
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paste", choices=("hostile", "manuscript", "both"), default="both")
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose app runs (git archive of an "
                        "older commit, for the figures before a change)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    pastes = {"hostile": hostile_paste, "manuscript": manuscript_paste}
    names = list(pastes) if args.paste == "both" else [args.paste]
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-app-sessions-") as tmp:
        data = build_data(Path(tmp))
        for name in names:
            server, url = start_app(data, args.code.resolve())  # a fresh server for each paste
            try:
                result = measure(url, name, pastes[name]())
            finally:
                from rag_core.testing import stop_server

                stop_server(server)
            print(json.dumps(result), flush=True)
            results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
