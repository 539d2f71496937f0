"""What an index holds: chunks, TF-IDF and BM25 scorers, dense vectors, and how a large one is kept.

* :mod:`.build` -- :class:`~rag_core.index.build.RagIndex` and ``build_index``;
* :mod:`.lexical` -- the TF-IDF and BM25 scorers; :mod:`.ann` -- the HNSW graph of a large segment;
* :mod:`.chunk_table` -- a stored index's chunks by column, memory-mapped;
* :mod:`.mapped` -- reading mapped files without keeping them resident;
* :mod:`.segments` -- several stored indexes searched as one.
"""
