"""What hybrid search finds that TF-IDF misses, on paraphrased questions (not a test).

Each question avoids the words its answer uses; the expected paper is what a researcher
would accept. Prints, per question, the rank of the first chunk from the expected paper
in the TF-IDF list and in the hybrid list (top 10), and the time of each query.

    python benchmarks/paraphrases.py --data-dir DIR --collection papers
(after `rag-core --data-dir DIR ingest papers ../shared/data/pdfs/`)
"""

from __future__ import annotations

import argparse
import time

from rag_core import Library, search, search_exact, search_lexical
from rag_core.retrieval.ranking import search_dense

QUESTIONS = [
    ("how big is the larger of the two pre-trained bidirectional language models, in weights",
     "ml_bert_devlin2018_arxiv1810.04805.pdf"),
    ("a network that relies only on attention, with no recurrence or convolution, for translation",
     "ml_transformer_vaswani2017_arxiv1706.03762v5.pdf"),
    ("language models that look things up in a database of trillions of words while generating",
     "ml_retro_borgeaud2021_arxiv2112.04426.pdf"),
    ("making a JavaScript interpreter faster by compiling frequently executed loops",
     "cs_tracemonkey_gal2009_pldi.pdf"),
    ("very light scalar particles as the missing mass and their imprint on the relic radiation",
     "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"),
    ("software that lowers the impact of hardware noise on near-term quantum programs",
     "qem_mitiq_manual_v0.5.0_2021.pdf"),
    ("a generator that conditions on documents fetched by a neural retriever for knowledge-heavy tasks",
     "ml_rag_lewis2020_arxiv2005.11401.pdf"),
    ("turning table images into structured rows and columns with a transformer",
     "ml_tableformer_yang2022_acl.pdf"),
    ("a large open corpus of academic papers with parsed full text and citation links",
     "ml_s2orc_lo2020_acl2020-main447.pdf"),
    ("evaluating retrieval models zero-shot across many heterogeneous datasets",
     "ml_beir_thakur2021_arxiv2104.08663v4.pdf"),
    ("a tunnel through spacetime joining two black holes that a signal can cross",
     "phys_topological_wormholes_morais.pdf"),
    ("the force between two uncharged metal plates caused by vacuum fluctuations",
     "phys_casimir_photon_recycling_qft_morais.pdf"),
    ("can lumpy matter make the expansion of the universe look like it is speeding up",
     "phys_jcap2008_apparent_average_accelerations_arxiv0807.3577.pdf"),
    ("vacua with a positive cosmological constant in supersymmetric theories",
     "phys_de_sitter_vacua_susy_morais.pdf"),
]


def first_rank(rows: list[dict], source: str) -> int | None:
    return next((r["rank"] for r in rows if r["source"] == source), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--collection", default="papers")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    index = Library(args.data_dir).load_index(args.collection)
    search("warm up", index, top=1)  # load the model once
    timings = {"tfidf": [], "bm25": [], "dense": [], "hybrid": [], "exact": []}
    found = {"tfidf": 0, "hybrid": 0}
    print(f"{'question':70s} {'tfidf':>6s} {'hybrid':>6s}")
    for question, source in QUESTIONS:
        t = time.perf_counter()
        tfidf = search(question, index, top=args.top, rerank=False)
        timings["tfidf"].append(time.perf_counter() - t)
        t = time.perf_counter()
        search_lexical(question, index, args.top, method="bm25")
        timings["bm25"].append(time.perf_counter() - t)
        t = time.perf_counter()
        search_dense(question, index, args.top)
        timings["dense"].append(time.perf_counter() - t)
        t = time.perf_counter()
        hybrid = search(question, index, top=args.top)
        timings["hybrid"].append(time.perf_counter() - t)
        t = time.perf_counter()
        search_exact(question.split()[2] + " " + question.split()[3], index)
        timings["exact"].append(time.perf_counter() - t)
        a, b = first_rank(tfidf, source), first_rank(hybrid, source)
        found["tfidf"] += a == 1
        found["hybrid"] += b == 1
        print(f"{question[:70]:70s} {a or '-':>6} {b or '-':>6}")
    print(f"\nexpected paper ranked first: TF-IDF {found['tfidf']}/{len(QUESTIONS)}, "
          f"hybrid {found['hybrid']}/{len(QUESTIONS)}  ({len(index.chunks)} chunks)")
    for mode, values in timings.items():
        values = sorted(values)
        print(f"{mode:7s} median {1000 * values[len(values) // 2]:7.1f} ms   max {1000 * values[-1]:7.1f} ms")


if __name__ == "__main__":
    main()
