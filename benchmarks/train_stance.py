"""Rebuild the stance model (rag_core/models/trained/stance/) from ../shared/data/claims and print
its dev figures.

    PYTHONPATH=$PWD python benchmarks/train_stance.py [--claims DIR] [--cache DIR] [--out DIR] [--dry-run]

Training data: the train parts of SciFact (train claims outside the dev slice), Check-COVID
(train file) and HealthVer (dev file outside the dev slice); one claim in five (by a hash of
the claim) is held out of fitting to set the temperature and thresholds. ``--all-data`` adds
COVID-Fact and CLIMATE-FEVER, ``--embedding`` the u*v and |u-v| features: both measured worse
on dev (docs/citations.md). Dev figures: SciFact's dev slice, Check-COVID
dev, HealthVer's dev slice (rag_core/models/training/claims.py), never fitted on.

Embeddings (all-MiniLM-L6-v2, ONNX int8) are cached in --cache (default
$RAG_CORE_STANCE_CACHE or /tmp/rag_core_stance_cache), so a refit takes about a minute.
``--dry-run`` prints the figures without writing the model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.citations.stance import MODEL_DIR, MODEL_FILE, RULE_FEATURES  # noqa: E402
from rag_core.citations.stance_fit import (  # noqa: E402
    LABEL_OF_STANCE,
    _doc_sentence_probs,
    calibrate,
    figures,
    fit,
    predict_documents,
    rationale_f1,
    rules_meanings,
)
from rag_core.models.training import claims as C  # noqa: E402

SEED = 0
MODEL_NAME = "stance-lr-rules-minilm-v1"
DEV_NOTE = ("dev_figures 'model' are the model with may_flag (it flags contradictions on its own), on the datasets' "
            "own sentences; the product ships with rag_core.settings.STANCE_MAY_FLAG = False (it only withholds "
            "'same' and confirms supports the rules cannot judge): benchmarks/bench_stance.py prints both modes on "
            "the check's path.")
C_REG = 0.5
DEV_SETS = ("scifact", "checkcovid", "healthver")
LICENCES = {
    "scifact": "SciFact: CC BY-NC 2.0 (../shared/data/README.md section 5): non-commercial use only; "
               "a model trained on it carries this note",
    "checkcovid": "Check-COVID (posuer/Check-COVID @ 3ae70f8c): MIT (../shared/data/README.md section 5)",
    "healthver": "HealthVer (sarrouti/HealthVer @ b20ac99c): no licence file in the repository "
                 "(../shared/data/README.md section 5)",
    "covidfact": "COVID-Fact: not used by this model (--all-data only); no licence file in the repository",
    "climatefever": "CLIMATE-FEVER: not used by this model (--all-data only); no licence file in the repository",
    "embeddings": "all-MiniLM-L6-v2 (Apache-2.0), the bundled bi-encoder",
}


def calibration_part(doc: C.ClaimDocument) -> bool:
    """One claim in five of a train part is held out of fitting, for the calibration."""
    digest = hashlib.sha256(f"calibration:{doc.dataset}:{doc.claim_id}".encode()).hexdigest()
    return int(digest[:8], 16) % 5 == 0


class CachedEmbed:
    """Unit embeddings by text, from a cache folder (texts.json + emb.npy), the rest encoded."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.index: dict[str, int] = {}
        self.matrix = np.zeros((0, 384), dtype=np.float32)
        if (folder / "texts.json").is_file() and (folder / "emb.npy").is_file():
            texts = json.loads((folder / "texts.json").read_text(encoding="utf-8"))
            self.matrix = np.load(folder / "emb.npy")
            self.index = {t: i for i, t in enumerate(texts)}

    def ensure(self, texts) -> None:
        missing = sorted({t for t in texts if t not in self.index})
        if not missing:
            return
        from rag_core.models.loading import load_bi_encoder

        model = load_bi_encoder()
        print(f"encoding {len(missing)} texts (cached in {self.folder}) ...", flush=True)
        out = []
        start = time.time()
        for i in range(0, len(missing), 512):
            out.append(model.encode(missing[i:i + 512], convert_to_numpy=True, normalize_embeddings=True,
                                    show_progress_bar=False))
            print(f"  {min(i + 512, len(missing))}/{len(missing)} ({time.time() - start:.0f} s)", flush=True)
        base = len(self.index)
        self.matrix = np.vstack([self.matrix, *out]).astype(np.float32)
        for k, t in enumerate(missing):
            self.index[t] = base + k
        self.folder.mkdir(parents=True, exist_ok=True)
        texts = sorted(self.index, key=self.index.get)
        (self.folder / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
        np.save(self.folder / "emb.npy", self.matrix)

    def __call__(self, texts) -> np.ndarray:
        return self.matrix[[self.index[t] for t in texts]]


def sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def show(name: str, f: dict) -> None:
    print(f"  {name:<10} n={f['n']:<4} contra->same {f['contradictions_called_same']:.1%}  "
          f"contra->changed {f['contradictions_flagged_changed']:.1%}  support->changed "
          f"{f['supports_flagged_changed']:.1%}  label F1 {f['label_f1']:.3f}  (acc {f['accuracy']:.3f})  "
          f"confusion {f['confusion']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", default=None)
    parser.add_argument("--cache", default=os.environ.get("RAG_CORE_STANCE_CACHE", "/tmp/rag_core_stance_cache"))
    parser.add_argument("--out", default=str(MODEL_DIR))
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--c", type=float, default=C_REG)
    parser.add_argument("--all-data", action="store_true", help="also fit on COVID-Fact and CLIMATE-FEVER")
    parser.add_argument("--embedding", action="store_true", help="also the u*v and |u-v| features")
    args = parser.parse_args(argv)
    start = time.time()
    folder = C.claims_dir(args.claims)
    train = [*C.read_scifact(folder, split="train"), *C.read_checkcovid(folder, split="train"),
             *C.read_healthver(folder, split="train")]
    if args.all_data:
        train += [*C.read_covidfact(folder, split=None), *C.read_climatefever(folder, split=None)]
    dev = {"scifact": C.read_scifact(folder, split="dev"), "checkcovid": C.read_checkcovid(folder, split="dev"),
           "healthver": C.read_healthver(folder, split="dev")}
    held = [d for d in train if d.dataset in DEV_SETS and calibration_part(d)]
    fitted = [d for d in train if not (d.dataset in DEV_SETS and calibration_part(d))]
    embed = CachedEmbed(Path(args.cache))
    embed.ensure({t for docs in (train, *dev.values()) for d in docs for t in (d.claim, *d.sentences)})
    print(f"data read and embedded ({time.time() - start:.0f} s): {len(fitted)} documents to fit, "
          f"{len(held)} to calibrate", flush=True)
    model, seen = fit(fitted, embed, seed=SEED, c=args.c, embedding=args.embedding, name=MODEL_NAME)
    print(f"fitted on {seen['pairs']} pairs {seen['labels']} ({time.time() - start:.0f} s)", flush=True)
    cal = calibrate(model, held, embed)
    print(f"calibrated: {cal} ({time.time() - start:.0f} s)", flush=True)
    results = {}
    for name, docs in dev.items():
        gold = [d.label for d in docs]
        cached = _doc_sentence_probs(model, docs, embed)
        rules = rules_meanings(docs)
        answers = predict_documents(model, docs, embed, cached=cached, rules=rules)
        pred = [LABEL_OF_STANCE[a["stance"]] for a in answers]
        base = figures(gold, [{"changed": "contradict", "same": "support"}.get(m, "nei") for m in rules])
        new = figures(gold, pred)
        results[name] = {"rules": base, "model": new}
        print(f"{name} dev ({len(docs)} claim-document pairs):")
        show("rules", base)
        show("model", new)
        if name == "scifact":
            rat = rationale_f1(docs, [a["evidence"] for a in answers], pred)
            top1 = rationale_f1(docs, [a["evidence"][:1] for a in answers], pred)
            results[name]["rationale"] = {"top3": rat, "top1": top1}
            print(f"  rationale (top 3) {rat}\n  rationale (top 1) {top1}")
    if args.dry_run:
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.settings.update({"calibration": cal, "all_data": args.all_data,
                           "features": [*(["u*v", "|u-v|"] if args.embedding else []), *RULE_FEATURES]})
    path = out / MODEL_FILE
    path.write_text(json.dumps(model.to_json(), separators=(",", ":")), encoding="utf-8")
    files = {}
    for name, names in C.FILES.items():
        for file in names:
            files[file] = {"dataset": name, "sha256": sha256(folder / file)}
    card = {
        "name": model.name, "model_file": {"path": MODEL_FILE, "sha256": sha256(path), "bytes": path.stat().st_size},
        "kind": "multinomial logistic regression over pair features (rule cues, polarity, overlap, "
                "all-MiniLM-L6-v2 cosine" + (", u*v and |u-v| of the embeddings" if model.embedding else "")
                + "), combined with the rules' meaning (rag_core.citations.stance.aggregate)",
        "rebuild": "PYTHONPATH=$PWD python benchmarks/train_stance.py", "seed": SEED,
        "settings": model.settings, "data_files": files, "licences": LICENCES,
        "non_commercial": "Trained partly on SciFact (CC BY-NC 2.0): non-commercial use only.",
        "training": {"documents_fitted": len(fitted), "documents_calibration": len(held), **seen},
        "dev_figures_note": DEV_NOTE,
        "dev_figures": {k: {"rules": _round(v["rules"]), "model": _round(v["model"]),
                            **({"rationale": v["rationale"]} if "rationale" in v else {})} for k, v in results.items()},
    }
    (out / "card.json").write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path} ({path.stat().st_size} bytes) and its card ({time.time() - start:.0f} s)")
    return 0


def _round(f: dict) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in f.items()}


if __name__ == "__main__":
    raise SystemExit(main())
