"""The app's pages, in Streamlit's native ``pages/`` folder: each ``.py`` file directly in this
folder is one page, at the URL of its name (``/compare``). ``pages/common`` is the code they
share; Streamlit does not list sub-folders as pages."""
