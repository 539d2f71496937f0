"""Literature grounding: the Streamlit app on top of rag_core.

Run with ``streamlit run app.py``. Four pages: Compare, Verify, Collections, Settings.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # the pages import the shared UI helpers and rag_core from here
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

APP_TITLE = "Literature grounding"

# Page config and navigation come first, before rag_core (and torch) are imported by the
# pages, so the browser shows the right menu at once.
st.set_page_config(page_title=APP_TITLE, page_icon=":material/menu_book:", layout="wide")
navigation = st.navigation(
    [
        st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:", default=True),
        st.Page("pages/verify.py", title="Verify a quote", icon=":material/fact_check:"),
        st.Page("pages/collections.py", title="Collections", icon=":material/library_books:"),
        st.Page("pages/settings.py", title="Settings & about", icon=":material/settings:"),
    ],
    position="top",  # the three result lists of Compare need the full width
)
navigation.run()
