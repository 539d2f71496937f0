"""Literature grounding: the Streamlit app on top of rag_core.

Run with ``streamlit run app.py``. Four pages: Collections, Compare, Verify, Settings.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # pages import the shared UI helpers and rag_core from here
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pages._ui import (  # noqa: E402
    APP_TITLE,
    PAGE_COLLECTIONS,
    PAGE_COMPARE,
    PAGE_SETTINGS,
    PAGE_VERIFY,
    data_dir,
)

st.set_page_config(page_title=APP_TITLE, page_icon="📑", layout="wide")

navigation = st.navigation(
    [
        st.Page(PAGE_COMPARE, title="Compare", icon="⚖️", default=True),
        st.Page(PAGE_VERIFY, title="Verify a quote", icon="🔎"),
        st.Page(PAGE_COLLECTIONS, title="Collections", icon="📚"),
        st.Page(PAGE_SETTINGS, title="Settings & about", icon="⚙️"),
    ]
)
with st.sidebar:
    st.caption(f"**{APP_TITLE}** — ground claims in your PDFs with TF-IDF, hybrid and exact search.")
    st.caption(f"Data folder: `{data_dir()}`")
navigation.run()
