"""What the app tests share besides fixtures: the sample PDFs, real quotes, hostile PDFs."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import PDF_DIR, REPO

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PDFS = PDF_DIR
SMALL_PDFS = ("ml_bert_devlin2018_arxiv1810.04805.pdf", "ml_dpr_karpukhin2020_arxiv2004.04906.pdf")
COLLECTION = "two papers"


def small_pdfs() -> list[Path]:
    paths = [PDFS / name for name in SMALL_PDFS]
    if not all(p.is_file() for p in paths):
        pytest.skip(f"the sample PDFs {', '.join(SMALL_PDFS)} are not in {PDFS}")
    return paths


def quote_from(pdf: Path, page: int = 2) -> str:
    """A real line of text (at least 40 characters, no line-end hyphen) from one page of ``pdf``."""
    from rag_core.pdf.extraction import extract_pdf

    extraction = extract_pdf(pdf)
    text = extraction.pages[page - 1].text
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= 40 and not line.endswith("-") and re.fullmatch(r"[A-Za-z0-9 ,.;:()']+", line):
            return line
    raise AssertionError(f"no usable line on page {page} of {pdf.name}")


HOSTILE_WORDS = "quokka burrow survey"
HOSTILE_QUOTE = "Quokka burrows were counted along every transect of the survey"


def hostile_payloads(host: str) -> dict[str, str]:
    """Markdown and HTML that would make a browser fetch from ``host`` ("127.0.0.1:PORT") if the app
    rendered it: in a PDF's text, its page labels, its title metadata and its file name."""
    return {
        # A file name cannot hold "/": "https:HOST" still makes Chromium connect to HOST (checked).
        "file": f"![f](https:{host}) quokka survey.pdf",
        "text_image": f"![t](http://{host}/text-image)",
        "text_link": f"[a link](http://{host}/text-link)",
        "text_html": f"<img src=http://{host}/text-html>",
        "label": f"![l](http://{host}/label-image)",
        "title": f"![m](http://{host}/title-image) Quokka survey",
    }


def make_hostile_pdf(folder: Path, host: str) -> Path:
    """A two-page PDF about quokkas whose text, page labels, title and file name carry the payloads
    of :func:`hostile_payloads` (text with fpdf2, page labels and metadata with pypdf)."""
    from fpdf import FPDF
    from pypdf import PdfReader, PdfWriter

    payload = hostile_payloads(host)
    pages = [
        f"{HOSTILE_QUOTE} on the island. The quokka survey recorded the shrub cover near each burrow, "
        "the distance to fresh water and the number of young seen at dusk.\n\n"
        f"{payload['text_image']}\n\n"
        f"**bold claim** and {payload['text_link']} and {payload['text_html']}\n\n"
        "Quokka density rose with shrub cover and fell near roads; the survey repeated each transect "
        "in the dry season and after the first winter rains, counting burrows, droppings and animals.",
        "The second page of the quokka survey lists the transects, the observers and the weather on each "
        "day. Burrow counts were checked by a second observer on a random tenth of the transects, and "
        "disagreements were settled by a third visit before the counts were entered.",
    ]
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        for n, paragraph in enumerate(text.split("\n\n")):
            if n:  # a line holding one space: the extracted text gets a blank line here
                pdf.cell(0, 6, " ", new_x="LMARGIN", new_y="NEXT")
            pdf.multi_cell(0, 6, paragraph)
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(bytes(pdf.output()))))
    writer.set_page_label(0, len(pages) - 1, style="/D", prefix=payload["label"])
    writer.add_metadata({"/Title": payload["title"], "/Author": "**Q. Uokka**", "/CreationDate": "D:20240101"})
    path = folder / payload["file"]
    with open(path, "wb") as handle:
        writer.write(handle)
    return path


@contextmanager
def app_in_chromium(data_dir: Path, *, width: int = 1600, height: int = 1000, timeout_ms: int = 60_000):
    """The app served on ``data_dir`` and a page of Debian's Chromium on it (never a downloaded
    browser): yields ``(page, url, expect)``; the browser and the server are stopped after."""
    from rag_core.testing import CHROMIUM, CHROMIUM_ARGS, free_port, stop_server, wait_healthy

    if not CHROMIUM.is_file():
        pytest.skip("Chromium is not installed at /usr/bin/chromium; this test never downloads a browser")
    sync_api = pytest.importorskip("playwright.sync_api")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, RAG_CORE_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1",
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
                page = browser.new_context(viewport={"width": width, "height": height}).new_page()
                page.set_default_timeout(timeout_ms)
                expect = sync_api.expect
                expect.set_options(timeout=timeout_ms)
                yield page, url, expect
            finally:
                browser.close()
    finally:
        stop_server(server)


def settled(page, expect) -> None:
    """Once the rerun is done and drawn: Streamlit leaves a stale copy of an element beside its new
    one while a rerun runs (on a busy machine, for seconds), so a locator can match both."""
    page.wait_for_timeout(400)  # the rerun a click or an upload starts may not have begun yet
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=120_000)
    expect(page.locator('[data-stale="true"]')).to_have_count(0, timeout=120_000)


def tall_screenshot(page, path: Path, element=None, *, width: int = 1600, height: int = 1000) -> None:
    """A screenshot 1,800 px tall (``element`` scrolled to the top first), then the window as it
    was; no traceback may be on the page."""
    if element is not None:
        element.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.set_viewport_size({"width": width, "height": 1800})
    page.wait_for_timeout(1000)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": width, "height": height})
    assert page.locator('[data-testid="stException"]').count() == 0
