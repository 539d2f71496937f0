"""A paraphrase against a sentence of its source: what aligns, and what conflicts on it.

:func:`conflicts` takes two readings (:mod:`rag_core.citations.meaning_read`): the statement
and the source sentence it was aligned with. Content words align by stem, synonym group and
compound part (:func:`align_keys`); a negated word whose counterpart is not negated, opposite
directions about the same things (the aligned words around them on the same sides, or the
same direction with the things swapped), a figure attached to the same word with another value,
a quantifier of another class on the same noun, are conflicts; a hedge against a certainty is
a cue of low severity. A figure of the statement with no counterpart leaves the meaning open.
"""

from __future__ import annotations

from rag_core.citations.meaning_read import Reading, cue, share_class
from rag_core.citations.meaning_tables import BAD_NOUNS, GOOD_NOUNS, RELATION_ASKED, RELATION_WORDS, RELATIONAL
from rag_core.settings import MEANING_APPROX_TOLERANCE, MEANING_DENIED_CLAUSE_MIN_WORDS
from rag_core.text.numbers import Quantity, compatible
from rag_core.text.words import stem

__all__ = ["align_keys", "conflicts", "negated_nearby", "same_kind"]


def align_keys(reading: Reading, i: int) -> set[str]:
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
            for k in align_keys(rs, j):
                where.setdefault(k, []).append(j)
    out = {}
    for i, c in enumerate(rc.content):
        if c:
            found = sorted({j for k in align_keys(rc, i) for j in where.get(k, [])})
            if found:
                out[i] = found
    return out


_NP_NEGATORS = frozenset({"no", "none", "without", "lack", "lacks", "lacking", "nothing"})


def conflicts(rc: Reading, rs: Reading) -> tuple[list[dict], bool]:
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
            if any(_denied(other, k) for k in mapping[scope[0]]):
                continue
            # about the same thing: a word next to the head aligns with a word next to its counterpart
            here = _near_keys(reading, scope[0], exclude=scope[0])
            about_same = [k for k in counterparts if here & _near_keys(other, k, exclude=k)]
            if not about_same:
                continue
            cues.append(_negation_cue(is_claim, rc, rs, list(range(n, scope[0] + 1)), [about_same[0]]))
    cues.extend(_denied_clause_conflicts(rc, rs, align, back))
    cues.extend(_null_finding_conflicts(rc, rs, align, back))
    cues.extend(_direction_conflicts(rc, rs, align))
    number_cues, unmatched = _number_conflicts(rc, rs)
    cues.extend(number_cues)
    cues.extend(_quantifier_conflicts(rc, rs))
    c_hedge = set(rc.hedges.values())
    s_hedge = set(rs.hedges.values())
    if ("certain" in c_hedge and "hedge" in s_hedge and "hedge" not in c_hedge) or (
            "hedge" in c_hedge and "certain" in s_hedge and "hedge" not in s_hedge):
        cues.append(cue("hedge", rc, sorted(rc.hedges), rs, sorted(rs.hedges)))
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
            out |= align_keys(reading, j)
    return out


def negated_nearby(reading: Reading, k: int) -> bool:
    return any(0 < k - n <= 4 for n in reading.negators)


def _negation_cue(is_claim: bool, rc: Reading, rs: Reading, mine: list[int], theirs: list[int]) -> dict:
    """A negation cue of ``mine`` (tokens of the negating text) against ``theirs`` (the other's),
    written claim first whichever of the two negates."""
    return cue("negation", rc, mine, rs, theirs) if is_claim else cue("negation", rc, theirs, rs, mine)


def _denied(reading: Reading, k: int) -> bool:
    """Whether token ``k`` is negated, follows a negator closely, or sits in a denied clause."""
    return k in reading.negated or k in reading.denied_words or negated_nearby(reading, k)


_RELATION_REACH = 6  # tokens between an asserted relation word and a word the null result is about


def _asserted_relation(other: Reading, counterparts: list[int]) -> int | None:
    """A word of ``other`` that asserts a relation (an association, an effect, a direction) near
    one of ``counterparts``, not negated or denied there: its index, or None."""
    for k in range(len(other.tokens)):
        if other.tokens[k].kind != "word" or _denied(other, k):
            continue
        if other.stems[k] not in RELATION_WORDS and other.plain[k] not in RELATION_WORDS and k not in other.directions:
            continue
        if any(other.keys[j] in RELATION_ASKED for j in range(max(0, k - 4), k)):
            continue  # "to determine the association between": asked, not found
        if any(abs(k - c) <= _RELATION_REACH for c in counterparts if c != k):
            return k
    return None


def _null_finding_conflicts(rc: Reading, rs: Reading, align: dict[int, list[int]],
                            back: dict[int, list[int]]) -> list[dict]:
    """A null result against an asserted relation: "There was no significant association between
    statin use and dementia risk" against "Statin use is associated with lower dementia risk",
    "no effect of aspirin on cancer incidence" against "aspirin reduces cancer incidence". Half
    of what the null result is about (up to its last aligned word) must align, none of it
    negated in the other text, and the other text must assert a relation near it."""
    cues = []
    for reading, other, mapping, reverse, is_claim in ((rc, rs, align, back, True), (rs, rc, back, align, False)):
        for n, (noun, *about) in reading.null_findings.items():
            span = range(n, about[-1] + 1)
            # a word counts where its counterpart aligns inside the null result only ("reduced
            # colorectal cancer, with no effect on gastric cancer": "cancer" is said of both)
            aligned = [j for j in about if any(all(r in span for r in reverse.get(k, ())) for k in mapping.get(j, ()))]
            if not aligned or len(aligned) * 2 < about.index(aligned[-1]) + 1:
                continue
            counterparts = sorted({k for j in aligned for k in mapping[j]})
            if any(_denied(other, k) for k in counterparts):
                continue
            relation = _asserted_relation(other, counterparts)
            if relation is None:
                continue
            cues.append(_negation_cue(is_claim, rc, rs, list(range(n, noun + 1)), sorted({relation, *counterparts})))
    return cues


def _opposite_directions(reading: Reading, clause: list[int], other: Reading) -> bool:
    """Whether a direction word of the clause has the opposite sense of one of the other text."""
    lo, hi = clause[0], clause[-1] + 1
    mine = {sense for i, (end, raw) in reading.directions.items() if lo <= i < hi
            for sense in _senses(reading, i, end, raw)}
    theirs = {sense for i, (end, raw) in other.directions.items() for sense in _senses(other, i, end, raw)}
    return any((axis, -sign) in theirs for axis, sign in mine)


def _denied_clause_conflicts(rc: Reading, rs: Reading, align: dict[int, list[int]],
                             back: dict[int, list[int]]) -> list[dict]:
    """A clause one text says there is no evidence for, the other asserts: "There is no evidence
    that 5G networks spread the virus" against "5G networks spread the virus". Half of the
    clause's content words up to the last that aligns (two at least) must align, none of their
    counterparts be negated, and no direction of the clause be the opposite of one of the other
    text's."""
    cues = []
    for reading, other, mapping, is_claim in ((rc, rs, align, True), (rs, rc, back, False)):
        for n, clause in reading.denied.items():
            aligned = [j for j in clause if mapping.get(j)]
            # the clause runs on past commas ("no evidence that use of X, with or without Y,
            # reduced ..."): half of it up to its last aligned word must align
            if len(aligned) < MEANING_DENIED_CLAUSE_MIN_WORDS or len(aligned) * 2 < clause.index(aligned[-1]) + 1:
                continue
            counterparts = sorted({k for j in aligned for k in mapping[j]})
            if any(_denied(other, k) for k in counterparts):
                continue
            if _opposite_directions(reading, clause, other):
                continue  # "no evidence that it reduced the risk" does not deny "a higher risk"
            cues.append(_negation_cue(is_claim, rc, rs, list(range(n, aligned[-1] + 1)), counterparts))
    return cues


def _sides(reading: Reading, start: int, end: int, aligned: set[int]) -> tuple[dict[str, float], dict[str, float]]:
    """What a direction word is about: the keys of the aligned words before it and after it in
    its clause (up to 8 words each way), each weighing 1/distance; a key on both sides tells
    nothing and is dropped."""
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    for side, steps in ((before, range(start - 1, max(-1, start - 9), -1)),
                        (after, range(end, min(len(reading.tokens), end + 9)))):
        for distance, j in enumerate(steps, start=1):
            if (reading.tokens[j].kind == "punct" and reading.keys[j] in ".;:") or reading.keys[j] in _CLAUSE_BREAKS:
                break
            if j in aligned:
                for k in align_keys(reading, j):
                    side.setdefault(k, 1 / distance)
    both = before.keys() & after.keys()
    return ({k: w for k, w in before.items() if k not in both}, {k: w for k, w in after.items() if k not in both})


_CLAUSE_BREAKS = frozenset({"but", "while", "whereas", "although", "though", "because", "which", "however"})


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


def _relational(reading: Reading, start: int, end: int) -> bool:
    """A direction word that sets two things against each other: one followed by "than" (or a
    passive "by"), or a verb of comparison ("outperforms", "beats", "lags")."""
    following = reading.keys[end:end + 2]
    return "than" in following or "by" in following[:1] or reading.plain[start] in RELATIONAL


def _direction_conflicts(rc: Reading, rs: Reading, align: dict[int, list[int]]) -> list[dict]:
    """Opposite directions on one axis about the same things: "worse than BM25" against
    "better than BM25" (the aligned words around them on the same sides), or the same direction
    with the things swapped ("BM25 beats DPR" against "DPR beats BM25"; a passive "by" swaps back).
    A word about one thing ("larger models", "increasing model size") has no sides to swap."""
    aligned_c = set(align)
    aligned_s = {j for js in align.values() for j in js}
    bounds_c, bounds_s = _bound_words(rc), _bound_words(rs)
    c_words, s_words = set(rc.plain), set(rs.plain)
    cues = []
    for ci, (ce, c_raw) in rc.directions.items():
        if ci in bounds_c or ci in rc.denied_words:
            continue  # a direction there is no evidence for says neither way ("no evidence that it reduced")
        c_before, c_after = _sides(rc, ci, ce, aligned_c)
        if not (c_before or c_after):
            continue
        c_senses = _senses(rc, ci, ce, c_raw)
        c_sign_flip = -1 if ci in rc.negated else 1
        c_passive = ce < len(rc.keys) and rc.keys[ce] == "by"
        candidates = []  # (how much it shares with the claim word's sides, agrees)
        for si, (se, s_raw) in rs.directions.items():
            if si in bounds_s or si in rs.denied_words or rc.plain[ci] in s_words or rs.plain[si] in c_words:
                continue  # each text has the other's word: a negation, if anything, found above
            s_senses = _senses(rs, si, se, s_raw)
            shared = [(cs, ss) for axis, cs in c_senses for axis2, ss in s_senses if axis == axis2]
            if not shared:
                continue
            s_before, s_after = _sides(rs, si, se, aligned_s)
            if _relational(rc, ci, ce) and _relational(rs, si, se):  # "A better than B", "A outperforms B"
                same = _overlap(c_before, s_before) + _overlap(c_after, s_after)
                crossed = _overlap(c_before, s_after) + _overlap(c_after, s_before)
                if c_passive != (se < len(rs.keys) and rs.keys[se] == "by"):
                    same, crossed = crossed, same
            else:  # one thing grows or shrinks: "larger models", "increasing model size"
                same, crossed = _overlap({**c_before, **c_after}, {**s_before, **s_after}), 0.0
            if same == crossed:
                continue
            s_sign_flip = -1 if si in rs.negated else 1
            agree = any((c_sign * c_sign_flip == s_sign * s_sign_flip) == (same > crossed) for c_sign, s_sign in shared)
            candidates.append((max(same, crossed), agree, si))
        if candidates:  # the source's word about the same things decides; on a tie, agreement
            _, agree, si = max(candidates, key=lambda c: (c[0], c[1]))
            if not agree:
                cues.append(cue("direction", rc, range(ci, ce), rs, range(si, rs.directions[si][0])))
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


def same_kind(a: Quantity, b: Quantity) -> bool:
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
        cues.append(cue("number", rc, range(q.start, q.end), rs, range(s.start, s.end)))
    return cues, unmatched


def _heads(reading: Reading) -> list[tuple[int, int, str, str]]:
    """(start, end, class, head stem) of every quantifier and proportion: the head is the
    first content word after it."""
    spans = [(s, e, cls) for s, (e, cls) in reading.quantifiers.items()]
    spans += [(q.start, q.end, share_class(q)) for q in reading.amounts if q.unit == "proportion"]
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
            cues.append(cue("quantifier", rc, range(start, end), rs, range(s, e)))
    return cues

