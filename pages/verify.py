"""Verify: is a quote in the collection word for word, after folding, or only close in meaning?"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])  # the repo root: pages._ui and rag_core import from it
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import streamlit as st  # noqa: E402
from pages._ui import hand_over_to_app  # noqa: E402

hand_over_to_app()  # before the page's own imports and widgets

from pages._ui import (  # noqa: E402
    PAGE_COLLECTIONS,
    library,
    link,
    page_image,
    page_note,
    passage_box,
    pick_collection,
    preferences,
    run_page,
    searchable_index,
)
from rag_core.comparison import verify_quote  # noqa: E402

RESULT_KEY = "verify_result"
CONTEXT = 300
VERDICTS = {
    "verbatim": (":material/check_circle:", st.success),
    "near_verbatim": (":material/help:", st.warning),
    "related": (":material/help:", st.warning),
    "not_found": (":material/help:", st.warning),
}


def snippet_span(hit: dict, context: int = CONTEXT) -> list[tuple[int, int]]:
    """Where ``match`` sits in ``snippet`` (the snippet is the match with ``context`` around it)."""
    offset = (3 if hit["start"] > context else 0) + min(hit["start"], context)
    length = len(hit["match"])
    if hit["snippet"][offset:offset + length] == hit["match"]:
        return [(offset, offset + length)]
    found = hit["snippet"].find(hit["match"])
    return [(found, found + length)] if found >= 0 else []


def body() -> None:
    st.title(":material/fact_check: Verify a quote or claim")
    st.caption("Paste a sentence you want to cite. The app looks for it word for word, then after folding "
               "ligatures (ﬁ → fi), line-end hyphens, spacing and curly quotes, and otherwise shows the "
               "closest passages by meaning for you to judge.")
    lib = library()
    name = pick_collection("Collection", key="verify_collection")
    if name is None:
        return
    docs = lib.documents(name)
    if not docs:
        st.info(f"Collection “{name}” has no documents yet. Add PDFs on the Collections page.", icon=":material/description:")
        link(PAGE_COLLECTIONS, "Add PDFs", ":material/library_books:")
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
    icon, box = VERDICTS.get(result["verdict"], (":material/help:", st.info))
    box(result["message"], icon=icon)
    if result["hits"]:
        n_hits = len(result["hits"])
        st.markdown(f"##### Where it occurs ({n_hits} place{'s' if n_hits != 1 else ''})")
        left, right = st.columns([3, 2], gap="large")
        labels = []
        with left:
            for n, hit in enumerate(result["hits"], start=1):
                labels.append(f"#{n} — {hit['source']}, {page_note(hit)}")
                with st.container(border=True):
                    st.markdown(f"**#{n}** · {hit['source']} · {page_note(hit)}")
                    passage_box(hit["snippet"], "", snippet_span(hit))
        with right:
            show_page(lib, name, result["hits"], labels, "verify_hit_page")
    if result["closest"]:
        st.markdown("##### Closest passages by meaning")
        if result.get("reranker_detail"):
            st.caption(f"Ordered by: {result['reranker_detail']}")
        left, right = st.columns([3, 2], gap="large")
        labels = []
        with left:
            for row in result["closest"]:
                labels.append(f"#{row['rank']} — {row['source']}, {page_note(row)}")
                with st.container(border=True):
                    facts = [f"{row['score_type']} {row['score']:.4f}", f"TF-IDF cosine {row['cosine']:.3f}"]
                    if row.get("dense_cosine") is not None:
                        facts.append(f"dense cosine {row['dense_cosine']:.3f}")
                    st.markdown(f"**#{row['rank']}** · {row['source']} · {page_note(row)}")
                    st.caption(" · ".join(facts))
                    passage_box(row["text"], result["quote"], short=True)
        with right:
            show_page(lib, name, result["closest"], labels, "verify_close_page")
    elif result["verdict"] == "not_found":
        st.info("No passage is close in meaning either: the collection may not cover this claim.")


def show_page(lib, name: str, rows: list[dict], labels: list[str], key: str) -> None:
    choice = st.selectbox("Show the PDF page of", labels, key=key)
    row = rows[labels.index(choice)]
    png = page_image(lib, name, row.get("doc_id") or row["source"], row.get("page_start") or row.get("page"))
    if png:
        st.image(png, caption=choice, width="stretch")


run_page(body)
