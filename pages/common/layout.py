"""Page layout: page setup with the top navigation, literal text elements, the error guard.

Text from a document or a user goes only through the helpers here that escape it into
``st.html`` (which reads no markdown), never into ``st.markdown``, ``st.caption``, alert
bodies or image captions, which would render ``**bold**``, links and remote images.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterable

import streamlit as st

from rag_core.output.render import highlight_html, literal_html

log = logging.getLogger("rag_core.app")

APP_TITLE = "Literature grounding"
# key: (file, label in the navigation, icon). The URL of a page is its file name: /compare.
NAVIGATION = {
    "compare": ("pages/compare.py", "Compare", ":material/compare_arrows:"),
    "verify": ("pages/verify.py", "Verify a quote", ":material/fact_check:"),
    "lab": ("pages/lab.py", "Relevance lab", ":material/science:"),
    "collections": ("pages/collections.py", "Collections", ":material/library_books:"),
    "settings": ("pages/settings.py", "Settings & about", ":material/settings:"),
}
PAGES = {key: file for key, (file, _, _) in NAVIGATION.items()}

CSS = """
<style>
[data-testid="stMainBlockContainer"] {padding-top: 1.2rem; padding-left: 1.5rem; padding-right: 1.5rem;}
@media (max-width: 1440px) {[data-testid="stMainBlockContainer"] {padding-left: 1rem; padding-right: 1rem;}}
.rc-passage {white-space: pre-wrap; font-family: ui-serif, Georgia, serif; font-size: 0.98rem;
  line-height: 1.55; padding: 0.8rem 1rem; border-radius: 0.5rem; overflow-wrap: anywhere;
  background: rgba(127,127,127,0.07); border: 1px solid rgba(127,127,127,0.25);
  max-height: 30rem; overflow-y: auto;}
.rc-passage.rc-short {max-height: 14rem;}
mark.rc-term {background: #fff1a8; color: inherit; padding: 0 1px; border-radius: 2px;}
mark.rc-hit {background: #ffc36b; color: inherit; font-weight: 600; padding: 0 1px; border-radius: 2px;}
.rc-line {line-height: 1.5; overflow-wrap: anywhere;}
.rc-line.rc-muted {color: rgba(49, 51, 63, 0.65); font-size: 0.875rem;}
.rc-line.rc-heading {font-size: 1.15rem; font-weight: 600; margin: 0.4rem 0 0.2rem;}
.rc-note {padding: 0.75rem 1rem; border-radius: 0.5rem; line-height: 1.5; white-space: pre-wrap;
  overflow-wrap: anywhere;}
.rc-note-info {background: rgba(28, 131, 225, 0.1); color: rgb(0, 66, 128);}
.rc-note-success {background: rgba(33, 195, 84, 0.1); color: rgb(23, 114, 51);}
.rc-note-warning {background: rgba(255, 227, 18, 0.15); color: rgb(146, 108, 5);}
.rc-note-error {background: rgba(255, 43, 43, 0.09); color: rgb(125, 53, 59);}
del.rc-del {background: #fde2e1; color: #8a1c1c; text-decoration: line-through; padding: 0 2px; border-radius: 2px;}
ins.rc-ins {background: #d9f2e0; color: #14612e; text-decoration: underline; font-weight: 600; padding: 0 2px;
  border-radius: 2px;}
table.rc-cues {border-collapse: collapse; margin: 0.3rem 0 0.6rem; font-size: 0.95rem;}
table.rc-cues th {text-align: left; padding: 0.25rem 0.8rem 0.25rem 0; font-weight: 600; white-space: nowrap;}
table.rc-cues td {padding: 0.25rem 1.2rem 0.25rem 0; overflow-wrap: anywhere;}
table.rc-cues tr.rc-cue td em {background: #fde2e1; font-style: italic; padding: 0 3px; border-radius: 2px;}
table.rc-cues tr.rc-cue-low td em {background: rgba(127,127,127,0.12);}
.rc-cue-none {color: rgba(49, 51, 63, 0.55);}
.rc-brand {font-weight: 700; white-space: nowrap; padding: 0.35rem 0.75rem 0.35rem 0;}
</style>
"""
NOTE_SIGNS = {"success": "✓", "warning": "⚠", "error": "✕"}  # (the font has no good "info" sign)


# ---------------------------------------------------------------- page setup and navigation


def link(page: str, label: str, icon: str | None = None, *, query_params: dict | None = None) -> None:
    """``st.page_link`` (with the address's ``query_params``); plain text when a page file runs outside
    the app (a test starting it)."""
    try:
        st.page_link(page, label=label, icon=icon, query_params=query_params)
    except Exception:  # noqa: BLE001 - StreamlitPageNotFoundError when a page runs standalone
        st.markdown(f"{icon or ''} {label}")


def setup_page(key: str) -> None:
    """Title, wide layout, the app's styles and the navigation across the top.

    Also starts loading the embedding model in the background (once per server), so the
    page is usable at once; the navigation bar says while it loads.
    """
    from rag_core.models.loading import warm_up_bi_encoder

    _, label, _ = NAVIGATION[key]
    st.set_page_config(page_title=f"{label} · {APP_TITLE}", page_icon=":material/menu_book:", layout="wide")
    st.html(CSS)
    warm = warm_up_bi_encoder()
    with st.container(horizontal=True, gap="small", vertical_alignment="center"):
        st.html(f'<div class="rc-brand">{APP_TITLE}</div>', width="content")
        for file, title, icon in NAVIGATION.values():
            link(file, title, icon)
        if warm.state == "loading":
            st.html('<div class="rc-line rc-muted" data-testid="rc-model-loading">Loading the embedding model '
                    "in the background: lexical and exact search work now, hybrid search as soon as it is ready."
                    "</div>")
        elif warm.state == "failed":
            st.html(f'<div class="rc-line rc-muted">The embedding model could not be loaded: '
                    f"{literal_html(warm.error)}</div>")


# ---------------------------------------------------------------- literal text


def line_html(*parts: object, bold_first: bool = False, muted: bool = False, heading: bool = False,
              sep: str = " · ") -> str:
    """The HTML of :func:`text_line` (every part escaped), for drawing several lines as one element."""
    pieces = [literal_html(p) for p in parts if p not in (None, "")]
    if bold_first and pieces:
        pieces[0] = f"<strong>{pieces[0]}</strong>"
    css = "rc-line" + (" rc-muted" if muted else "") + (" rc-heading" if heading else "")
    return f'<div class="{css}">{literal_html(sep).join(pieces)}</div>'


def text_line(*parts: object, bold_first: bool = False, muted: bool = False, heading: bool = False,
              sep: str = " · ") -> None:
    """One line of literal text: the parts joined by ``sep``, the first one bold if asked."""
    st.html(line_html(*parts, bold_first=bold_first, muted=muted, heading=heading, sep=sep))


def note(kind: str, text: str, *, lead: str | None = None) -> None:
    """An info/success/warning/error box whose text is shown literally (``lead``: bold, ours)."""
    head = f"<strong>{literal_html(lead)}</strong> " if lead else ""
    sign = f"{NOTE_SIGNS[kind]} " if kind in NOTE_SIGNS else ""
    st.html(f'<div class="rc-note rc-note-{kind}" role="status">{sign}{head}{literal_html(text)}</div>')


def passage_box(text: str, query: str = "", spans: Iterable[tuple[int, int]] | None = None, *,
                short: bool = False) -> None:
    """A passage as the PDF has it, query words marked, ``spans`` marked strongly."""
    css = "rc-passage rc-short" if short else "rc-passage"
    st.html(f'<div class="{css}">{highlight_html(text, query, spans)}</div>')


# ---------------------------------------------------------------- error guard


def show_error(exc: BaseException) -> None:
    from rag_core.errors import RagCoreError
    from rag_core.models.loading import ModelUnavailableError

    if isinstance(exc, ModelUnavailableError):
        note("error", f"{exc}\n\nSee Settings for where models load from.")
    elif isinstance(exc, (RagCoreError, ValueError, FileNotFoundError)):
        note("error", str(exc) or type(exc).__name__)
    else:
        log.error("Unexpected error in the app:\n%s", traceback.format_exc())
        short = str(exc).splitlines()[0][:200] if str(exc) else ""
        note("error", f"Something unexpected went wrong ({type(exc).__name__}{': ' + short if short else ''}). "
                      "Nothing was changed by the failed step. Try again; if it keeps happening, reload the page "
                      "and look at the terminal that runs the app for details.")


def run_page(key: str, body: Callable[[], None]) -> None:
    """Set the page up and run its body; any exception becomes a short message, never a traceback."""
    setup_page(key)
    try:
        body()
    except Exception as exc:  # noqa: BLE001 - the guard's purpose; st.rerun/st.stop are BaseException
        show_error(exc)
