"""Does a statement say what its source says? Negations, numbers, directions, quantifiers.

A citation check that gets the words right can still miss what matters most: "does not
improve" where the paper says "improves", "25%" where it says "15%", "worse" where it says
"better", "most" where it says "all". This module compares a statement with the source text
a check found for it and answers with a ``meaning``:

* ``"changed"``: a negation, number, direction or quantifier conflicts; each conflict is a
  cue ``{"kind", "claim", "source", "severity"}`` (the statement's words and the source's);
* ``"same"``: the words that differ are harmless (a dropped "simply", "thus" for
  "therefore", "like" for "such as", a citation number left out, quote marks, British
  spelling, "fifteen percent" for "15%") or, for a paraphrase, what aligns agrees;
* ``"unclear"``: a word changed that the rules cannot judge ("Wikipedia" -> "Wikidata"), or
  too little of a paraphrase aligns with any sentence of the passages to say.

A hedge ("suggests", "may") against a certainty ("shows", "proves") is a cue of low severity
and does not make the meaning ``changed`` by itself.

:func:`compare_wording` classifies each changed word of a near-verbatim alignment (the
statement against the passage it nearly copies); :func:`compare_passages` aligns a paraphrase
with the best-matching sentence of the closest passages (content words, numbers with their
units and the words they attach to) and looks for conflicts on what aligns. The word lists are
in :mod:`rag_core.citations.meaning_tables`; everything is rule-based (no model).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from rag_core.citations.meaning_tables import (
    BAD_NOUNS,
    CERTAINTY,
    DEGREE,
    DIRECTION,
    DIRECTION_PHRASES,
    FILLERS,
    GOOD_NOUNS,
    HARMLESS_WORDS,
    HEDGES,
    NEGATION_PREFIXES,
    NEGATOR_PHRASES,
    NEGATORS,
    NOT_NEGATIONS,
    QUANTIFIER_PHRASES,
    QUANTIFIERS,
    SYNONYMS,
    key,
)
from rag_core.settings import (
    MEANING_ALIGN_PASSAGES,
    MEANING_APPROX_TOLERANCE,
    MEANING_MERGE_GAP_WORDS,
    MEANING_MIN_ALIGNED,
    MEANING_NEGATION_SCOPE_WORDS,
)
from rag_core.text.numbers import UNIT_WORDS, Quantity, compatible, quantities
from rag_core.text.sentences import split_sentences
from rag_core.text.words import NUMBER_WORDS, STOPWORDS, Word, is_content, stem, words

__all__ = ["CUE_KINDS", "MEANINGS", "MeaningCheck", "compare_passages", "compare_wording", "meaning_of_verdict",
           "read"]

MEANINGS = ("same", "changed", "unclear")
CUE_KINDS = ("negation", "number", "direction", "quantifier", "hedge")
_HIGH = frozenset({"negation", "number", "direction", "quantifier"})


@dataclass
class MeaningCheck:
    """The meaning of a statement against its source: ``meaning`` (one of :data:`MEANINGS`),
    ``cues`` (the conflicts found), ``note`` (a sentence saying why), and for a paraphrase the
    source ``sentence`` it was aligned with, from passage number ``passage`` (its offsets
    ``sentence_start``/``sentence_end`` in that passage's text), with the share of the
    statement's content words it holds (``aligned``)."""

    meaning: str
    cues: list[dict] = field(default_factory=list)
    note: str = ""
    sentence: str | None = None
    passage: int | None = None
    sentence_start: int | None = None
    sentence_end: int | None = None
    aligned: float | None = None
    sentence_row: dict | None = None  # set by meaning_of_verdict: where the sentence is


def meaning_of_verdict(verdict: str, quote: str, *, best: dict | None = None,
                       closest: Sequence[dict] = ()) -> MeaningCheck:
    """The meaning layer of a citation check: a verbatim quote means what its source says; a
    near-verbatim one is compared word by word with the passage it nearly copies (``best``); a
    related one with the best-aligned sentence of the first MEANING_ALIGN_PASSAGES of
    ``closest`` (in the check's order); a statement not found has nothing to compare with."""
    if verdict == "verbatim":
        return MeaningCheck(meaning="same", note="Word for word: the source says exactly this.")
    if verdict == "near_verbatim" and best:
        return compare_wording(quote, best.get("match") or "")
    if verdict == "related" and closest:
        rows = list(closest[:MEANING_ALIGN_PASSAGES])
        found = compare_passages(quote, [row.get("text") or "" for row in rows])
        if found.passage is not None:
            row = rows[found.passage]
            found.sentence_row = {
                "source": row.get("source"), "chunk_index": row.get("chunk_index"), "sentence": found.sentence,
                "start": found.sentence_start, "end": found.sentence_end, "aligned": found.aligned,
                "page": row.get("sentence_page") if row.get("sentence_start") == found.sentence_start
                else row.get("page_start", row.get("page")),
                "page_label": row.get("sentence_page_label") if row.get("sentence_start") == found.sentence_start
                else None,
            }
        return found
    return MeaningCheck(meaning="unclear", note="Nothing in the collection is close enough to compare what it says.")


# --------------------------------------------------------------------------- reading a text

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


def read(text: str) -> Reading:
    """Read ``text`` (citation markers left out) into a :class:`Reading`."""
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
    return Reading(text=text, tokens=tokens, keys=keys, stems=stems, plain=plain, content=content,
                   negators=negators, scope=scope, negated=negated, directions=_directions(tokens, plain),
                   quantifiers=quantifiers, hedges=hedges, amounts=amounts)


def _matches(plain: list[str], i: int, phrase: tuple[str, ...]) -> bool:
    return tuple(plain[i:i + len(phrase)]) == phrase


def _negators(tokens: list[Word], norms: list[str]) -> list[int]:
    plain = norms
    out = []
    for i, token in enumerate(tokens):
        if token.kind != "word":
            continue
        word = plain[i]
        is_negator = word in NEGATORS or token.norm.endswith("n't") or any(
            _matches(plain, i, p) for p in NEGATOR_PHRASES)
        if not is_negator:
            continue
        if any(_matches(plain, i, p) or (i > 0 and _matches(plain, i - 1, p)) for p in NOT_NEGATIONS):
            continue
        if token.norm == "no" and i + 1 < len(tokens) and (tokens[i + 1].norm == "." or tokens[i + 1].kind == "number"):
            continue  # "No. 5"
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


def _directions(tokens: list[Word], plain: list[str]) -> dict[int, tuple[int, list[tuple[str, int]]]]:
    out: dict[int, tuple[int, list[tuple[str, int]]]] = {}
    i = 0
    while i < len(tokens):
        found = next(((len(p), senses) for p, senses in DIRECTION_PHRASES.items() if _matches(plain, i, p)), None)
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
    phrases = sorted(QUANTIFIER_PHRASES.items(), key=lambda item: -len(item[0]))
    i = 0
    while i < len(tokens):
        found = next(((len(p), cls) for p, cls in phrases if _matches(plain, i, p)), None)
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


def _cue(kind: str, claim: Reading, claim_idx, source: Reading, source_idx) -> dict:
    return {"kind": kind, "claim": _span_text(claim, claim_idx), "source": _span_text(source, source_idx),
            "severity": "high" if kind in _HIGH else "low"}


def _verdict(cues: list[dict], unknown: bool) -> str:
    if any(c["severity"] == "high" for c in cues):
        return "changed"
    return "unclear" if unknown else "same"


def _unique(cues: list[dict]) -> list[dict]:
    seen, out = set(), []
    for cue in cues:
        k = (cue["kind"], cue["claim"], cue["source"])
        if k not in seen:
            seen.add(k)
            out.append(cue)
    return out


# --------------------------------------------------------------------------- near verbatim


def compare_wording(claim: str, source: str) -> MeaningCheck:
    """The meaning of ``claim`` against ``source``, the passage it nearly copies: every
    changed word of the word-level alignment classified (see the module docstring)."""
    rc, rs = read(claim), read(source)
    c_idx = [i for i, t in enumerate(rc.tokens) if t.kind != "punct"]
    s_idx = [i for i, t in enumerate(rs.tokens) if t.kind != "punct"]
    ops = SequenceMatcher(None, [rs.keys[i] for i in s_idx], [rc.keys[i] for i in c_idx],
                          autojunk=False).get_opcodes()
    # source words before the first and after the last word in common are context, not changes
    while ops and ops[0][0] == "delete":
        ops = ops[1:]
    while ops and ops[-1][0] == "delete":
        ops = ops[:-1]
    groups: list[list[tuple]] = []
    gap = MEANING_MERGE_GAP_WORDS + 1
    for op in ops:
        if op[0] == "equal":
            gap = op[2] - op[1]
            continue
        if groups and gap <= MEANING_MERGE_GAP_WORDS:
            groups[-1].append(op)
        else:
            groups.append([op])
        gap = 0
    cues: list[dict] = []
    unknown = False
    for group in groups:
        s_tokens = [s_idx[k] for op in group for k in range(op[1], op[2])]
        c_tokens = [c_idx[k] for op in group for k in range(op[3], op[4])]
        found, harmless = _classify(rc, c_tokens, rs, s_tokens)
        cues.extend(found)
        unknown = unknown or not (found or harmless)
    cues = _unique(cues)
    meaning = _verdict(cues, unknown)
    if meaning == "changed":
        note = "The changed words turn the statement around: " + _kinds_text(cues) + "."
    elif meaning == "unclear":
        note = ("A changed word is one the rules cannot judge (a name or a term, not a negation, number, "
                "direction or quantifier): compare the wording.")
    elif not groups:
        note = "No word differs once spelling, quote marks and citation numbers are set aside."
    else:
        note = ("The words that differ do not change what it says (connectives, spelling, citation numbers, "
                "numbers written out, intensifiers).")
    if meaning != "changed" and any(c["kind"] == "hedge" for c in cues):
        note += " Its certainty differs from the source's: see the hedge."
    return MeaningCheck(meaning=meaning, cues=cues, note=note)


def _kinds_text(cues: list[dict]) -> str:
    kinds = [k for k in CUE_KINDS if any(c["kind"] == k and c["severity"] == "high" for c in cues)]
    names = {"negation": "a negation", "number": "a number", "direction": "a direction",
             "quantifier": "a quantifier"}
    return ", ".join(names[k] for k in kinds)


def _overlapping(amounts: list[Quantity], indexes: set[int]) -> list[Quantity]:
    return [q for q in amounts if any(q.start <= i < q.end for i in indexes)]


def _in_group(spans: dict[int, tuple], indexes: set[int]) -> list[int]:
    return [start for start, value in spans.items() if any(start <= i < value[0] for i in indexes)]


def _classify(rc: Reading, c_tokens: list[int], rs: Reading, s_tokens: list[int]) -> tuple[list[dict], bool]:
    """The cues of one group of changed words, and whether the change is harmless."""
    cs, ss = set(c_tokens), set(s_tokens)
    cues: list[dict] = []
    # negation: a negator added or left out, or "un-"/"in-"/"non-" against the plain word
    c_neg = [i for i in rc.negators if i in cs]
    s_neg = [i for i in rs.negators if i in ss]
    prefixed = _prefix_pairs(rc, c_tokens, rs, s_tokens)
    if len(c_neg) % 2 != len(s_neg) % 2 or prefixed:
        cues.append(_cue("negation", rc, c_tokens, rs, s_tokens))
    # numbers
    qc, qs = _overlapping(rc.amounts, cs), _overlapping(rs.amounts, ss)
    c_words = [i for i in c_tokens if rc.tokens[i].kind == "word" and not _harmless_word(rc, i)]
    proportions = [q for q in qc + qs if q.unit == "proportion"]
    c_quant = _in_group(rc.quantifiers, cs)
    s_quant = _in_group(rs.quantifiers, ss)
    number_changed = False
    if qc and qs:
        number_changed = not (all(any(compatible(a, b, tolerance=0) for b in qs) for a in qc)
                              and all(any(compatible(a, b, tolerance=0) for a in qc) for b in qs))
    elif (qs and c_words) or qc:
        number_changed = True
    weak_one = all(q.value == 1 and rc.tokens[q.start].kind != "number" for q in qc) and \
        all(q.value == 1 and rs.tokens[q.start].kind != "number" for q in qs)
    if number_changed and not (proportions and (c_quant or s_quant)) and not (cues and weak_one):
        cues.append(_cue("number", rc, _with_spans(c_tokens, qc), rs, _with_spans(s_tokens, qs)))
    # direction: opposite sides of one axis, or a compound's parts reversed (left-to-right)
    c_dir = [s for i in _in_group(rc.directions, cs) for s in rc.directions[i][1]]
    s_dir = [s for i in _in_group(rs.directions, ss) for s in rs.directions[i][1]]
    opposite = any((axis, -sign) in s_dir for axis, sign in c_dir)
    reversed_parts = any(
        rc.tokens[i].parts and rs.tokens[j].parts and rc.tokens[i].parts != rs.tokens[j].parts
        and sorted(rc.tokens[i].parts) == sorted(rs.tokens[j].parts) for i in c_tokens for j in s_tokens)
    if opposite or reversed_parts:
        cues.append(_cue("direction", rc, c_tokens, rs, s_tokens))
    # quantifiers: a different class, or one added or left out ("all" -> "most", "only" dropped)
    c_classes = {rc.quantifiers[i][1] for i in c_quant} | {_share_class(q) for q in qc if q.unit == "proportion"}
    s_classes = {rs.quantifiers[i][1] for i in s_quant} | {_share_class(q) for q in qs if q.unit == "proportion"}
    if (c_quant or s_quant) and c_classes != s_classes:
        cues.append(_cue("quantifier", rc, _with_quantifiers(rc, c_tokens, c_quant), rs,
                         _with_quantifiers(rs, s_tokens, s_quant)))
    # hedge against certainty
    c_hedge = {rc.hedges[i] for i in c_tokens if i in rc.hedges}
    s_hedge = {rs.hedges[i] for i in s_tokens if i in rs.hedges}
    if c_hedge != s_hedge and ("hedge" in c_hedge or "hedge" in s_hedge):
        cues.append(_cue("hedge", rc, c_tokens, rs, s_tokens))
    if cues:
        return cues, False
    return [], _harmless(rc, c_tokens, rs, s_tokens, qc, qs)


def _with_spans(tokens: list[int], amounts: list[Quantity]) -> list[int]:
    return sorted(set(tokens) | {i for q in amounts for i in range(q.start, q.end)})


def _with_quantifiers(reading: Reading, tokens: list[int], starts: list[int]) -> list[int]:
    return sorted(set(tokens) | {i for s in starts for i in range(s, reading.quantifiers[s][0])})


def _share_class(q: Quantity) -> str:
    share = q.share if q.share is not None else q.value
    if share >= 1:
        return "all"
    if share > 0.5:
        return "most"
    return "some" if share > 0 else "none"


def _prefix_pairs(rc: Reading, c_tokens: list[int], rs: Reading, s_tokens: list[int]) -> bool:
    for i in c_tokens:
        for j in s_tokens:
            a, b = rc.keys[i], rs.keys[j]
            if rc.tokens[i].kind != "word" or rs.tokens[j].kind != "word":
                continue
            longer, shorter = (a, b) if len(a) > len(b) else (b, a)
            if len(shorter) >= 4 and any(longer == p + shorter for p in NEGATION_PREFIXES):
                return True
    return False


def _harmless_word(reading: Reading, i: int) -> bool:
    token = reading.tokens[i]
    if token.kind in ("punct", "symbol"):
        return True
    norm = reading.keys[i]
    return norm in HARMLESS_WORDS or norm in DEGREE or norm == "%"


def _harmless(rc: Reading, c_tokens: list[int], rs: Reading, s_tokens: list[int], qc, qs) -> bool:
    """Whether a change without cues leaves the meaning alone: only function words, fillers,
    intensifiers of one strength, the same numbers, the same word joined or inflected, or synonyms."""
    if "".join(rc.keys[i] for i in c_tokens) == "".join(rs.keys[j] for j in s_tokens):
        return True  # "data set" / "dataset", "LuceneBM25" / "Lucene BM25"
    in_amounts = {i for q in qc for i in range(q.start, q.end)}, {j for q in qs for j in range(q.start, q.end)}
    rest_c = [i for i in c_tokens if i not in in_amounts[0] and not _harmless_word(rc, i)]
    rest_s = [j for j in s_tokens if j not in in_amounts[1] and not _harmless_word(rs, j)]
    strengths = {DEGREE[r.keys[i]] for r, idx in ((rc, c_tokens), (rs, s_tokens)) for i in idx if r.keys[i] in DEGREE}
    if len(strengths) > 1:
        return False  # "slightly" against "substantially"
    c_keys = {rc.stems[i] for i in rest_c}
    s_keys = {rs.stems[j] for j in rest_s}
    return c_keys == s_keys


# --------------------------------------------------------------------------- paraphrases


def compare_passages(claim: str, passages: Sequence[str]) -> MeaningCheck:
    """The meaning of a paraphrase ``claim`` against the passages closest to it: the sentence
    of ``passages`` that holds most of the claim's content words and figures is aligned with
    it, and their negations, numbers, directions and quantifiers are compared on what aligns.
    Where less than MEANING_MIN_ALIGNED of the claim aligns, the answer is ``unclear``."""
    rc = read(claim)
    items = [keys for _, keys in {rc.stems[i]: _align_keys(rc, i) for i, c in enumerate(rc.content) if c}.items()]
    figures = [q for q in rc.amounts if q.unit != "ordinal"]
    if not items:
        return MeaningCheck(meaning="unclear", note="The statement has no content words to align.")
    best = None
    for p, text in enumerate(passages):
        for a, b in split_sentences(text or ""):
            rs = read(text[a:b])
            keys = {k for j, c in enumerate(rs.content) if c for k in _align_keys(rs, j)}
            held = sum(1 for ks in items if ks & keys) + sum(1 for q in figures if any(
                _same_kind(q, s) and compatible(q, s, tolerance=MEANING_APPROX_TOLERANCE) for s in rs.amounts))
            share = held / (len(items) + len(figures))
            if best is None or share > best[0] + 1e-9:
                best = (share, p, a, b, rs)
    if best is None or best[0] < MEANING_MIN_ALIGNED:
        return MeaningCheck(
            meaning="unclear", aligned=round(best[0], 3) if best else 0.0,
            note="Too little of the statement aligns with any sentence of the closest passages to compare "
                 "what they say: read them.")
    share, p, a, b, rs = best
    cues, unmatched = _conflicts(rc, rs)
    cues = _unique(cues)
    meaning = _verdict(cues, unmatched)
    if meaning == "changed":
        note = "The closest sentence says otherwise: " + _kinds_text(cues) + " conflicts."
    elif meaning == "unclear":
        note = "A number of the statement has no counterpart in the closest sentence: read the passage."
    else:
        note = ("No negation, number, direction or quantifier of the statement conflicts with the closest "
                "sentence. That is not confirmation: read the passage.")
    return MeaningCheck(meaning=meaning, cues=cues, note=note, sentence=" ".join(rs.text.split()), passage=p,
                        sentence_start=a, sentence_end=b, aligned=round(share, 3))


def _align_keys(reading: Reading, i: int) -> set[str]:
    """What a content word aligns on: its stem (or synonym group) and a compound's parts
    ("sparse-retrieval" aligns with "sparse" and with "retrieval")."""
    keys = {reading.stems[i]}
    keys.update(stem(part) for part in reading.tokens[i].parts if len(part) > 2)
    return keys


def _alignment(rc: Reading, rs: Reading) -> dict[int, list[int]]:
    """Claim token -> the sentence tokens it aligns with (content words only)."""
    where: dict[str, list[int]] = {}
    for j, c in enumerate(rs.content):
        if c:
            for k in _align_keys(rs, j):
                where.setdefault(k, []).append(j)
    out = {}
    for i, c in enumerate(rc.content):
        if c:
            found = sorted({j for k in _align_keys(rc, i) for j in where.get(k, [])})
            if found:
                out[i] = found
    return out


_NP_NEGATORS = frozenset({"no", "none", "without", "lack", "lacks", "lacking", "nothing"})


def _conflicts(rc: Reading, rs: Reading) -> tuple[list[dict], bool]:
    align = _alignment(rc, rs)
    back: dict[int, list[int]] = {}
    for i, js in align.items():
        for j in js:
            back.setdefault(j, []).append(i)
    cues: list[dict] = []
    # negation: a negated head whose counterparts are not negated. "no compiled traces" needs
    # its noun aligned too: "before anything is compiled" says the same.
    for reading, other, mapping, is_claim in ((rc, rs, align, True), (rs, rc, back, False)):
        for n, scope in reading.scope.items():
            if not scope or not mapping.get(scope[0]):
                continue
            needed = scope[:2] if reading.keys[n] in _NP_NEGATORS else scope[:1]
            if not all(mapping.get(j) or not reading.content[j] for j in needed):
                continue
            if n > 0 and reading.content[n - 1] and reading.keys[scope[0]].endswith(("ing", "ed")):
                continue  # "ngrams not occurring in any document": a relative clause, not the claim's verb
            counterparts = [k for k in mapping[scope[0]]
                            if _nominal(reading.keys[scope[0]]) == _nominal(other.keys[k])]
            if any(k in other.negated or _negated_nearby(other, k) for k in mapping[scope[0]]):
                continue
            # about the same thing: a word next to the head aligns with a word next to its counterpart
            here = _near_keys(reading, scope[0], exclude=scope[0])
            about_same = [k for k in counterparts if here & _near_keys(other, k, exclude=k)]
            if not about_same:
                continue
            mine = list(range(n, scope[0] + 1))
            k = about_same[0]
            cues.append(_cue("negation", rc, mine, rs, [k]) if is_claim else _cue("negation", rc, [k], rs, mine))
    cues.extend(_direction_conflicts(rc, rs, align))
    number_cues, unmatched = _number_conflicts(rc, rs)
    cues.extend(number_cues)
    cues.extend(_quantifier_conflicts(rc, rs))
    c_hedge = set(rc.hedges.values())
    s_hedge = set(rs.hedges.values())
    if ("certain" in c_hedge and "hedge" in s_hedge and "hedge" not in c_hedge) or (
            "hedge" in c_hedge and "certain" in s_hedge and "hedge" not in s_hedge):
        cues.append(_cue("hedge", rc, sorted(rc.hedges), rs, sorted(rs.hedges)))
    return cues, unmatched


_NOMINAL = ("ness", "ity", "ment", "ments", "tion", "tions", "sion", "ance", "ence")


def _nominal(word: str) -> bool:
    """A noun made of a verb or adjective: "not robust" and "robustness" are not one claim turned around."""
    return word.endswith(_NOMINAL)


def _near_keys(reading: Reading, i: int, *, exclude: int, reach: int = 4) -> set[str]:
    """The alignment keys of the content words within ``reach`` words of token ``i``."""
    out: set[str] = set()
    for j in range(max(0, i - reach), min(len(reading.tokens), i + reach + 1)):
        if j != exclude and reading.content[j]:
            out |= _align_keys(reading, j)
    return out


def _negated_nearby(reading: Reading, k: int) -> bool:
    return any(0 < k - n <= 4 for n in reading.negators)


def _sides(reading: Reading, start: int, end: int, aligned: set[int]) -> tuple[dict[str, float], dict[str, float]]:
    """What a direction word is about: the keys of the aligned words before it and after it in
    its clause (up to 8 words each way), each weighing 1/distance; a key on both sides tells
    nothing and is dropped."""
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    for side, steps in ((before, range(start - 1, max(-1, start - 9), -1)),
                        (after, range(end, min(len(reading.tokens), end + 9)))):
        for distance, j in enumerate(steps, start=1):
            if reading.tokens[j].kind == "punct" and reading.keys[j] in ".;:":
                break
            if j in aligned:
                for k in _align_keys(reading, j):
                    side.setdefault(k, 1 / distance)
    both = before.keys() & after.keys()
    return ({k: w for k, w in before.items() if k not in both}, {k: w for k, w in after.items() if k not in both})


def _overlap(a: dict[str, float], b: dict[str, float]) -> float:
    return sum(min(w, b[k]) for k, w in a.items() if k in b)


def _senses(reading: Reading, start: int, end: int, senses: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """A word's directions, and for an amount word next to a quality noun its quality too
    ("lowers performance" is worse, "lowers the error" is better)."""
    out = list(senses)
    amount = [sign for axis, sign in senses if axis == "amount"]
    if amount:
        near = [j for j in (*range(max(0, start - 3), start), *range(end, min(len(reading.tokens), end + 3)))
                if reading.content[j]]
        for j in near:
            if reading.plain[j] in GOOD_NOUNS:
                out.append(("quality", amount[0]))
                break
            if reading.plain[j] in BAD_NOUNS:
                out.append(("quality", -amount[0]))
                break
    return out


def _bound_words(reading: Reading) -> set[int]:
    """Tokens that only bound a figure ("less than 5%", "up to 10%", "above 80%"): not a direction."""
    starts = {q.start for q in reading.amounts}
    out = set()
    for i in range(len(reading.tokens)):
        nxt = i + 2 if i + 1 < len(reading.keys) and reading.keys[i + 1] in ("than", "to") else i + 1
        if nxt in starts or (nxt + 1 in starts and reading.keys[nxt] in ("about", "around", "roughly", "~")):
            out.add(i)
    return out


def _direction_conflicts(rc: Reading, rs: Reading, align: dict[int, list[int]]) -> list[dict]:
    """Opposite directions on one axis about the same things: "worse than BM25" against
    "better than BM25" (the aligned words around them on the same sides), or the same direction
    with the things swapped ("BM25 beats DPR" against "DPR beats BM25"; a passive "by" swaps back)."""
    aligned_c = set(align)
    aligned_s = {j for js in align.values() for j in js}
    bounds_c, bounds_s = _bound_words(rc), _bound_words(rs)
    c_words, s_words = set(rc.plain), set(rs.plain)
    cues = []
    for ci, (ce, c_raw) in rc.directions.items():
        if ci in bounds_c:
            continue
        c_before, c_after = _sides(rc, ci, ce, aligned_c)
        if not (c_before or c_after):
            continue
        c_senses = _senses(rc, ci, ce, c_raw)
        c_sign_flip = -1 if ci in rc.negated or _negated_nearby(rc, ci) else 1
        c_passive = ce < len(rc.keys) and rc.keys[ce] == "by"
        for si, (se, s_raw) in rs.directions.items():
            if si in bounds_s or rc.plain[ci] in s_words or rs.plain[si] in c_words:
                continue  # each text has the other's word: a negation, if anything, found above
            s_senses = _senses(rs, si, se, s_raw)
            shared = [(cs, ss) for axis, cs in c_senses for axis2, ss in s_senses if axis == axis2]
            if not shared:
                continue
            s_before, s_after = _sides(rs, si, se, aligned_s)
            same = _overlap(c_before, s_before) + _overlap(c_after, s_after)
            crossed = _overlap(c_before, s_after) + _overlap(c_after, s_before)
            if c_passive != (se < len(rs.keys) and rs.keys[se] == "by"):
                same, crossed = crossed, same
            if same == crossed:
                continue
            s_sign_flip = -1 if si in rs.negated or _negated_nearby(rs, si) else 1
            for c_sign, s_sign in shared:
                agree = c_sign * c_sign_flip == s_sign * s_sign_flip
                if agree != (same > crossed):
                    cues.append(_cue("direction", rc, range(ci, ce), rs, range(si, se)))
                    break
    return cues


def _attachments(reading: Reading, q: Quantity) -> tuple[str | None, str | None]:
    """The content words an amount is about: the first after it and the last before it."""
    amount_tokens = {i for a in reading.amounts for i in range(a.start, a.end)}
    after = before = None
    for j in range(q.end, min(len(reading.tokens), q.end + 4)):
        if reading.tokens[j].kind == "punct" or j in amount_tokens:
            break
        if reading.content[j]:
            after = reading.stems[j]
            break
    for j in range(q.start - 1, max(-1, q.start - 5), -1):
        if reading.tokens[j].kind == "punct" or j in amount_tokens:
            break
        if reading.content[j]:
            before = reading.stems[j]
            break
    return after, before


def _dimension(q: Quantity) -> str:
    if q.percent or q.unit == "point":
        return "percent"
    return q.unit or "plain"


def _same_kind(a: Quantity, b: Quantity) -> bool:
    """Two amounts of one kind: percentages (and points), times, shares, multiples, plain counts."""
    kinds = {_dimension(a), _dimension(b)}
    return len(kinds) == 1 or kinds == {"percent", "proportion"}


def _number_conflicts(rc: Reading, rs: Reading) -> tuple[list[dict], bool]:
    cues = []
    unmatched = False
    source = [(q, *_attachments(rs, q)) for q in rs.amounts if q.unit != "ordinal"]
    for q in rc.amounts:
        if q.unit == "ordinal":
            continue
        after, before = _attachments(rc, q)
        if q.unit == "time":  # amounts of time compare with amounts of time, whatever they follow
            candidates = [s for s, _, _ in source if s.unit == "time"]
        else:
            candidates = [s for s, s_after, _ in source if after is not None and s_after == after]
        if not candidates:
            candidates = [s for s, _, s_before in source if before is not None and s_before == before]
        if not candidates:
            same_kind = [s for s, _, _ in source if _dimension(s) == _dimension(q) and _dimension(q) != "plain"]
            candidates = same_kind if len(same_kind) == 1 else []
        if not candidates:
            # a figure the sentence does not state leaves the meaning open ("one server" does not)
            unmatched = unmatched or rc.tokens[q.start].kind == "number" or q.percent or q.unit is not None
            continue
        if any(compatible(q, s, tolerance=MEANING_APPROX_TOLERANCE) for s in candidates):
            continue
        s = candidates[0]
        cues.append(_cue("number", rc, range(q.start, q.end), rs, range(s.start, s.end)))
    return cues, unmatched


def _heads(reading: Reading) -> list[tuple[int, int, str, str]]:
    """(start, end, class, head stem) of every quantifier and proportion: the head is the
    first content word after it."""
    spans = [(s, e, cls) for s, (e, cls) in reading.quantifiers.items()]
    spans += [(q.start, q.end, _share_class(q)) for q in reading.amounts if q.unit == "proportion"]
    out = []
    for start, end, cls in spans:
        for j in range(end, min(len(reading.tokens), end + 4)):
            if reading.tokens[j].kind == "punct":
                break
            if reading.content[j] and j not in reading.quantifiers:
                out.append((start, end, cls, reading.stems[j]))
                break
    return out


def _quantifier_conflicts(rc: Reading, rs: Reading) -> list[dict]:
    cues = []
    source = _heads(rs)
    for start, end, cls, head in _heads(rc):
        if cls == "only":
            continue
        others = [(s, e, c) for s, e, c, h in source if h == head and c != "only"]
        if others and all(c != cls for _, _, c in others):
            s, e, _ = others[0]
            cues.append(_cue("quantifier", rc, range(start, end), rs, range(s, e)))
    return cues
