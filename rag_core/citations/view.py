"""What the Verify page shows of a citation check, as pure functions (no Streamlit).

The verdicts keep their API names (``verbatim``, ``near_verbatim``, ``related``,
``not_found``) everywhere the user sees them, each with a sentence on what it means
(:data:`VERDICT_MEANINGS`). :func:`word_diff` and :func:`word_diff_html` show a near-verbatim
quote against the document word by word; :func:`statement_records` and
:func:`statements_from_records` turn a manuscript's statements into the rows of the editable
list and back (the citation markers parsed again, so an edited marker counts);
:func:`report_records` gives the rows of the report table; :func:`evidence_target` the part
of a place that :func:`rag_core.pdf.marks.mark_hit` needs to mark it on its page.

Text from a document or a manuscript stays data: the HTML helpers escape it first
(:func:`rag_core.output.render.literal_html`) and add only their own tags.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from difflib import SequenceMatcher

from rag_core.citations.manuscript import Reference, Statement, parse_citations
from rag_core.citations.markers import ReferenceIndex
from rag_core.citations.report import OUTCOME_LABELS, OUTCOMES, by_severity, cues_text, outcome
from rag_core.citations.verdicts import VERDICTS
from rag_core.output.render import literal_html, page_label, snippet
from rag_core.text.folding import normalize_for_matching

__all__ = [
    "MEANING_TEXTS",
    "MISATTRIBUTED",
    "VERDICTS",
    "VERDICT_MEANINGS",
    "cues_html",
    "evidence_target",
    "folding_text",
    "match_spans",
    "meaning_lead",
    "outcome_counts",
    "pasted_kind",
    "place_page",
    "references_summary",
    "report_file_stem",
    "report_records",
    "report_row_height",
    "sentence_window",
    "stance_cell",
    "stance_line",
    "stance_rows",
    "stance_where",
    "statement_option",
    "statement_records",
    "statements_from_records",
    "verdict_counts",
    "verdict_summary",
    "where_text",
    "word_diff",
    "word_diff_html",
]

VERDICT_MEANINGS = {
    "verbatim": "Word for word: the statement occurs in the document exactly as written "
                "(once line breaks, ligatures, hyphens, quote marks and case are folded, when that was needed).",
    "near_verbatim": "Nearly word for word: the closest passage differs by a few words, shown below. "
                     "Check which wording is right before you quote it.",
    "related": "Close in meaning, not confirmed: read the passage. Not in these words, but passages about the "
               "same thing exist; their best sentence is marked. The score says they are about the same thing, "
               "not that they support the statement.",
    "not_found": "Not found: neither these words nor a passage close in meaning is in the collection. "
                 "The closest passages are shown for you to read.",
}
MISATTRIBUTED = "found, but in a different document than the one cited"
# How the Verify page names a check's meaning (its lead, and the kind of note it is shown in).
# A paraphrase with no conflict is not confirmed: it is said as such, never in green.
MEANING_TEXTS = {
    "changed": ("Meaning changed", "error"),
    "same": ("Meaning holds", "info"),
    "unclear": ("Meaning unclear", "info"),
}


def meaning_lead(check: Mapping) -> tuple[str, str]:
    """The lead and the kind of note of a check's meaning on the Verify page."""
    meaning = check.get("meaning") or "unclear"
    if meaning == "same" and check.get("verdict") in ("related", "not_found"):
        return "No conflict found", "info"
    return MEANING_TEXTS.get(meaning, MEANING_TEXTS["unclear"])

_QUOTE_KINDS = ("quote", "claim")

# How the Verify page names a stance (rag_core.citations.stance: supports, contradicts, nei).
STANCE_WORDS = {"supports": "supports", "contradicts": "contradicts", "nei": "does not say"}


def stance_line(check: Mapping) -> tuple[str, str] | None:
    """The stance of a check in words, and where its deciding sentence is: ("Evidence contradicts
    (confidence 0.81, model NAME)", "the deciding sentence — a.pdf, p. 4"), plain text; None when
    the check has no stance to show (no stance, or "does not say" with no sentence read)."""
    stance = check.get("stance")
    sentences = check.get("evidence_sentences") or []
    if stance not in STANCE_WORDS or (stance == "nei" and not sentences):
        return None
    score = check.get("stance_score")
    detail = [] if score is None else [f"confidence {float(score):.2f}"]
    detail.append(f"model {check.get('stance_model') or 'rules'}")
    line = f"Evidence {STANCE_WORDS[stance]} ({', '.join(detail)})"
    first = sentences[0] if sentences else {}
    sentence = " ".join(str(first.get("sentence") or "").split())
    return line, sentence


def stance_where(check: Mapping, titles: Mapping[str, str] | None = None) -> str:
    """Where the deciding sentence is: "Short title, p. 4" ("" when none)."""
    sentences = check.get("evidence_sentences") or []
    if not sentences:
        return ""
    first = sentences[0]
    return where_text({"source": first.get("source"), "page": first.get("page")},
                      (titles or {}).get(first.get("source")))


def stance_cell(row: Mapping) -> str:
    """The report table's stance cell: "contradicts 0.81", "supports", "" when it does not say."""
    stance = row.get("stance")
    if stance not in ("supports", "contradicts"):
        return ""
    score = row.get("stance_score")
    return STANCE_WORDS[stance] + ("" if score is None else f" {float(score):.2f}")


def stance_rows(check: Mapping) -> list[dict]:
    """The check's close passages for the page image, the passage of the deciding sentence
    (``evidence_sentences[0]``) first, with that sentence as its marked one (the way a close
    passage's best sentence is marked); the passages as they are when none matches."""
    rows = [dict(r) for r in check.get("closest") or []]
    sentences = check.get("evidence_sentences") or []
    if not sentences or not rows:
        return rows
    first = sentences[0]
    for n, row in enumerate(rows):
        if row.get("source") != first.get("source") or row.get("chunk_index") != first.get("chunk_index"):
            continue
        start, end, text = first.get("start"), first.get("end"), row.get("text") or ""
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
            return rows
        if (row.get("sentence_start"), row.get("sentence_end")) != (start, end):
            for key in ("sentence_pages", "sentence_page_label", "sentence_doc_start", "sentence_doc_end"):
                row.pop(key, None)
            row.update(sentence_start=start, sentence_end=end, sentence=text[start:end],
                       sentence_page=first.get("page") if first.get("page") is not None else row.get("sentence_page"))
        return [row, *rows[:n], *rows[n + 1:]]
    return rows


# --------------------------------------------------------------------------- verdicts


def verdict_counts(rows: Iterable[Mapping]) -> dict[str, int]:
    """How many rows have each verdict (every verdict present, in :data:`VERDICTS` order)."""
    counts = dict.fromkeys(VERDICTS, 0)
    for row in rows:
        verdict = row.get("verdict")
        if verdict in counts:
            counts[verdict] += 1
    return counts


def outcome_counts(rows: Iterable[Mapping]) -> dict[str, int]:
    """How many rows have each outcome (:data:`rag_core.citations.report.OUTCOMES`: the verdicts, and
    "not_in_collection" for a statement whose every cited work is absent), every outcome present."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for row in rows:
        found = outcome(row)
        if found in counts:
            counts[found] += 1
    return counts


def verdict_summary(rows: Sequence[Mapping]) -> str:
    """ "31 statements: 18 verbatim · 5 near_verbatim · 3 related · 4 not_found · 1 not in collection ·
    2 misattributed · 4 meaning changed" (a statement whose cited work is not in the collection
    counts there, not under the verdict of what was found elsewhere)."""
    counts = outcome_counts(rows)
    misattributed = sum(1 for row in rows if row.get("misattributed"))
    changed = sum(1 for row in rows if row.get("meaning") == "changed")
    parts = [f"{n} {OUTCOME_LABELS.get(kind, kind)}" for kind, n in counts.items()
             if n or kind != "not_checked"] + [  # "not checked" only when some statement is
        f"{misattributed} misattributed", f"{changed} meaning changed"]
    return f"{len(rows)} statement{'s' if len(rows) != 1 else ''}: " + " · ".join(parts)


def folding_text(check: Mapping) -> str:
    """Whether a verbatim quote needed folding to match, and which."""
    if not check.get("folded"):
        return "No folding was needed: the quote is character for character as in the document's text."
    return ("Found after folding " + ", ".join(check.get("folds") or []) +
            ": the document's text differs from the quote only in these.")


def where_text(row: Mapping, title: str | None = None) -> str:
    """ "Devlin et al. 2018 · BERT…, p. 3 (printed 117)": a document (its title when known) and page."""
    name = title or row.get("source") or "?"
    if not (row.get("page") or row.get("page_start")):
        return str(name)
    return f"{name}, {page_label(row)}"


# --------------------------------------------------------------------------- word diff

_WORD = re.compile(r"[^ ]+")
_PUNCTUATION = ".,;:!?'\"()[]{}"


def _words(text: str) -> tuple[list[str], list[str]]:
    """The words of ``text`` as written (each a stretch of the original) and folded for comparison."""
    folded, origin = normalize_for_matching(text)
    originals, tokens = [], []
    for m in _WORD.finditer(folded):
        a, b = m.span()
        originals.append(" ".join(text[origin[a]:origin[b - 1] + 1].split()))
        tokens.append(m.group().strip(_PUNCTUATION) or m.group())
    return originals, tokens


def word_diff(document: str, quote: str) -> list[tuple[str, str]]:
    """The quote against the document's passage, word by word: ``(kind, text)`` pieces where
    kind is "same" (the document's words, the same in the quote once folded), "removed" (the
    document's words the quote changed or left out) or "added" (the quote's words in their
    place). Line breaks, ligatures, hyphens, quote marks and case do not count as changes."""
    doc_words, doc_tokens = _words(document)
    quote_words, quote_tokens = _words(quote)
    pieces: list[tuple[str, str]] = []
    matcher = SequenceMatcher(None, doc_tokens, quote_tokens, autojunk=False)
    for tag, d0, d1, q0, q1 in matcher.get_opcodes():
        if tag == "equal":
            pieces.append(("same", " ".join(doc_words[d0:d1])))
            continue
        if d1 > d0:
            pieces.append(("removed", " ".join(doc_words[d0:d1])))
        if q1 > q0:
            pieces.append(("added", " ".join(quote_words[q0:q1])))
    return pieces


def word_diff_html(document: str, quote: str) -> str:
    """:func:`word_diff` as literal HTML: removed words in ``<del class="rc-del">``, added words
    in ``<ins class="rc-ins">``, every word escaped."""
    tags = {"removed": ('<del class="rc-del">', "</del>"), "added": ('<ins class="rc-ins">', "</ins>")}
    out = []
    for kind, text in word_diff(document, quote):
        opening, closing = tags.get(kind, ("", ""))
        out.append(f"{opening}{literal_html(text)}{closing}")
    return " ".join(out)


# --------------------------------------------------------------------------- the editable list


def _present(value) -> bool:
    if value is None:
        return False
    if isinstance(value, float) and math.isnan(value):
        return False
    return bool(str(value).strip())


def statement_records(statements: Sequence[Statement]) -> list[dict]:
    """The rows of the editable statement list: ``id`` (its position in ``statements``),
    ``statement``, ``kind``, ``cited`` (the markers), ``reference`` (the reference-list entries
    the markers point to) and ``line``."""
    records = []
    for n, statement in enumerate(statements):
        references = [c.reference for c in statement.citations if c.reference]
        records.append({
            "id": n, "statement": statement.text, "kind": statement.kind, "cited": statement.cited,
            "reference": " | ".join(dict.fromkeys(references)), "line": statement.line,
        })
    return records


def statements_from_records(records: Iterable[Mapping], *, originals: Sequence[Statement] = (),
                            references: Sequence[Reference] = ()) -> list[Statement]:
    """The statements of the (edited) list, in its order; rows without a statement are left out.

    A row still as extracted keeps its statement; a changed ``cited`` cell is parsed again
    against the manuscript's ``references`` (a marker like ``[3]`` or ``(Devlin et al., 2019)``);
    a new row is a claim unless its kind says otherwise.
    """
    statements = []
    index = None  # the reference list looked up by key and author, made once, when a marker is edited
    for record in records:
        text = record.get("statement")
        if not _present(text):
            continue
        text = " ".join(str(text).split())
        kind = str(record.get("kind")) if record.get("kind") in _QUOTE_KINDS else "claim"
        cited = " ".join(str(record.get("cited")).split()) if _present(record.get("cited")) else ""
        row_id = record.get("id")
        original = None
        if _present(row_id):
            try:
                position = int(row_id)
            except (TypeError, ValueError):
                position = -1
            if 0 <= position < len(originals):
                original = originals[position]
        if original is not None and original.text == text and original.cited == cited and original.kind == kind:
            statements.append(original)
            continue
        if original is not None and original.cited == cited:
            citations = original.citations
        else:
            if cited and index is None:
                index = ReferenceIndex(references)
            citations = parse_citations(cited, references=index) if cited else []
        statements.append(Statement(text=text, kind=kind, sentence=original.sentence if original else text,
                                    citations=citations, line=original.line if original else None))
    return statements


# --------------------------------------------------------------------------- the report


def report_records(rows: Sequence[Mapping], titles: Mapping[str, str] | None = None) -> list[dict]:
    """The rows of the report table, most severe first (:func:`rag_core.citations.report.by_severity`:
    meaning changed, not found, misattributed, related, near verbatim, verbatim): number (the
    statement's place in the manuscript), statement, verdict, meaning, its cues, document (short
    title, else file name), physical page, printed page label (when the PDF has one), similarity,
    stance ("contradicts 0.81"), changed words, cited, what each citation was matched to and why, misattributed.
    A ``not_found`` row names no document: its closest passage is not evidence."""
    titles = titles or {}
    records = []
    for position in by_severity(rows):
        n, row = position + 1, rows[position]
        # a not_found row's document is only the closest passage's, a not-in-collection row's is not
        # the cited work: left out of the table
        source = row.get("source") if row.get("verdict") != "not_found" and not row.get("not_in_collection") else None
        has_page = bool(source and row.get("page"))
        records.append({
            "#": n,
            "statement": row.get("statement") or "",
            "verdict": outcome(row),
            "meaning": row.get("meaning") or "",
            "meaning cues": cues_text(row.get("meaning_cues")),
            "document": (titles.get(source) or source or "") if source else "",
            "page": row.get("page") if has_page else None,
            "printed page": str(row.get("page_label") or "") if has_page else "",
            "similarity": row.get("similarity") if not row.get("not_in_collection") else None,
            "stance": stance_cell(row) if not row.get("not_in_collection") else "",
            "changed words": row.get("diff") or "",
            "cited": row.get("cited") or "",
            "cited \u2192 matched to": row.get("resolution") or "",
            "misattributed": MISATTRIBUTED if row.get("misattributed") else "",
        })
    return records


def statement_option(n: int, row: Mapping) -> str:
    """ "#3 · near_verbatim · meaning changed · However, building the FAISS index…" (a choice in a select box)."""
    meaning = " · meaning changed" if row.get("meaning") == "changed" else ""
    return f"#{n} · {outcome(row)}{meaning} · {snippet(str(row.get('statement') or ''), chars=70)}"


def cues_html(cues: Sequence[Mapping] | None) -> str:
    """The meaning cues side by side, as literal HTML: one row a cue, its kind, the statement's
    words and the source's words ("claim: *does not improve* · source: *improves … substantially*")."""
    rows = []
    for cue in cues or []:
        claim = literal_html(cue.get("claim") or "") or '<span class="rc-cue-none">(left out)</span>'
        source = literal_html(cue.get("source") or "") or '<span class="rc-cue-none">(nothing)</span>'
        low = " rc-cue-low" if cue.get("severity") == "low" else ""
        rows.append(f'<tr class="rc-cue{low}"><th>{literal_html(cue.get("kind") or "")}</th>'
                    f"<td>claim: <em>{claim}</em></td><td>source: <em>{source}</em></td></tr>")
    if not rows:
        return ""
    return '<table class="rc-cues" data-testid="rc-meaning-cues"><tbody>' + "".join(rows) + "</tbody></table>"


def report_file_stem(name: str | None) -> str:
    """A file name for the report from the manuscript's name: letters, digits, ``.-_`` only."""
    stem = re.sub(r"\.[A-Za-z0-9]{1,8}$", "", str(name or ""))
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-.")[:60]
    return f"citation-check-{stem}" if stem else "citation-check"


# --------------------------------------------------------------------------- places


def match_spans(hit: Mapping, *, context: int = 300) -> list[tuple[int, int]]:
    """Where a place's ``match`` sits in its ``snippet`` (the match with ``context`` characters
    of the document around it, "..." where cut), for marking it."""
    text, match = hit.get("snippet") or "", hit.get("match") or ""
    if not match:
        return []
    start = hit.get("doc_start")
    if isinstance(start, int) and not isinstance(start, bool):
        offset = (3 if start > context else 0) + min(start, context)
        if text[offset:offset + len(match)] == match:
            return [(offset, offset + len(match))]
    found = text.find(match)
    return [(found, found + len(match))] if found >= 0 else []


def place_page(row: Mapping) -> str:
    """The page of a place: "p. 3", "pp. 3–4", "p. 3 (printed 117)"; for a close passage, the
    page of its best sentence."""
    if row.get("sentence_page"):
        return page_label({"page": row["sentence_page"], "page_label": row.get("sentence_page_label")})
    return page_label(row)


def sentence_window(row: Mapping, *, context: int = 400) -> tuple[str, list[tuple[int, int]]]:
    """A close passage cut to ``context`` characters around its best sentence ("…" where cut),
    and where that sentence is in the cut text; the whole passage when it has no best sentence."""
    text = row.get("text") or ""
    start, end = row.get("sentence_start"), row.get("sentence_end")
    if not isinstance(start, int) or not isinstance(end, int) or not 0 <= start < end <= len(text):
        return text, []
    lo, hi = max(0, start - context), min(len(text), end + context)
    if lo > 0:  # whole words at the cuts
        space = text.find(" ", lo, start)
        lo = space + 1 if space >= 0 else lo
    if hi < len(text):
        space = text.rfind(" ", end, hi)
        hi = space if space > 0 else hi
    head = "…" if lo > 0 else ""
    cut = head + text[lo:hi] + ("…" if hi < len(text) else "")
    return cut, [(start - lo + len(head), end - lo + len(head))]


_LATEX = re.compile(r"\\(?:cite[a-z]*\*?\{|begin\{document\}|bibitem\b|section\*?\{)")


def pasted_kind(text: str) -> str:
    """How to read pasted manuscript text: "latex" when it has LaTeX commands (``\\cite{...}``,
    ``\\begin{document}``, ``\\bibitem``), else "text"."""
    return "latex" if _LATEX.search(text or "") else "text"


# --------------------------------------------------------------------------- evidence

_TARGET_KEYS = ("pages", "sentence_pages", "sentence", "sentence_page", "page", "page_start", "page_label",
                "match", "text")


def evidence_target(row: Mapping) -> dict:
    """The part of a place (a verbatim hit, a near-verbatim alignment, a close passage) that
    :func:`rag_core.pdf.marks.mark_hit` reads to mark it: small, and the same for the same place."""
    target = {key: row[key] for key in _TARGET_KEYS if row.get(key) not in (None, "", [])}
    if target.get("pages") or target.get("sentence_pages"):  # the segments are enough
        target.pop("text", None)
        target.pop("match", None)
    for key in ("pages", "sentence_pages"):
        if key in target:
            target[key] = [{"page": s.get("page"), "page_label": s.get("page_label"), "text": s.get("text")}
                           for s in target[key]]
    return target


# --------------------------------------------------------------------------- the manuscript's works


def references_summary(references: Sequence[Reference], statements: Sequence[Statement]) -> str:
    """What a manuscript cites and where its works are listed, each counted once: "6 works cited;
    6 entries in its reference list; refs.bib: 7 records, 6 of them cited" (a .bib's records are
    not more entries of the draft's own list)."""
    cited = {(c.via or c.key or c.marker) for s in statements for c in s.citations}
    typed = sum(1 for r in references if not r.via)
    files: dict[str, list[str]] = {}
    for reference in references:
        if reference.via:
            where, _, _ = str(reference.via).partition(" entry ")
            files.setdefault(where, []).append(str(reference.via))
    used = {c.via for s in statements for c in s.citations if c.via}
    parts = [f"{len(cited)} work{'s' if len(cited) != 1 else ''} cited"]
    if typed or not files:
        parts.append(f"{typed} entr{'ies' if typed != 1 else 'y'} in its reference list")
    for where, vias in files.items():
        n = len(set(vias))
        if "field code" in where:
            parts.append(f"{n} work{'s' if n != 1 else ''} named by its {where}s")
        else:
            in_use = len(set(vias) & used)
            parts.append(f"{where}: {n} record{'s' if n != 1 else ''}, {in_use} of them cited")
    return "; ".join(parts)


# Columns of the report grid that wrap, with their widths in pixels (pages/verify.py REPORT_COLUMNS).
_WRAPPED_COLUMNS = {"statement": 210, "verdict": 124, "meaning cues": 130, "document": 140, "changed words": 100,
                    "stance": 90, "cited": 90, "cited \u2192 matched to": 200, "misattributed": 100}
_CHAR_PX, _LINE_PX, _PADDING_PX = 7.4, 21, 14


def report_row_height(records: Sequence[Mapping], *, widths: Mapping[str, int] | None = None,
                      max_lines: int = 12) -> int:
    """A row height (pixels) for the report grid at which its longest wrapped cell is read whole
    (the grid gives every row one height): the lines the longest cell needs at its column's width,
    at least three, at most ``max_lines``."""
    widths = widths or _WRAPPED_COLUMNS
    lines = 3
    for record in records:
        for column, width in widths.items():
            text = str(record.get(column) or "")
            if not text:
                continue
            per_line = max(8, int((width - 16) / _CHAR_PX))
            lines = max(lines, _wrapped_lines(text, per_line))
    return _PADDING_PX + _LINE_PX * min(lines, max_lines)


def _wrapped_lines(text: str, per_line: int) -> int:
    """How many lines ``text`` takes wrapped at word boundaries, ``per_line`` characters a line."""
    count, used = 1, 0
    for word in text.split():
        need = len(word) + (1 if used else 0)
        if used and used + need > per_line:
            count, used = count + 1 + (len(word) - 1) // per_line, len(word) % per_line or per_line
        else:
            used += need
            if used > per_line:
                count += (used - 1) // per_line
                used = used % per_line or per_line
    return count
