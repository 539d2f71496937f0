"""Output shared by the app and the CLI: text shown as the characters it is, and safe exports.

* :mod:`.render` -- page labels, highlighting, short titles, terminal- and HTML-safe text;
* :mod:`.export` -- CSV and JSON of a comparison that spreadsheets cannot execute.
"""
