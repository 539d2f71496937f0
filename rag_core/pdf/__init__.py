"""Reading PDFs: text and statuses, the budgeted reader process, the passage marked on its page.

* :mod:`.extraction` -- pypdf extraction, repair, per-file statuses, page images;
* :mod:`.worker` -- the subprocess that reads one PDF under time and memory budgets;
* :mod:`.marks` -- a passage's boxes on its PDF page, and the page image marked.
"""
