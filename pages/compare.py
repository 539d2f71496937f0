"""Compare: TF-IDF | hybrid | exact side by side for one question; a row opens its passage and PDF page."""

from __future__ import annotations

import copy
import json
import time

import pandas as pd
import streamlit as st

from pages.common import lab_ui
from pages.common.address import (
    AUTORUN_KEY,
    LINK_PROBLEMS_KEY,
    RESULT_KEY,
    apply_address,
    read_address,
    write_address,
)
from pages.common.back_matter import back_matter_switch, back_matter_word
from pages.common.cards import CARD_CHARS, CARDS_HEIGHT, MOVE_MARKERS, card_list
from pages.common.compare_lab import MEMO_KEY, lab_lists, lab_panel, slim
from pages.common.layout import PAGES, link, note, run_page, text_line
from pages.common.passage_dialog import TURN_KEY, passage_dialog
from pages.common.state import (
    document_titles,
    documents_by_key,
    library,
    load_index,
    passages,
    pick_collection,
    preferences,
    searchable_index,
    title_of,
)
from rag_core.evaluation.methods import REGISTRY, method_for_spec, method_label, run_method
from rag_core.evaluation.metrics import METRIC_HELP
from rag_core.lab.judgments import MAX_QUERY_CHARS, judgeable
from rag_core.lab.statistics import list_change
from rag_core.output.export import comparison_csv, comparison_json
from rag_core.output.passages import (
    list_passage,
    ordered_by,
    overlap_marks,
    overlap_text,
    passage_spans,
    title_chip,
)
from rag_core.output.render import page_label
from rag_core.retrieval.comparison import compare, first_stage_text, mark_movement
from rag_core.retrieval.fusion import score_scale
from rag_core.retrieval.links import ALL_DOCUMENTS, DEFAULT_TOP, MAX_TOP
from rag_core.retrieval.search_spec import FIELD_LABELS, SearchSpec

MEMO_SIZE = 8
PICK_KEY = "cmp_passage"
OPEN_KEY = "cmp_open_passage"  # set when a row is clicked or picked: the passage dialog opens once
LIST_TITLES = {"tfidf": "TF-IDF", "hybrid": "Hybrid", "exact": "Exact"}
EXACT_MODES = {
    "normalized": "folded (ligatures, hyphens, spacing, quotes)",
    "literal": "literal, case-insensitive",
    "regex": "regular expression (RE2)",
}
EXACT_SHORT = {"normalized": "folded", "literal": "literal", "regex": "regular expression"}
VIEW_KEY = "cmp_view"
VIEWS = {"side": "Side by side", "stacked": "Stacked, every column", "baseline": "Against a baseline"}
VIEW_HELP = ("Side by side: the lists as cards, each passage wrapped whole, where the other lists put it in small "
             "type below. Stacked: each list full width as a table with every column (sortable). Against a "
             "baseline: the hybrid list under fixed settings (pinned, or the package default) beside the hybrid "
             "list now, with each passage's move, overlap and rank-biased overlap.")
BASELINE_KEY = "cmp_baseline"  # collection -> {"config": the pinned search's settings, "label": ...}
BASELINE_MEMO_KEY = "cmp_baseline_memo"
OPEN_ROW_KEY = "cmp_open_row"  # (list, position) of a card clicked
ROW_HEIGHT = 92  # four lines of wrapped text: the title chip, then the passage
NUM = st.column_config.NumberColumn
TEXT = st.column_config.TextColumn
# Rank, grade, score and cosine come first, so that they are in view in a window 1,280 px wide
# (the TF-IDF list is then about 345 px wide); the passage and the columns that compare lists follow.
COLUMNS = {
    "#": NUM(width=32, help="Rank in this list", pinned=True),
    "grade": TEXT(width=46, help=lab_ui.GRADE_HELP),
    "score": NUM(format="%.3f", width=60, help="The list's own ordering score (see above the list)"),
    "cosine": NUM(format="%.3f", width=58, help="TF-IDF cosine of the passage to the question (the TF-IDF "
                                                "list's score)"),
    "score = cosine": NUM(format="%.3f", width=104, help="The TF-IDF list's score is the TF-IDF cosine of the "
                                                         "passage to the question"),
    "passage": TEXT(width=300, help="First author, year and page, then the passage from a word or sentence "
                                    "boundary around the question's words (⟦marked⟧); 'overlaps #n': shares "
                                    "text with row n. Click a row to read it whole."),
    "dense": NUM(format="%.3f", width=56, help="Bi-encoder (embedding) cosine of the passage to the question"),
    "vs before": TEXT(width=74, help="How the last change of the hybrid settings moved it (old→new rank); "
                                     "★ new: not in the list before"),
    "→ hybrid": TEXT(width=70, help="Its rank in the hybrid list; ✕: not in the hybrid top-k"),
    "vs TF-IDF": TEXT(width=78, help="▲ moved up, ▼ moved down from its TF-IDF rank (old→new); "
                                     "★ new: not in the TF-IDF list"),
    "first stage": TEXT(width=84, help="Why it is here: its rank in each first-stage list (TF-IDF, BM25, "
                                       "dense) that put it in the candidate pool; – : not in that list's top pool"),
    "in lists": TEXT(width=90, help="Its rank in the TF-IDF and hybrid lists (– : not there)"),
}
PASSAGE_WIDTH = 640  # px; the passage column of a list drawn full width (stacked)
COSINE_HELP = "TF-IDF cosine of the passage to the question, in every list (compare the lists by it)"


def movement_label(row: dict) -> str:
    move, marker = row.get("movement"), MOVE_MARKERS.get(row.get("movement"), "")
    if move == "new":
        return f"{marker} new"
    if move in ("up", "down"):
        return f"{marker} {row.get('tfidf_list_rank')}→{row['rank']}"
    return f"{marker} same"


def previous_label(row: dict) -> str:
    move, marker = row.get("movement_vs_previous"), MOVE_MARKERS.get(row.get("movement_vs_previous"), "")
    if move == "new":
        return f"{marker} new"
    if move in ("up", "down"):
        return f"{marker} {row.get('previous_rank')}→{row['rank']}"
    return f"{marker} same" if move else ""


def passage_parts(row: dict, docs: dict, query: str, overlaps: dict, chunk_text=None,
                  chars: int | None = None) -> tuple[str, str]:
    """The title chip (first author, year, page; 'overlaps #n') and the passage from a boundary with
    the question's words (or the exact match, in its context) marked. Plain text: neither reads markdown."""
    chip = title_chip(docs.get(row.get("doc_id")) or docs.get(row.get("source")), row, fallback=row["source"])
    if back_matter_word(row):
        chip += " · " + back_matter_word(row)
    if overlaps.get(row["rank"]):
        chip += " · " + overlap_text(overlaps[row["rank"]])
    size = {} if chars is None else {"chars": chars}
    if row.get("score_type") == "exact":  # the match itself, in its context
        text = chunk_text(row["chunk_index"]) if chunk_text is not None else None
        if text is not None and 0 <= row["start"] < row["end"] <= len(text):
            shown = list_passage(text, match=(row["start"], row["end"]), **size)
        else:
            shown = list_passage(row.get("snippet") or "", row.get("match") or query, mid_document=False, **size)
    else:
        shown = list_passage(row.get("text") or "", query, mid_document=row.get("doc_chunk") != 0, **size)
    return chip, shown


def passage_cell(row: dict, docs: dict, query: str, spans: dict, overlaps: dict, chunk_text=None) -> str:
    chip, shown = passage_parts(row, docs, query, overlaps, chunk_text)
    return f"{chip} — {shown}"


MOVE_KINDS = {"up": "up", "down": "down", "new": "new", "same": "same"}


def list_cards(kind: str, rows: list[dict], docs: dict, query: str, grades: dict | None = None, *,
               with_previous: bool = False, spans: dict | None = None, chunk_text=None,
               score_help: str = "") -> list[dict]:
    """The cards of one list: rank, grade, score and cosine first, the passage, then where the other
    lists (and the hybrid list's stages) put it."""
    overlaps = overlap_marks(rows, spans or {}) if kind != "exact" else {}
    cards = []
    for r in rows:
        figures = []
        if grades is not None:
            figures.append(("grade", lab_ui.grade_text(grades.get(r["chunk_index"])), lab_ui.GRADE_HELP))
        if kind == "tfidf":
            figures.append(("score = cosine", f"{r['cosine']:.3f}", COLUMNS["score = cosine"]["help"]))
        elif kind == "hybrid":
            figures += [("score", f"{r['score']:.3f}", score_help), ("cosine", f"{r['cosine']:.3f}", COSINE_HELP)]
        else:
            figures += [("score", "exact match", "Exact search has no ranking score: a place is a match. The "
                                                 "list is ordered by the passage's TF-IDF cosine."),
                        ("cosine", f"{r['cosine']:.3f}", COSINE_HELP)]
        chip, text = passage_parts(r, docs, query, overlaps, chunk_text, chars=CARD_CHARS)
        card = {"rank": r["rank"], "figures": figures, "chip": chip, "text": text, "details": []}
        if kind == "tfidf":
            there = r.get("hybrid_list_rank")
            card.update(move=f"→ hybrid #{there}" if there else "✕ not in hybrid", move_kind="same" if there else "out",
                        move_help=COLUMNS["→ hybrid"]["help"])
            if r.get("exact_list_rank"):
                card["details"].append(f"exact #{r['exact_list_rank']}")
        elif kind == "hybrid":
            versus_tfidf = "vs TF-IDF " + movement_label(r)
            if with_previous and r.get("movement_vs_previous"):
                card.update(move=previous_label(r) + " vs before", move_kind=MOVE_KINDS[r["movement_vs_previous"]],
                            move_help=COLUMNS["vs before"]["help"])
                card["details"].append(versus_tfidf)
            else:
                card.update(move=versus_tfidf, move_kind=MOVE_KINDS.get(r.get("movement"), "same"),
                            move_help=COLUMNS["vs TF-IDF"]["help"])
            if r.get("dense_cosine") is not None:
                card["details"].append(f"dense {r['dense_cosine']:.3f}")
            stages = first_stage_text(r)
            if stages:
                card["details"].append(f"first stage: {stages.replace(' · ', ', ')}")
        else:
            card["details"].append(f"TF-IDF #{r.get('tfidf_list_rank') or '–'} · "
                                   f"hybrid #{r.get('hybrid_list_rank') or '–'}")
        cards.append(card)
    return cards


def first_stage_cell(row: dict) -> str:
    return first_stage_text(row).replace(" · ", "\n") or (row.get("found_by") or "")


def list_frame(kind: str, rows: list[dict], docs: dict, query: str, grades: dict | None = None,
               with_previous: bool = False, spans: dict | None = None, chunk_text=None) -> pd.DataFrame:
    """The table of one list: rank, grade, score, cosine, the passage, then how it compares."""
    overlaps = overlap_marks(rows, spans or {}) if kind != "exact" else {}
    records = []
    for r in rows:
        item = {"#": r["rank"]}
        if grades is not None:
            item["grade"] = lab_ui.grade_text(grades.get(r["chunk_index"]))
        if kind == "tfidf":
            item["score = cosine"] = r["cosine"]
        elif kind == "hybrid":
            item.update({"score": r["score"], "cosine": r["cosine"]})
        else:
            item["cosine"] = r["cosine"]
        item["passage"] = passage_cell(r, docs, query, spans or {}, overlaps, chunk_text)
        if kind == "tfidf":
            item["→ hybrid"] = f"→ {r['hybrid_list_rank']}" if r.get("hybrid_list_rank") else "✕"
        elif kind == "hybrid":
            item["dense"] = r.get("dense_cosine")
            if with_previous:
                item["vs before"] = previous_label(r)
            item["vs TF-IDF"] = movement_label(r)
            item["first stage"] = first_stage_cell(r)
        else:
            item["in lists"] = (f"TF-IDF {r.get('tfidf_list_rank') or '–'}\n"
                                f"hybrid {r.get('hybrid_list_rank') or '–'}")
        records.append(item)
    return pd.DataFrame(records)


def option_label(kind: str, row: dict) -> str:
    return f"{LIST_TITLES[kind]} #{row['rank']} — {row['source']}, {page_label(row)}"


# ---------------------------------------------------------------- the form


def controls(lib) -> str | None:
    """The form; returns the collection picked (None: nothing to show)."""
    asked = read_address()
    top_row = st.columns([2, 2, 1.2], gap="medium", vertical_alignment="bottom")
    with top_row[0]:
        name = pick_collection("Collection", key="cmp_collection")
    if name is None:
        return None
    docs = lib.documents(name)
    if not docs:
        text_line(f"Collection “{name}” has no documents yet. Add PDFs on the Collections page.", muted=True)
        link(PAGES["collections"], "Add PDFs", ":material/library_books:")
        return None
    if asked is not None:
        apply_address(lib, name, docs, asked)
    problems = st.session_state.pop(LINK_PROBLEMS_KEY, None)
    if problems:
        note("warning", "The link was opened with changes: " + "; ".join(problems) + ".")
    choices = [ALL_DOCUMENTS] + [d["source"] for d in docs]
    if st.session_state.get("cmp_source") not in (None, *choices):
        st.session_state["cmp_source"] = ALL_DOCUMENTS
    source = top_row[1].selectbox("Documents", choices, key="cmp_source")
    with top_row[2]:
        include_back = back_matter_switch("cmp_back_matter")
    with st.form("compare_form", border=False):
        q_col, b_col = st.columns([6, 1], vertical_alignment="bottom")
        query = q_col.text_input("Question, claim or key words", key="cmp_query",
                                 placeholder="e.g. how does masked language modelling work?", max_chars=10_000)
        submitted = b_col.form_submit_button("Compare", type="primary", width="stretch")
        c1, c3, c4 = st.columns([1, 2, 3])
        st.session_state.setdefault("cmp_top", DEFAULT_TOP)
        top = c1.number_input("Top-k", min_value=1, max_value=MAX_TOP, step=1, key="cmp_top",
                              help="How many passages each list shows")
        mode = c3.selectbox("Exact search", list(EXACT_MODES), format_func=EXACT_MODES.get, key="cmp_mode")
        phrase = c4.text_input("Exact phrase (optional)", key="cmp_phrase",
                               help="By default the exact list looks for the question itself; type a "
                                    "shorter phrase here to look for that instead.")
    spec = lab_ui.knob_panel(lib, name, prefix="cmp", cross_encoder_model=preferences().cross_encoder_model)
    autorun = st.session_state.pop(AUTORUN_KEY, None)
    if autorun and not submitted:
        submitted, query = True, autorun
    if submitted:
        if not (query or "").strip():
            st.warning("Type a question, a claim or some key words first.")
            return name
        phrase = (phrase or "").strip() or None
        request = {"collection": name, "query": query, "top": int(top), "mode": mode, "phrase": phrase,
                   "source": source, "back_matter": include_back}
        run_search(lib, request, spec)
        return name
    stored = st.session_state.get(RESULT_KEY)
    if stored and stored["request"]["collection"] == name and (
            stored["request"]["source"] != source or stored["request"].get("back_matter", False) != include_back):
        # the documents (or the back-matter switch) changed: the lists shown follow, as they do a knob
        run_search(lib, {**stored["request"], "source": source, "back_matter": include_back}, spec)
    elif stored and stored["request"]["collection"] == name and lab_ui.knobs_changed(stored["config"], spec):
        run_search(lib, stored["request"], spec, previous=stored)  # a knob changed: re-run, keep the old list
    return name


def run_search(lib, request: dict, spec: SearchSpec, previous: dict | None = None) -> None:
    """Search three ways with ``spec``; keep it in the session. The other methods' lists behind the
    per-question metrics are run below the lists (:func:`lab_lists`), after these are drawn. A
    question asked again with the same settings on the same collection state is not searched again."""
    name = request["collection"]
    index = searchable_index(name)
    if index is None:
        return
    method = method_for_spec(spec)
    memo_key = json.dumps([request, spec.to_dict(), library().index_token(name)], sort_keys=True, default=str)
    memo = st.session_state.setdefault(MEMO_KEY, {})
    found = memo.pop(memo_key, None)
    if found is None:
        sources = None if request["source"] == ALL_DOCUMENTS else [request["source"]]
        with st.spinner("Searching three ways…"):
            result = compare(request["query"], index, top=request["top"], spec=REGISTRY[method].spec(spec),
                             exact_mode=request["mode"], exact_query=request["phrase"], sources=sources,
                             back_matter=request.get("back_matter", False))
        found = {"comparison": result.to_dict(), "lists": None, "pool_rows": None}
    memo[memo_key] = found  # the newest last
    while len(memo) > MEMO_SIZE:
        memo.pop(next(iter(memo)))
    comparison = copy.deepcopy(found["comparison"])
    dropped = []
    if previous is not None and previous.get("request") == request:
        if previous.get("lists") is None:  # its rerun was stopped (a quick second change) before they ran
            lab_lists(previous, index)
        dropped = mark_movement(comparison["hybrid"], previous["comparison"]["hybrid"])
    else:
        previous = None
    settings = {"collection": name, "collection_version": lib.version(name), "query": comparison["query"],
                "exact_phrase": request["phrase"], "top_k": request["top"], "pool_per_list": spec.pool,
                "reranker": comparison["reranker_detail"], "exact_mode": request["mode"],
                "documents": request["source"], "searched_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "hybrid_settings": spec.describe(), "hybrid_method": method_label(method)}
    st.session_state[RESULT_KEY] = {
        "settings": settings, "comparison": comparison, "request": request, "config": spec.to_dict(),
        "method": method, "memo": memo_key, "lists": found["lists"], "pool_rows": found["pool_rows"],
        "dropped": slim(dropped),
        "previous": None if previous is None else {"config": previous["config"], "lists": previous["lists"],
                                                   "method": previous["method"]},
        "run": st.session_state.get(RESULT_KEY, {}).get("run", 0) + 1,
    }
    st.session_state.pop(PICK_KEY, None)


# ---------------------------------------------------------------- the three lists


def list_notes(kind: str, result: dict) -> None:
    """What a list's emptiness (or an error) means, said once."""
    rows = result[kind]
    if kind == "exact":
        if result.get("exact_error"):
            note("error", result["exact_error"])
        elif not rows:
            note("info", "The text does not occur anywhere as typed. Try a shorter phrase in the Exact phrase box.")
    elif kind == "tfidf" and not rows:
        note("info", "No passage shares a word with the question.")
    elif kind == "hybrid" and not rows:
        note("info", "Nothing matched.")
    elif kind == "hybrid" and not result.get("lexical_match", True):
        note("warning", "No passage shares a word with the question: these passages are only close in "
                        "meaning (embedding similarity). The fused score ranks them against each other only.")
    if kind == "hybrid" and rows:
        done, total = rows[0].get("dense_coverage") or (None, None)
        if done is not None and done < total:
            note("info", f"Dense: {done:,} of {total:,} passages have embeddings so far (they are being computed); "
                         "the others are found by TF-IDF and BM25 only. Press Compare again later for the full "
                         "hybrid list.")


def hybrid_score_words(rows: list[dict], config: dict) -> str:
    """What the hybrid list's score means and its range (the fused score runs from 0 to 2)."""
    if not rows:
        return ""
    spec = SearchSpec.from_dict(config, strict=False)
    return score_scale(rows[0]["score_type"], fusion=spec.fusion, weights=spec.weights(), rrf_k=int(spec.rrf_k))


def list_caption(kind: str, result: dict, settings: dict, config: dict) -> str:
    if kind == "tfidf":
        return "Lexical: TF-IDF cosine of words and word pairs (score = cosine)."
    if kind == "hybrid":
        rows = result["hybrid"]
        how = "reordered by the cross-encoder" if result["reranker_kind"] == "cross_encoder" else "fused"
        return f"Pool of TF-IDF, BM25 and embeddings, {how}. {hybrid_score_words(rows, config)}"
    what = "the exact phrase" if settings.get("exact_phrase") else "the question"
    total, documents = result.get("exact_total", 0), result.get("exact_documents", 0)
    if not total:
        return f"Where {what} occurs ({EXACT_SHORT.get(result.get('exact_mode'), '')})."
    found = (f"{'At least ' if result.get('exact_capped') else ''}{total:,} place{'s' if total != 1 else ''} "
             f"in {documents} document{'s' if documents != 1 else ''}")
    shown = f"; the {len(result['exact'])} most about the question first" if total > len(result["exact"]) else ""
    return f"Where {what} occurs ({EXACT_SHORT.get(result.get('exact_mode'), '')}): {found}{shown}."


def exact_line(result: dict, settings: dict) -> None:
    """The exact list when it found nothing: one line above the other two lists."""
    ms = result.get("timings_ms", {}).get("exact")
    with st.container(key="exact_empty"):
        what = "The exact phrase" if settings.get("exact_phrase") else "The question"
        how = EXACT_SHORT.get(result.get("exact_mode"), "")
        text_line(f"Exact{f' · {ms:,.0f} ms' if ms is not None else ''}:", f"{what} does not occur anywhere as "
                  f"typed ({how}). Try a shorter phrase in the Exact phrase box.", bold_first=True, sep=" ")


def view_switch() -> str:
    """How the lists are laid out (kept for the tab): side by side, stacked, or against a baseline."""
    st.session_state.setdefault(VIEW_KEY, "side")
    return st.segmented_control("Show the lists", list(VIEWS), format_func=VIEWS.get, key=VIEW_KEY, required=True,
                                help=VIEW_HELP, label_visibility="collapsed") or "side"


@st.fragment
def show_results(name: str, address: str) -> None:
    """The lists, the passage picker and the relevance lab for this question: a fragment, so judging
    a passage, opening one, switching the view or the lab's tabs re-runs this part of the page only."""
    lib = library()
    stored = st.session_state.get(RESULT_KEY)
    if not stored or stored["request"]["collection"] != name:
        st.caption("Type a question and press **Compare**: the three lists appear side by side; clicking a row "
                   "opens the whole passage with its PDF page. Judge passages below the lists to see which "
                   "method wins.")
        return
    settings, result = stored["settings"], stored["comparison"]
    name = settings["collection"]
    if not lib.exists(name):
        st.info("The collection of these results no longer exists.")
        return
    stale = lib.version(name) != settings["collection_version"]
    titles = document_titles(lib, name)
    head, switch, share = st.columns([4.2, 2.6, 1], vertical_alignment="center")
    with head:
        text_line(f"Results for “{result['query']}” in {name}", heading=True)
    with switch:
        view = view_switch()
    with share.popover("Copy link", icon=":material/link:", width="stretch"):
        text_line("This address opens the same comparison (collection, question, documents, top-k and every "
                  "hybrid setting). Copy it with the button at its right:", muted=True)
        st.code(address, language=None, wrap_lines=True)
    if stale:
        st.warning("The collection changed since these results were computed: press Compare again.")
    text_line("Hybrid reranker:", result["reranker_detail"], bold_first=True, muted=True, sep=" ")
    if not (result["tfidf"] or result["exact"] or result.get("lexical_match", True)):
        note("warning", "Nothing in the collection matches the question word for word.")
    index = None if stale else load_index(name)
    grades = {}
    can_judge = judgeable(result["query"])
    if not can_judge:  # a long question is compared, never judged: no grades, no lab (issue 27 row 19)
        grades = None
    elif index is not None:
        _, _, grades = lab_ui.judgments_and_grades(lib, name, index, result["query"], passages(name))
    docs = documents_by_key(lib, name)
    shown_rows = [r for kind in ("tfidf", "hybrid", "exact") for r in result[kind]]
    spans = {} if index is None else passage_spans(index.chunks, shown_rows)
    chunk_text = None if index is None else (lambda i: index.chunks[i]["text"] if 0 <= i < len(index.chunks) else None)
    context = {"docs": docs, "grades": grades, "spans": spans, "chunk_text": chunk_text, "titles": titles}
    lists = {kind: result[kind] for kind in ("tfidf", "hybrid", "exact")}
    if view == "baseline":
        lists.update(baseline_view(lib, name, stored, index, context))
    else:
        result_lists(stored, view, context)

    options = {option_label(k, r): (k, i) for k, rows in lists.items() if k in LIST_TITLES
               for i, r in enumerate(rows)}
    if not options:
        return
    pick_col, open_col, csv_col, json_col = st.columns([4, 1, 1.2, 1.2], vertical_alignment="bottom")
    if st.session_state.get(PICK_KEY) not in options:
        st.session_state[PICK_KEY] = next(iter(options))
    pick_col.selectbox("Passage (or click a row in a list)", list(options), key=PICK_KEY)
    if open_col.button("Open passage", key="cmp_open", icon=":material/article:", width="stretch"):
        st.session_state[OPEN_ROW_KEY] = options[st.session_state[PICK_KEY]]
        st.session_state[OPEN_KEY] = True
    csv_col.download_button("Download CSV", comparison_csv(result, settings, titles),
                            file_name="comparison.csv", mime="text/csv", icon=":material/download:",
                            key="cmp_csv", width="stretch")
    json_col.download_button("Download JSON", comparison_json(result, settings, titles),
                             file_name="comparison.json", mime="application/json", icon=":material/download:",
                             key="cmp_json", width="stretch")
    if st.session_state.pop(OPEN_KEY, False):
        kind, i = st.session_state.get(OPEN_ROW_KEY) or options[st.session_state[PICK_KEY]]
        rows = lists.get(kind) or []
        if 0 <= i < len(rows):
            st.session_state[TURN_KEY] = None  # a passage opens on its own page
            passage_dialog(lib, name, rows[i], LIST_NAMES.get(kind, kind), result["query"], stale, titles, grades)
    if not can_judge:
        st.divider()
        note("info", f"This question is {len(' '.join(result['query'].split())):,} characters long: the relevance "
                     f"lab judges questions of at most {MAX_QUERY_CHARS:,}, so its passages cannot be graded here. "
                     "Shorten the question to judge them.")
    elif index is not None:
        lab_panel(lib, name, index, stored, titles, grades)


LIST_NAMES = {**LIST_TITLES, "baseline": "Baseline", "before": "Before the last stage", "after": "After it"}


def open_card(kind: str, key: str | None = None):
    """A card's (or a table row's) click: remember which, and open the passage dialog on the run it causes."""
    def opened(i: int) -> None:
        st.session_state[OPEN_ROW_KEY] = (kind, i)
        st.session_state[OPEN_KEY] = True
    return opened


def table_picked(kind: str, key: str):
    def callback():
        rows = st.session_state[key].selection.rows
        if rows:
            open_card(kind)(rows[0])
    return callback


def list_heading(kind: str, result: dict, settings: dict, config: dict) -> None:
    ms = result.get("timings_ms", {}).get(kind)
    st.subheader(LIST_TITLES[kind] + (f" · {ms:,.0f} ms" if ms is not None else ""), anchor=False)
    st.caption(list_caption(kind, result, settings, config))
    list_notes(kind, result)
    if kind == "hybrid" and result["hybrid"]:
        text_line(ordered_by(result["hybrid"], result.get("reranker_kind")), muted=True)


def result_lists(stored: dict, view: str, context: dict) -> None:
    """The three lists: side by side as cards, or one under another as tables with every column."""
    settings, result, config = stored["settings"], stored["comparison"], stored["config"]
    with_previous = stored.get("previous") is not None
    kinds = ("tfidf", "hybrid", "exact")
    if not result["exact"] and not result.get("exact_error"):  # nothing found: one line, the width to the others
        exact_line(result, settings)
        kinds = ("tfidf", "hybrid")
    query = result["query"]
    if view == "stacked":
        for kind in kinds:
            with st.container(key=f"list_{kind}"):
                list_heading(kind, result, settings, config)
                rows = result[kind]
                if not rows:
                    continue
                key = f"table_{kind}_{stored['run']}"
                frame = list_frame(kind, rows, context["docs"], query, context["grades"],
                                   with_previous and kind == "hybrid", context["spans"], context["chunk_text"])
                column_config = {**COLUMNS, "passage": st.column_config.TextColumn(
                    width=PASSAGE_WIDTH, help=COLUMNS["passage"]["help"])}
                st.dataframe(frame, hide_index=True, width="stretch", column_config=column_config, key=key,
                             on_select=table_picked(kind, key), selection_mode="single-row", row_height=ROW_HEIGHT,
                             placeholder="", height=min(40 + ROW_HEIGHT * len(rows), 40 + ROW_HEIGHT * 6))
                if kind == "hybrid" and with_previous:
                    moved_note(stored, context["titles"])
        return
    # the headings in one row, the cards in the next: every list's cards start at the same height
    for col, kind in zip(st.columns(len(kinds), gap="xsmall"), kinds, strict=True):
        with col:
            list_heading(kind, result, settings, config)
    for col, kind in zip(st.columns(len(kinds), gap="xsmall"), kinds, strict=True):
        with col:
            rows = result[kind]
            if not rows:
                continue
            cards = list_cards(kind, rows, context["docs"], query, context["grades"],
                               with_previous=with_previous and kind == "hybrid", spans=context["spans"],
                               chunk_text=context["chunk_text"], score_help=hybrid_score_words(rows, config))
            card_list(cards, kind=kind, label=f"{LIST_TITLES[kind]} list", key=f"table_{kind}_{stored['run']}",
                      max_height=CARDS_HEIGHT, on_open=open_card(kind))
            if kind == "hybrid" and with_previous:
                moved_note(stored, context["titles"])


# ---------------------------------------------------------------- against a baseline


def package_default() -> SearchSpec:
    return lab_ui.package_default(preferences().cross_encoder_model)


def baseline_of(name: str) -> dict:
    """The pinned baseline of ``name`` (settings and a label), else the package default."""
    pinned = st.session_state.get(BASELINE_KEY, {}).get(name)
    if pinned:
        return pinned
    return {"config": package_default().to_dict(), "label": "the package default"}


def baseline_rows(index, stored: dict, spec: SearchSpec) -> list[dict]:
    """The hybrid list for the stored question under ``spec`` (kept for the tab, by question, settings
    and collection state)."""
    request = stored["request"]
    key = json.dumps([request, spec.to_dict(), library().index_token(request["collection"])], sort_keys=True,
                     default=str)
    memo = st.session_state.setdefault(BASELINE_MEMO_KEY, {})
    if key not in memo:
        sources = None if request["source"] == ALL_DOCUMENTS else [request["source"]]
        memo[key] = run_method(method_for_spec(spec), stored["comparison"]["query"], index, spec,
                               top=request["top"], sources=sources, back_matter=request.get("back_matter", False))
        while len(memo) > MEMO_SIZE:
            memo.pop(next(iter(memo)))
    return memo[key]


def settings_changes(before: SearchSpec, after: SearchSpec) -> list[str]:
    """ "Dense weight α 0.5 → 0.8" for each knob that differs."""
    words = lab_ui.RERANKER_WORDS
    out = []
    for knob in lab_ui.KNOBS:
        a, b = getattr(before, knob), getattr(after, knob)
        if a != b:
            a, b = (words.get(a, a), words.get(b, b)) if knob == "reranker" else (a, b)
            out.append(f"{FIELD_LABELS.get(knob, knob)} {a:g} → {b:g}" if isinstance(a, float) and isinstance(b, float)
                       else f"{FIELD_LABELS.get(knob, knob)} {a} → {b}")
    return out


def baseline_view(lib, name: str, stored: dict, index, context: dict) -> dict[str, list[dict]]:
    """The demo: the hybrid list under the baseline's settings beside the hybrid list now, each row's
    move against the baseline, and how much the two agree. Returns the baseline's rows (to open)."""
    result, config = stored["comparison"], stored["config"]
    base = baseline_of(name)
    spec_b, spec_now = SearchSpec.from_dict(base["config"], strict=False), SearchSpec.from_dict(config, strict=False)

    def pin() -> None:
        st.session_state.setdefault(BASELINE_KEY, {})[name] = {
            "config": dict(config), "label": f"pinned at {time.strftime('%H:%M:%S')}"}

    def unpin() -> None:
        st.session_state.get(BASELINE_KEY, {}).pop(name, None)

    with st.container(border=True, key="baseline_bar"):
        line, pin_col, reset_col = st.columns([4, 1.4, 1.4], vertical_alignment="center")
        with line:
            text_line("Baseline:", f"{base['label']} — {spec_b.describe()}, reranker "
                      f"{lab_ui.RERANKER_WORDS.get(spec_b.reranker, spec_b.reranker)}", bold_first=True, sep=" ")
            changes = settings_changes(spec_b, spec_now)
            text_line("Now:", "; ".join(changes) if changes else "the same settings as the baseline (change a "
                      "hybrid setting above: every list after it is shown against this baseline)",
                      bold_first=True, muted=True, sep=" ")
        pin_col.button("Pin these settings", key="baseline_pin", on_click=pin, icon=":material/push_pin:",
                       width="stretch", help="Make the settings of the list now the baseline: every later list "
                                             "is shown against it")
        reset_col.button("Unpin the baseline", key="baseline_reset", on_click=unpin, icon=":material/restart_alt:",
                         width="stretch", disabled=name not in st.session_state.get(BASELINE_KEY, {}),
                         help="The baseline back to the package's default settings")
    if index is None:
        st.caption("The collection changed: press Compare again to see the lists against the baseline.")
        return {}
    before = baseline_rows(index, stored, spec_b)
    now = result["hybrid"]
    change = list_change([r["chunk_index"] for r in before], [r["chunk_index"] for r in now],
                         k=stored["request"]["top"])
    with st.container(key="baseline_summary"):
        text_line("Against the baseline:", change.summary(), bold_first=True, sep=" ")
    st.caption(f"{METRIC_HELP['overlap@10']} {METRIC_HELP['rbo']}")
    moves = change.moves
    left, right = st.columns(2, gap="small")
    query, docs, grades = result["query"], context["docs"], context["grades"]
    with left:
        st.subheader("Baseline · hybrid", anchor=False)
        st.caption(hybrid_score_words(before, base["config"]))
        cards = list_cards("hybrid", before, docs, query, grades, chunk_text=context["chunk_text"],
                           score_help=hybrid_score_words(before, base["config"]))
        place = {r["chunk_index"]: r["rank"] for r in now}
        for card, row in zip(cards, before, strict=True):
            there = place.get(row["chunk_index"])
            card.update(move=f"→ now #{there}" if there else "✕ out of the list now",
                        move_kind="same" if there else "out", move_help="Its rank in the list now")
        card_list(cards, kind="baseline", label="Baseline list", key=f"table_baseline_{stored['run']}",
                  max_height=CARDS_HEIGHT, on_open=open_card("baseline"))
    with right:
        st.subheader("Now · hybrid", anchor=False)
        st.caption(hybrid_score_words(now, config))
        cards = list_cards("hybrid", now, docs, query, grades, spans=context["spans"],
                           chunk_text=context["chunk_text"], score_help=hybrid_score_words(now, config))
        for card, row in zip(cards, now, strict=True):
            was, _ = moves[row["chunk_index"]]
            move = "new" if was is None else ("up" if row["rank"] < was else "down" if row["rank"] > was else "same")
            shown = {"new": "★ new", "same": "= same"}.get(move, f"{MOVE_MARKERS[move]} {was}→{row['rank']}")
            card["details"].insert(0, card.pop("move"))
            card.update(move=shown + " vs baseline", move_kind=move,
                        move_help="Its move against the baseline list (baseline rank → rank now); ★ new: not in "
                                  "the baseline list")
        card_list(cards, kind="now", label="List now", key=f"table_hybrid_{stored['run']}",
                  max_height=CARDS_HEIGHT, on_open=open_card("hybrid"))
    if change.dropped:
        titles, by_chunk = context["titles"], {r["chunk_index"]: r for r in before}
        text_line("Fell out against the baseline:", "; ".join(
            f"#{rank} {title_of(by_chunk[i], titles)}, {page_label(by_chunk[i])}" for i, rank in change.dropped),
            bold_first=True, muted=True, sep=" ")
    return {"baseline": before}


def moved_note(stored: dict, titles: dict) -> None:
    """Under the hybrid list after a settings change: what changed and what fell out."""
    before = SearchSpec.from_dict(stored["previous"]["config"], strict=False)
    now = SearchSpec.from_dict(stored["config"], strict=False)
    changed = settings_changes(before, now)
    text_line("Compared with the last change:", "; ".join(changed) or "same settings",
              bold_first=True, muted=True, sep=" ")
    dropped = stored.get("dropped") or []
    if dropped:
        text_line("Fell out of this list:", "; ".join(f"#{r['rank']} {title_of(r, titles)}, {page_label(r)}"
                                                      for r in dropped), bold_first=True, muted=True, sep=" ")
    text_line("To see every change against fixed settings, show the lists against a baseline (above the lists).",
              muted=True)


def body() -> None:
    st.title(":material/compare_arrows: Compare searches", anchor=False)
    st.caption("One question, three ways of finding passages: lexical TF-IDF, hybrid (BM25 and embeddings, fused "
               "into one list; a reranker can re-read it, see the hybrid settings) and exact text. ▲▼ show how "
               "hybrid moved a passage against TF-IDF; ★ marks passages TF-IDF did not find. Grade passages to see "
               "which method wins.")
    lib = library()
    name = controls(lib)
    if name is None:
        return
    show_results(name, write_address(name))


run_page("compare", body)
