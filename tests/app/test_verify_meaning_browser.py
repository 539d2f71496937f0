"""The meaning layer on the Verify page, in a real browser (Debian's Chromium via Playwright).

One statement whose negation was dropped and one paraphrase that says the opposite: the cues
side by side under the verdict. Then a manuscript: the report ordered by severity, a changed
meaning first. Screenshots go to test-artifacts/screenshots/meaning-*.png (git-ignored).
"""

from __future__ import annotations

import re

import pytest

from tests.app.manuscript import REFERENCES
from tests.app.support import app_in_chromium, tall_screenshot
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
    SHOTS.mkdir(parents=True, exist_ok=True)
    with app_in_chromium(built_data_dir, width=WIDTH, height=HEIGHT) as (page, url, expect):
        def shot(name: str, element=None) -> None:
            tall_screenshot(page, SHOTS / f"meaning-{name}.png", element, width=WIDTH, height=HEIGHT)

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
