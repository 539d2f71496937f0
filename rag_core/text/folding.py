"""Text folded for matching quotes copied out of a PDF: ligatures, quotes, dashes, hyphenation, spacing.

:func:`normalize_for_matching` folds a text and maps every folded character back to the
original one, so a match in the folded text is a span of the original; :func:`fold_text` is
the same fold without the map, at C speed where it can be. Exact search, citation checks, the
page marks and the Verify page all fold with these two.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["fold_characters", "fold_text", "normalize_for_matching"]

# Characters folded before Unicode compatibility normalisation and case folding.
_SPECIAL_FOLDS = {
    # single quotes, primes and accents used as apostrophes
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u02bc": "'", "\u00b4": "'", "`": "'",
    # double quotes
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u00ab": '"', "\u00bb": '"',
    # hyphens, dashes and minus signs
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-",
    "\u2015": "-", "\u2212": "-", "\ufe58": "-", "\ufe63": "-", "\uff0d": "-", "\u2043": "-",
    # a soft hyphen is kept as a marker for the structural pass (dropped there with the
    # white space after it); pdfium's line-end hyphen (U+0002, U+FFFE) is one too
    "\u00ad": "\u00ad", "\x02": "\u00ad", "\ufffe": "\u00ad",
    # invisible characters
    "\u200b": "", "\u200c": "", "\u200d": "", "\u2060": "", "\ufeff": "",
}


def _fold_char(char: str) -> str:
    special = _SPECIAL_FOLDS.get(char)
    if special is not None:
        return special
    compat = unicodedata.normalize("NFKC", char)
    return "".join(_SPECIAL_FOLDS.get(c, c) for c in compat).casefold()


class _FoldTable(dict):
    """``str.translate`` table of :func:`_fold_char`, filled in as characters are seen."""

    def __missing__(self, codepoint: int) -> str:
        folded = _fold_char(chr(codepoint))
        self[codepoint] = folded
        return folded


_FOLD_TABLE = _FoldTable()
for _cp in range(128):  # pre-filled so str.translate can take its ASCII fast path
    _FOLD_TABLE[_cp] = _fold_char(chr(_cp))

# The structural pass over the character-folded text, one alternative per rule:
# 1. a soft hyphen and the white space after it go ("retrie\u00ad\nval" -> "retrieval");
# 2. a run of hyphens/dashes with the white space around it goes, so a line-end hyphen
#    matches the joined, the hyphenated and the spaced reading ("Lucene-\nBM25",
#    "Lucene-BM25", "LuceneBM25"; "retrie- val", "retrieval"), except between two digits,
#    where it stays one "-" ("1990 - 2000" -> "1990-2000", never "19902000");
# 3. any other run of white space becomes one space.
_STRUCTURE = re.compile(r"\u00ad\s*|\s*-[\s\u00ad-]*|\s+")
# The same rules for fold_text, without matching a lone space (rule 3 leaves it as it is):
# a Python call per space was most of the time of folding a whole collection.
_STRUCTURE_CHANGES = re.compile(r"\u00ad\s*|\s*-[\s\u00ad-]*| \s+|[^\S ]\s*")


def _structural_replacement(text: str, start: int, end: int) -> str:
    first = text[start]
    if first == "\u00ad":
        return ""
    if first == "-" or "-" in text[start:end]:
        if 0 < start and end < len(text) and text[start - 1].isdigit() and text[end].isdigit():
            return "-"
        return ""
    return " "


def _needs_structure(folded: str) -> bool:
    return "-" in folded or "\u00ad" in folded or any(c.isspace() and c != " " for c in folded) or "  " in folded


def fold_text(text: str) -> str:
    """``normalize_for_matching(text)[0]`` without the offset map (C-speed where possible)."""
    folded = text.translate(_FOLD_TABLE)
    if not _needs_structure(folded):
        return folded
    return _STRUCTURE_CHANGES.sub(lambda m: _structural_replacement(folded, m.start(), m.end()), folded)


def fold_characters(text: str) -> tuple[str, list[int]]:
    """The character pass of :func:`normalize_for_matching` alone: quotes, dashes, ligatures,
    case and invisible characters folded, hyphens and white space left where they are (a word
    reader decides what a hyphen joins); with, for each folded character, its original index."""
    if text.isascii():
        return text.translate(_FOLD_TABLE), list(range(len(text)))
    table = _FOLD_TABLE
    pieces = [table[ord(c)] for c in text]
    origin = [i for i, piece in enumerate(pieces) for _ in piece]
    return "".join(pieces), origin


def normalize_for_matching(text: str) -> tuple[str, list[int]]:
    """Fold ``text`` for quote matching; return it and, for each of its characters,
    the index of the original character it came from.

    Folding: curly quotes become straight ones, every dash and minus sign becomes "-",
    zero-width characters are dropped, each character is put through NFKC (ligatures such
    as "ﬁ" -> "fi", non-breaking and other spaces -> " ") and case-folded; then a soft
    hyphen and the white space after it are dropped, a run of hyphens or dashes is dropped
    with the white space around it (kept as one "-" between two digits), and every other
    run of white space becomes a single space. So a word broken at a line end
    ("retrie-\\nval", "Lucene-\\nBM25") folds to the same letters as its joined, hyphenated
    and spaced readings ("retrieval", "retrie-val", "retrie- val").
    """
    if text.isascii():
        translated = text.translate(_FOLD_TABLE)  # ASCII folds one to one
        origin = list(range(len(text)))
    else:
        table = _FOLD_TABLE
        pieces = [table[ord(c)] for c in text]
        translated = "".join(pieces)
        if len(translated) == len(text) and all(len(p) == 1 for p in pieces):
            origin = list(range(len(text)))
        else:
            origin = []
            for i, piece in enumerate(pieces):
                if len(piece) == 1:
                    origin.append(i)
                elif piece:
                    origin.extend([i] * len(piece))
    if not _needs_structure(translated):
        return translated, origin

    out: list[str] = []
    out_map: list[int] = []
    pos = 0
    for m in _STRUCTURE.finditer(translated):
        start, end = m.start(), m.end()
        out.append(translated[pos:start])
        out_map.extend(origin[pos:start])
        replacement = _structural_replacement(translated, start, end)
        if replacement:
            anchor = start if replacement == " " else start + m.group().index("-")
            out.append(replacement)
            out_map.append(origin[anchor])
        pos = end
    out.append(translated[pos:])
    out_map.extend(origin[pos:])
    return "".join(out), out_map
