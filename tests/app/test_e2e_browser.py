"""End to end in a real browser: `streamlit run app.py` driven by Debian's Chromium via Playwright.

Creates a collection, uploads two real PDFs, compares, opens a passage, verifies a quote.
Screenshots of every step go to test-artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import REPO, quote_from, small_pdfs

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = REPO / "test-artifacts" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"streamlit exited with code {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"streamlit did not answer on {url} within {timeout} s")


def test_browser_end_to_end(tmp_path):
    if not CHROMIUM.is_file():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (apt-get install chromium); "
                    "this test never downloads a browser")
    sync_api = pytest.importorskip("playwright.sync_api")
    pdfs = small_pdfs()
    quote = quote_from(pdfs[0])
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob("e2e-*.png"):
        old.unlink()

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, RAG_CORE_DATA_DIR=str(tmp_path / "data"), HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - the server writes to it; closed in `finally`
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    timings = {}
    try:
        wait_healthy(url, server)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1680, "height": 1050})
                page.set_default_timeout(60_000)
                expect = sync_api.expect

                def shot(name: str) -> None:
                    # Streamlit scrolls inside its own container, so a tall window shows the whole page.
                    page.set_viewport_size({"width": 1680, "height": 2400})
                    page.wait_for_timeout(800)
                    page.screenshot(path=str(SHOTS / f"e2e-{name}.png"))
                    page.set_viewport_size({"width": 1680, "height": 1050})

                def no_exception() -> None:
                    assert page.locator('[data-testid="stException"]').count() == 0, "a traceback reached the page"

                # 1. Collections: create one, upload two PDFs, read the report.
                page.goto(f"{url}/collections")
                expect(page.get_by_role("heading", name="Collections")).to_be_visible(timeout=120_000)
                page.get_by_label("Name").fill("e2e papers")
                page.get_by_role("button", name="Create collection").click()
                expect(page.get_by_text("Created collection “e2e papers”")).to_be_visible()
                shot("1-created")
                page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(p) for p in pdfs])
                for pdf in pdfs:
                    expect(page.get_by_role("button", name=f"Remove {pdf.name}")).to_be_visible()
                add = page.get_by_role("button", name="Add to collection")
                expect(add).to_be_enabled()
                t0 = time.monotonic()
                add.click()
                progress = page.locator('[data-testid="stProgress"]')
                expect(progress).to_be_visible(timeout=30_000)
                shot("2a-progress")
                expect(page.get_by_text("Last upload: 2 of 2 file(s) added")).to_be_visible(timeout=180_000)
                timings["upload"] = time.monotonic() - t0
                no_exception()
                shot("2-uploaded")

                # 2. Compare: three tables with score and cosine columns.
                page.get_by_role("link", name="Compare", exact=True).click()
                expect(page.get_by_role("heading", name="Compare searches")).to_be_visible()
                page.get_by_role("textbox", name="Question, claim or key words").fill("masked language model")
                t0 = time.monotonic()
                page.get_by_role("button", name="Compare", exact=True).click()
                tables = page.locator('[data-testid="stDataFrame"]')
                expect(tables).to_have_count(3, timeout=120_000)
                timings["compare"] = time.monotonic() - t0
                # Streamlit draws dataframes on a canvas; glide-data-grid mirrors the visible cells in an
                # accessible table, whose column headers we read.
                wanted = ("rank", "source", "page", "score", "score type", "cosine", "dense cosine", "found by",
                          "match")
                deadline = time.monotonic() + 30
                while True:
                    headers = [t.strip() for t in page.locator(
                        '[data-testid="stDataFrame"] [role="columnheader"]').all_inner_texts()]
                    if all(w in headers for w in wanted) or time.monotonic() > deadline:
                        break
                    page.wait_for_timeout(500)
                for column in wanted:
                    assert column in headers, f"column {column!r} missing from {headers}"
                assert headers.count("score") >= 2 and headers.count("cosine") >= 2, headers
                assert headers.count("rank") == 3 and headers.count("score type") == 3, headers
                expect(page.get_by_text("Hybrid reranker:")).to_be_visible()
                no_exception()
                shot("3-compare")

                # 3. Open a passage: the second hybrid row, via the passage picker.
                picker = page.get_by_label("Passage (or click a row above)")
                picker.click()
                page.keyboard.type("Hybrid #2")
                page.keyboard.press("Enter")
                expect(page.get_by_text("Hybrid #2 ·")).to_be_visible()
                expect(page.locator(".rc-passage mark").first).to_be_visible()
                expect(page.locator('[data-testid="stImage"] img')).to_be_visible()
                no_exception()
                shot("4-passage")

                # 4. Verify a real line of the BERT paper.
                page.get_by_role("link", name="Verify a quote", exact=True).click()
                expect(page.get_by_role("heading", name="Verify a quote or claim")).to_be_visible()
                page.get_by_role("textbox", name="Quote or claim").fill(quote)
                page.get_by_role("button", name="Check").click()
                expect(page.get_by_text("Found word for word").first).to_be_visible(timeout=60_000)
                expect(page.locator(".rc-passage mark.rc-hit").first).to_be_visible()
                no_exception()
                shot("5-verify")

                # 5. Settings: models, where they load from, the data folder.
                page.get_by_role("link", name="Settings & about", exact=True).click()
                expect(page.get_by_role("heading", name="Settings & about")).to_be_visible()
                expect(page.get_by_text(str(tmp_path / "data")).first).to_be_visible()
                no_exception()
                shot("6-settings")
            finally:
                browser.close()
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
        log.close()
    print(f"timings: upload of 2 PDFs {timings.get('upload', float('nan')):.1f} s, "
          f"one comparison {timings.get('compare', float('nan')):.1f} s")
