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

from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from rag_core.citations.meaning_align import align_keys, conflicts, same_kind
from rag_core.citations.meaning_read import Reading, cue, read, share_class, unique_cues
from rag_core.citations.meaning_tables import DEGREE, HARMLESS_WORDS, NEGATION_PREFIXES
from rag_core.settings import (
    MEANING_ALIGN_PASSAGES,
    MEANING_APPROX_TOLERANCE,
    MEANING_MERGE_GAP_WORDS,
    MEANING_MIN_ALIGNED,
)
from rag_core.text.numbers import Quantity, compatible
from rag_core.text.sentences import split_sentences

__all__ = ["CUE_KINDS", "MEANINGS", "MeaningCheck", "compare_passages", "compare_wording", "meaning_of_verdict"]

MEANINGS = ("same", "changed", "unclear")
CUE_KINDS = ("negation", "number", "direction", "quantifier", "hedge")


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



def _verdict(cues: list[dict], unknown: bool) -> str:
    if any(c["severity"] == "high" for c in cues):
        return "changed"
    return "unclear" if unknown else "same"


# --------------------------------------------------------------------------- near verbatim


def compare_wording(claim: str, source: str) -> MeaningCheck:
    """The meaning of ``claim`` against ``source``, the passage it nearly copies: every
    changed word of the word-level alignment classified (see the module docstring)."""
    rc, rs = read(claim), read(source)
    c_idx = [i for i, t in enumerate(rc.tokens) if t.kind != "punct"]
    s_idx = [i for i, t in enumerate(rs.tokens) if t.kind != "punct"]
    ops = SequenceMatcher(None, [rs.keys[i] for i in s_idx], [rc.keys[i] for i in c_idx],
                          autojunk=False).get_opcodes()
    # source words before the first and after the last word in common are context, not changes;
    # there the source stands in for the claim's words only as far as the claim has words
    while ops and ops[0][0] == "delete":
        ops = ops[1:]
    while ops and ops[-1][0] == "delete":
        ops = ops[:-1]
    # ("In fact, it is ..." against "... each iteration. It is ...": the claim's own words at
    # the edge are harmless, the source's there are another sentence's)
    for k in (0, len(ops) - 1) if len(ops) > 1 else ():
        tag, s0, s1, c0, c1 = ops[k]
        if tag != "replace":
            continue
        if all(_harmless_word(rc, c_idx[j]) and rc.keys[c_idx[j]] not in DEGREE for j in range(c0, c1)):
            s0, s1 = (s1, s1) if k == 0 else (s0, s0)
        else:
            s0, s1 = (max(s0, s1 - (c1 - c0)), s1) if k == 0 else (s0, min(s1, s0 + (c1 - c0)))
        ops[k] = ("insert" if s0 == s1 else tag, s0, s1, c0, c1)
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
    cues = unique_cues(cues)
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
        cues.append(cue("negation", rc, c_tokens, rs, s_tokens))
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
        cues.append(cue("number", rc, _with_spans(c_tokens, qc), rs, _with_spans(s_tokens, qs)))
    # direction: opposite sides of one axis, or a compound's parts reversed (left-to-right)
    c_dir = [s for i in _in_group(rc.directions, cs) for s in rc.directions[i][1]]
    s_dir = [s for i in _in_group(rs.directions, ss) for s in rs.directions[i][1]]
    opposite = any((axis, -sign) in s_dir for axis, sign in c_dir)
    reversed_parts = any(
        rc.tokens[i].parts and rs.tokens[j].parts and rc.tokens[i].parts != rs.tokens[j].parts
        and sorted(rc.tokens[i].parts) == sorted(rs.tokens[j].parts) for i in c_tokens for j in s_tokens)
    if opposite or reversed_parts:
        cues.append(cue("direction", rc, c_tokens, rs, s_tokens))
    # quantifiers: a different class, or one added or left out ("all" -> "most", "only" dropped)
    c_classes = {rc.quantifiers[i][1] for i in c_quant} | {share_class(q) for q in qc if q.unit == "proportion"}
    s_classes = {rs.quantifiers[i][1] for i in s_quant} | {share_class(q) for q in qs if q.unit == "proportion"}
    if (c_quant or s_quant) and c_classes != s_classes:
        cues.append(cue("quantifier", rc, _with_quantifiers(rc, c_tokens, c_quant), rs,
                         _with_quantifiers(rs, s_tokens, s_quant)))
    # hedge against certainty
    c_hedge = {rc.hedges[i] for i in c_tokens if i in rc.hedges}
    s_hedge = {rs.hedges[i] for i in s_tokens if i in rs.hedges}
    if c_hedge != s_hedge and ("hedge" in c_hedge or "hedge" in s_hedge):
        cues.append(cue("hedge", rc, c_tokens, rs, s_tokens))
    if cues:
        return cues, False
    return [], _harmless(rc, c_tokens, rs, s_tokens, qc, qs)


def _with_spans(tokens: list[int], amounts: list[Quantity]) -> list[int]:
    return sorted(set(tokens) | {i for q in amounts for i in range(q.start, q.end)})


def _with_quantifiers(reading: Reading, tokens: list[int], starts: list[int]) -> list[int]:
    return sorted(set(tokens) | {i for s in starts for i in range(s, reading.quantifiers[s][0])})




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
    # a content word aligns by stem, synonym or compound part; a direction word also with any
    # word of its axis ("worse" with "better": what conflicts is what must be compared)
    axes = {i: {axis for axis, _ in senses} for i, (_, senses) in rc.directions.items()}
    items = list({rc.stems[i]: (align_keys(rc, i), axes.get(i, set()))
                  for i, c in enumerate(rc.content) if c}.values())
    figures = [q for q in rc.amounts if q.unit != "ordinal"]
    if not items:
        return MeaningCheck(meaning="unclear", note="The statement has no content words to align.")
    best = None
    for p, text in enumerate(passages):
        for a, b in split_sentences(text or ""):
            rs = read(text[a:b])
            keys = {k for j, c in enumerate(rs.content) if c for k in align_keys(rs, j)}
            sentence_axes = {axis for _, senses in rs.directions.values() for axis, _ in senses}
            held = sum(1 for ks, ax in items if ks & keys or ax & sentence_axes) + sum(1 for q in figures if any(
                same_kind(q, s) and compatible(q, s, tolerance=MEANING_APPROX_TOLERANCE) for s in rs.amounts))
            share = held / (len(items) + len(figures))
            if best is None or share > best[0] + 1e-9:
                best = (share, p, a, b, rs)
    if best is None or best[0] < MEANING_MIN_ALIGNED:
        return MeaningCheck(
            meaning="unclear", aligned=round(best[0], 3) if best else 0.0,
            note="Too little of the statement aligns with any sentence of the closest passages to compare "
                 "what they say: read them.")
    share, p, a, b, rs = best
    cues, unmatched = conflicts(rc, rs)
    cues = unique_cues(cues)
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


