"""Verify: is a quote in the collection word for word, after folding, or only close in meaning?"""

from __future__ import annotations

import streamlit as st

from pages.common.layout import PAGES, link, note, passage_box, run_page, text_line
from pages.common.state import (
    document_titles,
    library,
    page_image,
    pick_collection,
    preferences,
    searchable_index,
    title_of,
)
from rag_core.comparison import verify_quote
from rag_core.render import page_label

RESULT_KEY = "verify_result"
CONTEXT = 300
VERDICT_KINDS = {"verbatim": "success", "near_verbatim": "warning", "related": "warning", "not_found": "warning"}


def snippet_span(hit: dict, context: int = CONTEXT) -> list[tuple[int, int]]:
    """Where ``match`` sits in ``snippet`` (the snippet is the match with ``context`` around it)."""
    offset = (3 if hit["start"] > context else 0) + min(hit["start"], context)
    length = len(hit["match"])
    if hit["snippet"][offset:offset + length] == hit["match"]:
        return [(offset, offset + length)]
    found = hit["snippet"].find(hit["match"])
    return [(found, found + length)] if found >= 0 else []


def where_label(n: int, row: dict, titles: dict) -> str:
    return f"#{n} — {title_of(row, titles)}, {page_label(row)}"


def body() -> None:
    st.title(":material/fact_check: Verify a quote or claim", anchor=False)
    st.caption("Paste a sentence you want to cite. The app looks for it word for word, then after folding "
               "ligatures (ﬁ → fi), line-end hyphens, spacing and curly quotes, and otherwise shows the "
               "closest passages by meaning for you to judge.")
    lib = library()
    name = pick_collection("Collection", key="verify_collection")
    if name is None:
        return
    docs = lib.documents(name)
    if not docs:
        text_line(f"Collection “{name}” has no documents yet. Add PDFs on the Collections page.", muted=True)
        link(PAGES["collections"], "Add PDFs", ":material/library_books:")
        return
    with st.form("verify_form", border=False):
        quote = st.text_area("Quote or claim", key="verify_quote", height=110, max_chars=10_000,
                             placeholder="e.g. BERT is designed to pre-train deep bidirectional representations")
        source = st.selectbox("Look in", ["All documents"] + [d["source"] for d in docs], key="verify_source")
        submitted = st.form_submit_button("Check", type="primary")
    if submitted:
        if not (quote or "").strip():
            st.warning("Paste a quote or type a claim first.")
            return
        index = searchable_index(name)
        if index is None:
            return
        with st.spinner("Checking…"):
            check = verify_quote(quote, index, sources=None if source == "All documents" else [source],
                                 context=CONTEXT, cross_encoder_model=preferences().cross_encoder_model)
        st.session_state[RESULT_KEY] = {"collection": name, "version": lib.version(name), **check.to_dict()}

    result = st.session_state.get(RESULT_KEY)
    if not result or result["collection"] != name:
        return
    if lib.version(name) != result["version"]:
        st.warning("The collection changed since this check: press Check again.")
    note(VERDICT_KINDS.get(result["verdict"], "info"), result["message"])
    titles = document_titles(lib, name)
    if result["hits"]:
        n_hits = len(result["hits"])
        st.subheader(f"Where it occurs ({n_hits} place{'s' if n_hits != 1 else ''})", anchor=False)
        left, right = st.columns([3, 2], gap="large")
        with left:
            for n, hit in enumerate(result["hits"], start=1):
                with st.container(border=True):
                    text_line(f"#{n}", title_of(hit, titles), page_label(hit),
                              bold_first=True)
                    passage_box(hit["snippet"], "", snippet_span(hit))
        with right:
            show_page(lib, name, result["hits"], titles, "verify_hit_page")
    if result["closest"]:
        st.subheader("Closest passages by meaning", anchor=False)
        if result.get("reranker_detail"):
            text_line("Ordered by:", result["reranker_detail"], bold_first=True, muted=True, sep=" ")
        left, right = st.columns([3, 2], gap="large")
        with left:
            for row in result["closest"]:
                with st.container(border=True):
                    facts = [f"{row['score_type']} {row['score']:.4f}", f"TF-IDF cosine {row['cosine']:.3f}"]
                    if row.get("dense_cosine") is not None:
                        facts.append(f"dense cosine {row['dense_cosine']:.3f}")
                    text_line(f"#{row['rank']}", title_of(row, titles),
                              page_label(row), bold_first=True)
                    st.caption(" · ".join(facts))
                    passage_box(row["text"], result["quote"], short=True)
        with right:
            show_page(lib, name, result["closest"], titles, "verify_close_page")
    elif result["verdict"] == "not_found":
        st.info("No passage is close in meaning either: the collection may not cover this claim.")


def show_page(lib, name: str, rows: list[dict], titles: dict, key: str) -> None:
    labels = [where_label(n, row, titles) for n, row in enumerate(rows, start=1)]
    choice = st.selectbox("Show the PDF page of", labels, key=key)  # options are shown as plain text
    row = rows[labels.index(choice)]
    page = row.get("page_start") or row.get("page")
    png = page_image(lib, name, row.get("doc_id") or row["source"], page)
    if png:
        st.image(png, caption=f"PDF page {page}", width="stretch")


run_page("verify", body)
