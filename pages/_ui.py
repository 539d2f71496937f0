"""What the pages share: caches, the error guard, the collection picker, HTML helpers.

Only presentation lives here; every search, index and file operation is a rag_core call.
"""

from __future__ import annotations

import html
import logging
import re
import traceback
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from rag_core.exact import ExactSearchError
from rag_core.library import CollectionError, Library
from rag_core.models import ModelUnavailableError
from rag_core.preferences import Preferences, load_preferences
from rag_core.settings import default_data_dir

log = logging.getLogger("rag_core.app")

APP_TITLE = "Literature grounding"
PAGE_COLLECTIONS = "pages/collections.py"
PAGE_COMPARE = "pages/compare.py"
PAGE_VERIFY = "pages/verify.py"
PAGE_SETTINGS = "pages/settings.py"
ACTIVE_KEY = "active_collection"  # plain session state (not a widget key): survives page switches

MOVE_MARKERS = {"up": "▲", "down": "▼", "new": "★", "same": "="}


def hand_over_to_app() -> None:
    """On a first visit straight to a page's URL, Streamlit runs the file as an old-style
    ``pages/`` page; hand over to app.py, whose st.navigation sets up the menu, the wide
    layout and this page (``uses_pages_directory`` is Streamlit-internal)."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


# ---------------------------------------------------------------- data folder and caches


def data_dir() -> Path:
    """Read on every run, so ``RAG_CORE_DATA_DIR`` set by a test or launcher is honoured."""
    return default_data_dir()


def library() -> Library:
    return Library(data_dir())


def preferences() -> Preferences:
    return load_preferences(data_dir())


@st.cache_resource(max_entries=6, show_spinner="Loading the collection's index…")
def _cached_index(root: str, name: str, version: str | None):
    # version is part of the key only: a changed collection gets a new entry.
    return Library(root).load_index(name)


def load_index(name: str):
    """The collection's index, cached by data folder, name and live version."""
    lib = library()
    return _cached_index(str(lib.root), name, lib.version(name))


@st.cache_resource(show_spinner="Loading the embedding model…")
def warm_bi_encoder(name: str):
    from rag_core.models import load_bi_encoder

    return load_bi_encoder(name)


def searchable_index(name: str):
    """The collection's index with its embedding model loaded, or None (after saying so)."""
    index = load_index(name)
    if index is None:
        st.info("This collection has no searchable passages yet. Add PDFs on the Collections page.")
        return None
    if index.embeddings is not None:
        warm_bi_encoder(index.embedding_model)
    return index


@st.cache_data(max_entries=64, show_spinner=False)
def page_png(pdf_path: str, page: int, mtime: float, scale: float = 1.4) -> bytes:
    from rag_core.pdf import render_page_png

    return render_page_png(pdf_path, page, scale=scale)


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
        st.caption(f"The page image cannot be drawn: {exc}")
        return None


# ---------------------------------------------------------------- error guard


USER_ERRORS = (CollectionError, ExactSearchError, ModelUnavailableError, ValueError, FileNotFoundError)


def show_error(exc: BaseException) -> None:
    if isinstance(exc, ModelUnavailableError):
        st.error(f"{exc}\n\nSee **Settings** for where models load from.", icon=":material/extension:")
    elif isinstance(exc, USER_ERRORS):
        st.error(str(exc) or type(exc).__name__, icon=":material/warning:")
    else:
        log.error("Unexpected error in the app:\n%s", traceback.format_exc())
        short = str(exc).splitlines()[0][:200] if str(exc) else ""
        st.error(
            f"Something unexpected went wrong ({type(exc).__name__}{': ' + short if short else ''}). "
            "Nothing was changed by the failed step. Try again; if it keeps happening, reload the page "
            "and look at the terminal that runs the app for details.",
            icon=":material/error:",
        )


def run_page(body: Callable[[], None]) -> None:
    """Run a page body; any exception becomes a short ``st.error``, never a traceback."""
    page_style()
    try:
        body()
    except Exception as exc:  # noqa: BLE001 - the guard's purpose; st.rerun/st.stop are BaseException
        show_error(exc)


# ---------------------------------------------------------------- collection picker


def link(page: str, label: str, icon: str | None = None) -> None:
    """``st.page_link``; plain text when the page runs on its own (outside app.py's navigation)."""
    try:
        st.page_link(page, label=label, icon=icon)
    except Exception:  # noqa: BLE001 - StreamlitPageNotFoundError when a page runs standalone
        st.markdown(f"{icon or ''} {label} (open it from the app's sidebar)")


def pick_collection(label: str = "Collection", key: str = "pick_collection", *, where=st) -> str | None:
    """A selectbox of the collections that remembers the choice across pages (per tab).

    With no collection yet it shows what to do next and returns None.
    """
    names = library().names()
    if not names:
        st.info("There is no collection yet. Create one and add PDFs on the **Collections** page.",
                icon=":material/library_books:")
        link(PAGE_COLLECTIONS, "Go to Collections", ":material/library_books:")
        return None
    active = st.session_state.get(ACTIVE_KEY)
    index = names.index(active) if active in names else 0

    def remember():
        st.session_state[ACTIVE_KEY] = st.session_state[key]

    if key in st.session_state and st.session_state[key] not in names:
        del st.session_state[key]
    if key not in st.session_state:
        st.session_state[key] = names[index]
    choice = where.selectbox(label, names, key=key, on_change=remember)
    st.session_state[ACTIVE_KEY] = choice
    return choice


# ---------------------------------------------------------------- text and HTML


_WORD_RE = re.compile(r"[^\W_]{2,}", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """The query's content words, longest first (for highlighting only)."""
    try:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    except ImportError:  # pragma: no cover
        ENGLISH_STOP_WORDS = frozenset()
    words = {w.lower() for w in _WORD_RE.findall(query or "")}
    return sorted((w for w in words if w not in ENGLISH_STOP_WORDS), key=lambda w: (-len(w), w))


_LINE_BREAK = re.compile(r"(?<!\n)\n(?!\n)")


def highlight_html(text: str, query: str = "", spans: list[tuple[int, int]] | None = None,
                   reflow: bool = True) -> str:
    """``text`` as safe HTML: query words marked, ``spans`` (character offsets) marked strongly.

    Every piece of ``text`` goes through ``html.escape``; only our own <mark> tags are added.
    ``reflow`` joins the PDF's line breaks (a single newline) into spaces for reading; blank
    lines stay paragraph breaks.
    """
    def esc(piece: str) -> str:
        piece = html.escape(piece)
        return _LINE_BREAK.sub(" ", piece) if reflow else piece

    text = text or ""
    marks: list[tuple[int, int, str]] = []
    for start, end in spans or []:
        if 0 <= start < end <= len(text):
            marks.append((start, end, "hit"))
    terms = query_terms(query)
    if terms:
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\w*", re.IGNORECASE)
        for m in pattern.finditer(text):
            if not any(s < m.end() and m.start() < e for s, e, _ in marks if _ == "hit"):
                marks.append((m.start(), m.end(), "term"))
    marks.sort()
    out, pos = [], 0
    for start, end, kind in marks:
        if start < pos:
            continue
        out.append(esc(text[pos:start]))
        css = "rc-hit" if kind == "hit" else "rc-term"
        out.append(f'<mark class="{css}">{esc(text[start:end])}</mark>')
        pos = end
    out.append(esc(text[pos:]))
    return "".join(out)


PASSAGE_CSS = """
<style>
[data-testid="stMainBlockContainer"] {padding-top: 2.5rem; padding-left: 1.5rem; padding-right: 1.5rem;}
.rc-passage {white-space: pre-wrap; font-family: ui-serif, Georgia, serif; font-size: 0.98rem;
  line-height: 1.55; padding: 0.8rem 1rem; border-radius: 0.5rem;
  background: rgba(127,127,127,0.07); border: 1px solid rgba(127,127,127,0.25);
  max-height: 30rem; overflow-y: auto;}
mark.rc-term {background: #fff1a8; color: inherit; padding: 0 1px; border-radius: 2px;}
mark.rc-hit {background: #ffc36b; color: inherit; font-weight: 600; padding: 0 1px; border-radius: 2px;}
@media (prefers-color-scheme: dark) { mark.rc-term {background:#6b5d00; color:#fff;}
  mark.rc-hit {background:#8a4b00; color:#fff;} }
</style>
"""


def page_style() -> None:
    """The app's few style rules (passage box, highlight colours, less space above the title)."""
    st.html(PASSAGE_CSS)


def passage_box(text: str, query: str = "", spans: list[tuple[int, int]] | None = None, *,
                short: bool = False) -> None:
    style = ' style="max-height: 14rem"' if short else ""
    st.markdown(f'<div class="rc-passage"{style}>{highlight_html(text, query, spans)}</div>',
                unsafe_allow_html=True)


def page_text(row: dict) -> str:
    """"12" or "12–13" for a row's PDF page(s); "?" when unknown."""
    start, end = row.get("page_start") or row.get("page"), row.get("page_end")
    if not start:
        return "?"
    return f"{start}–{end}" if end and end != start else str(start)


def page_note(row: dict) -> str:
    label = row.get("page_label")
    start = row.get("page_start") or row.get("page")
    if label and str(label) != str(start):
        return f"PDF page {page_text(row)} (printed page {label})"
    return f"page {page_text(row)}"


def fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = max(0, round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"
