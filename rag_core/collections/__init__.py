"""Named collections of PDFs: the library facade, the ingest pipeline, and the stores.

* :mod:`.library` -- :class:`~rag_core.collections.library.Library`, what the app and the CLI use;
* :mod:`.ingest` -- files in, a searchable collection out, dense vectors filled in behind;
* :mod:`.store` -- where collections live: a data folder, or PostgreSQL with pgvector;
* :mod:`.preferences` -- the app's preferences kept in the data folder.
"""
