"""Tests of rag_core.citations.view: what the Verify page shows of a citation check."""

from __future__ import annotations

import re

from rag_core.citations.manuscript import manuscript_from_text
from rag_core.citations.view import (
    MISATTRIBUTED,
    VERDICT_MEANINGS,
    VERDICTS,
    cues_html,
    evidence_target,
    folding_text,
    match_spans,
    meaning_lead,
    pasted_kind,
    place_page,
    report_file_stem,
    report_records,
    sentence_window,
    statement_option,
    statement_records,
    statements_from_records,
    verdict_counts,
    verdict_summary,
    where_text,
    word_diff,
    word_diff_html,
)

DRAFT = """Karpukhin et al. (2020) write that "our dense retriever outperforms a strong Lucene-BM25 system" [1].
BERT "can be fine-tuned with just one additional output layer" (Devlin et al., 2019).
Dense retrieval beats BM25 on open-domain questions [1].

References

[1] V. Karpukhin, B. Oguz, S. Min. 2020. Dense passage retrieval for open-domain question answering.
[2] J. Devlin, M.-W. Chang, K. Lee, K. Toutanova. 2019. BERT: Pre-training of deep bidirectional transformers.
"""


def test_every_verdict_has_a_meaning():
    assert VERDICTS == ("verbatim", "near_verbatim", "related", "not_found")
    assert set(VERDICT_MEANINGS) == set(VERDICTS)
    assert VERDICT_MEANINGS["related"].startswith("Close in meaning, not confirmed: read the passage.")
    assert "support" not in VERDICT_MEANINGS["related"].replace("not that they support", "")


# ------------------------------------------------------------------ word diff


def test_word_diff_shows_the_changed_word():
    pieces = word_diff("the results improve on homogeneous data sets", "the results improve on heterogeneous data sets")
    assert pieces == [("same", "the results improve on"), ("removed", "homogeneous"), ("added", "heterogeneous"),
                      ("same", "data sets")]


def test_word_diff_left_out_and_added_words():
    pieces = word_diff("it is not trained on the downstream tasks", "it is trained on all the downstream tasks")
    assert ("removed", "not") in pieces and ("added", "all") in pieces
    assert [kind for kind, _ in pieces].count("same") == 3


def test_word_diff_does_not_count_folding_as_a_change():
    document = "the pre-\ntrained \ufb01ne-tuned model, \u201cbad guy\u201d \u2014 BM25"
    quote = 'The pretrained fine-tuned model, "bad guy" - BM25'
    assert [kind for kind, _ in word_diff(document, quote)] == ["same"]
    assert word_diff(document, quote)[0][1].startswith("the pre-")  # the document's own words are shown


def test_word_diff_html_is_escaped():
    out = word_diff_html("<b>bold</b> text stays here", "<img src=x> text stays here")
    assert '<del class="rc-del">&lt;b&gt;bold&lt;/b&gt;</del>' in out
    assert '<ins class="rc-ins">&lt;img src=x&gt;</ins>' in out
    assert re.sub(r"</?(del|ins)[^>]*>", "", out).count("<") == 0


# ------------------------------------------------------------------ the editable list


def test_records_round_trip_keeps_the_statements():
    manuscript = manuscript_from_text(DRAFT)
    statements = manuscript.statements()
    records = statement_records(statements)
    assert [r["cited"] for r in records] == ["[1]; Karpukhin et al. (2020)", "(Devlin et al., 2019)", "[1]"]
    assert records[0]["reference"].startswith("V. Karpukhin") and records[0]["line"] == 1
    again = statements_from_records(records, originals=statements, references=manuscript.references)
    assert again == statements and all(a is b for a, b in zip(again, statements, strict=True))


def test_edited_added_and_deleted_rows():
    manuscript = manuscript_from_text(DRAFT)
    statements = manuscript.statements()
    records = statement_records(statements)
    records[0]["statement"] = "our dense retriever outperforms a strong Lucene-BM25 system greatly"
    records[1]["cited"] = "[2]"
    del records[2]
    records.append({"id": None, "statement": "  BERT is conceptually simple  ", "kind": None, "cited": "[2]",
                    "reference": None, "line": None})
    records.append({"id": float("nan"), "statement": float("nan"), "kind": "claim", "cited": None})  # an empty row
    edited = statements_from_records(records, originals=statements, references=manuscript.references)
    assert [s.text for s in edited] == ["our dense retriever outperforms a strong Lucene-BM25 system greatly",
                                        statements[1].text, "BERT is conceptually simple"]
    assert edited[0].citations == statements[0].citations and edited[0].line == 1  # markers unchanged
    assert [c.marker for c in edited[1].citations] == ["[2]"]
    assert edited[1].citations[0].surnames[0] == "Devlin"  # the new marker resolved in the reference list
    assert edited[2].kind == "claim" and edited[2].cited == "[2]" and edited[2].line is None


# ------------------------------------------------------------------ the report


ROWS = [
    {"statement": "=SUM(A1)", "verdict": "verbatim", "source": "a.pdf", "page": 3, "page_label": "117",
     "similarity": 1.0, "diff": "", "cited": "[1]", "misattributed": True},
    {"statement": "close", "verdict": "near_verbatim", "source": "b.pdf", "page": 2, "page_label": None,
     "similarity": 0.9, "diff": "8.5 \u2192 2.5", "cited": "", "misattributed": False},
    {"statement": "made up", "verdict": "not_found", "source": "b.pdf", "page": 5, "page_label": None,
     "similarity": 0.1, "diff": "", "cited": "", "misattributed": False},
]


def test_report_records():
    records = report_records(ROWS, {"a.pdf": "Gao et al. 2017 \u00b7 Wormholes"})
    assert [r["#"] for r in records] == [3, 1, 2]  # not found, misattributed, near verbatim
    assert records[1] == {"#": 1, "statement": "=SUM(A1)", "verdict": "verbatim", "meaning": "",
                          "meaning cues": "", "document": "Gao et al. 2017 \u00b7 Wormholes", "page": 3,
                          "printed page": "117", "similarity": 1.0, "stance": "", "changed words": "",
                          "cited": "[1]", "cited \u2192 matched to": "", "misattributed": MISATTRIBUTED}
    stanced = report_records([{**ROWS[1], "stance": "contradicts", "stance_score": 0.812}])
    assert stanced[0]["stance"] == "contradicts 0.81"
    assert list(stanced[0]).index("stance") == list(stanced[0]).index("similarity") + 1
    assert records[2]["document"] == "b.pdf" and records[2]["changed words"] == "8.5 \u2192 2.5"
    assert records[2]["printed page"] == "" and records[2]["misattributed"] == ""
    assert records[0]["document"] == "" and records[0]["page"] is None  # a closest passage is not evidence
    changed = [dict(ROWS[0]), {**ROWS[1], "meaning": "changed", "meaning_cues": [
        {"kind": "number", "claim": "2.5", "source": "8.5", "severity": "high"}]}, dict(ROWS[2])]
    records = report_records(changed)
    assert [r["#"] for r in records] == [2, 3, 1]  # the changed meaning comes first
    assert records[0]["meaning"] == "changed" and records[0]["meaning cues"] == \
        "number: claim \u201c2.5\u201d \u00b7 source \u201c8.5\u201d"


def test_meaning_lead_and_cues_side_by_side():
    assert meaning_lead({"verdict": "near_verbatim", "meaning": "changed"}) == ("Meaning changed", "error")
    assert meaning_lead({"verdict": "near_verbatim", "meaning": "same"}) == ("Meaning holds", "info")
    assert meaning_lead({"verdict": "related", "meaning": "same"}) == ("No conflict found", "info")  # never green
    assert meaning_lead({"verdict": "related", "meaning": "unclear"}) == ("Meaning unclear", "info")
    html = cues_html([{"kind": "negation", "claim": "does <b>not</b> improve", "source": "improves \u2026 "
                       "substantially", "severity": "high"},
                      {"kind": "hedge", "claim": "shows", "source": "", "severity": "low"}])
    assert "<b>not" not in html and "does &lt;b&gt;not&lt;/b&gt; improve" in html
    assert "<th>negation</th><td>claim: <em>does" in html and "source: <em>improves \u2026 substantially</em>" in html
    assert 'class="rc-cue rc-cue-low"' in html and "(nothing)" in html
    assert cues_html([]) == ""


def test_counts_summary_and_options():
    assert verdict_counts(ROWS) == {"verbatim": 1, "near_verbatim": 1, "related": 0, "not_found": 1}
    assert verdict_summary(ROWS) == "3 statements: 1 verbatim \u00b7 1 near_verbatim \u00b7 0 related \u00b7 " \
                                    "1 not_found \u00b7 0 not in collection \u00b7 1 misattributed \u00b7 " \
                                    "0 meaning changed"
    assert statement_option(2, {**ROWS[1], "meaning": "changed"}) == "#2 \u00b7 near_verbatim \u00b7 meaning " \
                                                                     "changed \u00b7 close"
    assert statement_option(2, ROWS[1]) == "#2 \u00b7 near_verbatim \u00b7 close"


def test_report_file_stem():
    assert report_file_stem("draft v2.docx") == "citation-check-draft-v2"
    assert report_file_stem("![x](http:evil) ../../etc.md") == "citation-check-x-http-evil-..-..-etc"
    assert report_file_stem("pasted text") == "citation-check-pasted-text"
    assert report_file_stem("") == "citation-check"


def test_folding_and_where():
    assert folding_text({"folded": False}).startswith("No folding was needed")
    assert "hyphenation, ligatures" in folding_text({"folded": True, "folds": ["hyphenation", "ligatures"]})
    assert where_text({"source": "a.pdf", "page": 3, "page_label": "117"}, "Gao 2017") == "Gao 2017, p. 3 (printed 117)"
    assert where_text({"source": "a.pdf"}) == "a.pdf"
    assert place_page({"page_start": 2, "page_end": 3, "sentence_page": 3, "sentence_page_label": "x"}) == \
        "p. 3 (printed x)"
    assert place_page({"page_start": 2, "page_end": 3}) == "pp. 2\u20133"


# ------------------------------------------------------------------ places and evidence


def test_match_spans_in_a_snippet():
    text = "x" * 500 + "the match" + "y" * 500
    hit = {"match": "the match", "doc_start": 500, "snippet": "..." + text[200:809] + "..."}
    [(a, b)] = match_spans(hit, context=300)
    assert hit["snippet"][a:b] == "the match"
    assert match_spans({"match": "gone", "snippet": "nothing here"}) == []


def test_sentence_window_cuts_around_the_best_sentence():
    text = "word " * 200 + "The best sentence is here." + " more" * 200
    start = text.index("The best")
    row = {"text": text, "sentence_start": start, "sentence_end": start + len("The best sentence is here.")}
    cut, [(a, b)] = sentence_window(row, context=50)
    assert cut[a:b] == "The best sentence is here."
    assert cut.startswith("\u2026") and cut.endswith("\u2026") and len(cut) < 200
    assert sentence_window({"text": "short"}) == ("short", [])


def test_evidence_target_is_small_and_stable():
    hit = {"source": "a.pdf", "page": 3, "match": "m", "snippet": "long " * 100, "text": "t",
           "pages": [{"page": 3, "page_label": "117", "text": "m", "doc_start": 10, "doc_end": 11}]}
    target = evidence_target(hit)
    assert target == {"pages": [{"page": 3, "page_label": "117", "text": "m"}], "page": 3}
    assert evidence_target(dict(hit)) == target
    related = {"text": "passage", "sentence": "s", "sentence_page": 4, "page_start": 4, "sentence_pages": []}
    assert evidence_target(related) == {"sentence": "s", "sentence_page": 4, "page_start": 4, "text": "passage"}


def test_pasted_kind():
    assert pasted_kind("As shown \\cite{devlin2019}.") == "latex"
    assert pasted_kind("\\begin{document} x") == "latex"
    assert pasted_kind("Plain text [1] with a \\ backslash.") == "text"


def test_the_stance_is_said_in_words_with_its_sentence_and_marked_on_its_passage():
    from rag_core.citations.view import stance_cell, stance_line, stance_rows, stance_where

    text = "Intro words here. DPR performs worse than BM25. The end."
    start = text.index("DPR")
    end = text.index(".", start) + 1
    check = {"stance": "contradicts", "stance_score": 0.812, "stance_model": "stance-lr",
             "closest": [{"source": "b.pdf", "chunk_index": 1, "text": "other", "sentence_start": 0, "sentence_end": 5},
                         {"source": "a.pdf", "chunk_index": 3, "text": text, "sentence_start": 0, "sentence_end": 17,
                          "sentence_pages": [{"page": 2, "text": "Intro words here."}]}],
             "evidence_sentences": [{"source": "a.pdf", "chunk_index": 3, "start": start, "end": end, "page": 4,
                                     "sentence": "DPR performs  worse\nthan BM25."}]}
    line, sentence = stance_line(check)
    assert line == "Evidence contradicts (confidence 0.81, model stance-lr)"
    assert sentence == "DPR performs worse than BM25."
    assert stance_where(check, {"a.pdf": "Dense retrieval"}).startswith("Dense retrieval")
    assert "p. 4" in stance_where(check)
    rows = stance_rows(check)
    assert [r["source"] for r in rows] == ["a.pdf", "b.pdf"]
    assert (rows[0]["sentence_start"], rows[0]["sentence_end"]) == (start, end)
    assert rows[0]["sentence"] == "DPR performs worse than BM25." and rows[0]["sentence_page"] == 4
    assert "sentence_pages" not in rows[0], "the old sentence's segments would mark the wrong sentence"
    assert check["closest"][1]["sentence_start"] == 0, "the check itself is left as it is"
    assert stance_line({"stance": "nei", "stance_model": "rules"}) is None
    assert stance_line({"stance": "nei", "evidence_sentences": [{"sentence": "x"}]})[0] == \
        "Evidence does not say (model rules)"
    assert stance_cell({"stance": "contradicts", "stance_score": 0.81}) == "contradicts 0.81"
    assert stance_cell({"stance": "supports"}) == "supports" and stance_cell({"stance": "nei"}) == ""
