"""Literature grounding: the Streamlit app on top of rag_core.

Run with ``streamlit run app.py``. Five pages, one file each in ``pages/``: Compare
(``/compare``), Verify (``/verify``), Relevance lab (``/lab``), Collections (``/collections``),
Settings (``/settings``). This entry page (``/``) opens Compare.

Why Streamlit's native ``pages/`` mode and not ``st.navigation`` (measured in Chromium with
Streamlit 1.67, a fresh server for each run, every URL opened in a new tab):

* ``st.navigation`` with the pages in a folder named ``pages/``: Streamlit decides once per
  server process, before any script runs, that a ``pages/`` folder means its legacy mode,
  and only a run of this file's ``st.navigation`` switches that off. So the first visitor
  who opens ``/compare`` gets the legacy sidebar menu (app, collections, compare, …) without
  the app's layout, until somebody opens ``/``; and ``/compare`` as the default page of
  ``st.navigation`` lives at ``/`` only, so ``/compare`` said "Page not found". Making that
  work meant resetting ``PagesManager.uses_pages_directory``, a Streamlit internal.
* Native ``pages/`` mode: ``/``, ``/compare``, ``/verify``, ``/lab``, ``/collections`` and
  ``/settings`` each opened the right page, first visit or not, in every order tried.

So each page sets itself up (``pages.common.layout.setup_page``: wide layout, styles, and
the navigation across the top as ``st.page_link`` buttons; Streamlit's sidebar menu is off in
``.streamlit/config.toml``), and this file only sends ``/`` to Compare.
"""

from __future__ import annotations

import streamlit as st

st.switch_page("pages/compare.py")
