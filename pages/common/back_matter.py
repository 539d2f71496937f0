"""The switch that brings reference lists and other back matter into a page's searches, and the
words a row of back matter is shown with (:mod:`rag_core.text.back_matter`)."""

from __future__ import annotations

import streamlit as st

LABEL = "Include reference lists"
HELP = ("Reference lists, acknowledgements, checklists and indexes are found when a PDF is added and left out "
        "of the searches, so a bibliography never answers a question. Switch on to search them too. "
        "(Collections added before this was detected have nothing marked: add their PDFs again to mark it.)")
WORDS = {"references": "reference list", "acknowledgements": "acknowledgements", "checklist": "checklist",
         "declaration": "declaration", "colophon": "colophon", "index": "index"}


def back_matter_switch(key: str) -> bool:
    """The toggle (off by default); True: back matter is searched too."""
    st.session_state.setdefault(key, False)
    return bool(st.toggle(LABEL, key=key, help=HELP))


def back_matter_word(row: dict) -> str:
    """ "reference list" (or the like) for a row of back matter, "" otherwise."""
    kind = row.get("back_matter")
    return WORDS.get(kind, "back matter") if kind else ""
