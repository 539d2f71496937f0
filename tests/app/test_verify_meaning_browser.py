"""The meaning layer on the Verify page, in a real browser (Debian's Chromium via Playwright).

One statement whose negation was dropped and one paraphrase that says the opposite: the cues
side by side under the verdict. Then a manuscript: the report ordered by severity, a changed
meaning first. Screenshots go to test-artifacts/screenshots/meaning-*.png (git-ignored).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from rag_core.testing import CHROMIUM, CHROMIUM_ARGS, free_port, stop_server, wait_healthy
from tests.app.manuscript import REFERENCES
from tests.support import REPO

pytestmark = pytest.mark.slow

SHOTS = REPO / "test-artifacts" / "screenshots"
WIDTH, HEIGHT = 1600, 1000
NEGATION = ("We find that adding a single BM25 negative passage does not improve the result substantially while "
            "adding two does not help further.")
CONTRADICTION = "DPR was worse than BM25 on every dataset except SQuAD."
DRAFT = (
    'Karpukhin et al. (2020) report that "our dense retriever outperforms a strong Lucene-BM25 system greatly by '
    '9%-19% absolute in terms of top-20 passage retrieval accuracy". Dense retrieval was worse than BM25 on every '
    'dataset except SQuAD [2]. They add that "building the FAISS index on 21-million vectors on a single server '
    'takes 2.5 hours" [2]. BERT can be adapted to many tasks such as question answering and inference by adding '
    'only one output layer, with no large task-specific changes to the architecture [1]. Quantum gravity was '
    'solved by a committee of cats in 1850 [1].\n\n' + REFERENCES
)


def test_meaning_cues_and_the_report_by_severity_in_a_browser(built_data_dir):
    if not CHROMIUM.is_file():
        pytest.skip("Chromium is not installed at /usr/bin/chromium; this test never downloads a browser")
    sync_api = pytest.importorskip("playwright.sync_api")
    SHOTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, RAG_CORE_DATA_DIR=str(built_data_dir), HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(url, server)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
                page.set_default_timeout(60_000)
                expect = sync_api.expect
                expect.set_options(timeout=60_000)

                def shot(name: str, element=None) -> None:
                    if element is not None:
                        element.evaluate("e => e.scrollIntoView({block: 'start'})")
                    page.set_viewport_size({"width": WIDTH, "height": 1800})
                    page.wait_for_timeout(1000)
                    page.screenshot(path=str(SHOTS / f"meaning-{name}.png"))
                    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
                    assert page.locator('[data-testid="stException"]').count() == 0

                page.goto(f"{url}/verify")
                expect(page.get_by_role("heading", name="Verify a quote or claim")).to_be_visible(timeout=120_000)
                # 1. a quote whose negation was added: near_verbatim, the meaning changed, side by side
                page.get_by_role("textbox", name="Quote or claim").fill(NEGATION)
                page.get_by_role("button", name="Check").click()
                cues = page.locator('[data-testid="rc-meaning-cues"]')
                expect(cues).to_be_visible()
                expect(cues.locator("th")).to_have_text("negation")
                expect(cues.locator("td").nth(0)).to_have_text("claim: does not improve")
                expect(cues.locator("td").nth(1)).to_have_text("source: improves")
                expect(page.locator(".rc-note-error")).to_contain_text("Meaning changed")
                shot("1-negation", page.locator(".rc-note").first)
                # 2. a paraphrase that says the opposite: related, compared with its sentence
                page.get_by_role("textbox", name="Quote or claim").fill(CONTRADICTION)
                page.get_by_role("button", name="Check").click()
                expect(page.get_by_text("Close in meaning, not confirmed: read the passage.")).to_be_visible()
                expect(cues.locator("td").nth(0)).to_have_text("claim: worse")
                expect(cues.locator("td").nth(1)).to_have_text("source: better")
                expect(page.get_by_text("Compared with:", exact=False)).to_be_visible()
                shot("2-contradiction", page.locator(".rc-note").first)

                # 3. a manuscript: the report most severe first
                page.get_by_role("radio", name="A whole manuscript").click()
                page.get_by_role("textbox", name="Manuscript text").fill(DRAFT)
                page.get_by_role("button", name="Find the statements").click()
                page.get_by_role("button", name="Check 5 statements").click()
                expect(page.get_by_text("2 meaning changed", exact=False)).to_be_visible(timeout=300_000)
                pick = page.get_by_label("Evidence of statement")
                expect(pick).to_have_value(re.compile(r"^#\d+ · \w+ · meaning changed"))
                evidence = page.locator('[class*="st-key-ms_evidence_"]')
                expect(evidence.locator('[data-testid="rc-meaning-cues"]')).to_be_visible()
                report = page.locator('[data-testid="stDataFrame"]').nth(1)
                report.hover()
                cells = report.locator('[role="gridcell"][aria-colindex="1"]')  # the "#" column
                expect(cells.first).to_have_text("2")  # the two changed meanings first, then not found
                assert [cells.nth(k).text_content() for k in range(3)] == ["2", "3", "5"]
                shot("3-report-by-severity", page.get_by_text("Report", exact=True))
            finally:
                browser.close()
    finally:
        stop_server(server)
