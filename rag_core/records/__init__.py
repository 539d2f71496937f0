"""Bibliographic records: where researchers keep them (BibTeX/BibLaTeX, CSL-JSON, RIS, a Zotero data
folder), matched to a collection's documents, and written back out.

* :mod:`.record` -- one record's fields, checked and normalised; names, surnames and titles folded;
* :mod:`.bibtex`, :mod:`.csl`, :mod:`.ris` -- the three file formats, read (bounded) and written;
* :mod:`.zotero` -- a Zotero data folder: ``zotero.sqlite`` opened read-only and immutable, its
  ``storage/`` PDFs;
* :mod:`.reading` -- a records file read by its format, safely (regular files only, a size cap);
* :mod:`.matching` -- records matched to documents by DOI, then arXiv id, then normalised title.
"""
