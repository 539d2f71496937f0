"""Bibliographic metadata of a PDF: title, authors and year, read from the file itself.

:func:`guess_metadata` is conservative: a field is None when the PDF does not say it clearly.
It reads the document information dictionary and XMP first, then the first page: the title is
the text set in the largest font (an arXiv stamp in the margin left aside), the authors are
the lines between the title and the affiliations or the abstract, the year comes from the
arXiv stamp, a copyright line, a journal reference or a date line under the title.

:func:`rag_core.citations.bibliography.match_documents` uses these records to find the
documents a citation points to.
"""

from __future__ import annotations

import re

__all__ = ["guess_metadata", "split_author_names"]

_ARXIV_STAMP = re.compile(
    r"arXiv:\s*\d{4}\.\d{4,5}(?:v\d+)?\s*\[[^\]]+\]\s*\d{1,2}\s+[A-Z][a-z]{2,8}\s+((?:19|20)\d{2})"
)
_COPYRIGHT = re.compile(r"(?:\u00a9|\(c\)|copyright)\s*((?:19|20)\d{2})", re.IGNORECASE)
_JOURNAL_REF = re.compile(r"\b[A-Z]{2,6}\s?\d{0,3}\(((?:19|20)\d{2})\)\d+")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DATE_LINE = re.compile(r"^\W*(?:\d{1,2}\s+)?([A-Za-z]{3,9})\.?\s+(?:\d{1,2},?\s+)?((?:19|20)\d{2})\W*$")
_STOP_LINE = re.compile(
    r"abstract|university|universit[éa]|institut|laborator|department|school of|college|faculty|research|"
    r"\bai\b|google|facebook|meta|microsoft|@|https?:|www\.|\bemail\b|e-mail|received|accepted|supervisor",
    re.IGNORECASE,
)
_NOTE_MARKS = re.compile(r"[\u2217\u2020\u2021\u22c6\u00a7\u00b6#$*+\u2032\d,;]+|\b[a-z]\)")
_NAME_WORD = re.compile(r"^(?:[A-Z\u00c0-\u00de][^\W\d_'\u2019\-]*"
                        r"(?:[\u02b0-\u02ff\u0300-\u036f'\u2019\-][^\W\d_]*)*\.?"
                        r"|[A-Z]\.(?:-?[A-Z]\.)*|van|von|der|den|de|da|"
                        r"del|la|las|le|du|dos|di|bin|al)$")
_GREEK = re.compile(r"[\u0370-\u03ff]")


def split_author_names(text: str) -> list[str]:
    """Names in an author line ("A. Gal, B. Eich and M. Shaver", "Kyle Lo  Lucy Lu Wang"), or
    [] when the line does not look like names only."""
    text = _GREEK.sub(" ", text)
    text = re.sub(r"\s+and\s+|\s*&\s*|;", ",", text)
    text = _NOTE_MARKS.sub(lambda m: "," if "," in m.group() or ";" in m.group() else " ", text)
    text = re.sub(r"(?<=[a-z])(?=[A-Z][a-z])", " ", text)  # "Rücklé∗Abhishek" glued by a mark
    pieces = [p.strip() for p in re.split(r",|\s{2,}", text) if p.strip()]
    names: list[str] = []
    for piece in pieces:
        words = piece.split()
        if not 2 <= len(words) <= 5 or not all(_NAME_WORD.match(w) for w in words):
            if len(words) > 5 and all(_NAME_WORD.match(w) for w in words):
                # names separated by single spaces only ("Jacob Devlin Ming-Wei Chang"): pairs
                names.extend(" ".join(words[i:i + 2]) for i in range(0, len(words) - 1, 2))
                continue
            return []
        if not any(len(w.rstrip(".")) > 1 and w[0].isupper() for w in words[1:]):
            return []
        names.append(" ".join(words))
    return names


def _looks_like_title(text: str) -> bool:
    letters = sum(c.isalpha() for c in text)
    return 10 <= len(text) <= 300 and len(text.split()) >= 2 and letters >= 0.6 * len(text.replace(" ", ""))


def _plausible_info_title(title: str) -> bool:
    lowered = title.lower()
    if any(bad in lowered for bad in ("untitled", "microsoft word", ".dvi", ".tex", ".doc", ".pdf")):
        return False
    return _looks_like_title(title)


def _info(reader) -> dict:
    """Title, authors and year from the document information dictionary and XMP."""
    out: dict = {"title": None, "authors": None, "year": None}
    try:
        info = reader.metadata or {}
        title = str(info.get("/Title") or "").strip()
        author = str(info.get("/Author") or "").strip()
    except Exception:  # noqa: BLE001 - a damaged info dictionary is not worth failing over
        title, author = "", ""
    xmp_title, xmp_author, xmp_year = _xmp(reader)
    title, author, out["year"] = title or xmp_title, author or xmp_author, xmp_year
    if title and _plausible_info_title(title):
        out["title"] = " ".join(title.split())
    if author and not re.search(r"@|team|\bieee\b|\u00a9|university|http", author, re.IGNORECASE):
        names = split_author_names(author.replace(";", ","))
        out["authors"] = names or None
    return out


def _xmp(reader) -> tuple[str, str, int | None]:
    """Title, authors and year from the XMP packet ("", "", None when absent or unreadable)."""
    try:
        xmp = reader.xmp_metadata
        if xmp is None:
            return "", "", None
        title = str((xmp.dc_title or {}).get("x-default") or "").strip()
        author = "; ".join(a for a in (xmp.dc_creator or []) if a).strip()
        dates = [str(d) for d in (xmp.dc_date or [])]
    except Exception:  # noqa: BLE001 - a damaged XMP packet is not worth failing over
        return "", "", None
    year = int(dates[0][:4]) if dates and dates[0][:4].isdigit() else None
    return title, author, year


def _largest_text(page) -> str:
    """The text set in the largest font on the page, the arXiv stamp left aside."""
    parts: list[tuple[float, str]] = []

    def visit(text, cm, tm, font_dict, font_size):
        if not text or not text.strip():
            return
        size = float(font_size or 0) * (abs(tm[3]) or abs(tm[0]) or 1) * (abs(cm[3]) or abs(cm[0]) or 1)
        parts.append((round(size, 1), text))

    page.extract_text(visitor_text=visit)
    parts = [(s, t) for s, t in parts if not t.strip().startswith("arXiv:") and sum(c.isalpha() for c in t) >= 3]
    if not parts:
        return ""
    largest = max(s for s, _ in parts)
    return " ".join(" ".join(t for s, t in parts if s == largest).split())


def _first_page(lines: list[str], big: str) -> dict:
    from rapidfuzz import fuzz

    out: dict = {"title": None, "authors": None, "year": None}
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
    if title_at:
        title = " ".join(head[i] for i in title_at)
        title = re.sub(r"(?<=\w)- (?=\w)", "-", title)
        if _looks_like_title(title):
            out["title"] = title
        names: list[str] = []
        for line in head[title_at[-1] + 1: title_at[-1] + 6]:
            if _STOP_LINE.search(line) or _DATE_LINE.match(line):
                break
            found = split_author_names(line)
            if not found:
                break
            names.extend(found)
        out["authors"] = names or None
        for line in head[title_at[-1] + 1: title_at[-1] + 4]:
            m = _DATE_LINE.match(line)
            if m and m.group(1)[:3].lower() in _MONTHS:
                out["year"] = int(m.group(2))
                break
    return out


def guess_metadata(reader, first_page_text: str) -> dict:
    """``{"title", "authors", "year"}`` of a PDF (each None when unsure).

    ``reader`` is an open ``pypdf.PdfReader``; ``first_page_text`` the cleaned text of page 1.
    """
    out = _info(reader)
    text = first_page_text or ""
    big = ""
    try:
        if len(reader.pages):
            big = _largest_text(reader.pages[0])
    except Exception:  # noqa: BLE001 - metadata is a bonus, never a reason to fail an ingest
        big = ""
    page = _first_page(text.splitlines(), big)
    out["title"] = out["title"] or page["title"]
    out["authors"] = out["authors"] or page["authors"]
    stamp = _ARXIV_STAMP.search(big + "\n" + text) or _ARXIV_STAMP.search(_stamp_text(reader))
    if stamp:
        out["year"] = int(stamp.group(1))
    elif out["year"] is None:
        for pattern in (_COPYRIGHT, _JOURNAL_REF):
            m = pattern.search(text[:3000])
            if m:
                out["year"] = int(m.group(1))
                break
        else:
            out["year"] = page["year"]
    return out


def _stamp_text(reader) -> str:
    try:
        return reader.pages[0].extract_text() or "" if len(reader.pages) else ""
    except Exception:  # noqa: BLE001
        return ""
