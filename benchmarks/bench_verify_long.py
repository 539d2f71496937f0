"""Does a 10,000-character /verify?statement= in one tab stall another person's page? (not a test)

    HF_HUB_OFFLINE=1 python benchmarks/bench_verify_long.py [--code DIR] [--watch SECONDS] [--json FILE]

Issue 27 row 20. The app runs as the README starts it, on a data folder with one collection of two
shared PDFs (embedded). One Chromium (Debian's, never a downloaded one) with two browser contexts:

* **A** opens ``/verify?collection=papers&statement=...`` with 10,000 characters ("dense retrieval "
  repeated), which checks the statement at once;
* **B**, while A's check runs, loads ``/compare`` again and again and times each load, from the
  address to the page's heading on screen; the server's ``/_stcore/health`` is timed beside each.

Prints B's loads alone (after two that import the pages), B's loads and the health checks while A's
check ran (median and worst), and how long A's check took (until its verdict is on screen, at most
``--watch`` seconds). ``--code DIR`` runs the app of
another checkout (``git archive`` of an older commit, for the figures before a change).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_app_sessions import build_data, start_app  # noqa: E402 - the same app start and data

STATEMENT = ("dense retrieval " * 700)[:10_000]
VERDICT = re.compile(r"(verbatim|near_verbatim|related|not_found|not in collection) —|took longer than its budget")


def figures(seconds: list[float | None]) -> dict:
    """Median and worst; ``over_180_s``: the loads that had not finished after 180 s."""
    done = [s for s in seconds if s is not None]
    out = {"n": len(seconds), "over_180_s": len(seconds) - len(done)}
    if done:
        out.update(median_s=round(statistics.median(done), 2), max_s=round(max(done), 2))
    return out


def health(url: str) -> float | None:
    """Seconds of the server's health check; None past 180 s."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=180) as response:
            response.read()
    except OSError:
        return None
    return time.monotonic() - started


def load_b(page, url: str, expect) -> float | None:
    """Seconds from B's address to Compare's heading on screen; None when it took over 180 s."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    started = time.monotonic()
    try:
        page.goto(f"{url}/compare")
        expect(page.get_by_role("heading", name="Compare searches")).to_be_visible(timeout=180_000)
    except PlaywrightTimeout:
        return None
    return time.monotonic() - started


def measure(url: str, watch: float) -> dict:
    from playwright.sync_api import expect, sync_playwright

    from rag_core.testing import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        a = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
        b = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
        b.set_default_navigation_timeout(180_000)  # a frozen server held B's page 30 s and more (issue 27)
        warm = [load_b(b, url, expect) for _ in range(2)]  # the first loads import the pages
        alone = [load_b(b, url, expect) for _ in range(4)]  # B's loads with nothing else running
        a.goto(f"{url}/verify?" + urllib.parse.urlencode({"collection": "papers", "statement": STATEMENT}))
        started = time.monotonic()
        verdict = a.get_by_text(VERDICT)
        loads, checks, done = [], [], None
        while time.monotonic() - started < watch:
            loads.append(load_b(b, url, expect))
            checks.append(health(url))
            if verdict.count():
                done = time.monotonic() - started
                break
        said = verdict.first.inner_text()[:200] if done is not None else None
        browser.close()
    return {"statement_chars": len(STATEMENT), "b_loads_warm_s": [None if s is None else round(s, 2) for s in warm],
            "b_load_alone": figures(alone), "b_load_while_a_checks": figures(loads),
            "b_loads_s": [None if s is None else round(s, 2) for s in loads], "health_while_a_checks": figures(checks),
            "a_check_s": None if done is None else round(done, 1), "a_said": said}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose app runs (git archive of an "
                        "older commit, for the figures before a change)")
    parser.add_argument("--watch", type=float, default=240.0, help="seconds to wait for A's verdict at most")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from rag_core.testing import stop_server

    with tempfile.TemporaryDirectory(prefix="bench-verify-long-") as tmp:
        server, url = start_app(build_data(Path(tmp)), args.code.resolve())
        try:
            result = measure(url, args.watch)
        finally:
            stop_server(server)
    result["code"] = str(args.code)
    print(json.dumps(result), flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
