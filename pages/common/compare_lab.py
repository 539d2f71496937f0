"""The relevance lab under Compare's lists: which method wins for this question. Every method's
top 10 run once per search, the passages judged (a fast pass by keys, or cards), the metrics per
method, what the last ordering stage did (slope chart, before and after) and how much the lists
agree."""

from __future__ import annotations

import streamlit as st

from pages.common import lab_ui
from pages.common.cards import CARD_CHARS, CARDS_HEIGHT, MOVE_MARKERS, card_list
from pages.common.layout import line_html, note, passage_box, show_error, text_line
from pages.common.state import documents_by_key, load_index, passages, title_of
from rag_core.evaluation.methods import method_label, run_method, run_methods
from rag_core.evaluation.metrics import LOWER_BOUND_NOTE, METRIC_HELP
from rag_core.lab.judgments import GRADE_SHORT, GRADES, make_judgment, set_grade
from rag_core.output.passages import from_boundary, list_passage, title_chip
from rag_core.output.render import counted, page_label
from rag_core.retrieval.comparison import stage_view
from rag_core.retrieval.links import ALL_DOCUMENTS
from rag_core.retrieval.search_spec import SearchSpec

LAB_TAB_KEY = "cmp_lab_tab"
UNJUDGED_KEY = "cmp_only_unjudged"
SKIPPED_KEY = "cmp_skipped"  # passages the fast pass was told to skip, per result run
SHOWN_KEY = "cmp_judge_shown"  # (result run, how many judging cards are drawn)
# judging cards drawn at first, and per "Show more": each costs the browser ~7-10 ms; 25 were half
# of a comparison's 0.55 s from click to lists drawn (issue 21), ten still ~0.07 s (issue 28)
JUDGE_PAGE = 5
JUDGE_ERROR_KEY = "cmp_judge_error"
LAB_LISTS = ("bm25", "dense", "hybrid", "hybrid_mmr", "hybrid_ce")  # judged too, for their metrics
TOP_MOVERS = 5  # passages named on the slope chart
MEMO_KEY = "cmp_memo"  # searches of this tab by question and settings: asked again, shown at once


def lab_lists(stored: dict, index) -> None:
    """Every method's top 10 (the per-question metrics) and the hybrid list's whole pool (the slope
    chart) for the stored search, run once and kept with it."""
    if stored.get("lists") is not None:
        return
    request, spec, method = stored["request"], SearchSpec.from_dict(stored["config"]), stored["method"]
    sources = None if request["source"] == ALL_DOCUMENTS else [request["source"]]
    query = stored["comparison"]["query"]
    back = request.get("back_matter", False)
    lists = run_methods(query, index, spec, top=10, sources=sources, back_matter=back)
    pool_rows = run_method(method, query, index, spec, top=request["top"], whole_pool=True, sources=sources,
                           back_matter=back)
    stored["lists"], stored["pool_rows"] = slim_lists(lists), slim(pool_rows)
    found = st.session_state.get(MEMO_KEY, {}).get(stored.get("memo"))
    if found is not None:
        found["lists"], found["pool_rows"] = stored["lists"], stored["pool_rows"]


SLIM_KEYS = ("rank", "chunk_index", "source", "doc_id", "page_start", "page_end", "page_label", "score",
             "first_stage_ranks", "pre_mmr_rank", "pre_rerank_rank", "reranker", "found_by", "back_matter")


def slim(rows: list[dict]) -> list[dict]:
    return [{k: r.get(k) for k in SLIM_KEYS} for r in rows]


def slim_lists(lists: dict[str, list[dict]]) -> dict[str, list[dict]]:
    return {m: slim(rows) for m, rows in lists.items()}


def judge(lib, name: str, query: str, chunk_index: int, grade: int | None) -> None:
    """Keep (or, with None, forget) a grade of one passage for this question."""
    try:
        index = load_index(name)
        keyed = passages(name)
        if grade is None:
            set_grade(lib, name, query=query, key=keyed.keys[chunk_index])
        else:
            set_grade(lib, name, make_judgment(query, keyed, chunk_index, grade, index.chunks[chunk_index]["text"]))
    except Exception as exc:  # noqa: BLE001 - shown on the page after the rerun
        st.session_state[JUDGE_ERROR_KEY] = exc


def judge_pool(stored: dict) -> list[tuple[int, dict[str, int]]]:
    """Every passage of every list (shown lists and the other methods' top 10), best rank first."""
    result = stored["comparison"]
    hybrid_name = method_label(stored["method"])
    lists = {"TF-IDF": result["tfidf"], hybrid_name: result["hybrid"], "exact": result["exact"]}
    for method in LAB_LISTS:
        label = method_label(method)
        if method in stored["lists"] and label not in lists:
            lists[label] = stored["lists"][method]
    ranks: dict[int, dict[str, int]] = {}
    for label, rows in lists.items():
        for row in rows:
            ranks.setdefault(row["chunk_index"], {}).setdefault(label, row["rank"])
    return sorted(ranks.items(), key=lambda t: (min(t[1].values()), -len(t[1]), t[0]))


def lab_panel(lib, name: str, index, stored: dict, titles: dict, grades: dict) -> None:
    st.divider()
    st.subheader("Which method wins for this question?", anchor=False)
    error = st.session_state.pop(JUDGE_ERROR_KEY, None)
    if error is not None:
        show_error(error)
    lab_lists(stored, index)
    lists = stored["lists"]
    previous = stored["previous"]["lists"] if stored.get("previous") else None
    if not any(g.grade >= 2 for g in grades.values()):  # nothing to score yet: say so, no table of blanks
        note("info", "Judge the passages below (0 not relevant … 3 exactly what was asked): a table of nDCG@10, "
                     "P@5, Success@5, MRR@10 and Recall@10 per method appears once a passage is graded 2 or 3.")
    else:
        frame = lab_ui.metrics_frame(lists, grades, previous)
        with st.container(key="lab_metrics"):
            st.dataframe(frame, hide_index=True, column_config=lab_ui.METRIC_COLUMNS,
                         key=f"metrics_{stored['run']}", placeholder="–")
        if (frame.get("unjudged@10") is not None and (frame["unjudged@10"].fillna(0) > 0).any()):
            st.caption(LOWER_BOUND_NOTE)
    st.caption(f"Every method uses these hybrid settings: {SearchSpec.from_dict(stored['config']).describe()}. "
               "P@5, Success@5, MRR@10 and Recall@10 count grades 2 and 3 as relevant; nDCG@10 uses the grades "
               "as gains. All figures for the query set: Relevance lab page.")
    # only the open tab is drawn (a switch re-runs this fragment): the judging cards, the chart
    # and the overlap tables took most of a comparison's time when all three were drawn
    judge_tab, slope_tab, overlap_tab = st.tabs(["Judge passages", "What the reranker did",
                                                 "How different are the lists?"], key=LAB_TAB_KEY, on_change="rerun")
    if judge_tab.open is not False:
        with judge_tab:
            judge_section(lib, name, index, stored, titles, grades)
    if slope_tab.open:
        with slope_tab:
            slope_section(stored, titles, grades, index, documents_by_key(lib, name))
    if overlap_tab.open:
        with overlap_tab:
            overlap_section(stored)


def judge_section(lib, name: str, index, stored: dict, titles: dict, grades: dict) -> None:
    query = stored["comparison"]["query"]
    pool = judge_pool(stored)
    judged = sum(1 for i, _ in pool if i in grades)
    text_line(f"{judged} of {len(pool)} passages in these lists are judged for this question.", muted=True)
    fast_pass(lib, name, index, stored, titles, grades, pool)
    only = st.toggle("Show only unjudged passages", key=UNJUDGED_KEY)
    shown = [(i, ranks) for i, ranks in pool if not (only and i in grades)]
    if not shown:
        note("success", "Every passage of these lists is judged for this question.")
    run, limit = st.session_state.get(SHOWN_KEY, (None, JUDGE_PAGE))
    limit = limit if run == stored["run"] else JUDGE_PAGE
    for i, ranks in shown[:limit]:
        row = index.chunks[i]
        with st.container(border=True):
            left, right = st.columns([1.15, 4], vertical_alignment="top")
            key = f"grade_{stored['run']}_{i}"
            current = grades.get(i)
            st.session_state[key] = current.grade if current is not None and not current.mapped else None

            def changed(key=key, i=i):
                judge(lib, name, query, i, st.session_state[key])

            left.segmented_control("Grade", list(GRADES), format_func=lambda g: str(g), key=key, on_change=changed,
                                   label_visibility="collapsed", help="0 not relevant · 1 related · 2 relevant · "
                                                                      "3 exactly what was asked (click again: "
                                                                      "clear)")
            if current is not None and current.mapped:
                left.caption(f"≈{current.grade}, mapped from an earlier chunking: click to confirm")
            where = " · ".join(f"{label} #{rank}" for label, rank in ranks.items())
            right.html(  # one element for both lines: the page draws faster (issue 28, Compare's click)
                line_html(title_of({**row, "doc_id": row.get("doc_id")}, titles), page_label(row), where,
                          bold_first=True)
                + line_html(list_passage(row["text"], query, chars=320, mid_document=row.get("doc_chunk") != 0,
                                         marks=False), muted=True))
    if len(shown) > limit:
        hidden = len(shown) - limit

        def more(run=stored["run"], limit=limit):
            st.session_state[SHOWN_KEY] = (run, limit + JUDGE_PAGE)

        st.button(f"Show {min(JUDGE_PAGE, hidden)} more ({hidden} not shown)", key="judge_more", on_click=more,
                  icon=":material/expand_more:")


def fast_pass(lib, name: str, index, stored: dict, titles: dict, grades: dict, pool: list) -> None:
    """One unjudged passage at a time, graded with a click or the keys 0-3 (S skips)."""
    query = stored["comparison"]["query"]
    skipped = st.session_state.setdefault(SKIPPED_KEY, {}).setdefault(stored["run"], [])
    waiting = [(i, ranks) for i, ranks in pool if i not in grades and i not in skipped]
    with st.container(border=True):
        if not waiting:
            text_line("Fast pass: nothing left to judge" + (" (some were skipped)." if skipped else "."),
                      bold_first=True)
            if skipped and st.button("Go over the skipped ones", key="fast_reset"):
                skipped.clear()
                st.rerun()
            return
        i, ranks = waiting[0]
        row = index.chunks[i]
        text_line(f"Fast pass · {len(waiting)} to judge", title_of(row, titles), page_label(row),
                  " · ".join(f"{label} #{rank}" for label, rank in ranks.items()), bold_first=True)
        passage_box(from_boundary(row["text"], mid_document=row.get("doc_chunk") != 0)[0], query, short=True)

        def grade_it(g: int, i=i):
            judge(lib, name, query, i, g)

        def skip_it(i=i):
            skipped.append(i)

        buttons = st.container(horizontal=True, gap="small")
        for g in GRADES:
            buttons.button(GRADE_SHORT[g], key=f"fast_{g}", on_click=grade_it, args=(g,), shortcut=str(g))
        buttons.button("Skip", key="fast_skip", on_click=skip_it, shortcut="S")
        st.caption("Keys: 0 not relevant · 1 related · 2 relevant · 3 exactly what was asked · S skip "
                   "(when the cursor is not in a text box).")


STAGE_INTROS = {
    "rerank": "{name} re-read the pool of {pool} candidates: on the left the fused order it was handed, on the "
              "right its order.",
    "mmr": "MMR reordered the fused pool of {pool} candidates for variety: on the left the fused order, on the "
           "right the order after MMR.",
    "fusion": "No re-reading stage ran (reranker: none): the list is the fused order of the first-stage lists. On "
              "the left each passage's best rank in a first-stage list (TF-IDF, BM25 or dense), on the right its "
              "rank after fusing the pool of {pool} candidates.",
}


def stage_cards(rows: list[dict], index, docs: dict, query: str, grades: dict, *, side: str, top: int) -> list[dict]:
    """Cards of the list before or after the last stage (``side``), each with its move."""
    cards = []
    for row in rows[:top]:
        chunk = index.chunks[row["chunk_index"]]
        rank = row[side]
        chip = title_chip(docs.get(row.get("doc_id")) or docs.get(row.get("source")), row, fallback=row["source"])
        other = row["after" if side == "before" else "before"]
        if side == "before":
            move, kind = (f"→ #{other}", "same") if other <= top else ("✕ out after the stage", "out")
        else:
            kind = row["movement"]
            move = "= same" if kind == "same" else f"{MOVE_MARKERS[kind]} {other}→{rank}"
        figures = [("grade", lab_ui.grade_text(grades.get(row["chunk_index"])), lab_ui.GRADE_HELP)]
        if side == "after" and row.get("score") is not None:
            figures.append(("score", f"{row['score']:.3f}", ""))
        cards.append({"rank": rank, "figures": figures, "move": move, "move_kind": kind, "chip": chip,
                      "text": list_passage(chunk["text"], query, chars=CARD_CHARS,
                                           mid_document=chunk.get("doc_chunk") != 0), "details": []})
    return cards


def slope_section(stored: dict, titles: dict, grades: dict, index=None, docs: dict | None = None) -> None:
    """What the last ordering stage did: the labelled slope chart and the list before and after it."""
    rows = stored.get("pool_rows") or []
    top = stored["request"]["top"]
    if not rows:
        st.caption("The hybrid list is empty: nothing to draw.")
        return
    view = stage_view(rows)
    docs = docs or {}
    labels = {r["chunk_index"]: title_chip(docs.get(r.get("doc_id")) or docs.get(r.get("source")), r,
                                           fallback=r["source"]) for r in view.rows}
    movers = view.movers(TOP_MOVERS, top=top)
    name = next((r.get("reranker") for r in rows if r.get("reranker")), "the reranker")
    st.caption(STAGE_INTROS[view.stage].format(name=name, pool=len(rows)) + f" Lines ending at {top + 1} are "
               f"outside the top {top}; colours are your grades; the {counted(len(movers), 'passage')} that moved "
               "most are named.")
    with st.container(key="top_movers"):
        text_line("Moved most:", "; ".join(f"{labels[r['chunk_index']]} {r['before']}→{r['after']}" for r in movers)
                  or "nothing moved", bold_first=True, sep=" ")
    frame = lab_ui.slope_frame(view, grades, top, labels, named={r["chunk_index"] for r in movers})
    st.altair_chart(lab_ui.slope_chart(frame, top, view), width="stretch")
    if index is None:
        return
    query = stored["comparison"]["query"]
    left, right = st.columns(2, gap="small")
    with left:
        text_line(f"Before: {view.before_label}", bold_first=True)
        card_list(stage_cards(view.before(), index, docs, query, grades, side="before", top=top), kind="before",
                  label="Before the last stage", key=f"stage_before_{stored['run']}", max_height=CARDS_HEIGHT)
    with right:
        text_line(f"After: {view.after_label}", bold_first=True)
        card_list(stage_cards(view.after(), index, docs, query, grades, side="after", top=top), kind="after",
                  label="After the last stage", key=f"stage_after_{stored['run']}", max_height=CARDS_HEIGHT)


def overlap_section(stored: dict) -> None:
    lists = {method_label(m): [r["chunk_index"] for r in rows] for m, rows in stored["lists"].items()}
    exact = stored["comparison"]["exact"]
    if exact:
        lists["exact"] = [h["chunk_index"] for h in exact]
    if len(lists) < 2:
        st.caption("Only one list: nothing to compare.")
        return
    overlap, rbo = lab_ui.overlap_frames(lists)
    st.caption("No judgments needed: how much two methods agree on this question. " + METRIC_HELP["overlap@10"]
               + " " + METRIC_HELP["rbo"])
    left, right = st.columns(2)
    fmt = {c: st.column_config.NumberColumn(format="%.2f") for c in overlap.columns}
    left.markdown("**Overlap@10**")
    left.dataframe(overlap, column_config=fmt, key=f"overlap_{stored['run']}", placeholder="–")
    right.markdown("**Rank-biased overlap**")
    right.dataframe(rbo, column_config=fmt, key=f"rbo_{stored['run']}", placeholder="–")
