"""What the learned stance adds to a citation check's time (issue 26's speed goals).

    PYTHONPATH=$PWD python benchmarks/bench_stance_speed.py [--n 200]

``stance.decide`` on N statements (SciFact dev-slice claims), each against five candidate
passages as the check hands them over (its cited abstract cut in two, and three other
abstracts), with the real bi-encoder and a cold sentence cache: the time a manuscript's check
spends on top of the search, and one statement's (the Verify page) after the model is warm;
for the stance reader (the default) and for the logistic regression (``--lr``). The full
check's own time is in benchmarks/bench_manuscripts.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.citations import closeness  # noqa: E402
from rag_core.citations import stance as st  # noqa: E402
from rag_core.citations.meaning import meaning_of_verdict  # noqa: E402
from rag_core.models.training import claims as C  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--lr", action="store_true", help="the logistic regression, not the stance reader")
    args = parser.parse_args(argv)
    docs = C.read_scifact(split="dev")[:args.n]
    start = time.time()
    model = st.load_model()
    reader = None if args.lr else st.load_reader()
    st.default_embed(["warm up"])
    name = reader.name if reader is not None else model.name
    print(f"model and bi-encoder loaded in {time.time() - start:.2f} s ({name})")
    closeness.clear_cache()
    candidates = []
    for k, doc in enumerate(docs):
        half = len(doc.sentences) // 2 or 1
        others = [" ".join(docs[(k + j) % len(docs)].sentences) for j in (1, 2, 3)]
        candidates.append([{"text": " ".join(doc.sentences[:half]), "source": doc.doc_id},
                           {"text": " ".join(doc.sentences[half:]), "source": doc.doc_id},
                           *({"text": t, "source": "other"} for t in others)])
    start = time.time()
    times = []
    for doc, rows in zip(docs, candidates, strict=True):
        t0 = time.time()
        rules = meaning_of_verdict("related", doc.claim, closest=rows)
        st.decide(doc.claim, rows, cues=rules.cues, rules_meaning=rules.meaning, model=model, reader=reader,
                  use_reader=not args.lr)
        times.append(time.time() - t0)
    total = time.time() - start
    times.sort()
    print(f"{len(docs)} statements, 5 passages each, cold sentence cache: {total:.1f} s "
          f"({total / len(docs) * 1000:.0f} ms a statement; median {times[len(times) // 2] * 1000:.0f} ms, "
          f"slowest {times[-1] * 1000:.0f} ms)")
    start = time.time()
    for doc, rows in zip(docs, candidates, strict=True):
        rules = meaning_of_verdict("related", doc.claim, closest=rows)
        st.decide(doc.claim, rows, cues=rules.cues, rules_meaning=rules.meaning, model=model, reader=reader,
                  use_reader=not args.lr)
    print(f"the same again, sentences cached (the check embeds them for its own scores): "
          f"{time.time() - start:.1f} s")
    closeness.clear_cache()
    t0 = time.time()
    rules = meaning_of_verdict("related", docs[0].claim, closest=candidates[0])
    st.decide(docs[0].claim, candidates[0], cues=rules.cues, rules_meaning=rules.meaning, model=model, reader=reader,
              use_reader=not args.lr)
    print(f"one statement (Verify), warm model, cold cache: {(time.time() - t0) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
