"""Time the app as a user meets it (not a test): upload a folder of PDFs in a real browser,
then run one comparison. Prints both times and saves screenshots to test-artifacts/.

    python benchmarks/bench_app_upload.py [--pdfs ../shared/data/pdfs] [--query "..."]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from rag_core.testing import CHROMIUM, CHROMIUM_ARGS, free_port, stop_server, wait_healthy  # noqa: E402

SHOTS = REPO / "test-artifacts" / "screenshots"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdfs", default=str(REPO.parent / "shared" / "data" / "pdfs"))
    parser.add_argument("--query", default="how do retrieval-augmented models use retrieved passages")
    args = parser.parse_args()
    from playwright.sync_api import expect, sync_playwright

    pdfs = sorted(Path(args.pdfs).glob("*.pdf"))
    data = Path(tempfile.mkdtemp(prefix="rag-app-bench-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, RAG_CORE_DATA_DIR=str(data), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        wait_healthy(url, server)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1680, "height": 2400})
            page.set_default_timeout(120_000)
            page.goto(f"{url}/collections")
            expect(page.get_by_role("heading", name="Collections")).to_be_visible(timeout=180_000)
            page.get_by_label("Name").fill("all papers")
            page.get_by_role("button", name="Create collection").click()
            expect(page.get_by_text("Created collection “all papers”")).to_be_visible()
            page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(p) for p in pdfs])
            add = page.get_by_role("button", name="Add to collection")
            expect(add).to_be_enabled()
            t0 = time.monotonic()
            add.click()
            expect(page.get_by_text("Last upload:")).to_be_visible(timeout=1_800_000)
            upload = time.monotonic() - t0
            summary = page.get_by_text("Last upload:").inner_text()
            print(f"{len(pdfs)} PDFs uploaded in the app in {upload:.1f} s ({summary.strip()})", flush=True)
            page.screenshot(path=str(SHOTS / "bench-all-uploaded.png"))
            page.get_by_role("link", name="Compare", exact=True).click()
            times = []
            for n in range(3):  # the first includes loading the bi-encoder in the server
                query = args.query if n == 0 else f"{args.query} ({n})"
                page.get_by_role("textbox", name="Question, claim or key words").fill(query)
                t0 = time.monotonic()
                page.get_by_role("button", name="Compare", exact=True).click()
                expect(page.get_by_text(f"Results for “{query}”")).to_be_visible(timeout=180_000)
                # the exact column has no table when the question is nowhere word for word
                expect(page.locator('[data-testid="stDataFrame"]').nth(1)).to_be_visible(timeout=180_000)
                times.append(time.monotonic() - t0)
            page.screenshot(path=str(SHOTS / "bench-all-compare.png"))
            browser.close()
    finally:
        stop_server(server)
    print("one comparison, click to three tables: " + ", ".join(f"{t:.2f} s" for t in times))


if __name__ == "__main__":
    main()
