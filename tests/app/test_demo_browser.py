"""Compare and the lab as a demo, in a real browser (Debian's Chromium via Playwright): a link reproduces a
comparison in a fresh page, a changed hybrid setting gives a new link that reproduces the new lists, the
rank, grade, score and cosine columns are in view at 1600 and 1280 px, the lab keeps its tab, and after an
upload the embedding status reaches "ready" without a reload.

Screenshots of the lists at 1280 and 1600 px go to docs/screenshots/ (the README shows them); the
timings are printed (pytest -s).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from urllib.parse import urlencode

import pytest

from rag_core.testing import CHROMIUM, CHROMIUM_ARGS, free_port, stop_server, wait_healthy
from tests.app.support import COLLECTION, small_pdfs
from tests.support import REPO

pytestmark = pytest.mark.slow

DOCS_SHOTS = REPO / "docs" / "screenshots"
SHOTS = REPO / "test-artifacts" / "screenshots"
QUESTION = "masked language model"
IN_VIEW = ("#", "grade", "score", "cosine")


@pytest.fixture()
def server(built_data_dir, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(built_data_dir, data)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, RAG_CORE_DATA_DIR=str(data), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--browser.gatherUsageStats", "false"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(url, process)
        yield url
    finally:
        stop_server(process)
        log.close()


@pytest.fixture()
def browser():
    if not CHROMIUM.is_file():
        pytest.skip("Chromium is not installed at /usr/bin/chromium; this test never downloads a browser")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        sync_api.expect.set_options(timeout=60_000)
        try:
            yield chromium, sync_api.expect
        finally:
            chromium.close()


def lists(page):
    return page.locator('[class*="st-key-table_"] [data-testid="stDataFrame"]')


def table(page, kind: str):
    return page.locator(f'[class*="st-key-table_{kind}"] [data-testid="stDataFrame"]')


def wait_drawn(page, expect, count: int = 3) -> None:
    expect(page.get_by_text(f"Results for “{QUESTION}”")).to_be_visible(timeout=300_000)
    expect(lists(page)).to_have_count(count, timeout=120_000)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=120_000)


def headers_in_view(page, kind: str) -> dict[str, bool]:
    """For each of IN_VIEW: is the list's column wholly in view, without sideways scrolling?

    The grid draws on a canvas; its accessible header row holds only the columns at least partly in
    view. So a column is wholly in view when its header is there and so is the next column's
    ("passage", which follows score and cosine in every list)."""
    grid = table(page, kind)
    grid.scroll_into_view_if_needed()
    grid.hover()
    page.wait_for_timeout(600)
    names = [h.strip() for h in grid.locator('[role="columnheader"]').all_inner_texts()]
    wanted = [n for n in IN_VIEW if kind == "hybrid" or n != "score"]
    return {name: name in names and "passage" in names for name in wanted}


def cells(page, kind: str) -> list[str]:
    """The text of the list's cells in view (its accessible grid, filled once the canvas is drawn)."""
    grid = table(page, kind)
    deadline = time.monotonic() + 60
    while grid.count() != 1 and time.monotonic() < deadline:  # a stale copy of the run before goes away
        page.wait_for_timeout(500)
    grid.scroll_into_view_if_needed()
    while True:
        grid.hover()
        texts = [t.strip() for t in grid.locator('[role="gridcell"]').all_inner_texts()]
        if any(texts) or time.monotonic() > deadline:
            return texts
        page.wait_for_timeout(500)


def test_a_link_reproduces_the_comparison_and_the_lists_are_readable(server, browser, capsys):
    chromium, expect = browser
    DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1600, "height": 1000})
    context.set_default_timeout(120_000)
    address = f"{server}/compare?" + urlencode({"collection": COLLECTION, "q": QUESTION})

    # 1. The link, in a fresh page: the three lists are drawn without a click.
    page = context.new_page()
    page.goto(address)
    wait_drawn(page, expect)
    assert page.locator('[data-testid="stException"]').count() == 0
    for kind in ("tfidf", "hybrid"):  # rank, grade, score and cosine in view at 1600 px
        assert all(headers_in_view(page, kind).values()), (kind, headers_in_view(page, kind))
    page.locator('[class*="st-key-table_"]').first.scroll_into_view_if_needed()
    page.get_by_text(f"Results for “{QUESTION}”").scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    page.screenshot(path=str(DOCS_SHOTS / "compare-1600.png"))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_timeout(1500)
    for kind in ("tfidf", "hybrid"):
        assert all(headers_in_view(page, kind).values()), (kind, "1280 px", headers_in_view(page, kind))
    page.get_by_text(f"Results for “{QUESTION}”").scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    page.screenshot(path=str(DOCS_SHOTS / "compare-1280.png"))
    page.set_viewport_size({"width": 1600, "height": 1000})

    # 2. Copy link shows the address of what is on screen.
    page.get_by_role("button", name="Copy link").click()
    expect(page.locator('[data-testid="stCode"]').first).to_contain_text("q=masked+language+model")
    page.keyboard.press("Escape")

    # 3. A hybrid setting changed: the address follows; opened in a fresh page it gives the same lists.
    before = page.url
    pool = page.get_by_label("Pool size", exact=True)
    pool.fill("12")
    pool.press("Enter")
    expect(page).to_have_url(re.compile(r"pool=12"), timeout=120_000)
    expect(page.get_by_text("Compared with the settings before:")).to_be_visible(timeout=120_000)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=120_000)
    assert page.url != before
    shown = {kind: cells(page, kind) for kind in ("tfidf", "hybrid")}
    fresh = context.new_page()
    fresh.goto(page.url)
    wait_drawn(fresh, expect)
    expect(fresh.get_by_label("Pool size", exact=True)).to_have_value("12")
    for kind in ("tfidf", "hybrid"):
        again = cells(fresh, kind)
        # the same passages in the same order (the reopened list has no "vs before" column, so the
        # columns in view differ: compare the passage cells, "chip — passage")
        passages = [c for c in again if " — " in c]
        assert passages and passages == [c for c in shown[kind] if " — " in c], (kind, again, shown[kind])
    fresh.screenshot(path=str(SHOTS / "demo-reopened.png"))

    # 4. Verify and the lab keep the collection (and the lab its tab) in the address.
    page.get_by_role("link", name="Relevance lab", exact=True).click()
    expect(page).to_have_url(re.compile(r"/lab\?collection=two\+papers"), timeout=120_000)
    lab = context.new_page()
    lab.goto(f"{server}/lab?" + urlencode({"collection": COLLECTION, "tab": "Import / export"}))
    tab = lab.get_by_role("tab", name="Import / export")
    expect(tab).to_have_attribute("aria-selected", "true", timeout=180_000)
    weight = lab.get_by_role("slider", name="Dense weight α")
    weight.focus()
    lab.keyboard.press("ArrowRight")
    lab.wait_for_timeout(1500)
    expect(lab.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=120_000)
    expect(lab.get_by_role("tab", name="Import / export")).to_have_attribute("aria-selected", "true")
    context.close()


def test_after_an_upload_the_embedding_status_reaches_ready_without_a_reload(server, browser, capsys):
    chromium, expect = browser
    context = chromium.new_context(viewport={"width": 1600, "height": 1000})
    context.set_default_timeout(120_000)
    page = context.new_page()
    page.goto(f"{server}/collections")
    expect(page.get_by_role("heading", name="Collections")).to_be_visible(timeout=120_000)
    page.get_by_role("textbox", name="Name", exact=True).fill("demo upload")
    page.get_by_role("button", name="Create collection").click()
    expect(page.get_by_text("Created collection “demo upload”")).to_be_visible()
    pdfs = small_pdfs()
    page.locator('[data-testid="stFileUploader"]').filter(has_text="PDF files").locator(
        '[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(p) for p in pdfs])
    add = page.get_by_role("button", name="Add to collection")
    expect(add).to_be_enabled()
    add.click()
    expect(page.get_by_text(f"Last upload: {len(pdfs)} of {len(pdfs)} file(s) added")).to_be_visible(timeout=300_000)
    uploaded = time.monotonic()
    page.evaluate("window.__no_reload = 'kept'")  # a reload of the page would drop it
    status = page.locator('[class*="st-key-embedding_status"]')
    expect(status).to_be_visible(timeout=60_000)
    assert "no embedding yet" not in status.inner_text(), "a running embedder is not 'no embedding yet'"
    SHOTS.mkdir(parents=True, exist_ok=True)
    status.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "demo-embedding-running.png"))
    expect(status).to_contain_text("are ready", timeout=600_000)
    ready_after = time.monotonic() - uploaded
    status.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "demo-embedding-ready.png"))
    assert page.evaluate("window.__no_reload") == "kept", "the page was not reloaded"
    assert page.locator('[data-testid="stException"]').count() == 0
    context.close()
    with capsys.disabled():
        print(f"\nembedding status 'ready' {ready_after:.1f} s after the upload ended (no reload)")
