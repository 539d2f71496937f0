"""Pure display helpers shared by the app and the CLI.

Text that comes from a document (passages, file names, page labels, titles) or from a user
(queries, collection names) is data. These helpers show it as the characters it is: never as
markdown or HTML (:func:`literal_html`, :func:`highlight_html`), never as terminal control
sequences (:func:`terminal_safe`), never as a live spreadsheet formula (:func:`spreadsheet_safe`).
They also word the things every view shows the same way: page labels, short document titles,
snippets.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "OCR_NOTE",
    "OCR_TEXT",
    "counted",
    "highlight_html",
    "literal_html",
    "page_label",
    "page_span",
    "printable_data",
    "printable_text",
    "query_terms",
    "seconds_text",
    "short_title",
    "snippet",
    "spreadsheet_safe",
    "strip_escape_sequences",
    "terminal_safe",
]

# ----------------------------------------------------------------------------- pages

# How a place whose text was read by OCR is marked, and what it means.
OCR_TEXT = "OCR text"
OCR_NOTE = "This text was read by OCR from a scanned page: a character may be misread; compare it with the page image."


def page_span(row: Mapping) -> str:
    """The PDF page(s) of a row: "12", "12–13", or "?" when unknown."""
    start = row.get("page_start") or row.get("page")
    end = row.get("page_end")
    if not start:
        return "?"
    return f"{start}–{end}" if end and end != start else str(start)


def page_label(row: Mapping) -> str:
    """ "p. 3", "pp. 3–4" or "p. 3 (printed 117)" when the PDF prints another number, and
    "p. 1 (OCR text)" for text read by OCR from a scan (a character may be misread).

    The printed label is the document's own text: show the result with :func:`literal_html`
    or :func:`terminal_safe`.
    """
    span = page_span(row)
    text = f"pp. {span}" if "–" in span else f"p. {span}"
    label = row.get("page_label")
    start = row.get("page_start") or row.get("page")
    if label not in (None, "") and str(label) != str(start):
        text += f" (printed {label})"
    if row.get("ocr"):
        text += f" ({OCR_TEXT})"
    return text



# ----------------------------------------------------------------------------- titles and snippets


def _surname(author: str) -> str:
    author = " ".join(str(author).split())
    if "," in author:  # "Devlin, Jacob"
        return author.split(",", 1)[0].strip()
    return author.split(" ")[-1] if author else ""


def _authors(authors) -> list[str]:
    if not authors:
        return []
    if isinstance(authors, str):
        parts = re.split(r"\s*;\s*|\s+and\s+|\s*&\s*", authors.strip())
        if len(parts) == 1 and authors.count(",") >= 2:  # "A. Smith, B. Jones, C. Wu"
            parts = authors.split(",")
        return [p.strip() for p in parts if p.strip()]
    if isinstance(authors, Iterable):
        return [str(a).strip() for a in authors if str(a).strip()]
    return []


def _shorten(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    if " " in cut[max_chars // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,.;:-–—") + "…"


def short_title(doc: Mapping | None, fallback: str = "", *, max_chars: int = 72) -> str:
    """ "Devlin et al. 2018 · BERT: Pre-training of deep…" from a document record's ``title``,
    ``authors`` and ``year``; the file name (``source``, or ``fallback``) when it has none."""
    doc = doc or {}
    name = str(doc.get("source") or doc.get("file_name") or fallback or "")
    title = " ".join(str(doc.get("title") or "").split())
    authors = _authors(doc.get("authors"))
    year = str(doc.get("year") or "").strip()
    who = ""
    if authors:
        first = _surname(authors[0])
        who = first + (" et al." if len(authors) > 2 else f" and {_surname(authors[1])}" if len(authors) == 2 else "")
    head = " ".join(part for part in (who, year) if part)
    if not title:
        return f"{head} · {name}" if head else name  # a file name is shown whole
    if not head:
        return _shorten(title, max_chars)
    return f"{head} · {_shorten(title, max(max_chars - len(head) - 3, 16))}"


_SPACE = re.compile(r"\s+")


def snippet(text: str, query: str = "", *, chars: int = 180) -> str:
    """About ``chars`` characters of ``text`` on one line, around the first query word found
    (the start of the text when none is), with "…" where it was cut."""
    flat = _SPACE.sub(" ", text or "").strip()
    if len(flat) <= chars:
        return flat
    start = 0
    terms = query_terms(query)
    if terms:
        found = re.search(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")", flat, re.IGNORECASE)
        if found:
            start = max(0, found.start() - chars // 4)
            if start:
                space = flat.find(" ", start)
                start = space + 1 if 0 <= space < found.start() else start
    end = min(len(flat), start + chars)
    if end < len(flat):
        space = flat.rfind(" ", start + chars // 2, end)
        end = space if space > 0 else end
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def seconds_text(seconds: float | None) -> str:
    """ "42 s" or "3 min 05 s"; "?" when unknown."""
    if seconds is None:
        return "?"
    seconds = max(0, round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"



def counted(n: int, noun: str, plural: str | None = None) -> str:
    """ "1 query", "3 queries", "0 passages": ``n`` with the noun in its number (``plural``: when
    not the noun + "s", or "y" -> "ies")."""
    if n == 1:
        return f"{n} {noun}"
    if plural is None:
        plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{n:,} {plural}"

# ----------------------------------------------------------------------------- HTML


_WORD = re.compile(r"[^\W_]{2,}", re.UNICODE)
_LINE_BREAK = re.compile(r"(?<!\n)\n(?!\n)")


def query_terms(query: str) -> list[str]:
    """The query's content words, longest first (for highlighting and snippets only)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words = {w.lower() for w in _WORD.findall(query or "")}
    return sorted((w for w in words if w not in ENGLISH_STOP_WORDS), key=lambda w: (-len(w), w))


def literal_html(text: object, *, reflow: bool = False) -> str:
    """``text`` as HTML that shows exactly its characters: every ``<``, ``&`` and quote escaped.

    Pass the result only to an element that does not read markdown (``st.html``), so that
    ``**bold**`` or ``![x](http://…)`` stay text. ``reflow`` joins single line breaks (a PDF's
    line ends) into spaces; blank lines stay.
    """
    escaped = html.escape("" if text is None else str(text), quote=True)
    return _LINE_BREAK.sub(" ", escaped) if reflow else escaped


def highlight_html(text: str, query: str = "", spans: Iterable[tuple[int, int]] | None = None, *,
                   reflow: bool = True) -> str:
    """``text`` as literal HTML with query words marked (``rc-term``) and ``spans`` (character
    offsets) marked strongly (``rc-hit``): escape first, then add only our own ``<mark>`` tags."""
    text = text or ""
    marks: list[tuple[int, int, str]] = []
    for start, end in spans or []:
        if 0 <= start < end <= len(text):
            marks.append((start, end, "rc-hit"))
    terms = query_terms(query)
    if terms:
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\w*", re.IGNORECASE)
        for m in pattern.finditer(text):
            if not any(s < m.end() and m.start() < e for s, e, _ in marks):
                marks.append((m.start(), m.end(), "rc-term"))
    marks.sort()
    out, pos = [], 0
    for start, end, css in marks:
        if start < pos:
            continue
        out.append(literal_html(text[pos:start], reflow=reflow))
        out.append(f'<mark class="{css}">{literal_html(text[start:end], reflow=reflow)}</mark>')
        pos = end
    out.append(literal_html(text[pos:], reflow=reflow))
    return "".join(out)


# ----------------------------------------------------------------------------- terminal

# C0 controls but tab and line feed, DEL, C1 controls, and the bidirectional embeddings,
# overrides and isolates that can make a terminal show text in another order than it is.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


# Whole terminal escape sequences (ECMA-48), so that none leaves a remnant ("[2J", "]0;pwned"):
# a control sequence (ESC [ or CSI, parameter bytes, intermediate bytes, a final byte), a control
# string (OSC, DCS, SOS, PM, APC: ESC ] P X ^ _ or their C1 forms, up to BEL or ST, or to the end
# of the text when it is never ended: a terminal would swallow it too), and the other escapes
# (ESC, intermediate bytes, a final byte: charset changes, keypad modes, a reset).
ESCAPE_SEQUENCE = re.compile(
    "(?:\x1b\\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    "|(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|\x1b[\x20-\x2f]*[\x30-\x7e]")
# What a removed sequence is shown as: the symbol for escape, so it is not dropped silently.
ESCAPE_SHOWN = "\u241b"


_SEQUENCE_START = re.compile("[\x1b\x90-\x9f]")


def strip_escape_sequences(text: str, shown: str = ESCAPE_SHOWN) -> str:
    """``text`` with every whole terminal escape sequence replaced by ``shown`` (see ESCAPE_SEQUENCE)."""
    return ESCAPE_SEQUENCE.sub(shown, text) if _SEQUENCE_START.search(text) else text


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: object, *, one_line: bool = False) -> str:
    """``text`` safe to print on a terminal: every whole escape sequence (clear the screen,
    retitle the window, colours) removed and shown as ``␛``, every other control character shown
    as an escape (BEL -> ``\\x07``), so that printing it cannot move the cursor, clear the
    screen or retitle the window, and no remnant of a sequence (``[2J``) is left.

    Tabs and line feeds stay unless ``one_line`` (for file names, labels and table cells).
    Lone surrogates (undecodable bytes) are shown as ``\\udcXX`` rather than failing to print.
    """
    text = strip_escape_sequences("" if text is None else str(text))
    text = (_CONTROL_ONE_LINE if one_line else _CONTROL).sub(_visible, text)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = "".join(f"\\u{ord(ch):04x}" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_LINE_BREAKS = re.compile("[\r\n\t\x0b\x0c\x85\u2028\u2029]")
_ANY_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def printable_text(text: object, *, one_line: bool = True, shown: str = "") -> str:
    """``text`` with every whole terminal escape sequence (replaced by ``shown``), every control
    character (C0, DEL, C1), the bidirectional marks, embeddings, overrides and isolates, and lone
    surrogates removed; line breaks and tabs become spaces (kept when not ``one_line``). What a
    document, a records file or a person typed is stored, exported and printed as (``--json``
    included), so that no output carries a control character in either form."""
    if text is None:
        return ""
    text = str(text)
    if _ANY_CONTROL.search(text) is None:
        return text  # the common case, at C speed
    text = strip_escape_sequences(text, shown)
    if one_line:
        text = _LINE_BREAKS.sub(" ", text)
        return _UNPRINTABLE.sub("", text)
    return _UNPRINTABLE.sub(lambda m: m.group() if m.group() in "\n\t" else "", text.replace("\r\n", "\n"))


def printable_data(value, *, one_line: bool = True, shown: str = ""):
    """``value`` (a JSON-like structure) with :func:`printable_text` applied to every string in it,
    keys included, at any depth: what ``--json`` prints and an export writes."""
    if isinstance(value, str):
        return printable_text(value, one_line=one_line, shown=shown)
    if isinstance(value, dict):
        return {printable_text(k, shown=shown) if isinstance(k, str) else k:
                printable_data(v, one_line=one_line, shown=shown) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_data(v, one_line=one_line, shown=shown) for v in value]
    return value


# ----------------------------------------------------------------------------- spreadsheets

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """A CSV cell that a spreadsheet will not run: text starting with ``= + - @``, a tab or a
    carriage return gets a leading ``'`` (OWASP's rule against CSV injection). Numbers and
    other values pass unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value
