"""Citation checks: graded verdicts, manuscripts and their citations, and what the Verify page shows.

* :mod:`.verdicts` -- ``verify_quote``: verbatim, near_verbatim, related or not_found, and where;
* :mod:`.manuscript` -- a manuscript's checkable statements, citation markers and reference list;
* :mod:`.resolution` -- which document a citation means (DOI, arXiv id, record title, first author
  and year), matched, ambiguous or not in the collection, and why (:mod:`.bibliography`: the older
  entry point); :mod:`.field_codes` -- a Word draft's Zotero and Mendeley citation fields;
* :mod:`.closeness` -- the best sentence of each passage close in meaning, and its score;
* :mod:`.meaning` -- does the source say what the statement says (negations, numbers, directions,
  quantifiers), with :mod:`.meaning_read`, :mod:`.meaning_align` and :mod:`.meaning_tables`;
* :mod:`.report` -- a manuscript's report: severity order, CSV, JSON and HTML;
* :mod:`.view` -- the Verify page's and the reports' view of a check, as pure functions.
"""
