"""Settings & about: models and where they load from, the cross-encoder, data folder, chunking."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])  # the repo root: pages._ui and rag_core import from it
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import streamlit as st  # noqa: E402

from pages._ui import hand_over_to_app  # noqa: E402

hand_over_to_app()

from pages._ui import data_dir, library, preferences, run_page, show_error  # noqa: E402
from rag_core.models import resolve_model, select_device  # noqa: E402
from rag_core.preferences import MAX_CHUNK_SIZE, MIN_CHUNK_SIZE, preferences_path, update_preferences  # noqa: E402
from rag_core.retrieval import cross_encoder_status, forget_rerankers  # noqa: E402
from rag_core.settings import DATA_DIR_ENV, DEFAULT_CROSS_ENCODER_MODEL  # noqa: E402

ORIGIN_WORDS = {
    "bundled": ":material/check_circle: bundled with the app",
    "local_folder": ":material/check_circle: local folder",
    "hf_cache": ":material/check_circle: Hugging Face cache",
    "hub": ":material/public: downloaded from the hub on first use",
    "unavailable": ":material/cancel: not available",
}


@st.cache_resource(show_spinner="Looking for the cross-encoder…")
def reranker_status(name: str, generation: int):
    # generation changes when the user saves a new model, so the lookup is redone.
    return cross_encoder_status(name)


def body() -> None:
    st.title(":material/settings: Settings & about")
    prefs = preferences()
    flash = st.session_state.pop("settings_flash", None)
    if flash:
        st.success(flash, icon=":material/check_circle:")

    st.subheader("Models", anchor=False)
    embed = resolve_model(prefs.embedding_model)
    ce = resolve_model(prefs.cross_encoder_model) if prefs.cross_encoder_model else None
    st.markdown(
        f"- **Embedding model (bi-encoder):** `{prefs.embedding_model}` — "
        f"{ORIGIN_WORDS.get(embed.origin, embed.origin)}"
        f"  \n  {embed.detail}\n"
        + (f"- **Cross-encoder (reranker):** `{prefs.cross_encoder_model}` — {ORIGIN_WORDS.get(ce.origin, ce.origin)}"
           f"  \n  {ce.detail}\n" if ce else "- **Cross-encoder:** none chosen\n")
        + f"- **Device:** `{select_device()}` (set `RAG_CORE_DEVICE` to force one)"
    )
    status = reranker_status(prefs.cross_encoder_model, st.session_state.get("ce_generation", 0))
    if status.kind == "cross_encoder":
        st.success(f"**Hybrid search reorders its pool with the cross-encoder.** {status.detail}",
                   icon=":material/target:")
    else:
        st.info(f"**Hybrid search runs without a cross-encoder.** {status.explanation}",
                icon=":material/info:")

    with st.form("cross_encoder_form", border=True):
        st.markdown("**Use a cross-encoder**")
        st.caption(
            "Give the path of a folder holding a sentence-transformers cross-encoder (one with a config.json; "
            f"for example a saved copy of `{DEFAULT_CROSS_ENCODER_MODEL}`), or a Hugging Face hub name — a hub "
            "name works when it is in the local Hugging Face cache or the machine is online (it is downloaded "
            "once). Leave empty to use rank fusion of BM25 and embeddings instead."
        )
        name = st.text_input("Cross-encoder folder or hub name", value=prefs.cross_encoder_model, key="ce_name")
        buttons = st.container(horizontal=True)
        save = buttons.form_submit_button("Save and check", type="primary")
        reset = buttons.form_submit_button(f"Back to the default ({DEFAULT_CROSS_ENCODER_MODEL})")
    if save or reset:
        chosen = DEFAULT_CROSS_ENCODER_MODEL if reset else (name or "").strip()
        update_preferences(data_dir(), cross_encoder_model=chosen)
        forget_rerankers()
        st.session_state["ce_generation"] = st.session_state.get("ce_generation", 0) + 1
        found = resolve_model(chosen) if chosen else None
        if found is not None and not found.available:
            st.session_state["settings_flash"] = (f"Saved, but the cross-encoder cannot be loaded: {found.detail}. "
                                                  "Hybrid search uses rank fusion until it can.")
        else:
            st.session_state["settings_flash"] = "Saved the cross-encoder setting."
        st.rerun()

    st.subheader("Data folder", anchor=False)
    lib = library()
    st.markdown(f"Collections, their PDFs and indexes, and these settings are stored in  \n`{data_dir()}`")
    st.caption(f"Set the environment variable `{DATA_DIR_ENV}` before starting the app to use another folder. "
               f"Settings file: `{preferences_path(data_dir())}`. Collections: {len(lib.names())}.")

    st.subheader("Passages of new collections", anchor=False)
    with st.form("chunking_form", border=True):
        c1, c2 = st.columns(2)
        size = c1.number_input("Passage (chunk) size, characters", min_value=MIN_CHUNK_SIZE,
                               max_value=MAX_CHUNK_SIZE, value=prefs.chunk_size, step=100, key="chunk_size")
        overlap = c2.number_input("Overlap, characters", min_value=0, max_value=MAX_CHUNK_SIZE // 2,
                                  value=prefs.overlap, step=50, key="chunk_overlap")
        st.caption("Applies to collections created from now on; an existing collection keeps the size it was "
                   "built with. Smaller passages give more precise hits; larger ones keep more context.")
        if st.form_submit_button("Save passage settings"):
            try:
                update_preferences(data_dir(), chunk_size=int(size), overlap=int(overlap))
            except ValueError as exc:
                show_error(exc)
            else:
                st.session_state["settings_flash"] = f"New collections will use {int(size):,} / {int(overlap):,}."
                st.rerun()

    st.subheader("About", anchor=False)
    st.markdown(
        "- **TF-IDF**: cosine between TF-IDF vectors (English stop words removed, words and word pairs). "
        "Fast, literal, no model.\n"
        "- **Hybrid**: the union of the TF-IDF, BM25 and embedding top-*pool* candidates, ordered by the "
        "cross-encoder, or, when there is none, by fusing the BM25 and embedding scores (min-max normalised over "
        "the pool; measured best on SciFact). *cosine* is always the TF-IDF cosine, "
        "so the lists can be compared side by side.\n"
        "- **Exact**: a scan of the passages' text, literal, folded or by RE2 regular expression "
        "(which cannot hang on a pathological pattern)."
    )


run_page(body)
