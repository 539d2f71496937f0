"""Issue 26's figures on our dev splits: today's rules against the learned stance.

    PYTHONPATH=$PWD python benchmarks/bench_stance.py [--claims DIR] [--cache DIR] [--limit N]

Each claim is checked against the document it cites (SciFact dev slice: the cited abstract;
Check-COVID dev: its CORD-19 abstract; HealthVer dev slice: its evidence passage) the way the
check reads a paraphrase: the document's text is the one candidate passage handed to
``meaning_of_verdict("related", ...)`` (the rules, the baseline) and then to
``rag_core.citations.verdicts.apply_stance``'s path, ``stance.decide`` and
``stance.meaning_of_stance`` (the new path, as shipped: the model may not flag ``changed``
where the rules found no conflict, STANCE_MAY_FLAG; "may flag": with it allowed). Retrieval
is left out: the passage is the cited document, as in the issue's measure. ``meaning`` is read
as the answer: same = supports, changed = contradicts, unclear = nei. Printed per split: contradictions called ``same``,
contradictions flagged ``changed``, supports flagged ``changed``, SciFact-style label F1 and the
confusion matrix (rows gold support/contradict/nei, columns predicted). Also the labelled
set's paraphrase and contradiction cases (tests/data) against their original sentence.

Embeddings come from the bundled bi-encoder, cached in --cache (benchmarks/train_stance.py's).
Dev splits only: the held-out sets are not in ../shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from train_stance import CachedEmbed, show  # noqa: E402

from rag_core import settings as st_settings  # noqa: E402
from rag_core.citations import stance as st  # noqa: E402
from rag_core.citations.meaning import meaning_of_verdict  # noqa: E402
from rag_core.citations.stance_fit import figures  # noqa: E402
from rag_core.models.training import claims as C  # noqa: E402

ANSWER = {"same": "support", "changed": "contradict", "unclear": "nei"}


def check_both(claim: str, text: str, source: str, model, embed, may_flag=None) -> tuple[str, str, st.StanceDecision]:
    """The rules' meaning and the new meaning of ``claim`` against one passage ``text``."""
    rows = [{"text": text, "source": source}]
    rules = meaning_of_verdict("related", claim, closest=rows)
    decision = st.decide(claim, rows, cues=rules.cues, rules_meaning=rules.meaning, model=model, embed=embed,
                         may_flag=may_flag)
    meaning, _ = st.meaning_of_stance(decision, rules.meaning, rules.note)
    return rules.meaning, meaning, decision


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", default=None)
    parser.add_argument("--cache", default=os.environ.get("RAG_CORE_STANCE_CACHE", "/tmp/rag_core_stance_cache"))
    parser.add_argument("--limit", type=int, default=None, help="at most N documents per split")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    try:
        model = st.load_model()
        print(f"stance model: {model.name} ({st.MODEL_DIR / st.MODEL_FILE})")
    except st.StanceModelError as exc:
        print(f"no stance model ({exc}): only the rules are measured")
        model = None
    folder = C.claims_dir(args.claims)
    splits = {"scifact": C.read_scifact(folder, split="dev"), "checkcovid": C.read_checkcovid(folder, split="dev"),
              "healthver": C.read_healthver(folder, split="dev")}
    embed = CachedEmbed(Path(args.cache))
    out = {}
    for name, docs in splits.items():
        docs = docs[:args.limit] if args.limit else docs
        texts = [" ".join(d.sentences) for d in docs]
        if model is not None:
            embed.ensure({t for d, text in zip(docs, texts, strict=True)
                          for t in (d.claim, *[r["sentence"] for r in st.candidate_sentences([text])])})
        gold, rules_pred, new_pred, flag_pred = [], [], [], []
        start = time.time()
        for doc, text in zip(docs, texts, strict=True):
            if model is None:
                rules = meaning_of_verdict("related", doc.claim, closest=[{"text": text}]).meaning
                new = flag = rules
            else:
                rules, new, _ = check_both(doc.claim, text, doc.doc_id, model, embed)
                flag = check_both(doc.claim, text, doc.doc_id, model, embed, may_flag=True)[1]
            gold.append(doc.label)
            rules_pred.append(ANSWER[rules])
            new_pred.append(ANSWER[new])
            flag_pred.append(ANSWER[flag])
        took = time.time() - start
        out[name] = {"rules": figures(gold, rules_pred), "model": figures(gold, new_pred),
                     "model_may_flag": figures(gold, flag_pred)}
        print(f"{name} dev: {len(docs)} claim-document pairs ({took:.1f} s, embeddings cached)")
        show("rules", out[name]["rules"])
        if model is not None:
            show(f"new{'*' if st_settings.STANCE_MAY_FLAG else ''}", out[name]["model"])
            show("may flag", out[name]["model_may_flag"])
    if model is not None:
        labelled = json.loads((ROOT / "tests/data/citations_labelled.json").read_text(encoding="utf-8"))["statements"]
        rows = [r for r in labelled if r["kind"] in ("paraphrase", "contradiction") and r.get("original")]
        embed.ensure({t for r in rows for t in (r["statement"], *[x["sentence"] for x in
                                                                 st.candidate_sentences([r["original"]])])})
        tally = {"paraphrase": [0, 0, 0, 0], "contradiction": [0, 0, 0, 0]}  # rules, new, may flag, n
        for r in rows:
            rules, new, _ = check_both(r["statement"], r["original"], r.get("document") or "", model, embed)
            flag = check_both(r["statement"], r["original"], r.get("document") or "", model, embed, may_flag=True)[1]
            tally[r["kind"]][0] += rules == "changed"
            tally[r["kind"]][1] += new == "changed"
            tally[r["kind"]][2] += flag == "changed"
            tally[r["kind"]][3] += 1
        for kind, (a, b, c, n) in tally.items():
            print(f"labelled {kind}s flagged changed: rules {a}/{n}, new {b}/{n}, may flag {c}/{n}")
        out["labelled"] = tally
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
