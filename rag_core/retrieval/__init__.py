"""The searches: ranked lists (TF-IDF, BM25, dense, hybrid), fusion, rerankers, exact search.

* :mod:`.search_spec` -- :class:`~.search_spec.SearchSpec`, one value that describes a hybrid search;
* :mod:`.ranking` -- TF-IDF, BM25, dense and hybrid search (pool union, then re-reading):
  ``search_with_spec``, and the contract's ``search`` that builds a spec from its arguments;
* :mod:`.fusion` -- score fusion of the first-stage lists; :mod:`.rerankers` -- one module per backend;
* :mod:`.exact` -- phrase, RE2 and folded-quote search over the chunks' text;
* :mod:`.comparison` -- the three lists side by side (``compare``).

(Named ``retrieval``, not ``search``: a subpackage ``rag_core.search`` would shadow the public
function ``rag_core.search`` once imported.)
"""
