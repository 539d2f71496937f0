"""Settings & about: models and where they load from, the cross-encoder, data folder, chunking, OCR of scans."""

from __future__ import annotations

import streamlit as st

from pages.common.layout import note, run_page, show_error, text_line
from pages.common.state import data_dir, flash, library, preferences, take_flash
from rag_core.collections.preferences import preferences_path, update_preferences
from rag_core.models.loading import resolve_model, select_device
from rag_core.pdf.ocr import INSTALL_HINT, find_tesseract
from rag_core.retrieval.ranking import cross_encoder_status, forget_rerankers
from rag_core.settings import DATA_DIR_ENV, DEFAULT_CROSS_ENCODER_MODEL, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE

GENERATION_KEY = "ce_generation"  # bumped when the cross-encoder setting changes: look it up again
ORIGIN_WORDS = {
    "bundled": "✓ bundled with the app",
    "local_folder": "✓ local folder",
    "hf_cache": "✓ Hugging Face cache",
    "hub": "downloaded from the hub on first use",
    "unavailable": "✕ not available",
}


@st.cache_resource(show_spinner="Looking for the cross-encoder…")
def reranker_status(name: str, generation: int):
    # generation changes when the user saves a new model, so the lookup is redone.
    return cross_encoder_status(name)


def why_not(status) -> str:
    """Why hybrid search runs without the cross-encoder (the structured reason when rag_core has one)."""
    reason = getattr(status, "reason", None)
    return str(reason) if reason else status.detail.removeprefix("No cross-encoder: ")


def model_lines(role: str, name: str | None) -> None:
    if not name:
        text_line(f"{role}:", "none chosen", bold_first=True, sep=" ")
        return
    found = resolve_model(name)
    text_line(f"{role}:", f"{name} — {ORIGIN_WORDS.get(found.origin, found.origin)}", bold_first=True, sep=" ")
    text_line(found.detail, muted=True)


def reranker_section(prefs) -> None:
    status = reranker_status(prefs.cross_encoder_model, st.session_state.get(GENERATION_KEY, 0))
    if status.kind == "cross_encoder":
        note("success", status.detail, lead="Hybrid search reorders its pool with the cross-encoder.")
    elif prefs.cross_encoder_model and prefs.cross_encoder_model != DEFAULT_CROSS_ENCODER_MODEL:
        note("warning", why_not(status), lead="The cross-encoder cannot be loaded, so hybrid search fuses BM25 "
                                             "and embedding scores instead.")
    else:  # none chosen, or the default one, which needs a download this machine may not allow
        note("info", why_not(status), lead="Hybrid search runs without a cross-encoder.")

    with st.form("cross_encoder_form", border=True):
        st.markdown("**Use a cross-encoder**")
        st.caption(
            "Give the path of a folder holding a sentence-transformers cross-encoder (one with a config.json; "
            f"for example a saved copy of `{DEFAULT_CROSS_ENCODER_MODEL}`), or a Hugging Face hub name — a hub "
            "name works when it is in the local Hugging Face cache or the machine is online (it is downloaded "
            "once). Leave empty to fuse the BM25 and embedding scores instead."
        )
        name = st.text_input("Cross-encoder folder or hub name", value=prefs.cross_encoder_model, key="ce_name")
        buttons = st.container(horizontal=True)
        save = buttons.form_submit_button("Save and check", type="primary")
        reset = buttons.form_submit_button(f"Back to the default ({DEFAULT_CROSS_ENCODER_MODEL})")
    if save or reset:
        chosen = DEFAULT_CROSS_ENCODER_MODEL if reset else (name or "").strip()
        update_preferences(data_dir(), cross_encoder_model=chosen)
        forget_rerankers()
        generation = st.session_state.get(GENERATION_KEY, 0) + 1
        st.session_state[GENERATION_KEY] = generation
        status = reranker_status(chosen, generation)
        if not chosen:
            flash("info", "Saved: no cross-encoder; hybrid search fuses BM25 and embedding scores.")
        elif status.kind == "cross_encoder":
            flash("success", f"Saved: hybrid search reorders with {chosen}.")
        else:
            flash("warning", f"Saved, but the cross-encoder cannot be loaded: {why_not(status)} "
                             "Hybrid search fuses BM25 and embedding scores until it can.")
        st.rerun()


def chunking_section(prefs) -> None:
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
                flash("success", f"New collections will use {int(size):,} / {int(overlap):,}.")
                st.rerun()


OCR_MODE_WORDS = {
    "auto": "auto — only pages without a usable text layer (scans, fonts without a Unicode mapping)",
    "force": "force — read every page again (for a PDF whose own OCR layer is bad)",
    "off": "off — never (a scan is then skipped as having no text)",
}


def ocr_section(prefs) -> None:
    info = find_tesseract()
    if info is None:
        note("warning", f"Scanned PDFs cannot be read here: to {INSTALL_HINT}, then restart the app.",
             lead="Tesseract is not installed.")
    else:
        text_line("OCR engine:", f"{info.engine}; language packs: {', '.join(info.languages) or 'none'}",
                  bold_first=True, sep=" ")
    chosen = [p for p in prefs.ocr_lang.split("+") if p]
    options = list(info.languages) if info is not None and info.languages else chosen
    with st.form("ocr_form", border=True):
        mode = st.radio("Read scanned pages by OCR", list(OCR_MODE_WORDS), format_func=OCR_MODE_WORDS.get,
                        index=list(OCR_MODE_WORDS).index(prefs.ocr_mode), key="ocr_mode")
        langs = st.multiselect("Languages of the scans", options, default=[p for p in chosen if p in options],
                               key="ocr_langs", help="Tesseract's language packs installed on this machine "
                                                     "(more: apt-get install tesseract-ocr-deu, …)")
        st.caption("Applies to uploads from now on. Files with a text layer are searchable first; the scans "
                   "follow, read at 300 dpi on every core. Their words keep their place on the page, so a "
                   "passage found in a scan is marked on its page image.")
        if st.form_submit_button("Save OCR settings"):
            try:
                update_preferences(data_dir(), ocr_mode=mode, ocr_lang="+".join(langs) or "eng")
            except ValueError as exc:
                show_error(exc)
            else:
                flash("success", f"Uploads will read scanned pages: {mode}, {'+'.join(langs) or 'eng'}.")
                st.rerun()


def body() -> None:
    st.title(":material/settings: Settings & about", anchor=False)
    prefs = preferences()
    message = take_flash()
    if message:
        note(*message)

    st.subheader("Models", anchor=False)
    models = st.container(key="models_section")  # filled last: finding the models takes a moment
    with models:
        waiting = st.empty()
        waiting.html('<div class="rc-line rc-muted" data-testid="rc-models-loading">Looking for the models '
                     "(the embedding model and the cross-encoder)…</div>")

    st.subheader("Data folder", anchor=False)
    st.caption("Collections, their PDFs and indexes, and these settings are stored in")
    text_line(str(data_dir()), bold_first=True)
    st.caption(f"Set the environment variable `{DATA_DIR_ENV}` before starting the app to use another folder. "
               f"Collections: {len(library().names())}.")
    text_line("Settings file:", str(preferences_path(data_dir())), muted=True, sep=" ")

    st.subheader("Passages of new collections", anchor=False)
    chunking_section(prefs)

    st.subheader("Scanned PDFs (OCR)", anchor=False)
    ocr_section(prefs)

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

    with models:  # the rest of the page is drawn: now look for the models
        with st.spinner("Looking for the models…"):
            model_lines("Embedding model (bi-encoder)", prefs.embedding_model)
            model_lines("Cross-encoder (reranker)", prefs.cross_encoder_model)
            text_line("Device:", f"{select_device()} (set RAG_CORE_DEVICE to force one)", bold_first=True, sep=" ")
            reranker_section(prefs)
        waiting.empty()


run_page("settings", body)
