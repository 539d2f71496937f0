"""Sentences of a text: a plain rule-based splitter that knows abbreviations, initials and list bullets."""

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
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])|\n\s*\n"
                             rf"|\s*[{_BULLETS}]\s+")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` (a plain rule-based splitter that knows
    "e.g.", "et al.", "Fig.", initials and blank lines)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_BREAK.finditer(text):
        if not m.group().startswith("\n") and not any(ch in _BULLETS for ch in m.group()):
            # after . ! or ?: not after an abbreviation or an initial
            before = text[start:m.start()].split()
            word = before[-1].rstrip(".!?\"'\u201d\u2019)]").lower() if before else ""
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
