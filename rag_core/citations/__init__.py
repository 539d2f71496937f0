"""Citation checks: graded verdicts, manuscripts and their citations, and what the Verify page shows.

* :mod:`.verdicts` -- ``verify_quote``: verbatim, near_verbatim, related or not_found, and where;
* :mod:`.manuscript` -- a manuscript's checkable statements, citation markers and reference list;
* :mod:`.bibliography` -- a PDF's bibliographic metadata, and citations matched to documents;
* :mod:`.view` -- the Verify page's and the reports' view of a check, as pure functions.
"""
