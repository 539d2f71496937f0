"""Citation checking benchmark (not a test): verdicts on the labelled set, and speed.

    HF_HUB_OFFLINE=1 python benchmarks/bench_citations.py [--data-dir DIR] [--collection NAME]

Uses a collection of every PDF in ../shared/data/pdfs (ingested into ``--data-dir`` with
embeddings when it is not there yet: several minutes on 2 cores).

* Confusion matrix: every statement of tests/data/citations_labelled.json through
  ``verify_quote`` (its cited document when it has one), rows = kind of statement,
  columns = verdict, then columns = meaning (same / changed / unclear) with the figures of
  issue 17: meaning changes caught per kind, ``changed`` on harmless edits and faithful
  paraphrases, contradicting paraphrases caught (all cases, and the held-out ones alone);
  with the meaning step (embeddings) and, for comparison, on the same collection read as one
  without embeddings (key-word overlap instead of meaning).
* Speed: 200 statements (the 81 labelled ones of the first set, 119 more drawn with a fixed seed from the
  PDFs: real sentences typed as a reader would, the same with one word changed, and
  sentences with their words shuffled) checked one after the other; the bi-encoder is
  loaded before the clock starts. The load average is printed: the machine is shared.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parents[1]
PDFS = REPO.parent / "shared" / "data" / "pdfs"
LABELLED = REPO / "tests" / "data" / "citations_labelled.json"
KINDS = ("quote", "misquote", "paraphrase", "fabricated", "misattributed", "negation", "number", "direction",
         "quantifier", "harmless", "contradiction")
FLIPS = ("negation", "number", "direction", "quantifier")
MEANING_ORDER = ("same", "changed", "unclear")
VERDICT_ORDER = ("verbatim", "near_verbatim", "related", "not_found")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load(data_dir: Path, name: str):
    from rag_core.collections.library import Library

    library = Library(data_dir)
    if not library.exists(name):
        log(f"ingesting {PDFS} into {data_dir} / {name} (with embeddings; minutes) ...")
        started = time.perf_counter()
        library.add_pdfs(name, sorted(PDFS.glob("*.pdf")))
        log(f"  done in {time.perf_counter() - started:.0f} s")
    return library, library.load_index(name)


def confusion(index, rows: list[dict]) -> tuple[dict, list[str]]:
    from rag_core.citations.verdicts import verify_quote

    matrix = {kind: collections.Counter() for kind in KINDS}
    meanings = {kind: collections.Counter() for kind in KINDS}
    held_out = {kind: collections.Counter() for kind in KINDS}
    notes = []
    for row in rows:
        cited = [row["cited_document"]] if row.get("cited_document") else None
        check = verify_quote(row["statement"], index, cited_sources=cited)
        matrix[row["kind"]][check.verdict] += 1
        meanings[row["kind"]][check.meaning] += 1
        if row.get("heldout"):
            held_out[row["kind"]][check.meaning] += 1
        if row.get("meaning") and (row["meaning"] == "changed") != (check.meaning == "changed") and \
                row["kind"] != "misquote":
            notes.append(f"{row['id']}: {check.verdict}, meaning {check.meaning} (labelled {row['meaning']}) "
                         f"{[(c['kind'], c['claim'], c['source']) for c in check.meaning_cues]}")
        if row["kind"] in ("quote", "misattributed"):
            ok = check.verdict == "verbatim" and any(row["page"] <= h["page"] <= row["page_end"] for h in check.hits)
            if not ok:
                notes.append(f"{row['id']}: {check.verdict}, not verbatim on page {row['page']}")
            if (row["kind"] == "misattributed") != check.misattributed:
                notes.append(f"{row['id']}: misattributed={check.misattributed}")
        if row["kind"] in FLIPS and (check.verdict != "near_verbatim" or check.source != row["document"]):
            notes.append(f"{row['id']}: {check.verdict} in {check.source}, not near_verbatim in {row['document']}")
        if row["kind"] == "misquote":
            shown = check.best and all(was in check.best["diff"] and now in check.best["diff"]
                                       for was, now in row["changed"])
            if check.verdict != "near_verbatim" or not shown:
                notes.append(f"{row['id']}: {check.verdict}, diff {check.best and check.best['diff']!r}")
        if row["kind"] == "fabricated" or (row["kind"] == "paraphrase" and check.verdict != "related"):
            notes.append(f"{row['id']}: {check.verdict} (score {check.similarity})")
    return matrix, meanings, held_out, notes


def print_matrix(title: str, matrix: dict, columns=VERDICT_ORDER) -> None:
    print(f"\n{title}\n")
    print("| statements | n | " + " | ".join(columns) + " |")
    print("|---|---:|" + "---:|" * len(columns))
    for kind in KINDS:
        counts = matrix[kind]
        if sum(counts.values()):
            print(f"| {kind} | {sum(counts.values())} | " + " | ".join(str(counts[v]) for v in columns) + " |")


def print_meaning_figures(meanings: dict, title: str) -> None:
    """Issue 17's figures: changes caught per kind, false changed, contradictions caught."""
    def rate(kinds, outcome="changed"):
        n = sum(sum(meanings[k].values()) for k in kinds)
        hit = sum(meanings[k][outcome] for k in kinds)
        return f"{hit}/{n} = {100 * hit / n:.1f}%" if n else "-"

    print(f"\n{title}:")
    for kind in FLIPS:
        print(f"  {kind:13s} caught (changed): {rate([kind])}")
    print(f"  all four kinds caught: {rate(FLIPS)} (goal >= 95%)")
    print(f"  changed on harmless edits and faithful paraphrases: {rate(['harmless', 'paraphrase'])} (goal <= 3%)")
    print(f"  contradicting paraphrases caught: {rate(['contradiction'])} (goal >= 60%)")


def sample_statements(index, rows: list[dict], total: int, seed: int = 7) -> list[str]:
    """The labelled statements, then real sentences drawn from the collection (typed, changed, shuffled)."""
    from rag_core.retrieval.exact import document_texts
    from rag_core.text.sentences import split_sentences

    rng = random.Random(seed)
    statements = [r["statement"] for r in rows]
    sentences = []
    for doc in document_texts(index.chunks):
        for a, b in split_sentences(doc.text):
            sentence = " ".join(doc.text[a:b].split())
            letters = sum(c.isalpha() for c in sentence)
            if 10 <= len(sentence.split()) <= 45 and letters > 0.75 * len(sentence.replace(" ", "")):
                sentences.append(sentence)
    rng.shuffle(sentences)
    kinds = ["typed", "changed", "shuffled"]
    n = 0
    while len(statements) < total and sentences:
        sentence = sentences.pop()
        kind = kinds[n % 3] if n % 6 else "typed"  # about half typed quotes
        n += 1
        words = sentence.split()
        if kind == "typed":
            statements.append(sentence.replace("\u201c", '"').replace("\u201d", '"').replace("\u2019", "'"))
        elif kind == "changed":
            k = rng.randrange(1, len(words) - 1)
            words[k] = "remarkably" if words[k] != "remarkably" else "notably"
            statements.append(" ".join(words))
        else:
            rng.shuffle(words)
            statements.append(" ".join(w.strip(".,;:") for w in words))
    return statements[:total]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/rag_core_bench_citations"))
    parser.add_argument("--collection", default="shared")
    parser.add_argument("--statements", type=int, default=200)
    parser.add_argument("--skip-confusion", action="store_true")
    args = parser.parse_args()

    from rag_core.citations.verdicts import verify_quote
    from rag_core.index.build import RagIndex
    from rag_core.models.loading import load_bi_encoder

    rows = json.loads(LABELLED.read_text(encoding="utf-8"))["statements"]
    first_set = [r for r in rows if not r["id"].startswith(("meaning-", "heldout-"))]  # the speed mix of before
    _library, index = load(args.data_dir, args.collection)
    print(f"collection: {len(index.sources)} documents, {len(index.chunks)} chunks, "
          f"embeddings: {'yes' if index.embeddings is not None else 'no'}")
    started = time.perf_counter()
    if index.embeddings is not None:
        load_bi_encoder(index.embedding_model)
    print(f"model load (excluded below): {time.perf_counter() - started:.1f} s")

    if not args.skip_confusion:
        # the same chunks, TF-IDF and BM25, without vectors
        lexical = RagIndex(chunks=index.chunks, vectorizer=index.tfidf_model, matrix=index.tfidf_matrix,
                           embedding_model=index.embedding_model, chunk_size=index.chunk_size,
                           overlap=index.overlap, bm25=index.bm25)
        for name, which in (("with embeddings: meaning step on", index),
                            ("read as a collection without embeddings (key-word overlap)", lexical)):
            matrix, meanings, held_out, notes = confusion(which, rows)
            print_matrix(f"Verdicts on the labelled set ({name})", matrix)
            print_matrix(f"Meaning on the labelled set ({name})", meanings, MEANING_ORDER)
            print_meaning_figures(meanings, "All cases")
            print_meaning_figures(held_out, "Held-out cases alone (written after the rules were tuned)")
            for note in notes:
                print("   ", note)

    statements = sample_statements(index, first_set, args.statements)
    from rag_core.citations import closeness
    from rag_core.retrieval import exact

    closeness.clear_cache()  # a cold start: nothing from the confusion runs above
    exact.clear_cache()
    load_before = os.getloadavg()
    verdicts = collections.Counter()
    changed = 0
    per_verdict = collections.defaultdict(float)
    started, cpu_started = time.perf_counter(), time.process_time()
    for statement in statements:
        t0 = time.perf_counter()
        check = verify_quote(statement, index, n_closest=3)  # as `rag-core check` does (--top 3)
        verdicts[check.verdict] += 1
        changed += check.meaning == "changed"
        per_verdict[check.verdict] += time.perf_counter() - t0
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    load_after = os.getloadavg()
    print(f"\nspeed: {len(statements)} statements in {elapsed:.1f} s wall ({1000 * elapsed / len(statements):.0f} ms "
          f"each), {cpu:.1f} s CPU time of this process")
    for verdict in VERDICT_ORDER:
        if verdicts[verdict]:
            mean = 1000 * per_verdict[verdict] / verdicts[verdict]
            print(f"  {verdict:13s} {verdicts[verdict]:4d} statements, {mean:.0f} ms each")
    print(f"  meaning changed: {changed} of {len(statements)}")
    print(f"load average (1, 5, 15 min) before {tuple(round(x, 2) for x in load_before)}, "
          f"after {tuple(round(x, 2) for x in load_after)}; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
