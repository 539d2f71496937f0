"""Sentences of a text: a plain rule-based splitter that knows abbreviations, initials and list bullets.

Linear in the length of the text, whatever it holds (a manuscript is a user's file): no break is
looked for twice from inside one run of white space, and the word before a full stop is read
backwards from the stop, never by splitting the sentence so far again.
"""

from __future__ import annotations

import re

__all__ = ["split_sentences"]

_ABBREVIATIONS = frozenset({
    "e.g", "i.e", "al", "fig", "figs", "eq", "eqs", "sec", "secs", "cf", "vs", "resp", "approx", "ref", "refs",
    "no", "nos", "vol", "ch", "tab", "etc", "dr", "prof", "mr", "ms", "st",
})
# List bullets start a sentence too: "Our contributions are as follows: • We identified ... • We propose"
# read as one 60-word "sentence" hid the claim a paraphrase cited.
_BULLETS = "\u2022\u25e6\u25aa\u2023\u2043\u2219\u25cf"
# A break: white space after . ! or ? (and closing marks) before a capital or a digit; a blank line;
# or a bullet. A bullet's leading white space is matched from the start of its run (or right after a
# line break, where a blank line's match ends) or not at all: tried from every space of a long run
# it was quadratic (1 MB of spaces: minutes). The same breaks are found as before.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])|\n\s*\n"
                             rf"|(?<![^\S\n])\s*[{_BULLETS}]\s+|[{_BULLETS}]\s+")
_STOP_MARKS = ".!?\"'\u201d\u2019)]"


def split_sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` (a plain rule-based splitter that knows
    "e.g.", "et al.", "Fig.", initials and blank lines)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_BREAK.finditer(text):
        if not m.group().startswith("\n") and not any(ch in _BULLETS for ch in m.group()):
            # after . ! or ?: not after an abbreviation or an initial
            word = _last_word(text, start, m.start()).rstrip(_STOP_MARKS).lower()
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
    return out


def _last_word(text: str, start: int, end: int) -> str:
    """The last white-space-separated word of ``text[start:end]``, read backwards from ``end``
    (the words read for successive breaks never overlap, so all of them cost one pass)."""
    i = end
    while i > start and not text[i - 1].isspace():
        i -= 1
    return text[i:end]
