"""A manuscript's file read into plain text by its format, safely: caps, regular files, budgets.

:func:`read_source` takes a path or bytes; a path is read only when it is a regular file (a
FIFO would block, a link to ``/dev/zero`` never end) and not over ``MAX_MANUSCRIPT_BYTES``
(:func:`rag_core.safe_files.read_regular_file`); :func:`read_stream` reads standard input under
the same cap. :func:`draft_text` turns the bytes into text by the file's type:

* ``.txt``, ``.md``: UTF-8 (a BOM is dropped), else Windows-1252;
* ``.tex``: the same, then :func:`rag_core.citations.latex.latex_to_text`;
* ``.docx``: the zip is opened by :mod:`rag_core.safe_files` (its directory capped), only its
  text part (``word/document.xml``) is inflated, refused from its declared size when that is
  over ``MAX_DOCX_XML_BYTES`` and never inflated past it (a zip bomb elsewhere in the file is
  never touched), and parsed paragraph by paragraph without resolving entities; an entity the
  file declares itself is kept as written, and the text after it too, with a note;
* ``.pdf``: read by a worker process under the ingest's time and memory budgets
  (:func:`rag_core.pdf.pool.extract_pdf_budgeted`), its lines joined into paragraphs.

Every failure is a :class:`ManuscriptError` whose message names the file and what to do.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.citations.references import last_heading
from rag_core.errors import InputFileError, RagCoreError
from rag_core.safe_files import find_member, open_zip, read_regular_file, read_zip_member, size_text
from rag_core.settings import MAX_DOCX_XML_BYTES, MAX_MANUSCRIPT_BYTES

__all__ = ["MANUSCRIPT_TYPES", "Draft", "ManuscriptError", "decode", "draft_text", "pdf_manuscript_text",
           "read_source", "read_stream"]

MANUSCRIPT_TYPES = (".txt", ".md", ".markdown", ".tex", ".pdf", ".docx")
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_RELATIONSHIPS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_OFFICE_DOCUMENT = "/officeDocument"
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


class ManuscriptError(RagCoreError):
    """The manuscript cannot be read (type, size, encoding, a damaged file)."""


@dataclass
class Draft:
    """A draft's text, the kind it was read as ("text", "markdown", "latex", "pdf", "docx"),
    and notes on anything read in an unusual way."""

    name: str
    kind: str
    text: str
    notes: list[str] = field(default_factory=list)
    # the works a Word manuscript's citation fields name (Zotero's or Mendeley's CSL-JSON), as
    # reference-list entries (rag_core.citations.references.Reference)
    field_records: list = field(default_factory=list)


def read_source(source: str | os.PathLike | bytes, name: str | None = None) -> tuple[str, bytes]:
    """The display name and bytes of a draft given as a path or as bytes (``name`` then gives
    the file name and type)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        display = name or "manuscript.txt"
        if len(data) > MAX_MANUSCRIPT_BYTES:
            raise ManuscriptError(_too_large(display))
        return display, data
    path = Path(source)
    display = name or path.name
    if not os.path.lexists(path):
        raise ManuscriptError(f"No such file: {path}")
    try:
        return display, read_regular_file(path, max_bytes=MAX_MANUSCRIPT_BYTES, label=display)
    except InputFileError as exc:
        raise ManuscriptError(f"{exc} Give a manuscript file (.txt, .md, .tex, .pdf or .docx).") from None


def read_stream(stream, *, name: str = "standard input") -> str:
    """A draft's text from a stream (standard input), read up to the cap and refused past it."""
    binary = getattr(stream, "buffer", None)
    try:
        data = (binary or stream).read(MAX_MANUSCRIPT_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise ManuscriptError(f"{name}: cannot be read ({exc}).") from None
    if len(data) > MAX_MANUSCRIPT_BYTES:
        raise ManuscriptError(_too_large(name))
    return decode(data, name) if isinstance(data, bytes) else data


def _too_large(name: str) -> str:
    return f"{name} is larger than {size_text(MAX_MANUSCRIPT_BYTES)}; split it first."


def draft_text(data: bytes, name: str) -> Draft:
    """The text of a draft's bytes, read by the type its name says (a LaTeX draft's text is
    still LaTeX: :func:`rag_core.citations.manuscript.manuscript_from_text` reads it)."""
    suffix = Path(name).suffix.lower()
    if suffix in ("", ".txt", ".text"):
        return Draft(name, "text", decode(data, name))
    if suffix in (".md", ".markdown"):
        return Draft(name, "markdown", decode(data, name))
    if suffix == ".tex":
        return Draft(name, "latex", decode(data, name))
    if suffix == ".pdf":
        return Draft(name, "pdf", _pdf_text(data, name))
    if suffix == ".docx":
        text, notes, fields = _docx_text(data, name)
        return Draft(name, "docx", text, notes, fields)
    raise ManuscriptError(
        f"{name}: cannot read {suffix or 'this'} files; give a .txt, .md, .tex, .pdf or .docx manuscript, "
        "or paste the text."
    )


def decode(data: bytes, name: str) -> str:
    """A text draft's bytes decoded by the one rule for imported text (:mod:`rag_core.text.encoding`:
    a byte-order mark, UTF-16, strict UTF-8 naming a stray byte, Windows-1252 only without UTF-8)."""
    from rag_core.text.encoding import TextEncodingError, decode_text

    binary = f"{name} is not a text file (it holds binary data); give a .txt, .md or .tex file."
    try:
        text = decode_text(data, label=name).text
    except TextEncodingError as exc:
        raise ManuscriptError(binary if b"\x00" in data[:4096] else str(exc)) from None
    if "\x00" in text[:4096]:
        raise ManuscriptError(binary)
    return text


# --------------------------------------------------------------------------- PDF


def _pdf_text(data: bytes, name: str) -> str:
    from rag_core.pdf.pool import extract_pdf_budgeted

    extraction = extract_pdf_budgeted(data, name)
    if not extraction.ok:
        raise ManuscriptError(f"{name}: {extraction.reason}")
    return pdf_manuscript_text(extraction.text)


def pdf_manuscript_text(text: str) -> str:
    """A PDF's text as a manuscript: lines of a PDF are not sentences, so they are joined into
    paragraphs (blank lines kept), except in the reference list, where each line may start an entry."""
    heading = last_heading(text)
    body, tail = (text[:heading.start()], text[heading.start():]) if heading else (text, "")
    paragraphs = (" ".join(line.strip() for line in p.splitlines() if line.strip())
                  for p in _PARAGRAPH_BREAK.split(body))
    return "\n\n".join(paragraphs) + ("\n\n" + tail if tail else "")


# --------------------------------------------------------------------------- Word


def _docx_text(data: bytes, name: str) -> tuple[str, list[str], list]:
    """The text of a .docx's body paragraphs (as Word shows them: runs, tabs, line breaks and
    hyperlinks' text), and notes."""
    advice = "save it again from your word processor, or paste the text."
    try:
        with open_zip(data, max_bytes=MAX_MANUSCRIPT_BYTES, label=name) as archive:
            info = _main_part(archive, name)
            if info is None:
                raise ManuscriptError(f"{name}: is not a .docx file (it has no word/document.xml); {advice}")
            xml = read_zip_member(archive, info, max_bytes=MAX_DOCX_XML_BYTES, label=name)
    except InputFileError as exc:
        raise ManuscriptError(f"{exc} It is not a readable .docx file: {advice}") from None
    return _document_paragraphs(xml, name, advice)


def _main_part(archive, name: str):
    """The main document part: the one ``_rels/.rels`` names, else ``word/document.xml``."""
    from lxml import etree

    rels = find_member(archive, ("_rels/.rels",))
    target = None
    if rels is not None and rels.file_size <= 1 << 20:
        try:
            root = etree.fromstring(read_zip_member(archive, rels, max_bytes=1 << 20, label=name),
                                    parser=_xml_parser())
            for rel in root.iter(f"{_RELATIONSHIPS}Relationship"):
                if (rel.get("Type") or "").endswith(_OFFICE_DOCUMENT) and rel.get("Target"):
                    target = rel.get("Target").lstrip("/")
                    break
        except (etree.XMLSyntaxError, InputFileError, ValueError):
            target = None
    names = {info.filename: info for info in archive.infolist()}
    return names.get(target or "") or names.get("word/document.xml")


def _xml_parser():
    from lxml import etree

    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _document_paragraphs(xml: bytes, name: str, advice: str) -> tuple[str, list[str], list]:
    """The body's paragraphs, parsed one at a time (a paragraph is dropped from memory once read),
    and the works its Zotero or Mendeley citation fields name (:mod:`rag_core.citations.field_codes`)."""
    from lxml import etree

    from rag_core.citations.field_codes import MAX_FIELD_CODE_CHARS, field_references, paragraph_field_codes

    codes: list[str] = []
    oversized: list[int] = []  # the sizes of field codes too long to be a citation's
    paragraphs: list[str] = []
    entities: list[str] = []
    body = f"{_W}body"
    try:
        # huge_tree: one text node over libxml2's 10 MB (a padded field code) is read, not taken for
        # malformed XML; the part itself is capped (MAX_DOCX_XML_BYTES) and entities stay unexpanded.
        for _, element in etree.iterparse(io.BytesIO(xml), events=("end",), tag=f"{_W}p", resolve_entities=False,
                                          no_network=True, load_dtd=False, huge_tree=True):
            parent = element.getparent()
            if parent is None or parent.tag != body:
                continue  # a paragraph in a table or a text box: read with its top-level element, not alone
            codes.extend(paragraph_field_codes(element, oversized=oversized))
            text = _paragraph_text(element, entities)
            if text.strip():
                paragraphs.append(text)
            element.clear(keep_tail=True)
            while element.getprevious() is not None:
                del parent[0]
    except etree.XMLSyntaxError as exc:
        raise ManuscriptError(f"{name}: its text (word/document.xml) is not well-formed XML "
                              f"({' '.join(str(exc).split())[:200]}); {advice}") from None
    notes = []
    if entities:
        shown = ", ".join(f"&{e};" for e in sorted(set(entities))[:5])
        notes.append(f"{name}: {len(entities)} entity reference{'s' if len(entities) != 1 else ''} ({shown}) "
                     "declared by the file itself kept as written, not expanded; the text around "
                     f"{'them' if len(entities) != 1 else 'it'} was read.")
    fields, unreadable = field_references(codes)
    if unreadable:
        notes.append(f"{name}: {unreadable} citation field code(s) could not be read (not valid CSL-JSON); "
                     "their markers are resolved by their look only.")
    if oversized:
        many = len(oversized) != 1
        notes.append(f"{name}: {len(oversized)} field code{'s' if many else ''} skipped ({max(oversized):,} "
                     f"characters{' the longest' if many else ''}: more than the {MAX_FIELD_CODE_CHARS:,} a "
                     "citation's code holds); the rest of the draft was read, and the markers of "
                     f"{'these fields' if many else 'this field'} are resolved by their look only.")
    return "\n\n".join(paragraphs), notes, fields


def _paragraph_text(paragraph, entities: list[str]) -> str:
    """A paragraph's text as python-docx gives it (its runs, and its hyperlinks' runs), except
    that text after an entity reference in a run is kept (python-docx drops it)."""
    parts: list[str] = []
    for child in paragraph:
        if child.tag == f"{_W}r":
            parts.append(_run_text(child, entities))
        elif child.tag == f"{_W}hyperlink":
            parts.extend(_run_text(run, entities) for run in child.iterchildren(f"{_W}r"))
    return "".join(parts)


def _run_text(run, entities: list[str]) -> str:
    from lxml import etree

    parts: list[str] = []
    for child in run:
        tag = child.tag
        if tag == f"{_W}t":
            parts.append(child.text or "")
            for inner in child:  # an entity reference, a comment: their text (and what follows them)
                if inner.tag is etree.Entity:
                    entities.append(inner.name)
                    parts.append(inner.text or "")
                parts.append(inner.tail or "")
        elif tag in (f"{_W}tab", f"{_W}ptab"):
            parts.append("\t")
        elif tag == f"{_W}br":
            parts.append("\n" if (child.get(f"{_W}type") or "textWrapping") == "textWrapping" else "")
        elif tag == f"{_W}cr":
            parts.append("\n")
        elif tag == f"{_W}noBreakHyphen":
            parts.append("-")
    return "".join(parts)
