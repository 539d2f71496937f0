"""App state: the data folder, cached indexes, models and page images, the collection picker,
and the session keys the pages share. Every search, index and file operation is a rag_core call."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from pages.common.layout import PAGES, link, note, text_line
from rag_core.collections.library import Library
from rag_core.collections.preferences import Preferences, load_preferences
from rag_core.output.render import literal_html, short_title
from rag_core.settings import default_data_dir

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # the app's threads, not forked tokenizers

ACTIVE_KEY = "active_collection"  # plain session state (not a widget key): survives page switches
FLASH_KEY = "flash"  # (kind, text) shown once at the top of the next run of a page
COLLECTION_PARAM = "collection"  # the address's ?collection=NAME on every page that picks one
ADDRESS_SEEN_KEY = "address_seen"  # per kind, the address values this session applied or wrote
ADDRESS_MEMORY = 200  # values remembered per kind (a session writes one per change)
MISSING_KEY = "missing_collection"  # a collection the address named that is not there


# ---------------------------------------------------------------- data folder


def data_dir() -> Path:
    """Read on every run, so ``RAG_CORE_DATA_DIR`` set by a test or launcher is honoured."""
    return default_data_dir()


def library() -> Library:
    return Library(data_dir())


def preferences() -> Preferences:
    return load_preferences(data_dir())


def flash(kind: str, text: str) -> None:
    """Say ``text`` (literally) at the top of the page after the next rerun."""
    st.session_state[FLASH_KEY] = (kind, text)


def take_flash() -> tuple[str, str] | None:
    return st.session_state.pop(FLASH_KEY, None)


# ---------------------------------------------------------------- caches


@st.cache_resource(max_entries=6, show_spinner="Loading the collection's index…")
def _cached_index(root: str, name: str, token: str):
    # token is part of the key only: it changes with every new version and as vectors fill in.
    return Library(root).load_index(name)


def load_index(name: str):
    """The collection's index, cached by data folder, name and state (version, vectors so far)."""
    lib = library()
    return _cached_index(str(lib.root), name, lib.index_token(name))


@st.cache_resource(max_entries=6, show_spinner=False)
def _cached_passages(root: str, name: str, token: str):
    from rag_core.lab.judgments import passages_of

    lib = Library(root)
    return passages_of(_cached_index(root, name, token), lib.documents(name))


def passages(name: str):
    """The collection's passages keyed for the relevance lab (document SHA-256 and span), cached
    like its index: every run of Compare grades its lists with them."""
    lib = library()
    return _cached_passages(str(lib.root), name, lib.index_token(name))


@st.cache_resource(show_spinner="Loading the embedding model…")
def warm_bi_encoder(name: str):
    from rag_core.models.loading import load_bi_encoder

    return load_bi_encoder(name)


def searchable_index(name: str):
    """The collection's index with its embedding model loaded, or None (after saying so)."""
    index = load_index(name)
    if index is None:
        st.info("This collection has no searchable passages yet. Add PDFs on the Collections page.")
        return None
    if index.has_vectors:
        warm_bi_encoder(index.embedding_model)
    return index


@st.cache_data(max_entries=64, show_spinner=False)
def page_png(pdf_path: str, page: int, mtime: float, scale: float = 1.4) -> bytes:
    from rag_core.pdf.extraction import render_page_png

    return render_page_png(pdf_path, page, scale=scale)


@st.cache_data(max_entries=128, show_spinner=False)
def marked_page_images(pdf_path: str, mtime: float, target: dict, whole_page: bool, collection: str = "",
                       doc: str = "", version: str | None = None) -> list[dict]:
    """The page(s) of a place with the passage marked (cached by file, place, zoom and collection
    version); on a page read by OCR the document's OCR words locate it."""
    from rag_core.pdf.marks import mark_hit

    layer = library().ocr_layer(collection, doc) if collection and doc else None
    return [{"png": marked.png, "caption": marked.caption(), "found": marked.found, "ocr": marked.ocr,
             "page": marked.page}
            for marked in mark_hit(pdf_path, target, zoom=not whole_page, ocr_layer=layer)]


def passage_page(lib: Library, collection: str, row: dict, chunk: dict | None = None, *,
                 turn_key: str | None = None) -> None:
    """The PDF page(s) of a search row with its passage marked, as Verify marks evidence: an exact
    row's match, else the row's chunk (``chunk``: cut at its page starts) or text. With ``turn_key``
    (a session key) the view reads on: previous and next page, the passage's mark kept on its page."""
    from rag_core.output.passages import page_turn
    from rag_core.output.render import OCR_NOTE
    from rag_core.text.chunking import chunk_segments

    doc = row.get("doc_id") or row.get("source")
    page = row.get("page_start") or row.get("page")
    path = lib.pdf_path(collection, doc) if doc else None
    if not page:
        st.caption("No page number is known for this passage.")
        return
    if path is None:
        st.caption("The original PDF is not stored in this collection, so no page image can be shown.")
        return
    if row.get("match"):
        target = {"match": row["match"], "page": page, "page_label": row.get("page_label")}
        own = [page]
    elif chunk is not None and chunk_segments(chunk):
        target = {"pages": chunk_segments(chunk)}
        own = [segment["page"] for segment in target["pages"]]
    else:
        target = {"text": row.get("text") or "", "page": page, "page_label": row.get("page_label")}
        own = [page]
    record = next((d for d in lib.documents(collection) if doc in (d.get("doc_id"), d.get("source"))), {})
    turn = page_turn(own, total=record.get("pages"), page=st.session_state.get(turn_key) if turn_key else None)
    if turn_key:
        page_turner(turn, own, record.get("pages"), turn_key)
    try:
        with st.spinner("Marking the passage on its page…"):
            pages = marked_page_images(str(path), path.stat().st_mtime, target, True, collection, doc,
                                       lib.version(collection)) if turn.marked else []
            plain = {n: page_png(str(path), n, path.stat().st_mtime, 2.0) for n in turn.shown if n not in turn.marked}
    except (ValueError, OSError) as exc:  # PdfMarkError is a RagCoreError (a ValueError)
        text_line(f"The page image cannot be drawn: {exc}", muted=True)
        return
    marked_by_page = {marked["page"]: marked for marked in pages}
    for n in turn.shown:
        if n in plain:
            st.image(plain[n], width="stretch", output_format="PNG")
            text_line(f"Page {n}: reading on (the passage is on {page_words(own)})", muted=True)
        elif n in marked_by_page:
            marked = marked_by_page[n]
            st.image(marked["png"], width="stretch", output_format="PNG")  # PNG: JPEG would blur the mark
            text_line(marked["caption"], muted=True)
    if row.get("ocr") and turn.marked:
        text_line(OCR_NOTE, muted=True)


def page_words(pages) -> str:
    pages = sorted(set(pages))
    return f"page {pages[0]}" if len(pages) == 1 else f"pages {pages[0]}–{pages[-1]}"


def page_turner(turn, own: list[int], total: int | None, key: str) -> None:
    """Previous page, where the view is, back to the passage, next page (a rerun of the dialog only)."""
    def go(page: int | None) -> None:
        st.session_state[key] = page

    bar = st.container(horizontal=True, gap="small", vertical_alignment="center", key="page_turner")
    bar.button("Previous page", key=f"{key}_previous", icon=":material/chevron_left:", on_click=go,
               args=(turn.previous,), disabled=turn.previous is None)
    where = page_words(turn.shown) + (f" of {total}" if total else "")
    where += " · the passage's page" if turn.marked else ""
    bar.html(f'<div class="rc-line rc-muted" data-testid="rc-page-where">{literal_html(where.capitalize())}</div>',
             width="content")
    bar.button("Next page", key=f"{key}_next", icon=":material/chevron_right:", on_click=go, args=(turn.next,),
               disabled=turn.next is None)
    if not turn.at_passage:
        bar.button("Back to the passage", key=f"{key}_back", icon=":material/my_location:", on_click=go,
                   args=(None,))


def page_image(lib: Library, collection: str, doc: str, page: int | None) -> bytes | None:
    """PNG bytes of one page of a stored PDF, or None (with a note shown) when impossible."""
    if not page:
        st.caption("No page number is known for this passage.")
        return None
    path = lib.pdf_path(collection, doc)
    if path is None:
        st.caption("The original PDF is not stored in this collection, so no page image can be shown.")
        return None
    try:
        return page_png(str(path), int(page), path.stat().st_mtime)
    except (ValueError, OSError) as exc:
        text_line(f"The page image cannot be drawn: {exc}", muted=True)
        return None


def document_titles(lib: Library, name: str) -> dict[str, str]:
    """Short titles ("Devlin et al. 2018 · BERT: …", else the file name) by doc_id and by source."""
    titles: dict[str, str] = {}
    for doc in lib.documents(name):
        title = short_title(doc)
        titles[doc.get("doc_id") or doc["source"]] = title
        titles[doc["source"]] = title
    return titles


def title_of(row: dict, titles: dict[str, str]) -> str:
    """The short title of a result row's document (its file name when unknown)."""
    return titles.get(row.get("doc_id") or "") or titles.get(row.get("source") or "") or str(row.get("source"))


# ---------------------------------------------------------------- collection picker


def address_is_new(kind: str, value) -> bool:
    """Whether the address holds a ``value`` this session neither applied nor wrote: a link opened or a
    reload. A rerun may still carry an address the page has since replaced (the browser updates it a
    moment later), and that must not undo the change that replaced it."""
    return value not in st.session_state.get(ADDRESS_SEEN_KEY, {}).get(kind, [])


def remember_address(kind: str, value) -> None:
    seen = st.session_state.setdefault(ADDRESS_SEEN_KEY, {}).setdefault(kind, [])
    if value not in seen:
        seen.append(value)
        del seen[:-ADDRESS_MEMORY]


def pick_collection(label: str = "Collection", key: str = "pick_collection", *, where=st) -> str | None:
    """A selectbox of the collections that remembers the choice across pages (per tab) and in the
    address (``?collection=NAME``), so a reload or a link opens the same collection.

    A collection the address names that does not exist is said, never swapped silently. With no
    collection yet it shows what to do next and returns None.
    """
    names = library().names()
    wanted = st.query_params.get(COLLECTION_PARAM)
    if wanted and address_is_new("collection", wanted):  # a link or a reload: once per value
        remember_address("collection", wanted)
        if wanted in names:
            st.session_state[ACTIVE_KEY] = wanted
            st.session_state[key] = wanted
            st.session_state.pop(MISSING_KEY, None)
        else:
            st.session_state[MISSING_KEY] = wanted
    if not names:
        st.info("There is no collection yet. Create one and add PDFs on the **Collections** page.",
                icon=":material/library_books:")
        link(PAGES["collections"], "Go to Collections", ":material/library_books:")
        return None
    active = st.session_state.get(ACTIVE_KEY)
    index = names.index(active) if active in names else 0

    def remember():
        st.session_state[ACTIVE_KEY] = st.session_state[key]
        st.session_state.pop(MISSING_KEY, None)

    if key in st.session_state and st.session_state[key] not in names:
        del st.session_state[key]
    if key not in st.session_state:
        st.session_state[key] = names[index]
    choice = where.selectbox(label, names, key=key, on_change=remember)  # options are shown as plain text
    missing = st.session_state.get(MISSING_KEY)
    if missing and missing not in names:
        note("warning", f"There is no collection “{missing}” here (renamed or deleted?): showing “{choice}” "
                        "instead. Pick another one above.")
    if active is not None and active not in names and not missing:
        note("warning", f"The collection “{active}” is gone (renamed or deleted?): showing “{choice}” instead.")
    st.session_state[ACTIVE_KEY] = choice
    remember_address("collection", choice)
    if st.query_params.get(COLLECTION_PARAM) != choice:
        st.query_params[COLLECTION_PARAM] = choice
    return choice


def documents_by_key(lib, name: str) -> dict[str, dict]:
    """The collection's document records by doc_id and by file name (for the title chips)."""
    docs = {}
    for doc in lib.documents(name):
        docs[doc.get("doc_id") or doc["source"]] = doc
        docs[doc["source"]] = doc
    return docs
