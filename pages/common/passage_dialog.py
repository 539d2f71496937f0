"""One passage of Compare's lists: its figures, the grade buttons, the link to Verify, and its PDF
page with the passage marked (previous/next page to read on)."""

from __future__ import annotations

import streamlit as st

from pages.common import lab_ui
from pages.common.compare_lab import judge
from pages.common.layout import PAGES, link, passage_box, text_line
from pages.common.state import load_index, passage_page, title_of
from rag_core.lab.judgments import GRADE_SHORT, GRADES
from rag_core.output.passages import from_boundary, query_sentence
from rag_core.output.render import page_label

TURN_KEY = "cmp_dialog_page"  # the page the passage dialog shows when reading on (None: the passage's own)
DIALOG_WIDTH = 1500  # px (narrower windows shrink it): the page image gets about half, legible at 1280 px


@st.dialog("Passage", width=DIALOG_WIDTH)
def passage_dialog(lib, name: str, row: dict, list_name: str, query: str, stale: bool, titles: dict,
                   grades: dict | None = None) -> None:
    exact = row.get("score_type") == "exact"
    text, spans = from_boundary(row.get("text") or "", mid_document=row.get("doc_chunk") != 0)[0], None
    index = None if stale else load_index(name)
    in_index = index is not None and 0 <= row.get("chunk_index", -1) < len(index.chunks)
    if exact:
        if in_index:
            text = index.chunks[row["chunk_index"]]["text"]
            spans = [(row["start"], row["end"])]
        else:
            text = row["snippet"]
    elif not text and in_index:
        text = from_boundary(index.chunks[row["chunk_index"]]["text"], mid_document=row.get("doc_chunk") != 0)[0]
    title = title_of(row, titles)
    text_line(f"{list_name} #{row['rank']}", title, page_label(row), bold_first=True)
    if title != row["source"]:
        text_line(row["source"], muted=True)
    if not exact:
        facts = [f"{row['score_type']} score {row['score']:.4f}"]
        if row["score_type"] != "cosine":
            facts.append(f"TF-IDF cosine {row['cosine']:.3f}")
        if row.get("dense_cosine") is not None:
            facts.append(f"dense cosine {row['dense_cosine']:.3f}")
        if row.get("first_stage_ranks"):
            facts.append("first-stage ranks " + ", ".join(f"{k} #{v}" for k, v in row["first_stage_ranks"].items()
                                                           if v))
        if row.get("truncated"):
            facts.append("the cross-encoder read only the start of this passage")
        st.caption(" · ".join(facts))
    else:
        text_line("Match:", f"“{row['match']}”", bold_first=True, muted=True, sep=" ")
    if not stale and grades is not None:
        current = grades.get(row["chunk_index"])
        line = st.container(horizontal=True, gap="small", vertical_alignment="center")
        line.html(f'<div class="rc-line"><strong>Your grade for this question:</strong> '
                  f'{lab_ui.grade_text(current)}</div>', width="content")
        for g in GRADES:
            if line.button(GRADE_SHORT[g], key=f"dialog_grade_{g}",
                           type="primary" if current is not None and current.grade == g else "secondary"):
                judge(lib, name, query, row["chunk_index"], g)
                st.rerun()
    statement = query_sentence(text or "", query, spans,  # the matched sentence, not the whole passage
                               mid_document=row.get("doc_chunk") != 0)
    if statement:
        link(PAGES["verify"], "Check this passage on the Verify page", ":material/fact_check:",
             query_params={"collection": name, "statement": statement, "doc": row["source"]})
    left, right = st.columns([1, 1.15], gap="medium")
    with left:
        passage_box(text, query, spans)
    with right:  # the page with the passage marked, as Verify shows evidence (scans by their OCR words)
        chunk = index.chunks[row["chunk_index"]] if in_index and not exact else None
        passage_page(lib, name, row, chunk, turn_key=TURN_KEY)
