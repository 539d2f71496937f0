"""Collections: create, fill with PDFs (with progress), list, remove documents, rename, delete."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])  # the repo root: pages._ui and rag_core import from it
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import streamlit as st  # noqa: E402

from pages._ui import hand_over_to_app  # noqa: E402

hand_over_to_app()

import pandas as pd  # noqa: E402

from pages._ui import (  # noqa: E402
    ACTIVE_KEY,
    PAGE_COMPARE,
    PAGE_SETTINGS,
    PAGE_VERIFY,
    fmt_seconds,
    library,
    link,
    pick_collection,
    preferences,
    run_page,
    show_error,
)
from rag_core.library import CollectionError, IngestProgress  # noqa: E402

STAGE_WORDS = {"extract": "Reading", "embed": "Embedding passages", "index": "Building the index", "done": "Done"}
STATUS_WORDS = {"ok": "✓ added", "duplicate": "↩ duplicate"}


def create_section(lib) -> None:
    prefs = preferences()
    with st.form("create_collection", clear_on_submit=True, border=True):
        st.markdown("**New collection**")
        name = st.text_input("Name", key="new_collection_name", placeholder="e.g. dense retrieval papers",
                             max_chars=100)
        st.caption(f"New collections cut text into passages of {prefs.chunk_size:,} characters with "
                   f"{prefs.overlap:,} characters of overlap (change this under Settings).")
        submitted = st.form_submit_button("Create collection", type="primary")
    if submitted:
        if not (name or "").strip():
            st.warning("Type a name for the new collection first.")
            return
        try:
            info = lib.create(name, chunk_size=prefs.chunk_size, overlap=prefs.overlap,
                              embedding_model=prefs.embedding_model)
        except ValueError as exc:
            show_error(exc)
            return
        st.session_state[ACTIVE_KEY] = info.name
        st.session_state.pop("manage_collection", None)
        st.session_state["flash"] = f"Created collection “{info.name}”. Now add PDFs to it."
        st.rerun()


def upload_section(lib, name: str) -> None:
    st.markdown("#### Add PDFs")
    nonce = st.session_state.setdefault("uploader_nonce", 0)
    files = st.file_uploader(
        "PDF files (you can select many at once)", type=["pdf"], accept_multiple_files=True,
        key=f"uploader_{nonce}",
        help="Each file is read, cut into passages and embedded. A file that cannot be read is skipped "
             "with the reason; the others are still added.",
    )
    add = st.button("Add to collection", type="primary", disabled=not files, key="add_pdfs")
    if add and files:
        bar = st.progress(0.0, text="Starting…")
        started = time.perf_counter()

        def on_progress(event: IngestProgress) -> None:
            stage = STAGE_WORDS.get(event.stage, event.stage)
            if event.stage == "extract" and event.current_file:
                what = f"{stage} file {event.files_done + 1} of {event.files_total}: {event.current_file}"
            elif event.stage == "embed":
                what = f"{stage} ({event.chunks_done:,} of {event.chunks_total:,})"
            else:
                what = stage
            if event.stage == "done":
                left = ""
            elif event.eta_s is None:
                left = " — estimating the time left"
            else:
                left = f" — about {fmt_seconds(event.eta_s)} left"
            bar.progress(min(max(event.fraction, 0.0), 1.0),
                         text=f"{what}{left} (elapsed {fmt_seconds(event.elapsed_s)})")

        try:
            report = lib.add_pdfs(name, files, progress=on_progress, create=False)
        except ValueError as exc:
            bar.empty()
            show_error(exc)
            return
        bar.progress(1.0, text=f"Finished in {fmt_seconds(time.perf_counter() - started)}.")
        st.session_state["last_report"] = {"collection": name, **report.to_dict()}
        st.session_state["uploader_nonce"] = nonce + 1  # empties the uploader
        st.rerun()

    report = st.session_state.get("last_report")
    if report and report.get("collection") == name:
        show_report(report)


def show_report(report: dict) -> None:
    files = report["files"]
    added = [f for f in files if f["status"] == "ok"]
    skipped = len(files) - len(added)
    summary = (f"Last upload: {len(added)} of {len(files)} file(s) added, {report['chunks_added']:,} passages, "
               f"in {fmt_seconds(report['seconds'])}.")
    (st.success if not skipped else st.warning)(
        summary + (f" {skipped} skipped — see why below." if skipped else ""), icon=":material/download_done:")
    table = pd.DataFrame([{
        "file": f["source"],
        "result": STATUS_WORDS.get(f["status"], f"✕ skipped ({f['status'].replace('_', ' ')})"),
        "pages": f["pages"] or None,
        "passages": f["chunks"] or None,
        "details": f["reason"],
        "seconds": round(f["seconds"], 1),
    } for f in files])
    st.dataframe(table, hide_index=True, width="stretch", key="ingest_report",
                 column_config={"details": st.column_config.TextColumn(width="large")})


def documents_section(lib, name: str) -> None:
    docs = lib.documents(name)
    st.markdown("#### Documents")
    if not docs:
        st.info("This collection has no documents yet: add PDFs above.", icon=":material/description:")
        return
    table = pd.DataFrame([{
        "document": d["source"],
        "pages": d.get("pages"),
        "passages": d.get("chunks"),
        "size (KB)": round(d.get("bytes", 0) / 1024),
        "added": time.strftime("%Y-%m-%d %H:%M", time.localtime(d.get("added", 0))),
        "notes": "; ".join(d.get("warnings") or []),
    } for d in docs])
    st.dataframe(table, hide_index=True, width="stretch", key="documents_table")
    with st.popover("Remove a document"):
        doc = st.selectbox("Document", [d["source"] for d in docs], key="remove_doc_pick")
        if st.button("Remove this document", key="remove_doc", type="primary"):
            removed = lib.remove_documents(name, [doc])
            st.session_state["flash"] = f"Removed {', '.join(removed)} from “{name}”."
            st.rerun()


def manage_section(lib, name: str) -> None:
    st.markdown("#### Rename or delete")
    left, right = st.columns(2)
    with left, st.form("rename_form", border=True):
        new = st.text_input("New name", key="rename_to", value="")
        if st.form_submit_button("Rename"):
            if not new.strip():
                st.warning("Type the new name first.")
            else:
                info = lib.rename(name, new)
                st.session_state[ACTIVE_KEY] = info.name
                st.session_state.pop("manage_collection", None)
                st.session_state["flash"] = f"Renamed “{name}” to “{info.name}”."
                st.rerun()
    with right, st.container(border=True):
        st.markdown(f"**Delete “{name}”** — its documents and index are removed from the data folder.")
        confirm = st.text_input("Type the collection's name to confirm", key="delete_confirm")
        if st.button("Delete collection", type="primary", key="delete_collection",
                     disabled=confirm.strip() != name):
            lib.delete(name)
            st.session_state.pop(ACTIVE_KEY, None)
            st.session_state.pop("manage_collection", None)
            st.session_state.pop("delete_confirm", None)
            st.session_state["flash"] = f"Deleted collection “{name}”."
            st.rerun()


def body() -> None:
    st.title(":material/library_books: Collections")
    st.caption("A collection is a set of PDFs searched together. Create one, add PDFs, then go to "
               "Compare or Verify.")
    lib = library()
    flash = st.session_state.pop("flash", None)
    if flash:
        st.success(flash, icon=":material/check_circle:")

    infos = lib.list()
    damaged = sorted(set(lib.names()) - {i.name for i in infos})
    top_left, top_right = st.columns([3, 2], gap="large")
    with top_right:
        create_section(lib)
    with top_left:
        if infos:
            st.dataframe(pd.DataFrame([{
                "collection": i.name, "documents": i.documents, "pages": i.pages, "passages": i.chunks,
                "chunk size": i.chunk_size, "overlap": i.overlap,
                "updated": time.strftime("%Y-%m-%d %H:%M", time.localtime(i.updated)),
            } for i in infos]), hide_index=True, width="stretch", key="collections_table")
        elif not damaged:
            st.info("No collection yet. Give your first collection a name on the right, then add PDFs.",
                    icon=":material/arrow_forward:")

        if damaged:
            st.warning(f"Damaged, cannot be read: {', '.join(damaged)}. Pick it below to see why, then "
                       "delete it and add its PDFs again.", icon=":material/warning:")

    if not lib.names():
        return
    st.divider()
    name = pick_collection("Work on collection", key="manage_collection")
    if name is None:
        return
    try:
        info = lib.info(name)
    except CollectionError as exc:
        show_error(exc)
        manage_section(lib, name)
        return
    a, b, c, d = st.columns(4)
    a.metric("Documents", info.documents)
    b.metric("Pages", f"{info.pages:,}")
    c.metric("Passages", f"{info.chunks:,}")
    d.metric("Passage size", f"{info.chunk_size:,} / {info.overlap:,}", help="characters / overlap")
    upload_section(lib, name)
    documents_section(lib, name)
    if info.documents:
        link(PAGE_COMPARE, "Compare searches in this collection", ":material/compare_arrows:")
        link(PAGE_VERIFY, "Verify a quote against this collection", ":material/fact_check:")
    st.divider()
    manage_section(lib, name)
    st.caption("Chunking for new collections and the cross-encoder are set on the Settings page.")
    link(PAGE_SETTINGS, "Settings", ":material/settings:")


run_page(body)
