"""The ingest pipeline: files in, a searchable collection out, dense vectors filled in behind.

* :mod:`.pipeline` -- :func:`ingest_files` (read, extract, chunk, commit, embed), the reports,
  and :func:`rebuild_from_originals` for ``check-store --repair``;
* :mod:`.inputs` -- paths, uploads and folders read safely, within the size limit;
* :mod:`.extraction` -- the worker processes that read PDFs under a time and a memory budget,
  and the page counter behind the time estimate;
* :mod:`.progress` -- the progress events and the clock that estimates the time left;
* :mod:`.rates` -- the ingest rates measured on this machine, remembered for the next estimate;
* :mod:`.embedding` -- the dense vectors, computed now or in a background thread.

Import each name from the module that defines it; this package re-exports nothing.
"""
