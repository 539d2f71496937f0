"""Compare: TF-IDF | hybrid | exact side by side for one question, with passages and page images."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])  # the repo root: pages._ui and rag_core import from it
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import streamlit as st  # noqa: E402

from pages._ui import hand_over_to_app  # noqa: E402

hand_over_to_app()

import pandas as pd  # noqa: E402

from pages._ui import (  # noqa: E402
    MOVE_MARKERS,
    PAGE_COLLECTIONS,
    PAGE_SETTINGS,
    library,
    link,
    load_index,
    page_image,
    page_note,
    page_text,
    passage_box,
    pick_collection,
    preferences,
    run_page,
    searchable_index,
)
from rag_core.comparison import compare  # noqa: E402
from rag_core.settings import DEFAULT_POOL  # noqa: E402

RESULT_KEY = "cmp_result"
PICK_KEY = "cmp_passage"
LIST_TITLES = {"tfidf": "TF-IDF", "hybrid": "Hybrid", "exact": "Exact"}
EXACT_MODES = {
    "normalized": "folded (ligatures, hyphens, spacing, quotes)",
    "literal": "literal, case-insensitive",
    "regex": "regular expression (RE2)",
}
EXACT_SHORT = {"normalized": "folded", "literal": "literal", "regex": "regular expression"}
NUM = st.column_config.NumberColumn


def movement_label(row: dict) -> str:
    move = row.get("movement")
    was = row.get("tfidf_list_rank")
    marker = MOVE_MARKERS.get(move, "")
    if move == "new":
        return f"{marker} new"
    if move in ("up", "down"):
        return f"{marker} {was}→{row['rank']}"
    return f"{marker} same"


def list_frame(kind: str, rows: list[dict]) -> tuple[pd.DataFrame, dict]:
    """The table shown for one list and its column settings (narrow, so three fit side by side)."""
    text = st.column_config.TextColumn
    config = {
        "rank": NUM(width=36),
        "source": text(width=92, help="The PDF (full name in the passage view below)"),
        "page": text(width=44, help="Page(s) of the PDF file"),
        "score": NUM(format="%.4f", width=58, help="The list's own ordering score (see score type)"),
        "score type": text(width=56, help="cosine: TF-IDF cosine · rerank: cross-encoder score · "
                                          "fused: BM25 + embedding scores, min-max normalised · "
                                          "rrf: reciprocal rank fusion · exact: text match"),
        "cosine": NUM(format="%.3f", width=50, help="TF-IDF cosine of the passage to the question"),
        "dense cosine": NUM(format="%.3f", width=60,
                            help="Bi-encoder (embedding) cosine of the passage to the question"),
        "found by": text(width=56, help="Which first-stage retriever put it in the candidate pool"),
        "TF-IDF #": NUM(width=48, help="Rank of this passage in the TF-IDF list (empty: not there)"),
        "hybrid #": NUM(width=48, help="Rank of this passage in the hybrid list (empty: not there)"),
        "match": text(width=70, help="The text that matched"),
    }
    if kind == "exact":
        columns = ["rank", "source", "page", "score type", "match", "TF-IDF #", "hybrid #"]
        frame = pd.DataFrame([{
            "rank": r["rank"], "source": r["source"], "page": page_text(r), "score type": "exact",
            "match": r["match"], "TF-IDF #": r.get("tfidf_list_rank"), "hybrid #": r.get("hybrid_list_rank"),
        } for r in rows], columns=columns)
        for column in ("TF-IDF #", "hybrid #"):
            frame[column] = frame[column].astype("Int64")  # empty, not "None", when absent
        return frame, config
    records = []
    for r in rows:
        if kind == "hybrid":
            mark = movement_label(r)
        else:
            hyb = r.get("hybrid_list_rank")
            mark = f"→ {hyb}" if hyb else "✕"
        item = {"": mark, "rank": r["rank"], "source": r["source"], "page": page_text(r), "score": r["score"],
                "score type": r["score_type"], "cosine": r["cosine"]}
        if kind == "hybrid":
            item["dense cosine"] = r.get("dense_cosine")
            item["found by"] = r.get("found_by")
        records.append(item)
    columns = ["", "rank", "source", "page", "score", "score type", "cosine"]
    if kind == "hybrid":
        columns += ["dense cosine", "found by"]
    config[""] = text(
        "vs TF-IDF" if kind == "hybrid" else "→ hybrid", width=58 if kind == "hybrid" else 48,
        help=("▲ moved up, ▼ moved down from its TF-IDF rank (old→new); ★ new: not in the TF-IDF list"
              if kind == "hybrid" else "Its rank in the hybrid list; ✕: not in the hybrid top-k"))
    return pd.DataFrame(records, columns=columns), config


def option_label(kind: str, row: dict) -> str:
    return f"{LIST_TITLES[kind]} #{row['rank']} — {row['source']}, p. {page_text(row)}"


def results_csv(result: dict) -> bytes:
    records = []
    for kind in ("tfidf", "hybrid", "exact"):
        for row in result[kind]:
            flat = {"list": kind, "query": result["query"]}
            for key, value in row.items():
                flat[key] = value if not isinstance(value, (dict, list)) else str(value)
            records.append(flat)
    return pd.DataFrame(records).to_csv(index=False).encode("utf-8")


def controls(lib) -> None:
    top_row = st.columns([2, 2], gap="medium")
    with top_row[0]:
        name = pick_collection("Collection", key="cmp_collection")
    if name is None:
        return
    docs = lib.documents(name)
    if not docs:
        st.info(f"Collection “{name}” has no documents yet. Add PDFs on the Collections page.",
                icon=":material/description:")
        link(PAGE_COLLECTIONS, "Add PDFs", ":material/library_books:")
        return
    source = top_row[1].selectbox("Documents", ["All documents"] + [d["source"] for d in docs], key="cmp_source")
    with st.form("compare_form", border=False):
        q_col, b_col = st.columns([6, 1], vertical_alignment="bottom")
        query = q_col.text_input("Question, claim or key words", key="cmp_query",
                                 placeholder="e.g. how does masked language modelling work?", max_chars=10_000)
        submitted = b_col.form_submit_button("Compare", type="primary", width="stretch")
        c1, c2, c3, c4 = st.columns([1, 1, 2, 3])
        top = c1.number_input("Top-k", min_value=1, max_value=100, value=10, step=1, key="cmp_top",
                              help="How many passages each ranked list shows")
        pool = c2.number_input("Pool size", min_value=1, max_value=1000, value=DEFAULT_POOL, step=10,
                               key="cmp_pool", help="Candidates taken from each first-stage list (TF-IDF, "
                                                    "BM25, dense) before the hybrid reordering")
        mode = c3.selectbox("Exact search", list(EXACT_MODES), format_func=EXACT_MODES.get, key="cmp_mode")
        phrase = c4.text_input("Exact phrase (optional)", key="cmp_phrase",
                               help="By default the exact column looks for the question itself; type a "
                                    "shorter phrase here to look for that instead.")
    if submitted:
        if not (query or "").strip():
            st.warning("Type a question, a claim or some key words first.")
            return
        index = searchable_index(name)
        if index is None:
            return
        prefs = preferences()
        with st.spinner("Searching three ways…"):
            result = compare(query, index, top=int(top), pool=int(pool), exact_mode=mode,
                             exact_query=(phrase or "").strip() or None,
                             cross_encoder_model=prefs.cross_encoder_model,
                             sources=None if source == "All documents" else [source])
        st.session_state[RESULT_KEY] = {"collection": name, "version": lib.version(name),
                                        "exact_query": (phrase or "").strip() or None,
                                        "run": st.session_state.get(RESULT_KEY, {}).get("run", 0) + 1,
                                        **result.to_dict()}
        st.session_state.pop(PICK_KEY, None)


def show_results(lib) -> None:
    result = st.session_state.get(RESULT_KEY)
    if not result:
        st.caption("Type a question and press **Compare**: the three lists appear side by side, and "
                   "clicking a row shows the whole passage with its PDF page.")
        return
    name = result["collection"]
    if not lib.exists(name):
        st.info("The collection of these results no longer exists.")
        return
    stale = lib.version(name) != result["version"]
    st.markdown(f"##### Results for “{result['query']}” in {name}")
    if stale:
        st.warning("The collection changed since these results were computed: press Compare again.")
    run = result["run"]
    options = {option_label(k, r): (k, i) for k in ("tfidf", "hybrid", "exact") for i, r in enumerate(result[k])}

    def picked(kind: str, key: str):
        def callback():
            rows = st.session_state[key].selection.rows
            if rows:
                st.session_state[PICK_KEY] = option_label(kind, result[kind][rows[0]])
        return callback

    cross = result["reranker_kind"] == "cross_encoder"
    st.caption(f"{':material/target:' if cross else ':material/info:'} **Hybrid reranker:** "
               f"{result['reranker_detail']}")
    cols = st.columns([1, 1.3, 1], gap="small")
    exact_what = "the exact phrase" if result.get("exact_query") else "the question"
    headers = {
        "tfidf": ("TF-IDF", "Lexical: TF-IDF cosine of words and word pairs."),
        "hybrid": ("Hybrid", "BM25 + embedding pool, " + ("reordered by the cross-encoder." if cross else
                                                          "fused (no cross-encoder, see above).")),
        "exact": ("Exact", f"Where {exact_what} occurs ({EXACT_SHORT.get(result.get('exact_mode'), '')})."),
    }
    for col, kind in zip(cols, ("tfidf", "hybrid", "exact"), strict=True):
        with col:
            title, caption = headers[kind]
            ms = result.get("timings_ms", {}).get(kind)
            st.subheader(f"{title}" + (f" · {ms:,.0f} ms" if ms is not None else ""), anchor=False)
            st.caption(caption)
            rows = result[kind]
            if kind == "exact" and result.get("exact_error"):
                st.warning(result["exact_error"])
            if not rows:
                st.info({"tfidf": "No passage shares a word with the question.",
                         "hybrid": "No passage was found.",
                         "exact": "The text does not occur anywhere as typed. Try a shorter phrase in the "
                                  "Exact phrase box."}[kind])
                continue
            frame, config = list_frame(kind, rows)
            key = f"table_{kind}_{run}"
            st.dataframe(frame, hide_index=True, width="stretch", column_config=config, key=key,
                         on_select=picked(kind, key), selection_mode="single-row",
                         height=min(38 + 35 * len(frame), 420))

    st.download_button("Download all three lists (CSV)", results_csv(result), file_name="comparison.csv",
                       mime="text/csv", icon=":material/download:", key="cmp_csv")
    st.divider()
    labels = list(options)
    if st.session_state.get(PICK_KEY) not in options:
        st.session_state[PICK_KEY] = labels[0]
    label = st.selectbox("Passage (or click a row above)", labels, key=PICK_KEY)
    kind, i = options[label]
    show_passage(lib, name, result, kind, result[kind][i], stale)


def show_passage(lib, name: str, result: dict, kind: str, row: dict, stale: bool) -> None:
    text, spans = row.get("text"), None
    if kind == "exact":
        index = None if stale else load_index(name)
        if index is not None and 0 <= row["chunk_index"] < len(index.chunks):
            text = index.chunks[row["chunk_index"]]["text"]
            spans = [(row["start"], row["end"])]
        else:
            text = row["snippet"]
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.markdown(f"**{LIST_TITLES[kind]} #{row['rank']}** · {row['source']} · {page_note(row)}")
        if kind != "exact":
            facts = [f"{row['score_type']} score {row['score']:.4f}"]
            if row["score_type"] != "cosine":
                facts.append(f"TF-IDF cosine {row['cosine']:.3f}")
            if row.get("dense_cosine") is not None:
                facts.append(f"dense cosine {row['dense_cosine']:.3f}")
            if row.get("first_stage_ranks"):
                facts.append("first-stage ranks " + ", ".join(
                    f"{k} #{v}" for k, v in row["first_stage_ranks"].items() if v))
            if row.get("truncated"):
                facts.append("the cross-encoder read only the start of this passage")
            st.caption(" · ".join(facts))
        else:
            st.caption(f"Match: “{row['match']}”")
        passage_box(text, result["query"], spans)
    with right:
        doc = row.get("doc_id") or row["source"]
        page = row.get("page_start") or row.get("page")
        png = page_image(lib, name, doc, page)
        if png:
            st.image(png, caption=f"{row['source']}, PDF page {page}", width="stretch")


def body() -> None:
    st.title(":material/compare_arrows: Compare searches")
    st.caption("One question, three ways of finding passages: lexical TF-IDF, hybrid (BM25 + embeddings, "
               "then a reranker) and exact text. ▲▼ show how hybrid moved a passage against TF-IDF; ★ marks "
               "passages TF-IDF did not find.")
    lib = library()
    controls(lib)
    show_results(lib)
    st.caption("Reranker and models: see Settings.")
    link(PAGE_SETTINGS, "Settings & about", ":material/settings:")


run_page(body)
