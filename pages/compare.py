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
from pages.common.layout import PAGES, link, note, passage_box, run_page, show_error, text_line
from pages.common.state import (
    document_titles,
    library,
    load_index,
    passage_page,
    passages,
    pick_collection,
    preferences,
    searchable_index,
    title_of,
)
from rag_core.evaluation.methods import REGISTRY, method_for_spec, method_label, run_method, run_methods
from rag_core.evaluation.metrics import LOWER_BOUND_NOTE, METRIC_HELP
from rag_core.lab.judgments import GRADE_SHORT, GRADES, make_judgment, set_grade
from rag_core.output.export import comparison_csv, comparison_json
from rag_core.output.passages import (
    from_boundary,
    list_passage,
    ordered_by,
    overlap_marks,
    overlap_text,
    passage_spans,
    title_chip,
    verify_statement,
)
from rag_core.output.render import page_label
from rag_core.retrieval.comparison import compare, first_stage_text, mark_movement
from rag_core.retrieval.links import ALL_DOCUMENTS, DEFAULT_TOP, MAX_TOP
from rag_core.retrieval.search_spec import SearchSpec

MEMO_KEY = "cmp_memo"  # searches of this tab by question and settings: asked again, shown at once
MEMO_SIZE = 8
LAB_TAB_KEY = "cmp_lab_tab"
PICK_KEY = "cmp_passage"
OPEN_KEY = "cmp_open_passage"  # set when a row is clicked or picked: the passage dialog opens once
LIST_TITLES = {"tfidf": "TF-IDF", "hybrid": "Hybrid", "exact": "Exact"}
EXACT_MODES = {
    "normalized": "folded (ligatures, hyphens, spacing, quotes)",
    "literal": "literal, case-insensitive",
    "regex": "regular expression (RE2)",
}
EXACT_SHORT = {"normalized": "folded", "literal": "literal", "regex": "regular expression"}
SCORE_WORDS = {
    "rerank": "Score: the cross-encoder's relevance score.",
    "fused": "Score: BM25 + embedding scores, min-max normalised.",
    "rrf": "Score: reciprocal rank fusion of the first-stage lists.",
}
MOVE_MARKERS = {"up": "▲", "down": "▼", "new": "★", "same": "="}
UNJUDGED_KEY = "cmp_only_unjudged"
SKIPPED_KEY = "cmp_skipped"  # passages the fast pass was told to skip, per result run
SHOWN_KEY = "cmp_judge_shown"  # (result run, how many judging cards are drawn)
# judging cards drawn at first (more on request): each costs the browser ~10 ms, and the 25 or
# so of a comparison were half of its 0.55 s from click to lists drawn (issue 21)
JUDGE_PAGE = 10
JUDGE_ERROR_KEY = "cmp_judge_error"
LAB_LISTS = ("bm25", "dense", "hybrid", "hybrid_mmr", "hybrid_ce")  # judged too, for their metrics
ROW_HEIGHT = 92  # four lines of wrapped text: the title chip, then the passage
NUM = st.column_config.NumberColumn
TEXT = st.column_config.TextColumn
# Rank, grade, score and cosine come first, so that they are in view in a window 1,280 px wide
# (the TF-IDF list is then about 345 px wide); the passage and the columns that compare lists follow.
COLUMNS = {
    "#": NUM(width=32, help="Rank in this list", pinned=True),
    "grade": TEXT(width=46, help="Your judgment of the passage for this question: 0 not relevant, 1 related, "
                                 "2 relevant, 3 exactly what was asked; ≈ mapped from an earlier chunking; "
                                 "– not judged yet (judge below)"),
    "score": NUM(format="%.3f", width=60, help="The list's own ordering score (see above the list)"),
    "cosine": NUM(format="%.3f", width=58, help="TF-IDF cosine of the passage to the question (the TF-IDF "
                                                "list's score)"),
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
DIALOG_WIDTH = 1500  # px (narrower windows shrink it): the page image gets about half, legible at 1280 px
PASSAGE_WIDTH = {"tfidf": 300, "hybrid": 300, "exact": 260}  # px; the passage column of each list


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


def passage_cell(row: dict, docs: dict, query: str, spans: dict, overlaps: dict, chunk_text=None) -> str:
    """The title chip (first author, year, page; 'overlaps #n'), then the passage from a boundary with
    the question's words (or the exact match, in its context) marked. Plain text: a cell reads no markdown."""
    chip = title_chip(docs.get(row.get("doc_id")) or docs.get(row.get("source")), row, fallback=row["source"])
    if overlaps.get(row["rank"]):
        chip += " · " + overlap_text(overlaps[row["rank"]])
    if row.get("score_type") == "exact":  # the match itself, in its context
        text = chunk_text(row["chunk_index"]) if chunk_text is not None else None
        if text is not None and 0 <= row["start"] < row["end"] <= len(text):
            shown = list_passage(text, match=(row["start"], row["end"]))
        else:
            shown = list_passage(row.get("snippet") or "", row.get("match") or query, mid_document=False)
    else:
        shown = list_passage(row.get("text") or "", query, mid_document=row.get("doc_chunk") != 0)
    return f"{chip} — {shown}"


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
            item["cosine"] = r["cosine"]
        elif kind == "hybrid":
            item.update({"score": r["score"], "cosine": r["cosine"]})
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
    top_row = st.columns([2, 2], gap="medium")
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
                   "source": source}
        run_search(lib, request, spec)
        return name
    stored = st.session_state.get(RESULT_KEY)
    if stored and stored["request"]["collection"] == name and stored["request"]["source"] != source:
        # the documents changed: the lists shown (and the address) follow, as they do a knob
        run_search(lib, {**stored["request"], "source": source}, spec)
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
                             exact_mode=request["mode"], exact_query=request["phrase"], sources=sources)
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
        "dropped": _slim(dropped),
        "previous": None if previous is None else {"config": previous["config"], "lists": previous["lists"],
                                                   "method": previous["method"]},
        "run": st.session_state.get(RESULT_KEY, {}).get("run", 0) + 1,
    }
    st.session_state.pop(PICK_KEY, None)


def lab_lists(stored: dict, index) -> None:
    """Every method's top 10 (the per-question metrics) and the hybrid list's whole pool (the slope
    chart) for the stored search, run once and kept with it."""
    if stored.get("lists") is not None:
        return
    request, spec, method = stored["request"], SearchSpec.from_dict(stored["config"]), stored["method"]
    sources = None if request["source"] == ALL_DOCUMENTS else [request["source"]]
    query = stored["comparison"]["query"]
    lists = run_methods(query, index, spec, top=10, sources=sources)
    pool_rows = run_method(method, query, index, spec, top=request["top"], whole_pool=True, sources=sources)
    stored["lists"], stored["pool_rows"] = _slim_lists(lists), _slim(pool_rows)
    found = st.session_state.get(MEMO_KEY, {}).get(stored.get("memo"))
    if found is not None:
        found["lists"], found["pool_rows"] = stored["lists"], stored["pool_rows"]


SLIM_KEYS = ("rank", "chunk_index", "source", "doc_id", "page_start", "page_end", "page_label", "score",
             "first_stage_ranks", "pre_mmr_rank", "found_by")


def _slim(rows: list[dict]) -> list[dict]:
    return [{k: r.get(k) for k in SLIM_KEYS} for r in rows]


def _slim_lists(lists: dict[str, list[dict]]) -> dict[str, list[dict]]:
    return {m: _slim(rows) for m, rows in lists.items()}


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


def list_caption(kind: str, result: dict, settings: dict) -> str:
    if kind == "tfidf":
        return "Lexical: TF-IDF cosine of words and word pairs (score = cosine)."
    if kind == "hybrid":
        rows = result["hybrid"]
        how = "reordered by the cross-encoder" if result["reranker_kind"] == "cross_encoder" else "fused"
        words = SCORE_WORDS.get(rows[0]["score_type"], "") if rows else ""
        return f"Pool of TF-IDF, BM25 and embeddings, {how}. {words}"
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


def documents_by_key(lib, name: str) -> dict[str, dict]:
    """The collection's document records by doc_id and by file name (for the title chips)."""
    docs = {}
    for doc in lib.documents(name):
        docs[doc.get("doc_id") or doc["source"]] = doc
        docs[doc["source"]] = doc
    return docs


@st.fragment
def show_results(name: str, address: str) -> None:
    """The three lists, the passage picker and the relevance lab for this question: a fragment, so
    judging a passage, opening one or switching the lab's tabs re-runs this part of the page only."""
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
    head, share = st.columns([6, 1], vertical_alignment="center")
    with head:
        text_line(f"Results for “{result['query']}” in {name}", heading=True)
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
    if index is not None:
        _, _, grades = lab_ui.judgments_and_grades(lib, name, index, result["query"], passages(name))

    def picked(kind: str, key: str):
        def callback():
            rows = st.session_state[key].selection.rows
            if rows:
                st.session_state[PICK_KEY] = option_label(kind, result[kind][rows[0]])
                st.session_state[OPEN_KEY] = True
        return callback

    with_previous = stored.get("previous") is not None
    docs = documents_by_key(lib, name)
    shown_rows = [r for kind in ("tfidf", "hybrid", "exact") for r in result[kind]]
    spans = {} if index is None else passage_spans(index.chunks, shown_rows)
    chunk_text = None if index is None else (lambda i: index.chunks[i]["text"] if 0 <= i < len(index.chunks) else None)
    kinds = ("tfidf", "hybrid", "exact")
    if not result["exact"] and not result.get("exact_error"):  # nothing found: one line, the width to the others
        exact_line(result, settings)
        kinds = ("tfidf", "hybrid")
    widths = [1, 1.6, 0.95][: len(kinds)]
    for col, kind in zip(st.columns(widths, gap="small"), kinds, strict=True):
        with col:
            ms = result.get("timings_ms", {}).get(kind)
            st.subheader(LIST_TITLES[kind] + (f" · {ms:,.0f} ms" if ms is not None else ""), anchor=False)
            st.caption(list_caption(kind, result, settings))
            list_notes(kind, result)
            rows = result[kind]
            if not rows:
                continue
            if kind == "hybrid":
                text_line(ordered_by(rows, result.get("reranker_kind")), muted=True)
            key = f"table_{kind}_{stored['run']}"
            frame = list_frame(kind, rows, docs, result["query"], grades, with_previous and kind == "hybrid",
                               spans, chunk_text)
            config = {**COLUMNS, "passage": st.column_config.TextColumn(
                width=PASSAGE_WIDTH[kind], help=COLUMNS["passage"]["help"])}
            st.dataframe(frame, hide_index=True, width="stretch", column_config=config, key=key,
                         on_select=picked(kind, key), selection_mode="single-row", row_height=ROW_HEIGHT,
                         placeholder="", height=min(40 + ROW_HEIGHT * len(rows), 40 + ROW_HEIGHT * 6))
            if kind == "hybrid" and with_previous:
                moved_note(stored, titles)

    options = {option_label(k, r): (k, i) for k in ("tfidf", "hybrid", "exact") for i, r in enumerate(result[k])}
    if not options:
        return
    pick_col, open_col, csv_col, json_col = st.columns([4, 1, 1.2, 1.2], vertical_alignment="bottom")
    if st.session_state.get(PICK_KEY) not in options:
        st.session_state[PICK_KEY] = next(iter(options))
    pick_col.selectbox("Passage (or click a row in a list)", list(options), key=PICK_KEY)
    if open_col.button("Open passage", key="cmp_open", icon=":material/article:", width="stretch"):
        st.session_state[OPEN_KEY] = True
    csv_col.download_button("Download CSV", comparison_csv(result, settings, titles),
                            file_name="comparison.csv", mime="text/csv", icon=":material/download:",
                            key="cmp_csv", width="stretch")
    json_col.download_button("Download JSON", comparison_json(result, settings, titles),
                             file_name="comparison.json", mime="application/json", icon=":material/download:",
                             key="cmp_json", width="stretch")
    if st.session_state.pop(OPEN_KEY, False):
        kind, i = options[st.session_state[PICK_KEY]]
        passage_dialog(lib, name, result, kind, i, stale, titles, grades)
    if index is not None:
        lab_panel(lib, name, index, stored, titles, grades)


def moved_note(stored: dict, titles: dict) -> None:
    """Under the hybrid list after a settings change: what changed and what fell out."""
    before = SearchSpec.from_dict(stored["previous"]["config"], strict=False)
    now = SearchSpec.from_dict(stored["config"], strict=False)
    changed = [f"{k.replace('_', ' ')} {getattr(before, k)} → {getattr(now, k)}" for k in lab_ui.KNOBS
               if getattr(before, k) != getattr(now, k)]
    text_line("Compared with the settings before:", "; ".join(changed) or "same settings",
              bold_first=True, muted=True, sep=" ")
    dropped = stored.get("dropped") or []
    if dropped:
        text_line("Fell out of this list:", "; ".join(f"#{r['rank']} {title_of(r, titles)}, {page_label(r)}"
                                                      for r in dropped), bold_first=True, muted=True, sep=" ")


# ---------------------------------------------------------------- the relevance lab for this question


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
            slope_section(stored, titles, grades)
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
            with right:
                text_line(title_of({**row, "doc_id": row.get("doc_id")}, titles), page_label(row), where,
                          bold_first=True)
                text_line(list_passage(row["text"], query, chars=320, mid_document=row.get("doc_chunk") != 0,
                                       marks=False), muted=True)
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
            buttons.button(GRADE_SHORT[g], key=f"fast_{g}", on_click=grade_it, args=(g,), shortcut=str(g),
                           type="primary" if g == 3 else "secondary")
        buttons.button("Skip", key="fast_skip", on_click=skip_it, shortcut="S")
        st.caption("Keys: 0 not relevant · 1 related · 2 relevant · 3 exactly what was asked · S skip "
                   "(when the cursor is not in a text box).")


def slope_section(stored: dict, titles: dict, grades: dict) -> None:
    rows = stored.get("pool_rows") or []
    top = stored["request"]["top"]
    if not rows or not any(r.get("first_stage_ranks") for r in rows):
        st.caption("The hybrid list has no first-stage ranks to draw.")
        return
    labels = {r["chunk_index"]: f"{title_of(r, titles)}, {page_label(r)}" for r in rows}
    frame = lab_ui.slope_frame(rows, grades, top, labels)
    how = {"hybrid_ce": "the cross-encoder re-read", "hybrid_mmr": "fusion and then MMR reordered",
           "hybrid": "fusion reordered"}[stored["method"]]
    st.caption(f"Each line is a passage: on the left its best rank in the first-stage lists (TF-IDF, BM25, dense), "
               f"on the right its rank after {how} the pool of {len(rows)} candidates. Lines ending at "
               f"{top + 1} fell out of the top {top}; colours are your grades.")
    st.altair_chart(lab_ui.slope_chart(frame, top), width="stretch")


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


# ---------------------------------------------------------------- one passage


@st.dialog("Passage", width=DIALOG_WIDTH)
def passage_dialog(lib, name: str, result: dict, kind: str, i: int, stale: bool, titles: dict,
                   grades: dict | None = None) -> None:
    row = result[kind][i]
    text, spans = from_boundary(row.get("text") or "", mid_document=row.get("doc_chunk") != 0)[0], None
    if kind == "exact":
        index = None if stale else load_index(name)
        if index is not None and 0 <= row["chunk_index"] < len(index.chunks):
            text = index.chunks[row["chunk_index"]]["text"]
            spans = [(row["start"], row["end"])]
        else:
            text = row["snippet"]
    title = title_of(row, titles)
    text_line(f"{LIST_TITLES[kind]} #{row['rank']}", title, page_label(row), bold_first=True)
    if title != row["source"]:
        text_line(row["source"], muted=True)
    if kind != "exact":
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
                judge(lib, name, result["query"], row["chunk_index"], g)
                st.rerun()
    statement = verify_statement(text or "", mid_document=row.get("doc_chunk") != 0)
    if statement:
        link(PAGES["verify"], "Check this passage on the Verify page", ":material/fact_check:",
             query_params={"collection": name, "statement": statement, "doc": row["source"]})
    left, right = st.columns([1, 1.15], gap="medium")
    with left:
        passage_box(text, result["query"], spans)
    with right:  # the page with the passage marked, as Verify shows evidence (scans by their OCR words)
        index = None if stale else load_index(name)
        chunk = index.chunks[row["chunk_index"]] if index is not None and 0 <= row.get("chunk_index", -1) < len(
            index.chunks) and kind != "exact" else None
        passage_page(lib, name, row, chunk)


def body() -> None:
    st.title(":material/compare_arrows: Compare searches", anchor=False)
    st.caption("One question, three ways of finding passages: lexical TF-IDF, hybrid (BM25 + embeddings, "
               "then a reranker) and exact text. ▲▼ show how hybrid moved a passage against TF-IDF; ★ marks "
               "passages TF-IDF did not find. Grade passages to see which method wins.")
    lib = library()
    name = controls(lib)
    if name is None:
        return
    show_results(name, write_address(name))


run_page("compare", body)
