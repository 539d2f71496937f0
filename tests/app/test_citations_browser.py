"""Checking citations in a real browser (Debian's Chromium via Playwright), issue 28:

* one statement whose cited work is not in the collection: that is its outcome ("not in
  collection", meaning unclear), the passages found elsewhere under "For reference", never as the
  answer; one statement resolves its citation like a manuscript (cited → matched to) and its
  citation's words ("et al.", the year) are not marked as matched;
* a manuscript: the summary line counts "not in collection"; the report's "cited → matched to"
  read whole (rows as tall as their longest cell); the works counted right (not "13 entries" for
  6 in the draft and 7 in the .bib); the downloaded HTML report, rendered in Chromium, carries each
  verdict's passage with document and page;
* the draft and .bib stay when the user goes to another page and back, with a one-click re-check;
* Compare's passage dialog sends the matched sentence to Verify, not the whole passage.

Screenshots: docs/screenshots/verify-not-in-collection.png and docs/screenshots/report-html.png
(and test-artifacts/screenshots/citations-*.png, git-ignored).
"""

from __future__ import annotations

import re
import urllib.parse

import pytest

from tests.app.manuscript import BERT
from tests.app.support import COLLECTION, app_in_chromium, settled, tall_screenshot
from tests.support import REPO

pytestmark = pytest.mark.slow

DOCS = REPO / "docs" / "screenshots"
SHOTS = REPO / "test-artifacts" / "screenshots"
WIDTH, HEIGHT = 1600, 1000
ABSENT = "Sparse lexical expansion of queries and documents improves first-stage retrieval (Formal et al., 2021)."
PRESENT = ("Dense retrieval beats BM25 by a wide margin on open-domain passage retrieval (Karpukhin et al., "
           "2020).")
DRAFT = ("BERT is designed to pre-train deep bidirectional representations from unlabeled text [@devlin2019].\n\n"
         "Sparse lexical expansion of queries and documents improves first-stage retrieval [@formal2021].\n\n"
         "Dense retrieval beats BM25 by a wide margin on open-domain passage retrieval [@karpukhin2020].\n")
BIB = ("@inproceedings{devlin2019, title={BERT: Pre-training of Deep Bidirectional Transformers for Language "
       "Understanding}, author={Devlin, Jacob and Chang, Ming-Wei}, year={2019}}\n"
       "@inproceedings{formal2021, title={SPLADE: Sparse Lexical and Expansion Model for First Stage Ranking}, "
       "author={Formal, Thibault and Piwowarski, Benjamin}, year={2021}}\n"
       "@inproceedings{karpukhin2020, title={Dense Passage Retrieval for Open-Domain Question Answering}, "
       "author={Karpukhin, Vladimir and Oguz, Barlas}, year={2020}}\n"
       "@article{unused2018, title={A work the draft does not cite}, author={Nobody, Ann}, year={2018}}\n")


def test_citations_in_the_browser(built_data_dir, tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    draft, bib = tmp_path / "draft.md", tmp_path / "refs.bib"
    draft.write_text(DRAFT, encoding="utf-8")
    bib.write_text(BIB, encoding="utf-8")
    with app_in_chromium(built_data_dir, width=WIDTH, height=HEIGHT, timeout_ms=120_000) as (page, url, expect):
        def shot(name: str, element=None) -> None:
            tall_screenshot(page, SHOTS / f"citations-{name}.png", element, width=WIDTH, height=HEIGHT)

        # 1. one statement, its cited work not in the collection
        page.goto(f"{url}/verify")
        expect(page.get_by_role("heading", name="Verify a quote or claim")).to_be_visible()
        page.get_by_role("textbox", name="Quote or claim").fill(ABSENT)
        page.get_by_role("button", name="Check").click()
        absent = page.locator(".st-key-one_not_in_collection")
        expect(absent).to_be_visible()
        expect(absent.get_by_text("not in collection —", exact=False)).to_be_visible()
        expect(absent.get_by_text("Meaning unclear —", exact=False)).to_be_visible()
        expect(page.get_by_text("(Formal et al., 2021) \u2192 not in collection", exact=False)).to_be_visible()
        expect(page.get_by_role("heading", name="For reference: the closest passages elsewhere (not the cited work)")
               ).to_be_visible()
        assert page.get_by_role("heading", name="Passages close in meaning").count() == 0  # never as the answer
        assert page.locator(".rc-note-error").count() == 0  # no "meaning changed" against another work
        expect(page.locator(".rc-passage").first).to_be_visible()  # the passage for reference, and its page
        expect(page.locator('[data-testid="stImage"] img').first).to_be_visible()
        tall_screenshot(page, DOCS / "verify-not-in-collection.png", page.locator(".st-key-one_citations"),
                        width=WIDTH, height=HEIGHT)

        # 2. one statement whose cited work is there: matched, and its citation is not matched word for word
        page.get_by_role("textbox", name="Quote or claim").fill(PRESENT)
        page.get_by_role("button", name="Check").click()
        citations = page.locator(".st-key-one_citations")
        expect(citations.get_by_text("(Karpukhin et al., 2020) \u2192 matched to", exact=False)).to_be_visible()
        expect(citations.get_by_text("Checked without its citation:", exact=False)).to_be_visible()
        marks = [t.strip().lower() for t in page.locator(".rc-passage mark").all_inner_texts()]
        assert marks, "the statement's words are marked in the passages shown"
        assert not {"et", "al", "al.", "2020", "karpukhin"} & set(marks), marks
        shot("1-one-statement-cited")

        # 3. a manuscript with its .bib: counted right, "not in collection" counted, rows read whole
        page.get_by_role("radio", name="A whole manuscript").click()
        page.locator('.st-key-ms_file input[type="file"]').set_input_files(str(draft))
        page.locator('.st-key-ms_bib input[type="file"]').set_input_files(str(bib))
        settled(page, expect)  # the uploads' reruns drawn: no stale copy of the button beside the new one
        page.get_by_role("button", name="Find the statements").click()
        expect(page.get_by_text("3 works cited; refs.bib: 4 records, 3 of them "
                                "cited", exact=False)).to_be_visible()
        page.get_by_role("button", name="Check 3 statements").click()
        summary = page.get_by_text(re.compile(r"3 statements: \d verbatim · \d near_verbatim · \d related · "
                                              r"\d not_found · 1 not in collection · "))
        expect(summary).to_be_visible(timeout=300_000)
        expect(page.get_by_role("button", name=re.compile(r"not in collection \(1\)"))).to_be_visible()
        report = page.locator('[data-testid="stDataFrame"]').nth(1)
        report.hover()
        cells = report.locator('[role="gridcell"]')
        expect(cells.filter(has_text="\u2192 not in collection")).to_have_count(1)
        row_height = page.evaluate("""() => {
            const grids = [...document.querySelectorAll('[data-testid="stDataFrame"]')];
            const rows = grids[1].querySelectorAll('[role="row"]');
            return rows.length > 1 ? rows[1].getBoundingClientRect().height : 0; }""")
        assert row_height == 0 or row_height > 80, row_height  # taller than the three lines that cut it before
        shot("2-manuscript-report", page.get_by_text("Report", exact=True))

        # 4. the HTML report, rendered: each verdict's passage with document and page
        with page.expect_download() as download:
            page.get_by_role("button", name="Download HTML report").click()
        html = download.value.path().read_text(encoding="utf-8")
        assert "Cited work not in collection: 1" in html
        assert "For reference (not evidence): " in html
        assert re.search(r"(Evidence|Close in meaning \(read it to judge\)): [^<]+, p\.\s?\d+", html)
        report_page = page.context.new_page()
        report_page.set_viewport_size({"width": 1400, "height": 1800})
        report_page.set_content(html)
        DOCS.mkdir(parents=True, exist_ok=True)
        report_page.screenshot(path=str(DOCS / "report-html.png"), full_page=False)
        assert report_page.locator("tr.evidence").count() >= 3
        assert report_page.locator("tr.evidence mark").count() >= 1
        report_page.close()

        # 5. another page and back: the draft and .bib are kept, re-checked in one click
        page.get_by_role("link", name="Collections", exact=True).click()  # within the app: the same session
        expect(page.get_by_role("heading", name=re.compile("Collections"))).to_be_visible()
        page.get_by_role("link", name="Verify a quote", exact=True).click()
        kept = page.get_by_test_id("rc-kept-draft")
        expect(kept).to_contain_text("draft.md and refs.bib")
        expect(page.get_by_role("radio", name="A whole manuscript")).to_be_checked()
        page.get_by_role("button", name="Re-check with the current records").click()
        expect(page.get_by_text(re.compile(r"3 statements: .* 1 not in collection"))).to_be_visible(timeout=300_000)
        shot("3-kept-and-rechecked", kept)

        # 6. Compare's passage dialog sends the sentence that matched, not the whole passage
        query = "does BERT pre-train deep bidirectional representations"
        page.goto(f"{url}/compare?" + urllib.parse.urlencode({"collection": COLLECTION, "q": query}))
        expect(page.get_by_role("button", name="Open passage")).to_be_visible(timeout=120_000)
        page.get_by_role("button", name="Open passage").click()  # the first passage of the first list
        expect(page.get_by_role("dialog")).to_be_visible(timeout=60_000)
        link = page.get_by_role("link", name="Check this passage on the Verify page")
        expect(link).to_be_visible(timeout=60_000)
        href = link.get_attribute("href") or ""
        statement = urllib.parse.parse_qs(urllib.parse.urlparse(href).query)["statement"][0]
        assert "bidirectional" in statement.lower() and len(statement) < 400, statement
        assert statement.count(". ") <= 1, statement  # one sentence
        shot("4-dialog-sentence", link)
    assert BERT  # the collection holds BERT (tests.app.manuscript)
