"""Numbers in text, read as amounts: digits and words are the same number.

:func:`quantities` finds every amount in a list of :class:`rag_core.text.words.Word`
tokens: digits ("15", "8.5", "100,000", "21m", "100k"), number words ("fifteen",
"twenty-one million", "eight and a half"), percentages ("15%", "fifteen percent"),
fractions and proportions ("half", "a quarter", "16/18", "four out of five", "8 of the 19"),
ranges ("9%-19%", "7 to 18", "between 2 and 7"), multiples ("three times", "twice", "10x"),
ordinals ("second", "2nd"), a unit when one follows ("12 hours", "4.6 points"), an
approximation ("about", "roughly", "~") and a bound ("less than", "at least").

:func:`compatible` says whether two amounts can be the same figure: "fifteen percent" and
"15%", "half" and "50%", "three days" and "72 hours", "about 8.5 hours" and "8.8 hours"
within ``tolerance``; a value inside a range or on the right side of a bound is compatible.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_core.text.words import Word

__all__ = ["UNIT_WORDS", "Quantity", "compatible", "quantities"]

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "bn": 1e9}
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "twentieth": 20, "hundredth": 100,
}
_FRACTIONS = {"half": 0.5, "halves": 0.5, "third": 1 / 3, "thirds": 1 / 3, "quarter": 0.25, "quarters": 0.25}
_TIMES = {"twice": 2, "thrice": 3}
# Units of time in seconds: amounts of time compare across units ("three days" = "72 hours").
_TIME = {
    "ms": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3, "second": 1, "seconds": 1, "sec": 1, "secs": 1,
    "minute": 60, "minutes": 60, "min": 60, "mins": 60, "hour": 3600, "hours": 3600, "hr": 3600, "hrs": 3600,
    "h": 3600, "day": 86400, "days": 86400, "week": 604800, "weeks": 604800, "month": 2629800,
    "months": 2629800, "year": 31557600, "years": 31557600,
}
_PERCENT = {"%", "percent", "pct", "percentage"}
_POINTS = {"point", "points", "pp"}
# The words that are part of an amount's figure rather than of what it counts.
UNIT_WORDS = frozenset(_TIME) | _PERCENT | _POINTS | {"times", "cent"}
_APPROX = {"about", "around", "approximately", "roughly", "nearly", "almost", "circa", "~", "approx", "some"}
_BOUNDS = {
    ("less", "than"): "<", ("fewer", "than"): "<", ("at", "most"): "<", ("up", "to"): "<", ("under",): "<",
    ("below",): "<", ("lower", "than"): "<", ("smaller", "than"): "<", ("within",): "<",
    ("more", "than"): ">", ("greater", "than"): ">", ("at", "least"): ">", ("over",): ">", ("above",): ">",
    ("higher", "than"): ">", ("larger", "than"): ">", ("exceeding",): ">", ("upwards", "of"): ">",
}
# "one" is a pronoun after these ("a second one", "the one", "this one") and before these ("one can").
_ONE_AFTER = {"a", "an", "the", "this", "that", "each", "every", "any", "no", "which", "another", "other", "only",
              "second", "first", "last", "next", "new", "single", "same", "such", "big", "small", "right", "wrong"}
_ONE_BEFORE = {"can", "could", "may", "might", "must", "should", "would", "will", "needs", "need", "has", "is",
               "does", "sees", "finds", "obtains", "gets", "wants"}


@dataclass(frozen=True)
class Quantity:
    """One amount of a text: ``value`` (a percentage as written: 15 for "15%"; a range's low
    end), ``high`` (a range's high end), ``percent``, ``unit`` ("time" in seconds, "point",
    "times", "ordinal", "proportion", or None), ``denominator`` ("8 of 19" -> 19),
    ``approx`` ("about"), ``bound`` ("<" or ">"), ``seconds`` (the unit's length, for a time),
    and the token span ``[start, end)``."""

    value: float
    start: int
    end: int
    high: float | None = None
    percent: bool = False
    unit: str | None = None
    denominator: float | None = None
    approx: bool = False
    bound: str | None = None
    seconds: float | None = None  # a unit of time: its length in seconds

    @property
    def share(self) -> float | None:
        """The amount as a share of a whole (15% -> 0.15, "half" -> 0.5, "8 of 19"), when it is one."""
        if self.percent:
            return self.value / 100
        if self.unit == "proportion":
            return self.value / self.denominator if self.denominator else self.value
        return None


def _digits(norm: str) -> float | None:
    text = norm.replace(",", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(k|m|b|bn)?", text)
    if m:
        return float(m.group(1)) * (_SUFFIXES[m.group(2)] if m.group(2) else 1)
    return None


def _word_number(norms: Sequence[str], i: int) -> tuple[float, int] | None:
    """A number written in words from ``norms[i]``: (value, tokens used)."""
    value, current, j = 0.0, 0.0, i
    seen = False
    while j < len(norms):
        word = norms[j]
        if word in _UNITS and (not seen or (current % 10 == 0 and current >= 20 and _UNITS[word] < 10)):
            current += _UNITS[word]
        elif word in _TENS and (not seen or current >= 100 or current == 0):
            current += _TENS[word]
        elif word in _SCALES and seen:
            if word == "hundred":
                current *= 100
            else:
                value += current * _SCALES[word]
                current = 0
        elif word == "and" and seen and j + 1 < len(norms) and (norms[j + 1] in _UNITS or norms[j + 1] in _TENS):
            pass  # "one hundred and twenty"
        else:
            break
        seen = True
        j += 1
    if not seen:
        return None
    return value + current, j - i


def quantities(tokens: Sequence[Word]) -> list[Quantity]:
    """Every amount written in ``tokens``, in order (see the module docstring)."""
    norms = [t.norm for t in tokens]
    kinds = [t.kind for t in tokens]
    found: list[Quantity] = []
    i = 0
    n = len(norms)
    while i < n:
        got = _one_amount(norms, kinds, i)
        if got is None:
            i += 1
            continue
        value, end, extra = got
        q = _dress(norms, kinds, i, end, value, **extra)
        found.append(q)
        i = q.end
    return _proportions(norms, found)


def _one_amount(norms, kinds, i) -> tuple[float, int, dict] | None:
    word = norms[i]
    if kinds[i] == "number":
        m = re.fullmatch(r"(\d+)(st|nd|rd|th)", word)
        if m:
            return float(m.group(1)), i + 1, {"unit": "ordinal"}
        m = re.fullmatch(r"(\d+(?:\.\d+)?)x", word)
        if m:
            return float(m.group(1)), i + 1, {"unit": "times"}
        if word.endswith("s") and word[:-1].isdigit():  # the 1990s
            return None
        value = _digits(word)
        if value is None:
            return None
        end = i + 1
        if end < len(norms) and norms[end] in _SCALES and norms[end] != "hundred":
            value *= _SCALES[norms[end]]
            end += 1
        elif end < len(norms) and norms[end] == "hundred":
            value *= 100
            end += 1
        return value, end, {}
    if kinds[i] != "word":
        return None
    if word == "one" and ((i > 0 and norms[i - 1] in _ONE_AFTER) or (i + 1 < len(norms) and norms[i + 1] in
                                                                      _ONE_BEFORE)):
        return None
    if word in _TIMES:
        return float(_TIMES[word]), i + 1, {"unit": "times"}
    if word in _ORDINALS:  # "a third" and "two thirds" were read as fractions before reaching here
        return float(_ORDINALS[word]), i + 1, {"unit": "ordinal"}
    if word in ("a", "an") and i + 1 < len(norms):
        nxt = norms[i + 1]
        if nxt in _FRACTIONS:
            return _FRACTIONS[nxt], i + 2, {"unit": "proportion"}
        if nxt == "single" or (nxt in _TIME and nxt not in ("second", "min", "h", "ms")):
            return 1.0, i + (2 if nxt == "single" else 1), {}
        if nxt == "dozen":
            return 12.0, i + 2, {}
        return None
    if word in ("half", "halves"):
        return 0.5, i + 1, {"unit": "proportion"}
    if word == "dozen":
        return 12.0, i + 1, {}
    got = _word_number(norms, i)
    if got is None:
        return None
    value, used = got
    end = i + used
    if end < len(norms) and norms[end] in _FRACTIONS and norms[end] not in ("half", "halves"):
        return value * _FRACTIONS[norms[end]], end + 1, {"unit": "proportion"}  # "two thirds"
    if end + 2 < len(norms) + 1 and norms[end:end + 3] == ["and", "a", "half"]:
        value += 0.5
        end += 3
    return value, end, {}


def _dress(norms, kinds, start, end, value, unit=None) -> Quantity:
    """The amount at ``[start, end)`` with what surrounds it: range, percent, unit, approximation, bound."""
    high = None
    percent = False
    seconds = None
    n = len(norms)
    # a range: "7-18", "9%-19%", "7 to 18", "between 2 and 7"
    j = end
    if j < n and norms[j] in _PERCENT:
        percent, j = True, j + 1
    if j + 1 < n and norms[j] in ("-", "to", "and") and (kinds[j + 1] == "number" or norms[j + 1] in _UNITS):
        between = start > 0 and norms[start - 1] == "between"
        if norms[j] == "-" or (norms[j] == "to" and not (start > 0 and norms[start - 1] == "from")) or (
                norms[j] == "and" and between):
            got = _one_amount(norms, kinds, j + 1)
            if got is not None and got[2].get("unit") is None:
                high, j = got[0], got[1]
                if j < n and norms[j] in _PERCENT:
                    percent, j = True, j + 1
    end = j
    if not percent and end < n and norms[end] in _PERCENT:
        percent, end = True, end + 1
    elif end + 1 < n and norms[end] == "per" and norms[end + 1] == "cent":
        percent, end = True, end + 2
    if unit is None and not percent and end < n:
        following = norms[end]
        if following in _TIME:
            unit, seconds, end = "time", _TIME[following], end + 1
        elif following in _POINTS:
            unit, end = "point", end + 1
        elif following == "times":
            unit, end = "times", end + 1
    approx = start > 0 and norms[start - 1] in _APPROX
    bound = None
    before = tuple(norms[max(0, start - 3):start])
    for words_, sign in _BOUNDS.items():
        if before[len(before) - len(words_):] == words_ or (
                before[len(before) - len(words_) - 1:-1] == words_ and before[-1] in _APPROX):
            bound = sign
            break
    return Quantity(value=value, start=start, end=end, high=high, percent=percent, unit=unit, approx=approx,
                    bound=bound, seconds=seconds)


def _proportions(norms: Sequence[str], found: list[Quantity]) -> list[Quantity]:
    """ "8 of the 19", "four out of five", "11/18": one proportion instead of two numbers."""
    out: list[Quantity] = []
    k = 0
    while k < len(found):
        q = found[k]
        if k + 1 < len(found) and q.unit is None and not q.percent and q.high is None:
            nxt = found[k + 1]
            between = list(norms[q.end:nxt.start])
            if between in (["of"], ["of", "the"], ["out", "of"], ["out", "of", "the"], ["/"], ["of", "all"]) and \
                    nxt.unit is None and not nxt.percent and nxt.value >= q.value > 0 and float(q.value).is_integer() \
                    and float(nxt.value).is_integer():
                out.append(Quantity(value=q.value, start=q.start, end=nxt.end, unit="proportion",
                                    denominator=nxt.value, approx=q.approx, bound=q.bound))
                k += 2
                continue
        out.append(q)
        k += 1
    return out


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b)) + 1e-9


def compatible(claim: Quantity, source: Quantity, *, tolerance: float) -> bool:
    """Whether ``claim`` can be the figure ``source`` states. ``tolerance``: the relative
    difference allowed when either says "about" (otherwise the figures must be equal)."""
    tol = tolerance if (claim.approx or source.approx) else 1e-6
    a, b = _comparable(claim, source)
    if a is None or b is None:
        return True
    (a_low, a_high), (b_low, b_high) = a, b
    if a_high is not None and b_high is not None:
        return _close(a_low, b_low, tol) and _close(a_high, b_high, tol)
    if b_high is not None:
        return b_low * (1 - tol) <= a_low <= b_high * (1 + tol)
    if a_high is not None:
        return a_low * (1 - tol) <= b_low <= a_high * (1 + tol)
    if claim.bound and source.bound and claim.bound != source.bound:
        return False  # "more than 40%" is not "less than 40%"
    if _close(a_low, b_low, tol):
        return True
    if claim.bound == "<" and source.bound in (None, "<"):
        return b_low <= a_low * (1 + tol) and source.bound is None
    if claim.bound == ">" and source.bound in (None, ">"):
        return b_low >= a_low * (1 - tol) and source.bound is None
    return False


def _comparable(a: Quantity, b: Quantity):
    """Both amounts on one scale: shares when either is a share of a whole, seconds for two
    times, the written figures otherwise (4.6% and "4.6 points" are the same figure)."""
    if (a.unit == "proportion") != (b.unit == "proportion") and (a.share is not None and b.share is not None):
        return (a.share, None), (b.share, None)
    if a.unit == "proportion" and b.unit == "proportion":
        return (a.share, None), (b.share, None)
    if a.unit == "time" and b.unit == "time":
        scale_a, scale_b = a.seconds or 1, b.seconds or 1
        return ((a.value * scale_a, a.high * scale_a if a.high is not None else None),
                (b.value * scale_b, b.high * scale_b if b.high is not None else None))
    if (a.unit == "ordinal") != (b.unit == "ordinal"):
        return None, None
    return (a.value, a.high), (b.value, b.high)
