"""Is a quote or a cited claim in the collection, and where? Graded verdicts.

:func:`verify_quote` answers with one of four verdicts (:data:`VERDICTS`):

* ``"verbatim"``: the quote is in a document word for word once both are folded
  (ligatures, quote marks, dashes, line-end hyphens, line breaks, case; see
  :func:`rag_core.retrieval.exact.normalize_for_matching`); every place it occurs, and whether folding
  was needed. Nothing else is ever called verbatim.
* ``"near_verbatim"``: no exact place, but the best alignment differs by a few words: the
  word-level changes ("homogeneous -> heterogeneous"), the similarity, document and page.
  Candidates come from the lexical indexes (the TF-IDF and BM25 top chunks); rapidfuzz
  aligns the folded quote inside each candidate's stretch of document text, so the cost does
  not grow with the collection beyond the two index look-ups.
* ``"related"``: no close wording, but passages close in meaning; each with its best
  sentence marked by offsets and a plain sentence on what the score means. The user judges.
* ``"not_found"``: neither; the closest passages are still returned for the user to read.

With ``cited_sources`` (the documents a statement cites), those are checked first and a
quote found only elsewhere is flagged ``misattributed``: found, but in a different document
than the one cited.

The thresholds below were chosen on the labelled statements in
``tests/data/citations_labelled.json``; ``docs/citations.md`` has the figures.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

import numpy as np

from rag_core.citations.closeness import owners, score_sentences
from rag_core.citations.meaning import meaning_of_verdict
from rag_core.index.chunk_table import chunk_sources_mask
from rag_core.index.lexical import top_k
from rag_core.retrieval.exact import document_texts, find_places, place_from_span
from rag_core.retrieval.ranking import check_query, search
from rag_core.settings import (
    ALIGN_MAX_CHARS,
    CANDIDATES_PER_LIST,
    DEFAULT_CROSS_ENCODER_MODEL,
    MAX_ELIDED_CHARS,
    MEANING_PASSAGES,
    NEAR_MAX_CHANGED_SHARE,
    NEAR_MAX_CHANGED_WORDS,
    NEAR_MIN_SIMILARITY,
    RELATED_MIN_LEXICAL,
    RELATED_MIN_MEANING,
)
from rag_core.text.back_matter import back_matter_mask
from rag_core.text.documents import DocumentText
from rag_core.text.folding import normalize_for_matching

__all__ = [
    "NEAR_MAX_CHANGED_WORDS",
    "NEAR_MIN_SIMILARITY",
    "RELATED_MIN_LEXICAL",
    "RELATED_MIN_MEANING",
    "VERDICTS",
    "CitationCheck",
    "verify_quote",
]

VERDICTS = ("verbatim", "near_verbatim", "related", "not_found")

# A rapidfuzz alignment score (0-100) below this is not worth a word-level look.
_MIN_ALIGNMENT_SCORE = 60.0

_WORDING_NOTE = ("Similarity compares the wording: the share of words the statement and the passage have in "
                 "common, in order, after folding (1.0 = the same words).")
_MEANING_NOTE = ("The score is the cosine similarity between the meaning of the statement and the marked "
                 "sentence (all-MiniLM-L6-v2 embeddings; 1.0 = the same meaning). {threshold:.2f} or more counts as "
                 "related. It says the passage is about the same thing, not that it supports the statement: "
                 "read it and judge.")
_OCR_VERBATIM = (" The document's text there was read by OCR from a scanned page: a character may be misread; "
                  "compare it with the page image.")
_OCR_NEAR = (" The document's text there was read by OCR from a scanned page, so a difference may be the scan's "
             "(a misread character), not the quote's: compare it with the page image.")
_LEXICAL_NOTE = ("The score is the TF-IDF cosine between the statement and the marked sentence: how many key words "
                 "they share, not their meaning (this collection has no embeddings). {threshold:.2f} or more counts "
                 "as related. Read the passage and judge.")


@dataclass
class CitationCheck:
    """The outcome of :func:`verify_quote`.

    ``verdict`` is one of :data:`VERDICTS`; ``message`` says it in a sentence. ``hits``: every
    place a verbatim quote occurs (document, page, label, offsets, snippet, ``pages``: the
    span cut at page starts). ``folded``/``folds``: whether folding was needed and which.
    ``best``: the best wording alignment (near_verbatim evidence: ``changes``,
    ``diff``, ``similarity``, document, page, offsets). ``closest``: passages close in meaning,
    each with ``sentence_start``/``sentence_end`` (offsets of its best sentence in ``text``) and
    ``sentence_score``. ``similarity`` is 1.0 for verbatim, the wording similarity for
    near_verbatim, the meaning score of the best sentence otherwise (``similarity_kind`` says
    which); ``score_note`` says what it means. ``meaning`` ("same", "changed", "unclear") and
    ``meaning_cues`` (``{kind, claim, source, severity}``) say whether the source says what the
    statement says (:mod:`rag_core.citations.meaning`); ``meaning_note`` says why in a sentence,
    ``meaning_sentence`` is the source sentence a paraphrase was compared with. ``ocr``: the
    evidence is text read by OCR from a scanned page (a character may be misread; the message
    says so, and a near-verbatim difference may be the scan's). ``stance`` ("supports",
    "contradicts", "nei"), ``stance_score``, ``stance_model`` (the learned model's name, or
    "rules") and ``evidence_sentences`` (document, page, offsets, score, best first) say what
    the sentences that bear on the statement say of it (:mod:`rag_core.citations.stance`);
    ``meaning`` is never "same" where the stance is "contradicts".
    """

    quote: str
    verdict: str
    message: str
    hits: list[dict] = field(default_factory=list)
    closest: list[dict] = field(default_factory=list)
    reranker_detail: str | None = None
    folded: bool = False
    folds: list[str] = field(default_factory=list)
    best: dict | None = None
    similarity: float | None = None
    similarity_kind: str | None = None
    score_note: str = ""
    cited_sources: list[str] = field(default_factory=list)
    found_in_cited: bool | None = None
    misattributed: bool = False
    meaning: str = "unclear"
    meaning_cues: list[dict] = field(default_factory=list)
    meaning_note: str = ""
    meaning_sentence: dict | None = None
    ocr: bool = False
    stance: str = "nei"
    stance_score: float | None = None
    stance_model: str = "rules"
    stance_note: str = ""
    evidence_sentences: list[dict] = field(default_factory=list)

    @property
    def evidence(self) -> dict | None:
        """The place that backs the verdict: the first hit, the best alignment or the closest passage."""
        if self.hits:
            return self.hits[0]
        if self.verdict == "near_verbatim" and self.best:
            return self.best
        if self.closest:
            return self.closest[0]
        return None

    @property
    def source(self) -> str | None:
        evidence = self.evidence
        return evidence.get("source") if evidence else None

    @property
    def page(self) -> int | None:
        evidence = self.evidence
        if not evidence:
            return None
        return evidence.get("page") or evidence.get("sentence_page") or evidence.get("page_start")

    @property
    def page_label(self) -> str | None:
        evidence = self.evidence
        if not evidence:
            return None
        return evidence.get("sentence_page_label") or evidence.get("page_label")

    def to_dict(self) -> dict:
        return {
            "quote": self.quote, "verdict": self.verdict, "message": self.message, "hits": self.hits,
            "closest": self.closest, "reranker_detail": self.reranker_detail, "folded": self.folded,
            "folds": self.folds, "best": self.best, "similarity": self.similarity,
            "similarity_kind": self.similarity_kind, "score_note": self.score_note,
            "cited_sources": self.cited_sources, "found_in_cited": self.found_in_cited,
            "misattributed": self.misattributed, "source": self.source, "page": self.page,
            "page_label": self.page_label, "meaning": self.meaning, "meaning_cues": self.meaning_cues,
            "meaning_note": self.meaning_note, "meaning_sentence": self.meaning_sentence, "ocr": self.ocr,
            "stance": self.stance, "stance_score": self.stance_score, "stance_model": self.stance_model,
            "stance_note": self.stance_note, "evidence_sentences": self.evidence_sentences,
        }


# --------------------------------------------------------------------------- helpers


_WORD = re.compile(r"[^ ]+")


def _words(folded: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of the space-separated words of ``folded[start:end]`` (``start`` at a word start)."""
    return [m.span() for m in _WORD.finditer(folded, start, end)]


def _original(text: str, origin: list[int], span: tuple[int, int]) -> str:
    a, b = span
    return " ".join(text[origin[a]: origin[b - 1] + 1].split())


_LIGATURE_CHARS = frozenset("\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06")
_QUOTE_CHARS = frozenset("\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u00ab\u00bb\u2032\u2033`\u00b4")
_DASH_CHARS = frozenset("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d")
_INVISIBLE_CHARS = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff")
_ODD_SPACE = re.compile(r"\s{2,}|[^\S ]")


def _folds_used(quote: str, match: str) -> list[str]:
    """Which kinds of folding it took for ``quote`` to match the document's ``match`` (none: [])."""
    if quote == match:
        return []
    both = set(quote) | set(match)
    kinds = []
    if both & _LIGATURE_CHARS:
        kinds.append("ligatures")
    if both & _QUOTE_CHARS:
        kinds.append("quote marks")
    if both & _DASH_CHARS:
        kinds.append("dashes")
    if both & _INVISIBLE_CHARS:
        kinds.append("invisible characters")
    squashed = [re.sub(r"[\s\-\u00ad\u2010\u2011]", "", s).casefold() for s in (quote, match)]
    spaced = [re.sub(r"\s", "", s).casefold() for s in (quote, match)]
    if (squashed[0] == squashed[1] and spaced[0] != spaced[1]) or re.search(r"[-\u00ad\u2010][ \t]*\n", match):
        kinds.append("hyphenation")
    if _ODD_SPACE.search(quote) or _ODD_SPACE.search(match):
        kinds.append("line breaks and spacing")
    if _case_differs(quote, match):
        kinds.append("letter case")
    if not kinds:
        kinds.append("Unicode compatibility characters")
    return kinds


def _case_differs(quote: str, match: str) -> bool:
    letters_q = [c for c in quote if c.isalpha()]
    letters_m = [c for c in match if c.isalpha()]
    if len(letters_q) != len(letters_m):
        return False
    return any(a != b and a.casefold() == b.casefold() for a, b in zip(letters_q, letters_m, strict=False))


def _where(sources: Collection[str] | None) -> str:
    if not sources:
        return "in the collection"
    return "in the chosen document" if len(sources) == 1 else "in the chosen documents"


def _page_text(row: dict) -> str:
    page = row.get("page") or row.get("page_start")
    if page is None:
        return ""
    end = row.get("page_end")
    text = f", page {page}" if not end or end == page else f", pages {page}-{end}"
    label = row.get("page_label")
    if label and str(label) != str(page):
        text += f" (printed {label})"
    return text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _source_mask(index, sources: Collection[str] | None, back_matter: bool = True) -> np.ndarray | None:
    if not back_matter:
        back = back_matter_mask(index.chunks)
        if back is not None:
            mask = _source_mask(index, sources)
            return ~back if mask is None else mask & ~back
    if sources is None:
        return None
    return chunk_sources_mask(index.chunks, set(sources))


# --------------------------------------------------------------------------- wording


def _lexical_candidates(quote: str, index, mask: np.ndarray | None, k: int) -> list[int]:
    lists = [index.tfidf_scores(quote), index.bm25_scores(quote)]
    found: list[int] = []
    for scores in lists:
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        order = top_k(np.asarray(scores, dtype=np.float32), k, positive_only=True)
        found.extend(int(i) for i in order)
    return list(dict.fromkeys(found))


def _windows(candidates: list[int], index, owners: dict[int, DocumentText], pad: int):
    """Stretches of document text around the candidate chunks, merged where they overlap."""
    spans: dict[str, list[list[int]]] = {}
    docs: dict[str, DocumentText] = {}
    for i in candidates:
        doc = owners.get(i)
        if doc is None:
            continue
        k = doc.chunk_indices.index(i)
        start = max(0, doc.chunk_starts[k] - pad)
        end = min(len(doc.text), doc.chunk_ends[k] + pad)
        docs[doc.key] = doc
        spans.setdefault(doc.key, []).append([start, end])
    for key, items in spans.items():
        items.sort()
        merged = [items[0]]
        for a, b in items[1:]:
            if a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        for a, b in merged:
            yield docs[key], a, b


def _best_alignment(needle: str, windows) -> tuple[float, DocumentText, int, int] | None:
    """The highest rapidfuzz partial-ratio alignment of ``needle`` in the windows:
    ``(score 0-100, document, folded start, folded end)``."""
    from rapidfuzz import fuzz

    best = None
    for doc, start, end in windows:
        folded, origin = doc.folded_with_map()
        a, b = bisect_left(origin, start), bisect_left(origin, end)
        window = folded[a:b]
        if len(window) < len(needle):
            a, b = max(0, a - (len(needle) - len(window))), min(len(folded), b + len(needle))
            window = folded[a:b]
        cutoff = max(_MIN_ALIGNMENT_SCORE, best[0] if best else 0.0)
        found = fuzz.partial_ratio_alignment(needle, window, score_cutoff=cutoff)
        if found is None or (best is not None and found.score <= best[0]):
            continue
        if len(needle) <= len(window):
            best = (found.score, doc, a + found.dest_start, a + found.dest_end)
        else:  # rapidfuzz aligned the window inside the needle
            best = (found.score, doc, a, b)
    return best


def _word_alignment(quote: str, doc: DocumentText, chunks: Sequence[dict], fs: int, fe: int, *,
                    context: int) -> dict | None:
    """Word-level comparison of ``quote`` with the document around the folded span ``[fs, fe)``."""
    qf, qmap = normalize_for_matching(quote)
    df, dmap = doc.folded_with_map()
    q_spans = _words(qf, 0, len(qf))
    if not q_spans:
        return None
    margin = max(20, (fe - fs) // 4)
    rs, re_ = max(0, fs - margin), min(len(df), fe + margin)
    while rs > 0 and df[rs - 1] != " ":
        rs -= 1
    while re_ < len(df) and df[re_] != " ":
        re_ += 1
    r_spans = _words(df, rs, re_)
    if not r_spans:
        return None
    q_tokens = [_token(qf[a:b]) for a, b in q_spans]
    r_tokens = [_token(df[a:b]) for a, b in r_spans]
    # difflib's matcher takes the longest runs in common first, so a repeated word next to the
    # passage ("Mitiq\nMitiq is ...") stays context instead of splitting a run.
    ops = SequenceMatcher(None, q_tokens, r_tokens, autojunk=False).get_opcodes()  # (tag, q0, q1, r0, r1)
    equal_blocks = [op for op in ops if op[0] == "equal"]
    if not equal_blocks:
        return None
    # Document words before the first and after the last run in common belong to the
    # alignment only as far as they stand in for quote words there; the rest is context.
    first, last = equal_blocks[0], equal_blocks[-1]
    r_first = first[3] - min(first[1], first[3])
    r_last = last[4] + min(len(q_tokens) - last[2], len(r_tokens) - last[4])
    ops = [[tag, q0, q1, r0 + r_first, r1 + r_first] for tag, q0, q1, r0, r1 in
           SequenceMatcher(None, q_tokens, r_tokens[r_first:r_last], autojunk=False).get_opcodes()]
    equal = sum(op[2] - op[1] for op in ops if op[0] == "equal")
    n_quote, n_doc = len(q_tokens), r_last - r_first
    changes = []
    changed_words = 0
    for tag, q0, q1, r0, r1 in ops:
        if tag == "equal":
            continue
        was = " ".join(_original(doc.text, dmap, r_spans[k]) for k in range(r0, r1))
        now = " ".join(_original(quote, qmap, q_spans[k]) for k in range(q0, q1))
        was, now = _trim_shared_punctuation(was, now)
        changes.append({"kind": tag, "document": was, "quote": now})
        changed_words += max(q1 - q0, r1 - r0)
    doc_start = dmap[r_spans[r_first][0]]
    doc_end = dmap[r_spans[r_last - 1][1] - 1] + 1
    place = place_from_span(doc, chunks, doc_start, doc_end, context=context, mode="aligned")
    similarity = 2 * equal / (n_quote + n_doc)
    place.update(
        similarity=round(similarity, 4), changes=changes, changed_words=changed_words,
        diff=describe_changes(changes), words_in_quote=n_quote, words_in_common=equal,
    )
    return place


_PUNCTUATION = ".,;:!?'\"()[]{}"


def _token(word: str) -> str:
    """A folded word compared without the punctuation around it ("settings," == "settings")."""
    return word.strip(_PUNCTUATION) or word


def _trim_shared_punctuation(was: str, now: str) -> tuple[str, str]:
    """"41.0," and "43.5," -> "41.0" and "43.5": punctuation both sides share is not a change."""
    while was and now and was[-1] == now[-1] and was[-1] in _PUNCTUATION:
        was, now = was[:-1], now[:-1]
    while was and now and was[0] == now[0] and was[0] in _PUNCTUATION:
        was, now = was[1:], now[1:]
    return was, now


def describe_changes(changes: list[dict]) -> str:
    """The word changes in one line: ``homogeneous → heterogeneous; “not” left out``."""
    parts = []
    for change in changes:
        was, now = change["document"], change["quote"]
        if was and now:
            parts.append(f"{was} \u2192 {now}")
        elif was:
            parts.append(f"\u201c{was}\u201d left out")
        else:
            parts.append(f"\u201c{now}\u201d added")
    return "; ".join(parts)


def _is_near(alignment: dict | None) -> bool:
    if not alignment or not alignment["changes"]:
        return False
    allowed = max(NEAR_MAX_CHANGED_WORDS, int(NEAR_MAX_CHANGED_SHARE * alignment["words_in_quote"]))
    return alignment["similarity"] >= NEAR_MIN_SIMILARITY and alignment["changed_words"] <= allowed


def closest_wording(quote: str, index, *, sources: Collection[str] | None = None,
                    candidates_per_list: int = CANDIDATES_PER_LIST, context: int = 300,
                    back_matter: bool = True) -> dict | None:
    """The best word-level alignment of ``quote`` in the candidate chunks of the lexical indexes
    (None when nothing aligns at all; ``back_matter=False``: none in reference lists and the like)."""
    needle = normalize_for_matching(quote)[0].strip()
    if not needle:
        return None
    documents = document_texts(index.chunks)
    by_chunk = owners(documents)
    mask = _source_mask(index, sources, back_matter)
    candidates = _lexical_candidates(quote, index, mask, candidates_per_list)
    if not candidates:
        return None
    # a long statement is placed by its first ALIGN_MAX_CHARS characters (the alignment's cost grows
    # with the square of its length), then compared word by word whole from there
    head = needle[:ALIGN_MAX_CHARS]
    found = _best_alignment(head, _windows(candidates, index, by_chunk, pad=len(head) + 50))
    if found is None:
        return None
    _, doc, fs, fe = found
    if len(head) < len(needle):
        fe = min(len(doc.folded_with_map()[0]), max(fe, fs + len(needle)))
    return _word_alignment(quote, doc, index.chunks, fs, fe, context=context)


# --------------------------------------------------------------------------- verify

_ELLIPSIS = re.compile(r"\s*(?:\[\s*(?:\.\s*){3}\]|\[\s*\u2026\s*\]|\(\s*(?:\.\s*){3}\)|(?:\.\s*){3,}|\u2026)\s*")


def _quote_parts(quote: str) -> list[str]:
    """The quote cut at its ellipses; parts without a letter or digit are dropped."""
    parts = [p.strip() for p in _ELLIPSIS.split(quote)]
    parts = [p for p in parts if any(c.isalnum() for c in p)]
    return parts or [quote]


def _find_quote(parts: list[str], chunks, *, sources, max_places: int, context: int) -> list[dict]:
    if len(parts) == 1:
        return find_places(parts[0], chunks, sources=sources, max_places=max_places, context=context)
    documents = {d.source: d for d in document_texts(chunks)}
    places = []
    for first in find_places(parts[0], chunks, sources=sources, max_places=50, context=context):
        doc = documents.get(first["source"])
        if doc is None:
            continue
        folded, origin = doc.folded_with_map()
        end = first["doc_end"]
        for part in parts[1:]:
            needle = normalize_for_matching(part)[0].strip()
            start = bisect_left(origin, end)
            j = folded.find(needle, start, start + MAX_ELIDED_CHARS + len(needle)) if needle else -1
            if j < 0:
                break
            end = origin[j + len(needle) - 1] + 1
        else:
            place = place_from_span(doc, chunks, first["doc_start"], end, context=context, mode="elided")
            places.append(place)
            if len(places) >= max_places:
                place["truncated"] = True
                break
    return places



def verify_quote(
    quote: str,
    index,
    *,
    sources: Collection[str] | None = None,
    context: int = 300,
    max_hits: int = 10,
    n_closest: int = 5,
    cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL,
    cited_sources: Collection[str] | None = None,
    meaning: bool = True,
    back_matter: bool = True,
    read_not_found: bool = True,
) -> CitationCheck:
    """Check a quote or claim against ``index``; see the module docstring for the verdicts.

    ``sources`` limits the search to those documents; ``cited_sources`` are the documents the
    statement cites (checked first; evidence found only elsewhere sets ``misattributed``).
    ``meaning=False`` skips the look for passages close in meaning (verdicts then stop at
    near_verbatim / not_found). ``back_matter=False`` looks nowhere in reference lists,
    acknowledgements and other back matter (:mod:`rag_core.text.back_matter`). Every check also
    says whether the source means what the statement says (``meaning``, ``meaning_cues``).
    ``read_not_found=False`` keeps the stance reader from reading the closest passages of a
    statement found nowhere (a manuscript's statement whose cited work is not in the collection).
    """
    result, ranked = _verify(quote, index, sources=sources, context=context, max_hits=max_hits,
                             n_closest=n_closest, cross_encoder_model=cross_encoder_model,
                             cited_sources=cited_sources, meaning=meaning, back_matter=back_matter)
    found = meaning_of_verdict(result.verdict, result.quote, best=result.best, closest=ranked)
    result.meaning, result.meaning_cues, result.meaning_note = found.meaning, found.cues, found.note
    result.meaning_sentence = found.sentence_row
    apply_stance(result, ranked, read_not_found=read_not_found)
    return result


def _cited_first(rows: Sequence[dict], cited: Collection[str]) -> list[dict]:
    cited = set(cited)
    return [r for r in rows if r.get("source") in cited] + [r for r in rows if r.get("source") not in cited]


def _place(row: dict) -> dict:
    return {k: row.get(k) for k in ("source", "page", "chunk_index", "start", "end", "doc_start", "doc_end")}


def apply_stance(result: CitationCheck, ranked: Sequence[dict] = (), *, read_not_found: bool = True) -> None:
    """Set the check's stance fields, and its meaning from them: a verbatim or near-verbatim
    check keeps the rules' meaning (an edit of a quote is the rules' to judge); a related one
    takes the learned stance over the passages (the cited document's first): ``changed`` when
    it contradicts, ``same`` only when it supports, ``unclear`` when it does not decide."""
    from rag_core.citations import stance as st

    if result.verdict == "verbatim" and result.hits:
        hit = result.hits[0]
        result.stance, result.stance_score, result.stance_model = "supports", 1.0, "rules"
        result.evidence_sentences = [{**_place(hit), "sentence": hit.get("match"), "score": 1.0,
                                      "stance": "supports"}]
        return
    if result.verdict == "near_verbatim" and result.best:
        best = result.best
        result.stance, result.stance_model = st.rules_stance(result.meaning), "rules"
        result.stance_score = 1.0 if result.stance != "nei" else None
        result.evidence_sentences = [{**_place(best), "sentence": best.get("match"),
                                      "score": best.get("similarity"), "stance": result.stance}]
        return
    if result.verdict == "not_found" and ranked and read_not_found:
        _stance_of_not_found(result, ranked)
        return
    if result.verdict != "related" or not ranked:
        result.stance, result.stance_score, result.stance_model = "nei", None, "rules"
        return
    decision = st.decide(result.quote, _cited_first(ranked, result.cited_sources), cues=result.meaning_cues,
                         rules_meaning=result.meaning)
    result.stance, result.stance_score, result.stance_model = decision.stance, decision.score, decision.model
    result.stance_note = decision.note
    result.evidence_sentences = [
        {k: e.get(k) for k in ("source", "page", "chunk_index", "start", "end", "doc_start", "doc_end", "sentence",
                               "score", "stance", "probabilities")} for e in decision.evidence_sentences]
    if decision.model == "rules":
        return
    result.meaning, result.meaning_note = st.meaning_of_stance(decision, result.meaning, result.meaning_note)


def _stance_of_not_found(result: CitationCheck, ranked: Sequence[dict]) -> None:
    """A statement whose wording is close to nothing may still be one its closest passages
    answer ("X is associated with better outcomes" against an abstract reporting poorer ones):
    where the stance reader's card says so, it reads them (the cited document's first) and a
    stance it takes makes the check ``related``, with that stance's meaning; otherwise the check
    stays ``not_found`` with no stance."""
    from rag_core.citations import stance as st
    from rag_core.models.stance_encoder import StanceEncoderError

    result.stance, result.stance_score, result.stance_model = "nei", None, "rules"
    try:
        reader = st.load_reader()
    except (StanceEncoderError, ImportError, OSError):
        return
    settings = st.reader_decision(reader)
    if not settings.get("not_found"):
        return
    rows = _cited_first(ranked, result.cited_sources)
    if result.cited_sources and rows[0].get("source") not in set(result.cited_sources):
        return  # the cited document is not among them: nothing it says to read
    decision = st.decide(result.quote, rows, rules_meaning="unclear", reader=reader,
                         combine=settings.get("not_found_combine"))
    if decision.stance == "nei" or decision.model == "rules" or not decision.evidence_sentences:
        return
    if decision.stance == "supports" and decision.score < settings.get("not_found_support", 1.01):
        return  # a statement found nowhere is called supported only by a reader that is sure
    deciding = decision.evidence_sentences[0]
    result.verdict = "related"
    result.stance, result.stance_score, result.stance_model = decision.stance, decision.score, decision.model
    result.stance_note = decision.note
    result.evidence_sentences = [
        {k: e.get(k) for k in ("source", "page", "chunk_index", "start", "end", "doc_start", "doc_end", "sentence",
                               "score", "stance", "probabilities")} for e in decision.evidence_sentences]
    if result.cited_sources:
        result.found_in_cited = deciding.get("source") in set(result.cited_sources)
    verb = "supports" if decision.stance == "supports" else "contradicts"
    result.message = (f"Not found word for word, nor with close wording, but the stance reader finds that "
                      f"{deciding.get('source')}{_page_text(deciding)} {verb} it: read the marked sentence to judge.")
    result.meaning, result.meaning_note = st.meaning_of_stance(decision, "unclear", "")


def _verify(
    quote: str,
    index,
    *,
    sources: Collection[str] | None = None,
    context: int = 300,
    max_hits: int = 10,
    n_closest: int = 5,
    cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL,
    cited_sources: Collection[str] | None = None,
    meaning: bool = True,
    back_matter: bool = True,
) -> tuple[CitationCheck, list[dict]]:
    """:func:`verify_quote` without the meaning layer: the check, and the closest passages
    in order of their best sentence (all of them, however many the check keeps)."""
    quote = check_query(quote)
    where = _where(sources)
    cited = [s for s in dict.fromkeys(cited_sources or []) if sources is None or s in set(sources)]
    chunks = index.chunks
    result = CitationCheck(quote=quote, verdict="not_found", message="", cited_sources=cited)

    # 1. verbatim, in the cited documents first; a quote with an ellipsis ("A ... B", "A […] B")
    # is verbatim when its parts occur in order, close together, in one document
    parts = _quote_parts(quote)
    hits: list[dict] = []
    if cited:
        hits = _find_quote(parts, chunks, sources=cited, max_places=max_hits, context=context)
    if not hits:
        hits = _find_quote(parts, chunks, sources=sources, max_places=max_hits, context=context)
    back = None if back_matter else back_matter_mask(chunks)
    if back is not None:  # a place in a reference list is no find
        hits = [hit for hit in hits if not back[hit["chunk_index"]]]
    if hits:
        for hit in hits:
            hit["folds"] = _folds_used(" ".join(parts), hit["match"]) if len(parts) == 1 else ["omitted words (...)"]
        result.hits = hits
        result.verdict = "verbatim"
        result.folds = list(dict.fromkeys(k for k in hits[0]["folds"]))
        result.folded = bool(result.folds)
        result.similarity, result.similarity_kind = 1.0, "wording"
        result.score_note = "Word for word: the statement occurs in the document."
        if cited:
            result.found_in_cited = any(h["source"] in cited for h in hits)
            result.misattributed = not result.found_in_cited
        first = hits[0]
        how = f" after folding {', '.join(result.folds)}" if result.folded else ""
        places = _plural(len(hits), "place") + (" or more" if hits[-1].get("truncated") else "")
        result.message = f"Found word for word{how} {where}: {first['source']}{_page_text(first)} ({places})."
        if result.misattributed:
            result.message += " Found, but in a different document than the one cited."
        result.ocr = bool(first.get("ocr"))
        if result.ocr:
            result.message += _OCR_VERBATIM
        return result, []

    # 2. near verbatim: the closest wording, in the cited documents first
    best = None
    if cited:
        best = closest_wording(quote, index, sources=cited, context=context, back_matter=back_matter)
        if not _is_near(best):
            best = None
    if best is None:
        best = closest_wording(quote, index, sources=sources, context=context, back_matter=back_matter)
    result.best = best
    if _is_near(best):
        result.verdict = "near_verbatim"
        result.similarity, result.similarity_kind = best["similarity"], "wording"
        result.score_note = _WORDING_NOTE
        if cited:
            result.found_in_cited = best["source"] in cited
            result.misattributed = not result.found_in_cited
        n = best["changed_words"]
        result.message = (
            f"Not found word for word {where}, but nearly: {best['source']}{_page_text(best)} has the same passage "
            f"with {_plural(n, 'word')} different ({best['diff']}); similarity {best['similarity']:.2f}."
        )
        if result.misattributed:
            result.message += " Found, but in a different document than the one cited."
        result.ocr = bool(best.get("ocr"))
        if result.ocr:
            result.message += _OCR_NEAR
        return result, []

    # 3. related: passages close in meaning, with their best sentence
    if not meaning:
        result.message = f"Not found word for word {where}, and no passage has close wording."
        return result, []
    pool = list(dict.fromkeys([*(sources or [])])) or None
    ranked: list[dict] = []
    # The verdict reads the best sentences of MEANING_PASSAGES passages, however many are shown.
    closest = search(quote, index, top=max(n_closest, MEANING_PASSAGES), rerank=True,
                     cross_encoder_model=cross_encoder_model, sources=pool, back_matter=back_matter)
    if cited and not any(row["source"] in cited for row in closest):
        extra = search(quote, index, top=1, rerank=True, cross_encoder_model=cross_encoder_model, sources=cited,
                       back_matter=back_matter)
        closest = closest + [row for row in extra if row["chunk_index"] not in {r["chunk_index"] for r in closest}]
    result.reranker_detail = closest[0].get("reranker_detail") if closest else None
    if closest:
        kind = score_sentences(quote, index, closest)
        closest.sort(key=lambda row: -row["sentence_score"])
        ranked = list(closest)
        shown = closest[:n_closest]
        if cited and len(shown) > 1 and not any(row["source"] in cited for row in shown):  # the cited one stays in view
            shown = [*shown[:-1], next((r for r in closest if r["source"] in cited), shown[-1])]
        closest = shown
        for rank, row in enumerate(closest, start=1):
            row["rank"] = rank
        threshold = RELATED_MIN_MEANING if kind == "meaning" else RELATED_MIN_LEXICAL
        top = closest[0]
        result.similarity, result.similarity_kind = top["sentence_score"], kind
        result.score_note = (_MEANING_NOTE if kind == "meaning" else _LEXICAL_NOTE).format(threshold=threshold)
        if top["sentence_score"] >= threshold:
            result.verdict = "related"
            if cited:
                result.found_in_cited = any(r["source"] in cited and r["sentence_score"] >= threshold
                                            for r in closest)
    result.closest = closest
    if result.verdict == "related":
        result.message = (
            f"Not found word for word {where}, nor with close wording. Passages close in "
            f"{'meaning' if result.similarity_kind == 'meaning' else 'key words'} are below, the best "
            f"sentence marked (best: {closest[0]['source']}{_page_text(closest[0])}, score "
            f"{result.similarity:.2f}); read them to judge whether they support the statement."
        )
        result.ocr = bool(closest[0].get("ocr"))
        if result.ocr:
            result.message += _OCR_VERBATIM.replace("there", "of the best passage")
    else:
        result.message = (
            f"Not found word for word {where}, nor with close wording, and no passage is close in meaning. "
            "The closest passages are below for you to judge."
        )
    return result, ranked
