"""Author names read from a PDF: the name block under the title, without affiliation marks.

A paper's first page sets its authors under the title, each name followed by marks that point
to affiliations and notes (``Sebastian Borgeaud†``, ``Kyle Lo\u03b1\u2217``, ``Jeffrey Morais\u1d43``).
Extracted as plain text, the marks are glued to the names ("Borgeaudy": the dagger drawn with a
"y" of a symbol font). :func:`author_block` reads the first page's text pieces with their font
sizes, so a mark set smaller than the names (a superscript) is a separator, never part of a name;
affiliation, e-mail and footnote lines between the names are passed over, and the block ends at
the abstract (or a "Supervisor:" line). :func:`split_author_names` reads one line of names;
:func:`clean_name` removes what is left of marks and mends LaTeX's spacing accents ("O\u02d8guz"
is "O\u011fuz").
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["ADDRESS", "END_OF_BLOCK", "STOP_LINE", "author_block", "clean_name", "fix_spacing_accents",
           "split_author_names"]

STOP_LINE = re.compile(
    r"abstract|university|universit[éa]|institut|laborator|department|school of|college|faculty|research|"
    r"\bai\b|google|facebook|meta|microsoft|deepmind|corporation|\binc\b|\bltd\b|\blabs?\b|team|fund\b|"
    r"@|https?:|www\.|\bemail\b|e-mail|received|accepted|supervisor|advisor|centre|center|academy",
    re.IGNORECASE,
)
END_OF_BLOCK = re.compile(r"^\W*(?:abstract|supervisor|advisor|keywords|(?:[IVX1]+\.?\s+)?introduction)\b",
                           re.IGNORECASE)
ADDRESS = re.compile(r"\d{3,}")  # a postal code or street number: an address, not names
_NOTE_MARKS = re.compile(r"[\u2217\u2020\u2021\u22c6\u00a7\u00b6#$*+\u2032\u2033\d,;]+|''+|\b[a-z]\)")
_NAME_WORD = re.compile(r"^(?:[A-Z\u00c0-\u00de\u0141\u017b\u0179\u015a\u010c\u0160\u017d][^\W\d_'\u2019\-]*"
                        r"(?:[\u02b0-\u02ff\u0300-\u036f'\u2019\-][^\W\d_]*)*\.?"
                        r"|[A-Z]\.(?:-?[A-Z]\.)*|van|von|der|den|de|da|"
                        r"del|la|las|le|du|dos|di|bin|al)$")
_GREEK = re.compile(r"[\u0370-\u03ff]")
_LABEL = re.compile(r"^\s*(?:authors?|by)\s*:\s*", re.IGNORECASE)
# LaTeX's spacing accents, drawn before the letter they belong to ("O\u02d8guz", "Montr\u00b4eal").
_SPACING_ACCENTS = {"\u00a8": "\u0308", "\u00b4": "\u0301", "\u02d8": "\u0306", "\u02c6": "\u0302",
                    "\u02dc": "\u0303", "\u02c7": "\u030c", "`": "\u0300", "\u02da": "\u030a",
                    "\u02dd": "\u030b", "\u00b8": "\u0327", "\u02d9": "\u0307"}
_ACCENT_BEFORE = re.compile("([" + "".join(_SPACING_ACCENTS) + r"])\s?([A-Za-z\u0131])")
# A superscript is at most this share of the names' size (marks are set at 70% or less of it).
_MARK_SIZE_SHARE = 0.85
# How far below the title the name block may reach, in points (a page is 792 high).
_BLOCK_DEPTH = 260


def fix_spacing_accents(text: str) -> str:
    """``text`` with LaTeX's spacing accents put on their letters: "O\u02d8guz" is "O\u011fuz"."""
    if not _ACCENT_BEFORE.search(text):
        return text

    def put(m: re.Match) -> str:
        letter = "i" if m.group(2) == "\u0131" else m.group(2)
        return letter + _SPACING_ACCENTS[m.group(1)]

    return unicodedata.normalize("NFC", _ACCENT_BEFORE.sub(put, text))


def clean_name(name: str) -> str:
    """A name as printed, without marks, label or stray spacing."""
    name = unicodedata.normalize("NFKC", fix_spacing_accents(_LABEL.sub("", name)))
    name = _NOTE_MARKS.sub(" ", _GREEK.sub(" ", name))
    return " ".join(name.split()).strip(" ,;:")


def split_author_names(text: str) -> list[str]:
    """Names in an author line ("A. Gal, B. Eich and M. Shaver", "Kyle Lo  Lucy Lu Wang"), or
    [] when the line does not look like names only."""
    text = fix_spacing_accents(_LABEL.sub("", text))
    text = _GREEK.sub(" ", text)
    text = re.sub(r"\s+and\s+|\s*&\s*|;", ",", text)
    text = _NOTE_MARKS.sub(lambda m: "," if "," in m.group() or ";" in m.group() else " ", text)
    text = re.sub(r"(?<=[a-z])(?=[A-Z][a-z])", " ", text)  # "Rücklé∗Abhishek" glued by a mark
    pieces = [p.strip() for p in re.split(r",|\s{2,}", text) if p.strip()]
    pieces = [p for p in pieces if not (len(p) == 1 and p.islower())]  # a mark after a comma ("Rodary,a")
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


def _lines(pieces: list[tuple[float, str, float]], name_size: float) -> list[str]:
    """The pieces joined into lines: a new line where the text says so or the baseline moves;
    a piece set smaller than the names (a mark) becomes a separator."""
    lines: list[str] = []
    current: list[str] = []
    last_y: float | None = None
    for size, text, y in pieces:
        small = size < _MARK_SIZE_SHARE * name_size
        if last_y is not None and abs(y - last_y) > 0.6 * name_size and not small:
            lines.append("".join(current))
            current = []
        if small:
            current.append(", ")
        else:
            current.append(text)
            last_y = y
        if text.endswith("\n") and not small:
            lines.append("".join(current))
            current = []
    lines.append("".join(current))
    return [" ".join(line.split()) for part in lines for line in part.split("\n") if line.strip()]


def author_block(pieces: list[tuple[float, str, float]], title_end: int) -> list[str]:
    """The authors under the title: ``pieces`` are the first page's text pieces (font size, text,
    baseline) in reading order, ``title_end`` the index of the piece after the title's last."""
    after = [p for p in pieces[title_end:title_end + 400] if p[1].strip()]
    if not after:
        return []
    top = after[0][2]
    block = [p for p in after if top - p[2] <= _BLOCK_DEPTH]
    sizes = [p[0] for p in block if sum(c.isalpha() for c in p[1]) >= 3]
    if not sizes:
        return []
    name_size = sizes[0]
    names: list[str] = []
    for line in _lines(block, name_size):
        if END_OF_BLOCK.match(line):
            break
        if len(line) > 160:  # body text: the block is over
            break
        if STOP_LINE.search(line) or ADDRESS.search(line):
            continue
        found = split_author_names(line)
        names.extend(clean_name(n) for n in found)
    seen: set[str] = set()
    return [n for n in names if n and not (n in seen or seen.add(n))]
