"""Count how often each search call scores a query with TF-IDF (not a test: it prints figures).

    python benchmarks/count_scorings.py

compare() runs three lists for one query; each needs the TF-IDF cosines. Before they shared
a ``QueryScores`` the cosines were computed 2 times per compare() (3 when the exact list had
hits); now once. Uses the contract's worked example (three sentences, real bi-encoder).
"""

from __future__ import annotations

import os
from collections import Counter

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rag_core import build_index
from rag_core.index.build import RagIndex
from rag_core.retrieval.comparison import compare
from rag_core.retrieval.ranking import search, search_dense, search_lexical

DOCUMENTS = [
    ("Gao, Jafferis and Wall show that a traversable wormhole opens when a coupling produces negative average "
     "null energy, so that information can leak through the wormhole.", "gao_wormhole.pdf"),
    ("Temme, Bravyi and Gambetta introduce zero-noise extrapolation for short-depth circuits.", "temme_mitigation.pdf"),
    ("Cross-encoders read the query and the passage together.", "reranking_note.pdf"),
]
QUERY = "does information leak through a wormhole"


def main() -> None:
    index = build_index(DOCUMENTS)
    calls: Counter[str] = Counter()
    original = RagIndex.tfidf_scores
    current = ""

    def counting(self, query):
        calls[current] += 1
        return original(self, query)

    RagIndex.tfidf_scores = counting
    runs = {
        "compare (no exact hit)": lambda: compare(QUERY, index),
        "compare (exact hits)": lambda: compare("negative average null energy", index),
        "search rerank=False": lambda: search(QUERY, index, rerank=False),
        "search (hybrid)": lambda: search(QUERY, index),
        "search_dense": lambda: search_dense(QUERY, index),
        "search_lexical bm25": lambda: search_lexical(QUERY, index, method="bm25"),
    }
    for name, run in runs.items():
        current = name
        run()
    for name in runs:
        print(f"{name:24s} TF-IDF scorings: {calls[name]}")


if __name__ == "__main__":
    main()
