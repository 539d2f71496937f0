"""Bibliographic record of a PDF: title, every author, year, DOI, arXiv id and venue, each with
where it came from.

:func:`guess_metadata` is conservative: a field is None when the PDF does not say it clearly.

* **title**: the document information dictionary or XMP when plausible (an IEEE Xplore title
  " - Conference, 1996" is cut at its venue), else the text set in the largest font on page 1;
* **authors**: the information dictionary or XMP when they are names, else the name block under
  the title (:mod:`rag_core.pdf.authors`: marks set as superscripts are separators, affiliations
  and e-mails passed over);
* **year**, first found of: the arXiv identifier's yymm (an arXiv stamp, an ``arXiv:`` line, the
  information dictionary, or a file named by its identifier as arXiv names downloads), a venue,
  journal or copyright line on page 1 ("(NeurIPS 2020)", "Proceedings of the 2023 Conference",
  "JCAP10(2008)003", "\u00a9 2011"), XMP's date, a date line under the title, the file's
  creation date;
* **doi**, **arxiv_id**, **venue** when page 1 or the information dictionary give them.

``origin`` says, per field, where it came from: ``pdf`` (the file's text or metadata),
``arxiv`` (the arXiv identifier) or ``file name``. :func:`rag_core.citations.bibliography.match_documents`
uses these records to find the documents a citation points to.
"""

from __future__ import annotations

import re

from rag_core.pdf.authors import ADDRESS, END_OF_BLOCK, STOP_LINE, author_block, fix_spacing_accents, split_author_names

__all__ = ["EMPTY_RECORD", "SCANNED_NO_RECORD", "arxiv_year", "find_arxiv_id", "find_doi", "guess_metadata",
           "split_author_names"]

EMPTY_RECORD = {"title": None, "authors": None, "year": None, "doi": None, "arxiv_id": None, "venue": None}

_ARXIV_STAMP = re.compile(
    r"arXiv:\s*(\d{4}\.\d{4,5})(?:v\d+)?\s*\[[^\]]+\]\s*\d{1,2}\s+[A-Z][a-z]{2,8}\s+((?:19|20)\d{2})"
)
_ARXIV_ID = re.compile(r"\barXiv\s*:\s*(\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?", re.IGNORECASE)
_ARXIV_FILE = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])")
_DOI = re.compile(r"\b(10\.\d{4,9}/[-._;()/:A-Za-z0-9<>]+[A-Za-z0-9/])")
_COPYRIGHT = re.compile(r"(?:\u00a9|\(c\)|copyright)\s*((?:19|20)\d{2})", re.IGNORECASE)
_JOURNAL_REF = re.compile(r"\b[A-Z]{2,6}\s?\d{0,3}\(((?:19|20)\d{2})\)\d+")
_JOURNAL_PAGES = re.compile(r"\b\d+\s*[a-zA-Z]?,\s*\d+\s*[-\u2013]\s*\d+\s*\(((?:19|20)\d{2})\)")
_VENUE_LINE = re.compile(
    r"(?P<venue>(?:\d+(?:st|nd|rd|th)\s+)?Conference on [^\n()]{3,120}\((?P<short>[A-Za-z\-]+)\s+"
    r"(?P<y1>(?:19|20)\d{2})\)"
    r"|Proceedings of the (?P<y2>(?:19|20)\d{2}) [^\n,]{3,160}"
    r"|Published as a conference paper at (?P<short3>[A-Z][A-Za-z\-]+) (?P<y3>(?:19|20)\d{2})"
    r"|Published (?:online )?\d{1,2} [A-Z][a-z]+ (?P<y4>(?:19|20)\d{2}))"
)
_IN_TITLE_VENUE = re.compile(r"^(?P<title>.{10,}?)\s+-\s+(?P<venue>.*(?:Conference|Proceedings|Symposium|"
                             r"Workshop|Journal|Transactions).*)$")
_YEAR = re.compile(r"\b((?:19|20)\d{2})\b")
# A page with this much text whose largest font sets most of it has no title font (a plain document).
_TITLE_PAGE_CHARS = 400
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DATE_LINE = re.compile(r"^\W*(?:\d{1,2}\s+)?([A-Za-z]{3,9})\.?\s+(?:\d{1,2},?\s+)?((?:19|20)\d{2})\W*$")
_INFO_AUTHOR_STOP = re.compile(r"@|team|\bieee\b|university|http|institut|department", re.IGNORECASE)


def arxiv_year(arxiv_id: str | None) -> int | None:
    """The year of an arXiv identifier: yymm of ``2005.11401`` (2020), yy of ``hep-th/9901001``."""
    if not arxiv_id:
        return None
    m = re.match(r"(\d{2})(\d{2})\.\d{4,5}", arxiv_id) or re.search(r"/(\d{2})(\d{2})\d{3}", arxiv_id)
    if not m or not 1 <= int(m.group(2)) <= 12:
        return None
    yy = int(m.group(1))
    return 1900 + yy if yy >= 91 else 2000 + yy


def find_arxiv_id(text: str) -> str | None:
    """An ``arXiv:`` identifier in ``text`` (without its version), or None."""
    m = _ARXIV_ID.search(text or "")
    return m.group(1) if m and arxiv_year(m.group(1)) else None


def find_doi(text: str) -> str | None:
    """The first DOI in ``text`` (lower case, without a trailing full stop), or None."""
    m = _DOI.search(text or "")
    return m.group(1).rstrip(".,;").lower() if m else None


def _looks_like_title(text: str) -> bool:
    letters = sum(c.isalpha() for c in text)
    return 10 <= len(text) <= 300 and len(text.split()) >= 2 and letters >= 0.6 * len(text.replace(" ", ""))


def _plausible_info_title(title: str) -> bool:
    lowered = title.lower()
    if any(bad in lowered for bad in ("untitled", "microsoft word", ".dvi", ".tex", ".doc", ".pdf")):
        return False
    return _looks_like_title(title)


def _info_authors(author: str) -> list[str] | None:
    """Names from an information dictionary's /Author ("A ; B", "\u00a9 N. Stemen, University of X")."""
    pieces = [p.strip(" \u00a9") for p in re.split(r"[;,]", author.replace("\u00a9", " ")) if p.strip(" \u00a9")]
    kept = [p for p in pieces if not _INFO_AUTHOR_STOP.search(p)]
    if not kept or (len(kept) < len(pieces) and len(kept) > 1):
        return None
    names = split_author_names(", ".join(kept))
    return names or None


def _info(reader) -> dict:
    """Title, authors, year (XMP's date), creation year, DOI and venue from the document information
    dictionary and XMP."""
    out: dict = {"title": None, "authors": None, "year": None, "created": None, "doi": None, "venue": None,
                 "text": ""}
    try:
        info = reader.metadata or {}
        title = str(info.get("/Title") or "").strip()
        author = str(info.get("/Author") or "").strip()
        created = str(info.get("/CreationDate") or "")
        out["text"] = " ".join(str(v) for v in info.values())[:4000]
    except Exception:  # noqa: BLE001 - a damaged info dictionary is not worth failing over
        title, author, created = "", "", ""
    m = re.match(r"D:((?:19|20)\d{2})", created)
    out["created"] = int(m.group(1)) if m else None
    xmp_title, xmp_author, xmp_year, xmp_ids = _xmp(reader)
    title, author, out["year"] = title or xmp_title, author or xmp_author, xmp_year
    title = " ".join(title.split())
    cut = _IN_TITLE_VENUE.match(title)
    if cut:
        title, out["venue"] = cut.group("title"), cut.group("venue").strip()
    if title and _plausible_info_title(title):
        out["title"] = fix_spacing_accents(title)
    if author:
        out["authors"] = _info_authors(author)
    out["doi"] = find_doi(xmp_ids) or find_doi(out["text"])
    return out


def _xmp(reader) -> tuple[str, str, int | None, str]:
    """Title, authors, year and identifiers from the XMP packet (empty when absent or unreadable)."""
    try:
        xmp = reader.xmp_metadata
        if xmp is None:
            return "", "", None, ""
        title = str((xmp.dc_title or {}).get("x-default") or "").strip()
        author = "; ".join(a for a in (xmp.dc_creator or []) if a).strip()
        dates = [str(d) for d in (xmp.dc_date or [])]
        ids = " ".join(str(i) for i in (xmp.dc_identifier or []))
    except Exception:  # noqa: BLE001 - a damaged XMP packet is not worth failing over
        return "", "", None, ""
    year = int(dates[0][:4]) if dates and dates[0][:4].isdigit() else None
    return title, author, year, ids


def _pieces(page) -> list[tuple[float, str, float]]:
    """The page's text pieces in reading order: (font size, text, baseline)."""
    parts: list[tuple[float, str, float]] = []

    def visit(text, cm, tm, font_dict, font_size):
        if not text:
            return
        scale = (abs(tm[3]) or abs(tm[0]) or 1) * (abs(cm[3]) or abs(cm[0]) or 1)
        parts.append((round(float(font_size or 0) * scale, 1), text, float(tm[5]) * (abs(cm[3]) or 1) + cm[5]))

    page.extract_text(visitor_text=visit)
    return parts


def _title_span(pieces: list[tuple[float, str, float]]) -> tuple[str, int]:
    """The text set in the largest font (an arXiv stamp left aside), and the index after its last piece."""
    usable = [i for i, (_, t, _) in enumerate(pieces)
              if not t.strip().startswith("arXiv:") and sum(c.isalpha() for c in t) >= 3]
    if not usable:
        return "", 0
    largest = max(pieces[i][0] for i in usable)
    at = [i for i in usable if pieces[i][0] == largest]
    total = sum(len(t.strip()) for _, t, _ in pieces)
    if total >= _TITLE_PAGE_CHARS and sum(len(pieces[i][1].strip()) for i in at) > total / 2:
        return "", 0  # most of a full page is set in its largest font: that is body text, not a title
    first = at[0]
    last = first
    for i in at[1:]:
        if i - last > 3:
            break
        last = i
    text = " ".join(" ".join(pieces[i][1] for i in range(first, last + 1) if pieces[i][0] == largest).split())
    return text, last + 1


def _first_page_title(lines: list[str], big: str) -> str | None:
    from rapidfuzz import fuzz

    head = [line.strip() for line in lines[:12] if line.strip()]
    title_at: list[int] = []
    if big and _looks_like_title(big):
        for i, line in enumerate(head):
            if len(line) >= 4 and fuzz.partial_ratio(line.lower(), big.lower()) >= 85:
                if title_at and i != title_at[-1] + 1:
                    break
                title_at.append(i)
            elif title_at:
                break
    if not title_at:
        return None
    title = re.sub(r"(?<=\w)- (?=\w)", "-", " ".join(head[i] for i in title_at))
    return title if _looks_like_title(title) else None


def _text_authors(lines: list[str], title: str | None) -> list[str] | None:
    """Authors from the plain text: the lines of names after the title (a PDF whose pieces carry no sizes)."""
    from rapidfuzz import fuzz

    head = [line.strip() for line in lines[:16] if line.strip()]
    start = 0
    if title:
        for i, line in enumerate(head):
            if fuzz.partial_ratio(line.lower(), title.lower()) >= 85:
                start = i + 1
    names: list[str] = []
    for line in head[start:start + 6]:
        if _DATE_LINE.match(line) or END_OF_BLOCK.match(line):
            break
        found = [] if STOP_LINE.search(line) or ADDRESS.search(line) else split_author_names(line)
        if found:
            names.extend(found)
        elif names:
            break
    return names or None


def _venue_year(text: str, info_venue: str | None) -> tuple[int | None, str | None]:
    """The year and venue a venue, journal or copyright line gives, (None, None) when none does."""
    m = _VENUE_LINE.search(text)
    if m:
        year = next(int(m.group(g)) for g in ("y1", "y2", "y3", "y4") if m.group(g))
        venue = " ".join(m.group("venue").split())
        if m.group("y4"):
            venue = None
        return year, venue
    if info_venue:
        years = _YEAR.findall(info_venue)
        if years:
            return int(years[0]), info_venue
    for pattern in (_JOURNAL_PAGES, _JOURNAL_REF, _COPYRIGHT):
        m = pattern.search(text)
        if m:
            return int(m.group(1)), None
    return None, info_venue


def _date_line_year(lines: list[str]) -> int | None:
    for line in lines[:12]:
        m = _DATE_LINE.match(line.strip())
        if m and m.group(1)[:3].lower() in _MONTHS:
            return int(m.group(2))
        m = re.search(r"\[\s*([A-Za-z]{3,9})\s+\d{1,2},\s+((?:19|20)\d{2})\b", line)  # "[ July 29, 2021 at ..."
        if m and m.group(1)[:3].lower() in _MONTHS:
            return int(m.group(2))
    return None


# What a record says when page 1 is a scan read by OCR (``no_record``).
SCANNED_NO_RECORD = "page 1 is a scanned image read by OCR: no title, authors or year are read from it"


def guess_metadata(reader, first_page_text: str, file_name: str | None = None, *, scanned: bool = False) -> dict:
    """``{"title", "authors", "year", "doi", "arxiv_id", "venue", "origin"}`` of a PDF (each None
    when unsure; ``origin`` maps each field found to where it came from).

    ``reader`` is an open ``pypdf.PdfReader``; ``first_page_text`` the cleaned text of page 1;
    ``file_name`` the file's name (arXiv names its downloads by their identifier). ``scanned``:
    page 1's text was read by OCR from a scanned image, so nothing is taken from it (a book page's
    first line is not a title, its dialogue not a name block) nor from the file's creation date
    (the day it was scanned); only what the PDF's information dictionary or XMP says, and an
    identifier in the file name. Such a record carries ``no_record`` (:data:`SCANNED_NO_RECORD`)
    when it has no title and no authors: the file name stands for it.
    """
    if scanned:
        return _scanned_record(reader, file_name)
    info = _info(reader)
    text = first_page_text or ""
    lines = text.splitlines()
    pieces: list[tuple[float, str, float]] = []
    try:
        if len(reader.pages):
            pieces = _pieces(reader.pages[0])
    except Exception:  # noqa: BLE001 - metadata is a bonus, never a reason to fail an ingest
        pieces = []
    big, title_end = _title_span(pieces)
    out = dict(EMPTY_RECORD)
    origin: dict[str, str] = {}
    out["title"] = info["title"] or _first_page_title(lines, big)
    authors = info["authors"]
    if not authors and pieces and title_end:
        authors = author_block(pieces, title_end) or None
    out["authors"] = authors or _text_authors(lines, out["title"])
    raw = "".join(p[1] for p in pieces)
    stamp = _ARXIV_STAMP.search(raw) or _ARXIV_STAMP.search(text)
    arxiv_id = stamp.group(1) if stamp else (find_arxiv_id(text) or find_arxiv_id(info["text"]))
    if arxiv_id:
        origin["arxiv_id"] = "pdf"
    elif file_name:
        m = _ARXIV_FILE.search(file_name)
        if m and arxiv_year(m.group(1)):
            arxiv_id = m.group(1)
            origin["arxiv_id"] = "file name"
    out["arxiv_id"] = arxiv_id
    out["doi"] = find_doi(text[:6000]) or info["doi"]
    venue_year, out["venue"] = _venue_year(text, info["venue"])
    if arxiv_year(arxiv_id):
        out["year"] = arxiv_year(arxiv_id)
        origin["year"] = "arxiv"
        out["venue"] = out["venue"] or ("arXiv" if stamp else None)
    else:
        out["year"] = venue_year or info["year"] or _date_line_year(lines) or info["created"]
    for key in ("title", "authors", "year", "doi", "venue"):
        if out[key] and key not in origin:
            origin[key] = "pdf"
    out["origin"] = origin
    return out


def _scanned_record(reader, file_name: str | None) -> dict:
    info = _info(reader)
    out = dict(EMPTY_RECORD)
    origin: dict[str, str] = {}
    out["title"], out["authors"], out["doi"] = info["title"], info["authors"], info["doi"]
    arxiv_id = find_arxiv_id(info["text"])
    if not arxiv_id and file_name:
        m = _ARXIV_FILE.search(file_name)
        arxiv_id = m.group(1) if m and arxiv_year(m.group(1)) else None
        if arxiv_id:
            origin["arxiv_id"] = "file name"
    out["arxiv_id"] = arxiv_id
    if arxiv_year(arxiv_id):
        out["year"], origin["year"] = arxiv_year(arxiv_id), "arxiv"
    else:
        out["year"] = info["year"]  # XMP's date of the work, never the file's creation date
    for key in ("title", "authors", "year", "doi", "arxiv_id"):
        if out[key] and key not in origin:
            origin[key] = "pdf"
    out["origin"] = origin
    if not out["title"] and not out["authors"]:
        out["no_record"] = SCANNED_NO_RECORD
    return out
