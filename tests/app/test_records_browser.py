"""Issue 18's walk in a real browser (Debian's Chromium via Playwright): import a .bib on the
Collections page, correct a year by hand in the records table, re-run a manuscript check on the
Verify page, and see "cited → matched to" for every statement. Screenshots go to
test-artifacts/screenshots/records-*.png (git-ignored)."""

from __future__ import annotations

import pytest

from tests.app.support import app_in_chromium, settled, small_pdfs, tall_screenshot
from tests.support import REPO

pytestmark = pytest.mark.slow

SHOTS = REPO / "test-artifacts" / "screenshots"
WIDTH, HEIGHT = 1600, 1000
BERT, DPR = "ml_bert_devlin2018_arxiv1810.04805.pdf", "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"
BIB = r"""
@inproceedings{karpukhin2020dense,
  author = {Karpukhin, Vladimir and O{\u{g}}uz, Barlas and Min, Sewon and Lewis, Patrick and Wu, Ledell and
            Edunov, Sergey and Chen, Danqi and Yih, Wen-tau},
  title = {Dense Passage Retrieval for Open-Domain Question Answering},
  booktitle = {Proceedings of EMNLP 2020}, year = {2020}, doi = {10.18653/v1/2020.emnlp-main.550}
}
@misc{elsewhere, author = {Nobody, Ann}, title = {A Paper Not In This Collection}, year = {1999}}
"""
DRAFT = (
    'Devlin et al. (2019) introduce BERT, which "is designed to pre-train deep bidirectional representations from '
    'unlabeled text by jointly conditioning on both left and right context in all layers".\n\n'
    'Dense retrieval "outperforms a strong Lucene-BM25 system greatly by 9%-19% absolute in terms of top-20 '
    'passage retrieval accuracy" (Karpukhin et al., 2020).\n\n'
    'Retrieval "is practically implemented using dense representations alone" (Nobody, 1999).'
)


@pytest.fixture()
def data_dir(tmp_path):
    from rag_core.collections.library import Library

    # embedded now: no background embedding (and the Collections page's self-refreshing status) runs
    # while the test edits the records grid
    report = Library(tmp_path / "data").add_pdfs("papers", small_pdfs(), compute_embeddings=True)
    assert [f.status for f in report.files] == ["ok", "ok"]
    return tmp_path / "data"


def test_import_a_bib_correct_a_year_and_check_a_manuscript(data_dir, tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    bib = tmp_path / "refs.bib"
    bib.write_text(BIB, encoding="utf-8")
    with app_in_chromium(data_dir, width=WIDTH, height=HEIGHT) as (page, url, expect):
        def shot(name: str, element=None) -> None:
            tall_screenshot(page, SHOTS / f"records-{name}.png", element, width=WIDTH, height=HEIGHT)

        def idle() -> None:  # the app has finished its run (a click during one may be lost)
            page.wait_for_timeout(500)
            page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=120_000)

        # 1. import the .bib: matched by DOI/title, the record that matches nothing named
        page.goto(f"{url}/collections")
        heading = page.get_by_role("heading", name="Bibliographic records")
        expect(heading).to_be_visible(timeout=120_000)
        uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="reference manager")
        uploader.locator('input[type="file"]').set_input_files(str(bib))
        settled(page, expect)  # the upload's rerun drawn: no stale disabled copy of the button
        button = page.get_by_role("button", name="Import records", exact=True)
        expect(button).to_be_enabled()
        button.click()
        expect(page.get_by_text("1 matched a document", exact=False)).to_be_visible()
        expect(page.get_by_text("elsewhere: Nobody 1999", exact=False)).to_be_visible()
        editor = page.locator('[data-testid="stDataFrame"]').filter(has_text="where each field came from")
        shot("1-imported", heading)
        # 2. correct BERT's year by hand (the arXiv id's 2018 -> its NAACL year 2019)
        editor.hover()
        cell = editor.locator('[role="gridcell"][aria-colindex="2"]').first  # year of the first row
        expect(cell).to_have_text("2018")
        box = editor.bounding_box()  # the grid is drawn on a canvas: the year column follows the
        # document column (200 px wide), the first row the header (35 px)
        page.mouse.click(box["x"] + 200 + 40, box["y"] + 35 + 17)
        page.wait_for_timeout(300)
        page.keyboard.type("2019", delay=100)  # typing into a selected cell replaces its text
        page.wait_for_timeout(1000)
        page.keyboard.press("Enter")
        idle()
        save = page.get_by_role("button", name="Save 1 corrected record")
        expect(save).to_be_enabled()
        idle()
        save.click()
        # issue 28: said where the button is (a message at the top of the page was out of sight)
        saved = page.locator('[class*="st-key-records_saved"]')
        expect(saved.get_by_text(f"the corrected record of {BERT} (year)", exact=False)).to_be_visible()
        idle()
        saved.scroll_into_view_if_needed()
        assert abs(saved.bounding_box()["y"] - page.get_by_role("button", name="Save corrections")
                   .bounding_box()["y"]) < 200  # right under the Save button
        shot("2b-saved", heading)
        expect(editor.locator('[role="gridcell"][aria-colindex="6"]').first).to_contain_text("year: edited")
        shot("2-year-corrected", heading)
        # 3. the manuscript check: every statement says what it was matched to
        page.goto(f"{url}/verify?mode=manuscript")
        page.get_by_role("textbox", name="Manuscript text").fill(DRAFT)
        page.get_by_role("button", name="Find the statements").click()
        page.get_by_role("button", name="Check 3 statements").click()
        report = page.locator('[data-testid="stDataFrame"]').filter(has_text="matched to")
        expect(report).to_be_visible(timeout=300_000)
        report.hover()
        page.wait_for_timeout(500)
        cells = report.locator('[role="gridcell"]')  # the grid is a canvas: read its accessible cells
        expect(cells.filter(has_text="\u2192 not in collection")).to_have_count(1)
        text = " | ".join(cells.nth(k).text_content() or "" for k in range(cells.count()))
        assert f"Devlin et al. (2019) \u2192 matched to {BERT} (first author Devlin + year 2019)" in text
        assert f"(Karpukhin et al., 2020) \u2192 matched to {DPR} (first author Karpukhin + year 2020)" in text
        assert "(Nobody, 1999) \u2192 not in collection" in text and "one off" not in text
        shot("3-check", page.get_by_text("Report", exact=True))
        evidence = page.locator('[class*="st-key-ms_evidence_"]').first
        expect(evidence.get_by_text("\u2192 ", exact=False).first).to_be_visible()
        shot("4-evidence", evidence)
