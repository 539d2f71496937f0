"""A text read for meaning: its words, and which of them negate, count, point a direction,
quantify or hedge (the first step of :mod:`rag_core.citations.meaning`).

:func:`read` leaves citation markers out ("[12]", "(Lee et al., 2019)"), reads the words
(:func:`rag_core.text.words.words`) and the amounts (:func:`rag_core.text.numbers.quantities`),
and marks, by word position, the negators and the words each one negates, the direction words
with their axes, the quantifiers with their class, and the hedges and certainties, from the
tables of :mod:`rag_core.citations.meaning_tables`. :func:`cue` writes one conflict found
between two readings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from rag_core.citations.meaning_tables import (
    CERTAINTY,
    DEGREE,
    DIRECTION,
    DIRECTION_PHRASES,
    EVIDENCE_LINKS,
    EVIDENCE_NOUNS,
    FILLERS,
    FINDING_LINKS,
    FINDING_NOUNS,
    FINDING_PASSIVE,
    FINDING_VERBS,
    HEDGES,
    NEGATOR_PHRASES,
    NEGATORS,
    NOT_NEGATIONS,
    QUANTIFIER_PHRASES,
    QUANTIFIERS,
    SYNONYMS,
    key,
)
from rag_core.settings import MEANING_NEGATION_SCOPE_WORDS
from rag_core.text.numbers import UNIT_WORDS, Quantity, quantities
from rag_core.text.words import NUMBER_WORDS, STOPWORDS, Word, is_content, stem, words

__all__ = ["HIGH_KINDS", "Reading", "cue", "read", "share_class", "unique_cues"]

HIGH_KINDS = frozenset({"negation", "number", "direction", "quantifier"})


# Citation markers are not part of what a sentence says: "[12]", "[3, 7]", "(Lee et al., 2019)",
# "(Dai and Le, 2015; Peters et al., 2018a)", a bare "(2019)", a numbered "(2)".
_CITATION = re.compile(
    r"\[\s*\d+(?:\s*[,\u2013-]\s*\d+)*\s*\]"
    r"|\((?=[^()]*[A-Z])[^()]*?\b(?:19|20)\d{2}[a-z]?\)"
    r"|\(\s*(?:(?:19|20)\d{2}[a-z]?|\d{1,2})\s*\)"
)
# A footnote number glued to the next word by the PDF ("2For instance"): the word alone.
_FOOTNOTE = re.compile(r"\d{1,2}([a-z]{2,})")
# Words after which a negation's reach ends: a clause starts.
_CLAUSE = frozenset({"when", "if", "because", "since", "while", "whereas", "although", "though", "which", "that",
                     "who", "where", "but", "and", "so", "than", "unless", "until"})
_PERCENT_WORDS = {"percent": "%", "pct": "%"}


@dataclass
class Reading:
    """A text read for meaning: its tokens and, by token index, what they carry."""

    text: str
    tokens: list[Word]
    keys: list[str]                     # compared word by word (spelling, footnotes, "percent" folded)
    stems: list[str]                    # compared across a paraphrase (stems, synonyms)
    plain: list[str]                    # looked up in the open-class tables (directions, nouns)
    content: list[bool]                 # a content word that aligns a paraphrase
    negators: list[int]                 # the first token of each negation
    scope: dict[int, list[int]]         # negator -> the tokens it negates (the first is its head)
    negated: set[int]
    denied: dict[int, list[int]]        # negator -> the content words of the clause a negated
                                        # evidence noun introduces ("no evidence that X causes Y")
    denied_words: set[int]
    null_findings: dict[int, list[int]]  # negator -> [the finding noun, then the content words of
                                        # what it is about] ("no significant effect of X on Y")
    directions: dict[int, tuple[int, list[tuple[str, int]]]]  # start -> (end, senses)
    quantifiers: dict[int, tuple[int, str]]                   # start -> (end, class)
    hedges: dict[int, str]                                    # token -> "hedge" | "certain"
    amounts: list[Quantity]


def _blank_citations(text: str) -> str:
    return _CITATION.sub(lambda m: " " * len(m.group()), text)


def _key(token: Word) -> str:
    norm = token.norm
    if token.kind == "word":
        m = _FOOTNOTE.fullmatch(norm)
        if m and token.text[len(norm) - len(m.group(1))].isupper():
            return m.group(1)
        return _PERCENT_WORDS.get(norm, norm)
    return norm


def _stem_key(token: Word, key: str) -> str:
    if token.kind != "word":
        return key
    if key.endswith("s") and len(token.text) > 2 and token.text[:-1].isupper() and token.text[-1] == "s":
        key = key[:-1]  # "PDFs", "LLMs": an acronym's plural
    s = stem(key)
    group = SYNONYMS.get(s)
    return f"#syn{group}" if group is not None else s


@lru_cache(maxsize=8192)
def read(text: str) -> Reading:
    """Read ``text`` (citation markers left out) into a :class:`Reading`. Cached by text (the
    sentences of a paper's passages come back statement after statement): do not modify it."""
    tokens = words(_blank_citations(text))
    keys = [_key(t) for t in tokens]
    stems = [_stem_key(t, k) for t, k in zip(tokens, keys, strict=True)]
    plain = [key(k) if t.kind == "word" else k for t, k in zip(tokens, keys, strict=True)]
    amounts = quantities(tokens)
    figures = {i for q in amounts for i in range(q.start, q.end)
               if tokens[i].kind == "number" or keys[i] in NUMBER_WORDS or keys[i] in UNIT_WORDS}
    negators = _negators(tokens, keys)
    quantifiers = _quantifiers(tokens, keys, negators, amounts)
    hedges = _hedges(keys)
    function_like = NEGATORS | FILLERS | HEDGES | CERTAINTY | DEGREE.keys() | QUANTIFIERS.keys()
    content = [is_content(t) and k not in STOPWORDS and k not in function_like and i not in figures
               for i, (t, k) in enumerate(zip(tokens, keys, strict=True))]
    scope = {i: _scope(tokens, keys, content, i) for i in negators}
    negated = {j for js in scope.values() for j in js}
    denied = {i: found for i in negators if (found := _denied_clause(tokens, keys, content, i))}
    return Reading(text=text, tokens=tokens, keys=keys, stems=stems, plain=plain, content=content,
                   negators=negators, scope=scope, negated=negated, denied=denied,
                   denied_words={j for js in denied.values() for j in js},
                   null_findings={i: found for i in negators if (found := _null_finding(tokens, keys, content, i))},
                   directions=_directions(tokens, plain),
                   quantifiers=quantifiers, hedges=hedges, amounts=amounts)


def _by_first_word(phrases) -> dict[str, list]:
    """Phrases (a mapping or a set of word tuples) indexed by their first word, longest first."""
    items = phrases.items() if isinstance(phrases, dict) else ((p, None) for p in phrases)
    index: dict[str, list] = {}
    for phrase, value in sorted(items, key=lambda item: -len(item[0])):
        index.setdefault(phrase[0], []).append((phrase, value))
    return index


_NEGATOR_PHRASES = _by_first_word(NEGATOR_PHRASES)
_NOT_NEGATIONS = _by_first_word(NOT_NEGATIONS)
_DIRECTION_PHRASES = _by_first_word(DIRECTION_PHRASES)
_QUANTIFIER_PHRASES = _by_first_word(QUANTIFIER_PHRASES)


def _phrase_at(words: list[str], i: int, index: dict[str, list]):
    """The longest phrase of ``index`` starting at ``words[i]``: (its length, its value), or None."""
    for phrase, value in index.get(words[i], ()):
        if tuple(words[i:i + len(phrase)]) == phrase:
            return len(phrase), value
    return None


_PAST_LIMITS = frozenset({"before", "prior"})  # "never shown to outperform BM25 before ORQA": a history
_PAST_LIMIT_STOPS = frozenset({"but", "although", "though", "whereas", "while", "however", "because", "yet"})
_PAST_LIMIT_REACH = 20


def _limited_to_the_past(tokens: list[Word], plain: list[str], i: int) -> bool:
    """A negation the clause itself limits to a time before something ("had never been shown to
    outperform BM25 before ORQA", "prior to this work"): a history of the claim, not its denial
    ("before now" and "before this" still deny it)."""
    for j in range(i + 1, min(len(tokens), i + 1 + _PAST_LIMIT_REACH)):
        if (tokens[j].kind == "punct" and tokens[j].norm in ".;:!?") or plain[j] in _PAST_LIMIT_STOPS:
            return False
        if plain[j] in _PAST_LIMITS and tokens[j].kind == "word":
            following = plain[j + 1] if j + 1 < len(plain) else ""
            return following not in ("now", "today", "this", "these", "")
    return False


def _negators(tokens: list[Word], norms: list[str]) -> list[int]:
    plain = norms
    out = []
    for i, token in enumerate(tokens):
        if token.kind != "word":
            continue
        word = plain[i]
        is_negator = word in NEGATORS or token.norm.endswith("n't") or _phrase_at(plain, i, _NEGATOR_PHRASES)
        if not is_negator:
            continue
        if _phrase_at(plain, i, _NOT_NEGATIONS) or (i > 0 and _phrase_at(plain, i - 1, _NOT_NEGATIONS)):
            continue
        if token.norm == "no" and i + 1 < len(tokens) and (tokens[i + 1].norm == "." or tokens[i + 1].kind == "number"):
            continue  # "No. 5"
        if _limited_to_the_past(tokens, plain, i):
            continue
        out.append(i)
    return out


def _scope(tokens: list[Word], keys: list[str], content: list[bool], i: int) -> list[int]:
    """The tokens negated by the negator at ``i``: the first content word after it (its head)
    and the content words right after that one, up to MEANING_NEGATION_SCOPE_WORDS."""
    out: list[int] = []
    j = i + 1
    if keys[i] in ("fail", "fails", "failed", "far"):
        j += 1  # "fail to", "far from"
    while j < len(tokens) and len(out) < MEANING_NEGATION_SCOPE_WORDS:
        token = tokens[j]
        if token.kind == "punct" or keys[j] in _CLAUSE:
            break
        if content[j] or token.kind == "number":
            out.append(j)
        elif out:
            break
        j += 1
    return out


_EVIDENCE_LINKS = _by_first_word(EVIDENCE_LINKS)
_EVIDENCE_NOUN_REACH = 4     # "no clear scientific evidence": words between the negator and its noun
_DENIED_CLAUSE_REACH = 14    # tokens of the clause read after the link word
_DENIED_CLAUSE_STOPS = frozenset({"but", "although", "though", "whereas", "while", "however", "because", "yet",
                                  "unless", "which", "who"})


def _denied_clause(tokens: list[Word], keys: list[str], content: list[bool], i: int) -> list[int]:
    """The content words of the clause that a negated evidence noun introduces ("no evidence
    that 5G networks spread the virus": 5G, networks, spread, virus), or [] where the negator
    at ``i`` negates no evidence noun followed by a link word ("that", "of", "linking", ...)."""
    j = i + 1
    while j < len(tokens) and j <= i + _EVIDENCE_NOUN_REACH:
        if tokens[j].kind == "punct" or keys[j] in _CLAUSE or (keys[j],) in EVIDENCE_LINKS:
            return []
        if keys[j] in EVIDENCE_NOUNS:
            break
        j += 1
    else:
        return []
    link = _phrase_at(keys, j + 1, _EVIDENCE_LINKS) if j + 1 < len(tokens) else None
    if link is None:
        return []
    return _clause_words(tokens, keys, content, j + 1 + link[0])


def _clause_words(tokens: list[Word], keys: list[str], content: list[bool], start: int) -> list[int]:
    """The content words from ``start`` to the end of its clause (a full stop, a bracket, a
    contrast word), at most _DENIED_CLAUSE_REACH tokens on; commas do not end it."""
    out = []
    for k in range(start, min(len(tokens), start + _DENIED_CLAUSE_REACH)):
        if (tokens[k].kind == "punct" and keys[k] in ".;:!?()[]") or keys[k] in _DENIED_CLAUSE_STOPS:
            break
        if content[k]:
            out.append(k)
    return out


_COPULAS = frozenset({"is", "are", "was", "were", "be", "been"})


def _null_finding(tokens: list[Word], keys: list[str], content: list[bool], i: int) -> list[int]:
    """[the finding word, then the content words after its link word] of a null result ("no
    significant association between statin use and dementia": association, statin, use,
    dementia; "was not associated with an increased risk of events"; "did not affect mortality"),
    or [] where the negator at ``i`` negates no finding word followed by its link (a verb of
    FINDING_VERBS takes its object without one)."""
    j = i + 1
    while j < len(tokens) and j <= i + _EVIDENCE_NOUN_REACH:
        if tokens[j].kind == "punct" or keys[j] in _CLAUSE or keys[j] in FINDING_LINKS or keys[j] in _COPULAS:
            return []  # "not sufficiently treated is associated with": another predicate
        if keys[j] in FINDING_NOUNS or keys[j] in FINDING_VERBS:
            break
        j += 1
    else:
        return []
    noun, j = j, j + 1
    while j < len(tokens) and keys[j] in FINDING_PASSIVE:
        j += 1
    if j < len(tokens) and keys[j] in FINDING_LINKS:
        j += 1
    elif keys[noun] not in FINDING_VERBS or j != noun + 1:
        return []  # a noun needs its link ("no effect on"); a verb takes its object ("did not affect mortality")
    about = _clause_words(tokens, keys, content, j)
    return [noun, *about] if about else []


def _directions(tokens: list[Word], plain: list[str]) -> dict[int, tuple[int, list[tuple[str, int]]]]:
    out: dict[int, tuple[int, list[tuple[str, int]]]] = {}
    i = 0
    while i < len(tokens):
        found = _phrase_at(plain, i, _DIRECTION_PHRASES)
        if found:
            out[i] = (i + found[0], found[1])
            i += found[0]
            continue
        senses = DIRECTION.get(plain[i]) if tokens[i].kind == "word" else None
        if senses:
            around = {plain[i - 1] if i else "", plain[i + 1] if i + 1 < len(plain) else ""}
            following = plain[i + 1] if i + 1 < len(plain) else ""
            idiom = (plain[i] == "well" and ("as" in around or following in DIRECTION or following in (
                "short", "abov", "below", "beyond", "over", "under"))) or (plain[i] == "fail" and "to" in around)
            if not idiom:
                out[i] = (i + 1, list(senses))
        i += 1
    return out


def _quantifiers(tokens: list[Word], plain: list[str], negators: list[int],
                 amounts: list[Quantity]) -> dict[int, tuple[int, str]]:
    """Quantifier words and phrases; one right after "15% of" / "8 of" is the whole the share is
    taken of, not a quantifier of its own ("15% of all tokens")."""
    share_of = {q.end + 1 for q in amounts if q.end < len(plain) and plain[q.end] == "of"}
    out: dict[int, tuple[int, str]] = {}
    i = 0
    while i < len(tokens):
        found = _phrase_at(plain, i, _QUANTIFIER_PHRASES)
        if found:
            out[i] = (i + found[0], found[1])
            i += found[0]
            continue
        cls = QUANTIFIERS.get(plain[i]) if tokens[i].kind == "word" else None
        nxt = plain[i + 1] if i + 1 < len(plain) else ""
        next_norm = tokens[i + 1].norm if i + 1 < len(tokens) else ""
        prev = plain[i - 1] if i else ""
        idiom = ((plain[i] == "each" and nxt == "other") or (plain[i] == "all" and prev == "at")
                 or (plain[i] == "most" and (prev == "the" or next_norm.endswith("ly")))  # "the most", "most widely"
                 or (plain[i] == "only" and prev in ("not", "if")) or prev == "how")
        if cls and not idiom and i not in share_of and not any(0 < i - k <= 2 for k in negators):
            out[i] = (i + 1, cls)
        i += 1
    return out


def _hedges(plain: list[str]) -> dict[int, str]:
    out = {}
    for i, word in enumerate(plain):
        if word in HEDGES:
            out[i] = "hedge"
        elif word in CERTAINTY:
            out[i] = "certain"
    return out


def _span_text(reading: Reading, indexes: Sequence[int]) -> str:
    """The original words at these token indexes: contiguous runs joined, gaps shown as "…"."""
    if not indexes:
        return ""
    ordered = sorted(set(indexes))
    runs = [[ordered[0], ordered[0]]]
    for i in ordered[1:]:
        if i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    pieces = []
    for a, b in runs:
        text = reading.text[reading.tokens[a].start:reading.tokens[b].end]
        pieces.append(" ".join(text.split()))
    return " \u2026 ".join(pieces)


def cue(kind: str, claim: Reading, claim_idx, source: Reading, source_idx) -> dict:
    return {"kind": kind, "claim": _span_text(claim, claim_idx), "source": _span_text(source, source_idx),
            "severity": "high" if kind in HIGH_KINDS else "low"}




def unique_cues(cues: list[dict]) -> list[dict]:
    seen, out = set(), []
    for cue in cues:
        k = (cue["kind"], cue["claim"], cue["source"])
        if k not in seen:
            seen.add(k)
            out.append(cue)
    return out



def share_class(q: Quantity) -> str:
    share = q.share if q.share is not None else q.value
    if share >= 1:
        return "all"
    if share > 0.5:
        return "most"
    return "some" if share > 0 else "none"

