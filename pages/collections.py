"""Collections: create, fill with PDFs (with progress), list, remove documents (with undo), correct and
import the documents' bibliographic records, rename, delete."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from pages.common.layout import PAGES, link, note, run_page, show_error, text_line
from pages.common.records_ui import records_section
from pages.common.state import (
    ACTIVE_KEY,
    flash,
    library,
    pick_collection,
    preferences,
    take_flash,
)
from rag_core.collections.ingest.embedding import embedding_view
from rag_core.errors import CollectionError
from rag_core.output.render import literal_html, seconds_text, short_title
from rag_core.pdf.extraction import ocr_note

MANAGE_KEY = "manage_collection"
REMOVE_KEY = "remove_pending"  # the document waiting for "Yes, remove it"
UNDO_KEY = "remove_undo"  # what the last removal took away, to put it back
STAGE_WORDS = {"read": "Reading", "extract": "Reading", "ocr": "Reading scanned pages (OCR)",
               "embed": "Embedding passages", "index": "Building the index",
               "done": "Done"}
EMBEDDING_REFRESH_S = 2.0  # how often the embedding status re-reads itself while it is shown
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
        st.session_state.pop(MANAGE_KEY, None)
        flash("success", f"Created collection “{info.name}”. Now add PDFs to it.")
        st.rerun()


def collections_table(infos) -> None:
    st.dataframe(pd.DataFrame([{
        "collection": i.name, "documents": i.documents, "pages": i.pages, "passages": i.chunks,
        "chunk size": i.chunk_size, "overlap": i.overlap,
        "updated": time.strftime("%Y-%m-%d %H:%M", time.localtime(i.updated)) if i.updated else "",
        "state": "damaged" if getattr(i, "error", None) else "ok",
    } for i in infos]), hide_index=True, width="stretch", key="collections_table", placeholder="")


def damaged_section(damaged) -> None:
    """Each damaged collection with its error and a way out: open it below to delete it."""
    for info in damaged:
        with st.container(border=True):
            note("error", info.error, lead=f"“{info.name}” cannot be read.")
            st.caption("Its stored PDFs are still in its folder. Delete it and add the PDFs again, or restore "
                       "the folder from a backup.")
            st.button("Open it below to delete it", key=f"open_damaged_{info.name}", icon=":material/build:",
                      on_click=lambda n=info.name: st.session_state.update({MANAGE_KEY: n, ACTIVE_KEY: n}))


# ---------------------------------------------------------------- adding PDFs


def upload_section(lib, name: str) -> None:
    st.subheader("Add PDFs", anchor=False)
    nonce = st.session_state.setdefault("uploader_nonce", 0)
    files = st.file_uploader(
        "PDF files (you can select many at once)", type=["pdf"], accept_multiple_files=True,
        key=f"uploader_{nonce}",
        help="Each file is read and cut into passages; as soon as that is done they can be searched by TF-IDF, "
             "BM25 and exact search, and their embeddings are computed in the background for hybrid search. "
             "Scanned pages are read by OCR after the other files are searchable (Settings: OCR). "
             "A file that cannot be read is skipped with the reason; the others are still added.",
    )
    # the bar beside the button that starts it: in view wherever the button is (a long file list above)
    button_col, bar_col = st.columns([1, 4], vertical_alignment="top")
    add = button_col.button("Add to collection", type="primary", disabled=not files, key="add_pdfs")
    if add and files:
        with bar_col.container(key="upload_progress"):
            bar = st.progress(0.0, text="Starting…")
            current = st.empty()  # the file being read, as literal text (progress text reads markdown)
        started = time.perf_counter()
        committed = []  # the files with a text layer are committed before the scans are read

        def on_progress(event) -> None:
            stage = STAGE_WORDS.get(event.stage, event.stage)
            if event.stage == "index":
                committed.append(True)
            if event.stage == "extract" and event.current_file:
                what = f"{stage} file {event.files_done + 1} of {event.files_total}"
                current.html(f'<div class="rc-line rc-muted">{literal_html(event.current_file)}</div>')
            elif event.stage == "embed":
                what = f"{stage} ({event.chunks_done:,} of {event.chunks_total:,})"
                current.empty()
            elif event.stage == "ocr" and event.ocr_pages_total:
                page = min(event.ocr_pages_done + 1, event.ocr_pages_total)
                what = f"{stage}: page {page} of {event.ocr_pages_total}"
                if committed:
                    what += " — the other files can be searched already"
                if event.current_file:
                    current.html(f'<div class="rc-line rc-muted">{literal_html(event.current_file)}</div>')
            else:
                what = stage
            if event.stage == "done":
                left = ""
            elif event.eta_s is None:
                left = " — estimating the time left"
            else:
                left = f" — about {seconds_text(event.eta_s)} left"
            bar.progress(min(max(event.fraction, 0.0), 1.0),
                         text=f"{what}{left} (elapsed {seconds_text(event.elapsed_s)})")

        pdfs = [(f.name, f.getvalue()) for f in files]  # the library takes names and bytes
        try:
            prefs = preferences()
            report = lib.add_pdfs(name, pdfs, progress=on_progress, create=False, embed="background",
                                  ocr=prefs.ocr_mode, ocr_lang=prefs.ocr_lang)
        except ValueError as exc:
            bar.empty()
            current.empty()
            show_error(exc)
            return
        bar.progress(1.0, text=f"Searchable after {seconds_text(time.perf_counter() - started)}.")
        st.session_state["last_report"] = {"collection": name, **report.to_dict()}
        st.session_state["uploader_nonce"] = nonce + 1  # empties the uploader
        st.rerun()

    report = st.session_state.get("last_report")
    if report and report.get("collection") == name:
        show_report(report)
    embedding_section(lib, name)


def embedding_section(lib, name: str) -> None:
    """How far the embeddings are, updating itself (no reload) until they are all there."""
    status = lib.embedding_status(name)
    if status.total == 0 or status.complete:
        return
    if status.interrupted:
        lib.embed_in_background(name)  # resume what a stopped run (or a restart of the app) left unfinished
    embedding_progress(name)


@st.fragment(run_every=EMBEDDING_REFRESH_S)
def embedding_progress(name: str) -> None:
    """Re-drawn every EMBEDDING_REFRESH_S seconds on its own: a bar with the time left, then 'ready'."""
    lib = library()
    view = embedding_view(lib.embedding_status(name), starting=lib.embedding_in_background(name))
    with st.container(key="embedding_status"):
        if view.kind == "ready":
            note("success", view.text)
        elif view.kind == "running":
            st.progress(view.fraction or 0.0, text=view.text)  # our own text: a progress text reads markdown
        elif view.kind == "error":
            note("error", view.text)
        else:
            note("info", view.text)
            if st.button("Compute the embeddings now", key="embed_now", icon=":material/memory:"):
                lib.embed_in_background(name)
                st.rerun(scope="fragment")


def show_report(report: dict) -> None:
    files = report["files"]
    added = [f for f in files if f["status"] == "ok"]
    skipped = len(files) - len(added)
    summary = (f"Last upload: {len(added)} of {len(files)} file(s) added, {report['chunks_added']:,} passages, "
               f"in {seconds_text(report['seconds'])}.")
    (st.success if not skipped else st.warning)(
        summary + (f" {skipped} skipped — see why below." if skipped else ""), icon=":material/download_done:")
    table = pd.DataFrame([{
        "file": f["source"],
        "result": STATUS_WORDS.get(f["status"], f"✕ skipped ({f['status'].replace('_', ' ')})"),
        "pages": f["pages"] or None,
        "passages": f["chunks"] or None,
        "details": f["reason"],
        "seconds": round(f["seconds"], 1) if f.get("seconds") else None,
    } for f in files])
    st.dataframe(table, hide_index=True, width="stretch", key="ingest_report", placeholder="–",
                 column_config={"details": st.column_config.TextColumn(width="large"),
                                "seconds": st.column_config.NumberColumn(
                                    format="%.1f", help="Seconds its reader spent on the file (its scanned pages "
                                                        "by OCR included); the commit of the batch is shared")})


# ---------------------------------------------------------------- documents, removal with undo


def documents_section(lib, name: str) -> None:
    docs = lib.documents(name)
    st.subheader("Documents", anchor=False)
    undo_offer(lib, name)
    if not docs:
        st.info("This collection has no documents yet: add PDFs above.", icon=":material/description:")
        return
    has_titles = any(d.get("title") for d in docs)
    st.dataframe(pd.DataFrame([{
        "document": d["source"],
        **({"title": short_title(d) if d.get("title") else ""} if has_titles else {}),
        "pages": d.get("pages"),
        "passages": d.get("chunks"),
        "size (KB)": round(d.get("bytes", 0) / 1024),
        "added": time.strftime("%Y-%m-%d %H:%M", time.localtime(d.get("added", 0))),
        "notes": "; ".join([*(d.get("warnings") or []), *([ocr_note(d["ocr"])] if d.get("ocr") else [])]),
    } for d in docs]), hide_index=True, width="stretch", key="documents_table", placeholder="")
    pick_col, button_col = st.columns([3, 1], vertical_alignment="bottom")
    source = pick_col.selectbox("Remove a document", [d["source"] for d in docs], key="remove_doc_pick")
    if button_col.button("Remove…", key="remove_doc", icon=":material/delete:", width="stretch"):
        st.session_state[REMOVE_KEY] = {"collection": name, "source": source}
    pending = st.session_state.get(REMOVE_KEY)
    if pending and pending["collection"] == name:
        confirm_removal(lib, name, docs, pending["source"])


def confirm_removal(lib, name: str, docs: list[dict], source: str) -> None:
    doc = next((d for d in docs if d["source"] == source), None)
    if doc is None:
        st.session_state.pop(REMOVE_KEY, None)
        return
    with st.container(border=True):
        note("warning", f"Remove “{source}” from “{name}”? Its passages leave the index and its stored PDF "
                        "is deleted. You can undo this right after.")
        yes, no = st.columns(2)
        if yes.button("Yes, remove it", type="primary", key="remove_doc_confirm", width="stretch"):
            path = lib.pdf_path(name, doc["doc_id"])
            data = path.read_bytes() if path is not None else None  # kept for the undo
            lib.remove_documents(name, [doc["doc_id"]])
            st.session_state.pop(REMOVE_KEY, None)
            st.session_state[UNDO_KEY] = {"collection": name, "source": source, "data": data}
            st.rerun()
        if no.button("Cancel", key="remove_doc_cancel", width="stretch"):
            st.session_state.pop(REMOVE_KEY, None)
            st.rerun()


def undo_offer(lib, name: str) -> None:
    undo = st.session_state.get(UNDO_KEY)
    if not undo or undo["collection"] != name:
        return
    with st.container(border=True):
        if undo["data"] is None:
            note("success", f"Removed “{undo['source']}” from “{name}”. Its PDF was not stored, so it cannot be "
                            "put back from here: add the file again.")
            st.session_state.pop(UNDO_KEY, None)
            return
        note("success", f"Removed “{undo['source']}” from “{name}”.")
        if st.button("Undo: put it back", key="undo_remove", icon=":material/undo:"):
            with st.spinner("Putting the document back…"):
                report = lib.add_pdfs(name, [(undo["source"], undo["data"])], create=False, embed="background")
            st.session_state.pop(UNDO_KEY, None)
            status = report.files[0].status if report.files else "nothing"
            if status == "ok":
                flash("success", f"Put “{undo['source']}” back into “{name}”.")
            else:
                flash("warning", f"“{undo['source']}” could not be put back ({status}): "
                                 f"{report.files[0].reason if report.files else ''}")
            st.rerun()


# ---------------------------------------------------------------- rename, delete


def manage_section(lib, name: str) -> None:
    st.subheader("Rename or delete", anchor=False)
    left, right = st.columns(2)
    with left, st.form("rename_form", border=True, clear_on_submit=True):
        new = st.text_input("New name", key="rename_to", value="")
        if st.form_submit_button("Rename"):
            if not new.strip():
                st.warning("Type the new name first.")
            else:
                info = lib.rename(name, new)
                st.session_state[ACTIVE_KEY] = info.name
                st.session_state.pop(MANAGE_KEY, None)
                flash("success", f"Renamed “{name}” to “{info.name}”.")
                st.rerun()
    with right, st.container(border=True):
        text_line(f"Delete “{name}”", "its documents, stored PDFs and index are removed from the data folder.",
                  bold_first=True)
        nonce = st.session_state.setdefault("delete_nonce", 0)  # a new box (empty) after each delete
        confirm = st.text_input("Type the collection's name to confirm", key=f"delete_confirm_{nonce}")
        if st.button("Delete collection", type="primary", key="delete_collection",
                     disabled=confirm.strip() != name):
            lib.delete(name)
            st.session_state.pop(ACTIVE_KEY, None)
            st.session_state.pop(MANAGE_KEY, None)
            st.session_state["delete_nonce"] = nonce + 1
            flash("success", f"Deleted collection “{name}”.")
            st.rerun()


def body() -> None:
    st.title(":material/library_books: Collections", anchor=False)
    st.caption("A collection is a set of PDFs searched together. Create one, add PDFs, then go to "
               "Compare or Verify.")
    lib = library()
    message = take_flash()
    if message:
        note(*message)

    infos = lib.list()
    damaged = [i for i in infos if getattr(i, "error", None)]
    top_left, top_right = st.columns([3, 2], gap="large")
    with top_right:
        create_section(lib)
    with top_left:
        if infos:
            collections_table(infos)
        else:
            st.info("No collection yet. Give your first collection a name on the right, then add PDFs.",
                    icon=":material/arrow_forward:")
        damaged_section(damaged)

    if not infos:
        return
    st.divider()
    name = pick_collection("Work on collection", key=MANAGE_KEY)
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
    records_section(lib, name)
    if info.documents:
        link(PAGES["compare"], "Compare searches in this collection", ":material/compare_arrows:")
        link(PAGES["verify"], "Verify a quote against this collection", ":material/fact_check:")
    st.divider()
    manage_section(lib, name)
    st.caption("Chunking for new collections and the cross-encoder are set on the Settings page.")
    link(PAGES["settings"], "Settings", ":material/settings:")


run_page("collections", body)
