"""The report of a manuscript's check: its order by severity, and its CSV, JSON and HTML files.

A row is a :class:`rag_core.citations.manuscript.CheckRow` or its ``to_dict()``. :func:`severity`
ranks what a person must look at first (:data:`SEVERITY_LEVELS`): a statement whose source
says otherwise (meaning ``changed``), then one not found, a misattributed one, one only
close in meaning (``related``), a near-verbatim one whose meaning holds, a verbatim one;
:func:`by_severity` orders rows so, the manuscript's order within a level.

:func:`rows_to_csv` (UTF-8 with a BOM; no cell a spreadsheet would run as a formula),
:func:`rows_to_json` and :func:`rows_to_html` (one self-contained file: inline style, no
script, no external resource, every text escaped) carry ``meaning`` and ``meaning_cues``;
:func:`cues_text` writes the cues in one line.
"""

from __future__ import annotations

import csv
import html
import io
import json
import time
from collections.abc import Mapping, Sequence

__all__ = [
    "EXPORT_COLUMNS",
    "OUTCOMES",
    "OUTCOME_LABELS",
    "SEVERITY_LEVELS",
    "by_severity",
    "cues_text",
    "evidence_passages",
    "outcome",
    "rows_to_csv",
    "rows_to_html",
    "rows_to_json",
    "severity",
]

EXPORT_COLUMNS = ("statement", "kind", "verdict", "source", "page", "page_label", "similarity", "diff", "cited",
                  "cited_sources", "resolution", "misattributed", "message", "line", "outcome", "evidence",
                  "meaning", "meaning_cues", "stance", "stance_score", "evidence_sentences")
SEVERITY_LEVELS = (
    "meaning changed", "not found, or the cited work not in the collection", "misattributed",
    "related (close in meaning, not confirmed)", "near verbatim, meaning holds", "verbatim",
)
# A statement's outcome: its verdict, unless every work it cites is absent from the collection.
OUTCOMES = ("verbatim", "near_verbatim", "related", "not_found", "not_in_collection", "not_checked")
OUTCOME_LABELS = {"not_in_collection": "not in collection", "not_checked": "not checked"}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _as_dict(row) -> dict:
    return row.to_dict() if hasattr(row, "to_dict") else dict(row)


def _as_dicts(rows: Sequence) -> list[dict]:
    return [_as_dict(row) for row in rows]


def outcome(row) -> str:
    """A row's outcome (:data:`OUTCOMES`): "not_checked" when it was not checked (its message says why),
    "not_in_collection" when every work it cites is absent from the collection (what was found
    elsewhere is for reference only), else its verdict."""
    get = row.get if isinstance(row, Mapping) else (lambda key: getattr(row, key, None))
    if get("not_checked"):
        return "not_checked"
    return "not_in_collection" if get("not_in_collection") else str(get("verdict") or "")


def severity(row) -> int:
    """The rank of a row in :data:`SEVERITY_LEVELS` (0: look at it first)."""
    row = row if isinstance(row, Mapping) else _as_dict(row)
    if row.get("meaning") == "changed":
        return 0
    if row.get("verdict") == "not_found" or row.get("not_in_collection"):
        return 1
    if row.get("misattributed"):
        return 2
    return {"related": 3, "near_verbatim": 4, "verbatim": 5}.get(row.get("verdict"), 1)


def by_severity(rows: Sequence) -> list[int]:
    """The positions of ``rows`` ordered by :func:`severity`, the manuscript's order within a level."""
    return sorted(range(len(rows)), key=lambda n: (severity(rows[n]), n))


def cues_text(cues: Sequence[Mapping] | None) -> str:
    """ "negation: claim “does not improve” · source “improves”; number: claim “25%” · source “15%”"."""
    parts = []
    for cue in cues or []:
        claim = cue.get("claim") or "(left out)"
        source = cue.get("source") or "(nothing)"
        parts.append(f"{cue.get('kind')}: claim \u201c{claim}\u201d \u00b7 source \u201c{source}\u201d")
    return "; ".join(parts)


def _cell(value) -> object:
    """A CSV cell: lists joined, text neutralised so no spreadsheet runs it as a formula."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        value = "; ".join(_evidence_text(v) if isinstance(v, Mapping) else str(v) for v in value)
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    if text.startswith(_FORMULA_START):
        text = "'" + text
    return text


def rows_to_csv(rows: Sequence) -> bytes:
    """The report as CSV bytes: UTF-8 with a BOM (so spreadsheets keep ligatures and accents),
    every text cell neutralised against formula injection (a leading = + - @ tab or CR gets a ');
    the meaning cues in one cell (:func:`cues_text`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(EXPORT_COLUMNS)
    for row in _as_dicts(rows):
        row = {**row, "meaning_cues": cues_text(row.get("meaning_cues"))}
        writer.writerow([_cell(row.get(column)) for column in EXPORT_COLUMNS])
    return ("\ufeff" + buffer.getvalue()).encode("utf-8")


def rows_to_json(rows: Sequence) -> str:
    """The report as a JSON list of objects (the keys of ``CheckRow.to_dict``), in the manuscript's order."""
    return json.dumps(_as_dicts(rows), ensure_ascii=False, indent=1)


_VERDICT_STYLE = {
    "verbatim": ("#e6f4ea", "#1e7b34", "Verbatim"),
    "near_verbatim": ("#fff4e0", "#9a5b00", "Near verbatim"),
    "related": ("#e8f0fe", "#1a4fa0", "Related: close in meaning, not confirmed"),
    "not_found": ("#fde8e8", "#a12626", "Not found"),
    "not_in_collection": ("#f3e8fd", "#6a1b9a", "Cited work not in collection"),
    "not_checked": ("#f1f3f4", "#444", "Not checked"),
}
_MEANING_STYLE = {
    "changed": ("#fde8e8", "#a12626", "Meaning changed"),
    "unclear": ("#f1f3f4", "#444", "Meaning unclear"),
    "same": ("#e6f4ea", "#1e7b34", "Meaning holds"),
}


def _cues_html(cues: Sequence[Mapping] | None) -> str:
    esc = html.escape
    items = []
    for cue in cues or []:
        items.append(
            f'<div class="cue"><b>{esc(str(cue.get("kind")))}</b>: claim '
            f'<i>{esc(str(cue.get("claim") or "(left out)"))}</i> \u00b7 source '
            f'<i>{esc(str(cue.get("source") or "(nothing)"))}</i></div>')
    return "".join(items)


def rows_to_html(rows: Sequence, *, title: str = "Citation check") -> str:
    """A self-contained HTML report (inline style, no script, no external resource), its rows
    ordered by severity (the number is the statement's place in the manuscript); every piece of
    text from the manuscript or the documents is HTML-escaped."""
    esc = html.escape
    data = _as_dicts(rows)
    counts = {v: sum(1 for r in data if outcome(r) == v) for v in _VERDICT_STYLE}
    summary = " · ".join(f"{_VERDICT_STYLE[v][2].split(':')[0]}: {n}" for v, n in counts.items())
    misattributed = sum(1 for r in data if r.get("misattributed"))
    changed = sum(1 for r in data if r.get("meaning") == "changed")
    body = []
    for position in by_severity(data):
        row, n = data[position], position + 1
        background, colour, label = _VERDICT_STYLE.get(outcome(row), ("#eee", "#333", str(row.get("verdict"))))
        m_background, m_colour, m_label = _MEANING_STYLE.get(row.get("meaning"), ("#eee", "#333", "Meaning: ?"))
        if row.get("meaning") == "same" and row.get("verdict") in ("related", "not_found"):
            m_background, m_colour, m_label = (*_MEANING_STYLE["unclear"][:2], "No conflict found (not confirmed)")
        # a closest passage is not evidence, nor a passage of a work the statement does not cite
        found = row.get("verdict") != "not_found" and not row.get("not_in_collection")
        page = row.get("page") if found else None
        where = esc(str(row.get("source") or "")) if found else ""
        if page is not None:
            where += f", p.&nbsp;{esc(str(page))}"
            if row.get("page_label") and str(row.get("page_label")) != str(page):
                where += f" (printed {esc(str(row['page_label']))})"
        similarity = row.get("similarity") if not row.get("not_in_collection") else None  # another work's score
        flag = ' <span class="mis">found in a different document than the one cited</span>' \
            if row.get("misattributed") else ""
        body.append(
            f'<tr><td class="n">{n}</td><td>{esc(str(row.get("statement") or ""))}'
            f'<div class="msg">{esc(str(row.get("message") or ""))}</div></td>'
            f'<td><span class="verdict" style="background:{background};color:{colour}">{esc(label)}</span>{flag}</td>'
            f'<td><span class="verdict" style="background:{m_background};color:{m_colour}">{esc(m_label)}</span>'
            f'{_cues_html(row.get("meaning_cues"))}{_stance_html(row)}</td>'
            f'<td>{where}</td><td class="n">{"" if similarity is None else f"{similarity:.2f}"}</td>'
            f'<td>{esc(str(row.get("diff") or ""))}</td>'
            f'<td>{esc(str(row.get("resolution") or row.get("cited") or ""))}</td></tr>'
        )
        passages = row.get("evidence") or []
        if passages:
            body.append(f'<tr class="evidence"><td></td><td colspan="7">{_evidence_html(passages)}</td></tr>')
    style = (
        "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em;color:#222}"
        "table{border-collapse:collapse;width:100%}th,td{border:1px solid #ccc;padding:6px 8px;vertical-align:top;"
        "text-align:left;font-size:14px}th{background:#f4f4f4}td.n{text-align:right;white-space:nowrap}"
        ".verdict{display:inline-block;padding:2px 8px;border-radius:10px;font-weight:600}"
        ".msg{color:#555;font-size:12px;margin-top:4px}.mis{display:block;color:#a12626;font-size:12px;"
        "font-weight:600;margin-top:4px}.cue{font-size:12px;margin-top:4px}"
        "td{overflow-wrap:anywhere;word-break:break-word}tr.evidence td{border-top:none;background:#fafafa}"
        ".passage{font-size:13px;margin:4px 0 8px;line-height:1.45}.passage .where{font-weight:600;color:#333}"
        ".passage.ref .where{color:#6a1b9a}mark{background:#fff3a3;padding:0 1px}"
    )
    generated = time.strftime("%Y-%m-%d %H:%M")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(title)}</title><style>{style}</style></head><body>"
        f"<h1>{esc(title)}</h1><p>{len(data)} statements · meaning changed: {changed} · {esc(summary)} · "
        f"misattributed: {misattributed} · generated {esc(generated)} by rag_core</p>"
        "<p>Ordered by severity: meaning changed, not found, misattributed, related (close in meaning, not "
        "confirmed: read the passage), near verbatim, verbatim. # is the statement's place in the manuscript.</p>"
        "<table><thead><tr><th>#</th><th>Statement</th><th>Verdict</th><th>Meaning</th><th>Where</th>"
        "<th>Similarity</th><th>Changed words</th><th>Cited \u2192 matched to</th></tr></thead><tbody>"
        + "".join(body) +
        "</tbody></table></body></html>\n"
    )


# --------------------------------------------------------------------------- evidence

_EVIDENCE_CONTEXT = 300  # characters of the passage kept on each side of its marked part
_EVIDENCE_PASSAGES = 3  # close passages carried for a related or not-found statement


def evidence_passages(check: Mapping | None, *, for_reference: bool = False) -> list[dict]:
    """The passages behind a check's verdict, each ``{"role", "source", "page", "page_label",
    "text", "mark"}``: a verbatim quote's first place, a near-verbatim one's aligned passage, a
    related one's close passages (their best sentence marked). ``role`` is "evidence" (verbatim,
    near verbatim), "close in meaning" (related: read it to judge), or "for reference" when nothing
    backs the verdict (not found) or the statement's cited work is not in the collection
    (``for_reference``). ``mark`` is ``[start, end]`` in ``text``, or None."""
    if not check:
        return []
    verdict = check.get("verdict")
    role = ("for reference" if for_reference or verdict == "not_found"
            else "close in meaning" if verdict == "related" else "evidence")
    if verdict == "verbatim" and check.get("hits"):
        places = [check["hits"][0]]
    elif verdict == "near_verbatim" and check.get("best"):
        places = [check["best"]]
    else:
        places = list(check.get("closest") or [])[:_EVIDENCE_PASSAGES]
    out = []
    for place in places:
        text, mark = _marked_window(place)
        if not text:
            continue
        out.append({"role": role, "source": place.get("source"),
                    "page": place.get("sentence_page") or place.get("page") or place.get("page_start"),
                    "page_label": place.get("sentence_page_label") or place.get("page_label"),
                    "text": text, "mark": mark})
    return out


def _marked_window(place: Mapping) -> tuple[str, list[int] | None]:
    """A place's text around its marked part (a close passage's best sentence, a hit's match)."""
    text = str(place.get("text") or "")
    start, end = place.get("sentence_start"), place.get("sentence_end")
    if not (text and isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
        text = str(place.get("snippet") or place.get("text") or "")
        match = str(place.get("match") or "")
        found = text.find(match) if match else -1
        if found < 0:
            return " ".join(text.split())[:2 * _EVIDENCE_CONTEXT], None
        start, end = found, found + len(match)
    lo, hi = max(0, start - _EVIDENCE_CONTEXT), min(len(text), end + _EVIDENCE_CONTEXT)
    head, tail = ("\u2026" if lo > 0 else ""), ("\u2026" if hi < len(text) else "")
    return head + text[lo:hi] + tail, [start - lo + len(head), end - lo + len(head)]


def _where(passage: Mapping) -> str:
    where = str(passage.get("source") or "?")
    if passage.get("page") is not None:
        where += f", p. {passage['page']}"
        if passage.get("page_label") and str(passage["page_label"]) != str(passage["page"]):
            where += f" (printed {passage['page_label']})"
    return where


def _evidence_text(passage: Mapping) -> str:
    """A passage in one line for a CSV cell: "for reference: a.pdf, p. 3: ...text..."; an evidence
    sentence: "contradicts 0.81: a.pdf, p. 3: ...sentence..."."""
    if "sentence" in passage and "text" not in passage:
        score = passage.get("score")
        lead = f"{passage.get('stance') or 'evidence'}" + ("" if score is None else f" {float(score):.2f}")
        return f"{lead}: {_where(passage)}: {' '.join(str(passage.get('sentence') or '').split())}"
    return f"{passage.get('role') or 'evidence'}: {_where(passage)}: {' '.join(str(passage.get('text') or '').split())}"


_STANCE_WORDS = {"supports": "supports", "contradicts": "contradicts", "nei": "does not say"}


def _stance_html(row: Mapping) -> str:
    """The stance and the sentence that decides it, with its document and page (escaped)."""
    esc = html.escape
    stance = row.get("stance")
    if stance not in _STANCE_WORDS or (stance == "nei" and not row.get("evidence_sentences")):
        return ""
    score = row.get("stance_score")
    text = f"Evidence {_STANCE_WORDS[stance]}" + ("" if score is None else f" ({float(score):.2f}")
    text += ("" if score is None else f", {row.get('stance_model') or 'rules'})")
    out = f'<div class="cue"><b>{esc(text)}</b>'
    sentences = row.get("evidence_sentences") or []
    if sentences and row.get("verdict") in ("related", "not_found"):
        first = sentences[0]
        out += f'<br><span class="where">{esc(_where(first))}</span>: {esc(str(first.get("sentence") or ""))}'
    return out + "</div>"


def _evidence_html(passages: Sequence[Mapping]) -> str:
    esc = html.escape
    out = []
    for passage in passages:
        text, mark = str(passage.get("text") or ""), passage.get("mark")
        if isinstance(mark, (list, tuple)) and len(mark) == 2 and 0 <= mark[0] < mark[1] <= len(text):
            shown = f"{esc(text[:mark[0]])}<mark>{esc(text[mark[0]:mark[1]])}</mark>{esc(text[mark[1]:])}"
        else:
            shown = esc(text)
        reference = passage.get("role") == "for reference"
        lead = {"for reference": "For reference (not evidence): ",
                "close in meaning": "Close in meaning (read it to judge): "}.get(str(passage.get("role")), "Evidence: ")
        out.append(f'<div class="passage{" ref" if reference else ""}"><span class="where">{esc(lead)}'
                   f'{esc(_where(passage))}</span><br>{shown}</div>')
    return "".join(out)
