"""Text before it is searched: chunking with page spans, passage context, what a query must be.

* :mod:`.chunking` -- fixed-stride chunks (the contract's ``chunk_text``) and chunks of PDF pages;
* :mod:`.passage_context` -- the title and section heading a passage belongs to (an option);
* :mod:`.query` -- the checks every query passes before a search reads it.
"""
