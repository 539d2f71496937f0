"""Compare and the lab as a demo, in a real browser (Debian's Chromium via Playwright): a link reproduces a
comparison in a fresh page, a changed hybrid setting gives a new link that reproduces the new lists, the
lab keeps its tab, and after an upload the embedding status reaches "ready" without a reload (its progress
bar beside the button that started it). The lists' layout at 1,280 and 1,600 px: test_compare_browser.py.
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
from tests.app.support import COLLECTION, settled, small_pdfs
from tests.support import REPO

pytestmark = pytest.mark.slow

SHOTS = REPO / "test-artifacts" / "screenshots"
QUESTION = "masked language model"


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
    return page.locator(".rc-cards")


def wait_drawn(page, expect, count: int = 3) -> None:
    expect(page.get_by_text(f"Results for “{QUESTION}”")).to_be_visible(timeout=300_000)
    expect(lists(page)).to_have_count(count, timeout=120_000)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=120_000)


def cards(page, kind: str) -> list[str]:
    """The chip and passage of each card of a list, once a stale copy of the run before is gone."""
    expect_one = page.locator(f'.rc-cards[data-list="{kind}"]')
    from playwright.sync_api import expect

    expect(expect_one).to_have_count(1, timeout=600_000)  # a condition waited for, a wide safety net (issue 30)
    chips = expect_one.locator(".rc-chip").all_inner_texts()
    texts = expect_one.locator(".rc-text").all_inner_texts()
    return [f"{c} — {t}" for c, t in zip(chips, texts, strict=True)]


def test_a_link_reproduces_the_comparison_and_the_lists_are_readable(server, browser, capsys):
    chromium, expect = browser
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = chromium.new_context(viewport={"width": 1600, "height": 1000})
    context.set_default_timeout(120_000)
    address = f"{server}/compare?" + urlencode({"collection": COLLECTION, "q": QUESTION})

    # 1. The link, in a fresh page: the three lists are drawn without a click.
    page = context.new_page()
    page.goto(address)
    wait_drawn(page, expect)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.get_by_text(f"Results for “{QUESTION}”").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "demo-link.png"))

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
    expect(page.get_by_text("Compared with the last change:")).to_be_visible(timeout=120_000)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=120_000)
    assert page.url != before
    shown = {kind: cards(page, kind) for kind in ("tfidf", "hybrid")}
    fresh = context.new_page()
    fresh.goto(page.url)
    wait_drawn(fresh, expect)
    expect(fresh.get_by_label("Pool size", exact=True)).to_have_value("12")
    for kind in ("tfidf", "hybrid"):
        again = cards(fresh, kind)  # the same passages in the same order ("chip — passage")
        assert again and again == shown[kind], (kind, again, shown[kind])
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
    settled(page, expect)  # no stale disabled copy of the button left beside the new one
    add = page.get_by_role("button", name="Add to collection")
    expect(add).to_have_count(1)
    expect(add).to_be_enabled()
    add.click()
    # the progress bar comes beside the button that started it, in the window (not below the fold)
    seen = page.wait_for_function("""() => {
      const bar = document.querySelector('.st-key-upload_progress [data-testid="stProgress"]');
      const button = document.querySelector('.st-key-add_pdfs button');
      if (!bar || !button) return null;
      const b = bar.getBoundingClientRect(), k = button.getBoundingClientRect();
      return {bar_top: b.top, bar_bottom: b.bottom, button_top: k.top, button_bottom: k.bottom,
              window: window.innerHeight};
    }""", timeout=120_000, polling=50).json_value()
    assert seen["bar_top"] < seen["button_bottom"] and seen["bar_bottom"] <= seen["window"], seen
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "demo-upload-progress.png"))
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
