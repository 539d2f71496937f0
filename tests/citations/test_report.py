"""Tests of rag_core.citations.report: the order by severity and the meaning in the CSV, JSON and HTML."""

from __future__ import annotations

import csv
import io
import json

from rag_core.citations.manuscript import CheckRow
from rag_core.citations.report import (
    EXPORT_COLUMNS,
    SEVERITY_LEVELS,
    by_severity,
    cues_text,
    rows_to_csv,
    rows_to_html,
    rows_to_json,
    severity,
)

NEGATION = {"kind": "negation", "claim": "does not improve", "source": "improves \u2026 substantially",
            "severity": "high"}


def row(**overrides) -> dict:
    base = {"statement": "s", "kind": "quote", "verdict": "verbatim", "source": "a.pdf", "page": 1, "page_label": None,
            "similarity": 1.0, "diff": "", "cited": "", "cited_sources": [], "misattributed": False, "message": "",
            "line": 1, "meaning": "same", "meaning_cues": []}
    return {**base, **overrides}


ROWS = [
    row(statement="verbatim"),
    row(statement="near, holds", verdict="near_verbatim", meaning="same"),
    row(statement="related", verdict="related", meaning="same"),
    row(statement="misattributed", misattributed=True),
    row(statement="not found", verdict="not_found", meaning="unclear"),
    row(statement="changed", verdict="near_verbatim", meaning="changed", meaning_cues=[NEGATION]),
    row(statement="related, changed", verdict="related", meaning="changed", meaning_cues=[NEGATION]),
]


def test_severity_order():
    assert [severity(r) for r in ROWS] == [5, 4, 3, 2, 1, 0, 0]
    assert len(SEVERITY_LEVELS) == 6
    assert [ROWS[n]["statement"] for n in by_severity(ROWS)] == [
        "changed", "related, changed", "not found", "misattributed", "related", "near, holds", "verbatim"]
    checked = CheckRow("x", "claim", "related", None, None, None, 0.6, None, "", "", [], False, "", 1,
                       meaning="changed")
    assert severity(checked) == 0


def test_cues_in_one_line():
    assert cues_text([NEGATION, {"kind": "number", "claim": "", "source": "15%"}]) == (
        "negation: claim \u201cdoes not improve\u201d \u00b7 source \u201cimproves \u2026 substantially\u201d; "
        "number: claim \u201c(left out)\u201d \u00b7 source \u201c15%\u201d")
    assert cues_text([]) == cues_text(None) == ""


def test_csv_and_json_carry_the_meaning():
    evil = {"kind": "number", "claim": "=1+1", "source": "@SUM(A1)", "severity": "high"}
    rows = [row(meaning="changed", meaning_cues=[evil]), row()]
    table = list(csv.reader(io.StringIO(rows_to_csv(rows).decode("utf-8-sig"))))
    assert table[0] == list(EXPORT_COLUMNS)
    assert table[0][-5:] == ["meaning", "meaning_cues", "stance", "stance_score", "evidence_sentences"]
    assert table[1][-5] == "changed" and table[1][-4].startswith("number: claim \u201c=1+1\u201d")
    data = json.loads(rows_to_json(rows))
    assert data[0]["meaning"] == "changed" and data[0]["meaning_cues"] == [evil]


def test_csv_json_and_html_carry_the_stance_and_its_sentence():
    sentence = {"source": "a.pdf", "page": 4, "start": 0, "end": 9, "sentence": "=<b>poorer</b> outcomes",
                "score": 0.7, "stance": "contradicts"}
    rows = [row(verdict="related", meaning="changed", stance="contradicts", stance_score=0.81,
                stance_model="stance-lr", evidence_sentences=[sentence])]
    table = list(csv.reader(io.StringIO(rows_to_csv(rows).decode("utf-8-sig"))))
    cells = dict(zip(table[0], table[1], strict=True))
    assert cells["stance"] == "contradicts" and cells["stance_score"] == "0.81"
    assert cells["evidence_sentences"].startswith("contradicts 0.70: a.pdf, p. 4: =<b>poorer</b>")
    data = json.loads(rows_to_json(rows))
    assert data[0]["stance"] == "contradicts" and data[0]["evidence_sentences"] == [sentence]
    page = rows_to_html(rows)
    assert "Evidence contradicts (0.81, stance-lr)" in page and "a.pdf, p. 4" in page
    assert "<b>poorer" not in page and "&lt;b&gt;poorer&lt;/b&gt;" in page


def test_html_is_ordered_by_severity_and_escapes_the_cues():
    evil = {"kind": "negation", "claim": "<script>x</script>", "source": "<img src=http://x/y>", "severity": "high"}
    page = rows_to_html([row(statement="first, verbatim"), row(statement="second, changed", verdict="related",
                                                               meaning="changed", meaning_cues=[evil])])
    assert "<script>x" not in page and "<img src" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert page.index("second, changed") < page.index("first, verbatim")
    assert '<td class="n">2</td>' in page  # the statement keeps its place in the manuscript
    assert "meaning changed: 1" in page and "Related: close in meaning, not confirmed" in page
    related = rows_to_html([row(verdict="related", meaning="same"), row(verdict="not_found", meaning="unclear",
                                                                       source="closest.pdf", page=9)])
    assert "No conflict found (not confirmed)" in related and "Meaning holds" not in related
    assert "closest.pdf" not in related  # a not_found row names no document
