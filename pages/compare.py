"""Compare: TF-IDF | hybrid | exact side by side for one question; a row opens its passage and PDF page."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from pages.common.layout import PAGES, link, note, passage_box, run_page, text_line
from pages.common.state import (
    document_titles,
    library,
    load_index,
    page_image,
    pick_collection,
    preferences,
    searchable_index,
    title_of,
)
from rag_core.comparison import compare
from rag_core.export import comparison_csv, comparison_json
from rag_core.render import page_label, snippet
from rag_core.settings import DEFAULT_POOL

RESULT_KEY = "cmp_result"
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
ROW_HEIGHT = 92  # five lines of wrapped text: document, page, then the passage
NUM = st.column_config.NumberColumn
TEXT = st.column_config.TextColumn
COLUMNS = {  # widths (px) that fit three lists side by side in a 1600 px window, headers whole
    "#": NUM(width=36, help="Rank in this list"),
    "→ hybrid": TEXT(width=74, help="Its rank in the hybrid list; ✕: not in the hybrid top-k"),
    "vs TF-IDF": TEXT(width=80, help="▲ moved up, ▼ moved down from its TF-IDF rank (old→new); "
                                     "★ new: not in the TF-IDF list"),
    "passage": TEXT(width=240, help="Document (short title, else file name) and page, then the passage "
                                    "around the question's words. Click a row to read it whole."),
    "score": NUM(format="%.4f", width=64, help="The list's own ordering score (see above the list)"),
    "cosine": NUM(format="%.3f", width=62, help="TF-IDF cosine of the passage to the question"),
    "dense": NUM(format="%.3f", width=58, help="Bi-encoder (embedding) cosine of the passage to the question"),
    "found by": TEXT(width=88, help="Which first-stage list put it in the candidate pool: tfidf, bm25, "
                                    "dense, or both (lexical and dense)"),
    "in lists": TEXT(width=96, help="Its rank in the TF-IDF and hybrid lists (– : not there)"),
}


def movement_label(row: dict) -> str:
    move, marker = row.get("movement"), MOVE_MARKERS.get(row.get("movement"), "")
    if move == "new":
        return f"{marker} new"
    if move in ("up", "down"):
        return f"{marker} {row.get('tfidf_list_rank')}→{row['rank']}"
    return f"{marker} same"


def passage_cell(row: dict, titles: dict, query: str) -> str:
    if row.get("score_type") == "exact":  # around the match itself
        text, query = row.get("snippet") or "", row.get("match") or query
    else:
        text = row.get("text") or ""
    return f"{title_of(row, titles)} · {page_label(row)} — {snippet(text, query, chars=150)}"


def list_frame(kind: str, rows: list[dict], titles: dict, query: str) -> pd.DataFrame:
    """The table of one list: rank, how it compares, the passage, the numbers."""
    records = []
    for r in rows:
        item = {"#": r["rank"]}
        if kind == "tfidf":
            item["→ hybrid"] = f"→ {r['hybrid_list_rank']}" if r.get("hybrid_list_rank") else "✕"
        elif kind == "hybrid":
            item["vs TF-IDF"] = movement_label(r)
        item["passage"] = passage_cell(r, titles, query)
        if kind == "tfidf":
            item["cosine"] = r["cosine"]
        elif kind == "hybrid":
            item.update({"score": r["score"], "cosine": r["cosine"], "dense": r.get("dense_cosine"),
                         "found by": r.get("found_by") or ""})
        else:
            item["in lists"] = (f"TF-IDF {r.get('tfidf_list_rank') or '–'}\n"
                                f"hybrid {r.get('hybrid_list_rank') or '–'}")
        records.append(item)
    return pd.DataFrame(records)


def option_label(kind: str, row: dict) -> str:
    return f"{LIST_TITLES[kind]} #{row['rank']} — {row['source']}, {page_label(row)}"


# ---------------------------------------------------------------- the form


def controls(lib) -> None:
    top_row = st.columns([2, 2], gap="medium")
    with top_row[0]:
        name = pick_collection("Collection", key="cmp_collection")
    if name is None:
        return
    docs = lib.documents(name)
    if not docs:
        text_line(f"Collection “{name}” has no documents yet. Add PDFs on the Collections page.", muted=True)
        link(PAGES["collections"], "Add PDFs", ":material/library_books:")
        return
    source = top_row[1].selectbox("Documents", ["All documents"] + [d["source"] for d in docs], key="cmp_source")
    with st.form("compare_form", border=False):
        q_col, b_col = st.columns([6, 1], vertical_alignment="bottom")
        query = q_col.text_input("Question, claim or key words", key="cmp_query",
                                 placeholder="e.g. how does masked language modelling work?", max_chars=10_000)
        submitted = b_col.form_submit_button("Compare", type="primary", width="stretch")
        c1, c2, c3, c4 = st.columns([1, 1, 2, 3])
        top = c1.number_input("Top-k", min_value=1, max_value=100, value=10, step=1, key="cmp_top",
                              help="How many passages each list shows")
        pool = c2.number_input("Pool size", min_value=1, max_value=1000, value=DEFAULT_POOL, step=10,
                               key="cmp_pool", help="Candidates taken from each first-stage list (TF-IDF, "
                                                    "BM25, dense) before the hybrid reordering")
        mode = c3.selectbox("Exact search", list(EXACT_MODES), format_func=EXACT_MODES.get, key="cmp_mode")
        phrase = c4.text_input("Exact phrase (optional)", key="cmp_phrase",
                               help="By default the exact list looks for the question itself; type a "
                                    "shorter phrase here to look for that instead.")
    if not submitted:
        return
    if not (query or "").strip():
        st.warning("Type a question, a claim or some key words first.")
        return
    index = searchable_index(name)
    if index is None:
        return
    prefs = preferences()
    phrase = (phrase or "").strip() or None
    with st.spinner("Searching three ways…"):
        result = compare(query, index, top=int(top), pool=int(pool), exact_mode=mode, exact_query=phrase,
                         cross_encoder_model=prefs.cross_encoder_model,
                         sources=None if source == "All documents" else [source])
    settings = {"collection": name, "collection_version": lib.version(name), "query": result.query,
                "exact_phrase": phrase, "top_k": int(top), "pool_per_list": int(pool),
                "reranker": result.reranker_detail, "exact_mode": mode,
                "documents": source, "searched_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    st.session_state[RESULT_KEY] = {"settings": settings, "comparison": result.to_dict(),
                                    "run": st.session_state.get(RESULT_KEY, {}).get("run", 0) + 1}
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


def show_results(lib) -> None:
    stored = st.session_state.get(RESULT_KEY)
    if not stored:
        st.caption("Type a question and press **Compare**: the three lists appear side by side; clicking a row "
                   "opens the whole passage with its PDF page.")
        return
    settings, result = stored["settings"], stored["comparison"]
    name = settings["collection"]
    if not lib.exists(name):
        st.info("The collection of these results no longer exists.")
        return
    stale = lib.version(name) != settings["collection_version"]
    titles = document_titles(lib, name)
    text_line(f"Results for “{result['query']}” in {name}", heading=True)
    if stale:
        st.warning("The collection changed since these results were computed: press Compare again.")
    text_line("Hybrid reranker:", result["reranker_detail"], bold_first=True, muted=True, sep=" ")
    if not (result["tfidf"] or result["exact"] or result.get("lexical_match", True)):
        note("warning", "Nothing in the collection matches the question word for word.")

    def picked(kind: str, key: str):
        def callback():
            rows = st.session_state[key].selection.rows
            if rows:
                st.session_state[PICK_KEY] = option_label(kind, result[kind][rows[0]])
                st.session_state[OPEN_KEY] = True
        return callback

    for col, kind in zip(st.columns([1, 1.45, 0.95], gap="small"), ("tfidf", "hybrid", "exact"), strict=True):
        with col:
            ms = result.get("timings_ms", {}).get(kind)
            st.subheader(LIST_TITLES[kind] + (f" · {ms:,.0f} ms" if ms is not None else ""), anchor=False)
            st.caption(list_caption(kind, result, settings))
            list_notes(kind, result)
            rows = result[kind]
            if not rows:
                continue
            key = f"table_{kind}_{stored['run']}"
            st.dataframe(list_frame(kind, rows, titles, result["query"]), hide_index=True, width="stretch",
                         column_config=COLUMNS, key=key, on_select=picked(kind, key),
                         selection_mode="single-row", row_height=ROW_HEIGHT, placeholder="",
                         height=min(40 + ROW_HEIGHT * len(rows), 40 + ROW_HEIGHT * 6))

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
        passage_dialog(lib, name, result, kind, i, stale, titles)


# ---------------------------------------------------------------- one passage


@st.dialog("Passage", width="large")
def passage_dialog(lib, name: str, result: dict, kind: str, i: int, stale: bool, titles: dict) -> None:
    row = result[kind][i]
    text, spans = row.get("text"), None
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
    left, right = st.columns([3, 2], gap="large")
    with left:
        passage_box(text, result["query"], spans)
    with right:
        page = row.get("page_start") or row.get("page")
        png = page_image(lib, name, row.get("doc_id") or row["source"], page)
        if png:
            st.image(png, caption=f"PDF page {page}", width="stretch")


def body() -> None:
    st.title(":material/compare_arrows: Compare searches", anchor=False)
    st.caption("One question, three ways of finding passages: lexical TF-IDF, hybrid (BM25 + embeddings, "
               "then a reranker) and exact text. ▲▼ show how hybrid moved a passage against TF-IDF; ★ marks "
               "passages TF-IDF did not find.")
    lib = library()
    controls(lib)
    show_results(lib)


run_page("compare", body)
