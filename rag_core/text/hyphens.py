"""Line-end hyphens: joined where the word was only broken, kept where the hyphen is the word's.

A PDF line that ends "knowledge-" before "intensive" may be a word broken by the typesetter or
a compound whose hyphen fell at the line end. The document decides: the hyphen stays when the
document writes the hyphenated form elsewhere ("knowledge-intensive"), or when the joined form
is no word of the document and both halves are ("dualencoder" nowhere, "dual" and "encoder"
elsewhere: "dual-encoder"); the word is joined when the document writes it joined (or with an
ending: "retrieval", "retrievals") and never hyphenated, or when a half is no word of it
("infor" + "mation": a word met only at line breaks is still joined). Measured on the shared PDFs in docs/benchmarks.md.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence

__all__ = ["BREAK_RE", "Vocabulary", "join_line_hyphens", "resolve_line_hyphens"]

# A word ending in a letter and a hyphen at the end of a line, and a word on the next line (the
# pattern of rag_core.pdf.extraction's pass, which joined every such break before a lowercase letter).
BREAK_RE = re.compile(r"(?<!\S)(\S*)([^\W\d_])[-\u2010][ \t]*\n[ \t]*([^\W\d_]\S*)[ \t]*(\n?)")
_TOKEN = re.compile(r"[^\W\d_]+(?:[-\u2010][^\W\d_]+)*")
_LETTERS_END = re.compile(r"[^\W\d_]+$")
_LETTERS_START = re.compile(r"[^\W\d_]+")
ENDING = 3  # letters an inflection may add or drop ("retrieval" ~ "retrievals", "trained" ~ "train")


class Vocabulary:
    """The words and hyphenated compounds of a document, outside its line-end breaks (lower case)."""

    def __init__(self, texts: Sequence[str]):
        words: set[str] = set()
        compounds: set[str] = set()
        for text in texts:
            for token in _TOKEN.findall(BREAK_RE.sub(" ", text)):
                token = token.lower().replace("\u2010", "-")
                if "-" in token:
                    compounds.add(token)
                    words.update(token.split("-"))
                else:
                    words.add(token)
        self.words, self.compounds = words, compounds
        self._sorted = sorted(words)

    def has_word(self, word: str) -> bool:
        """``word`` or a form of it with an ending added or dropped (at most :data:`ENDING` letters)."""
        if word in self.words:
            return True
        i = bisect_left(self._sorted, word)
        if i < len(self._sorted) and self._sorted[i].startswith(word) and len(self._sorted[i]) - len(word) <= ENDING:
            return True
        return any(word[:-k] in self.words for k in range(1, ENDING + 1) if len(word) - k >= 5)


def _keeps_hyphen(left: str, right: str, vocabulary: Vocabulary) -> bool:
    if f"{left}-{right}".lower() in vocabulary.compounds:
        return True
    if vocabulary.has_word((left + right).lower()):
        return False
    # neither form elsewhere: a compound when both halves are words of the document ("dual" and
    # "encoder"), a broken word when one is not ("infor" + "mation", "er" + "ror")
    return left.lower() in vocabulary.words and right.lower() in vocabulary.words


def join_line_hyphens(text: str, vocabulary: Vocabulary) -> str:
    """``text`` with each line-end hyphen before a lowercase letter joined or kept as
    ``vocabulary`` says (see the module docstring); the rest of the word moves up to the first
    line, so the number of lines stays the same. A break before a capital, or in a compound
    already hyphenated ("left-to-" + "right"), keeps its hyphen as before."""

    def one(match: re.Match) -> str:
        prefix, letter, tail, newline = match.groups()
        if not tail[0].islower():
            return match.group(0)
        left = _LETTERS_END.search(prefix + letter).group()
        right = _LETTERS_START.match(tail).group()
        keep = "-" in prefix or "\u2010" in prefix or _keeps_hyphen(left, right, vocabulary)
        at_end = match.end() == len(match.string)
        return prefix + letter + ("-" if keep else "") + tail + ("" if at_end and not newline else "\n")

    if "-" not in text and "\u2010" not in text:
        return text
    return BREAK_RE.sub(one, text)


def resolve_line_hyphens(texts: Sequence[str]) -> list[str]:
    """The pages of one document with their line-end hyphens joined or kept by the document's own words."""
    vocabulary = Vocabulary(texts)
    return [join_line_hyphens(text, vocabulary) for text in texts]
