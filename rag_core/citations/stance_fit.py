"""Fitting the stance model of :mod:`rag_core.citations.stance` and measuring it.

:func:`fit` trains the logistic regression on (claim, sentence, label) pairs
(:func:`rag_core.models.training.claims.sentence_pairs`, classes balanced), :func:`calibrate`
sets its temperature and decision thresholds on documents held out of training, and
:func:`predict_documents` answers each claim against its document as the check does
(evidence sentences picked, then classified). :func:`figures` and :func:`rationale_f1` are the
issue's measures. Embeddings come from an ``embed`` callable (texts -> unit rows), so a caller
can serve them from a cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from rag_core.citations.stance import (
    CLASSES,
    EVIDENCE_TOP,
    StanceModel,
    _overlap,
    aggregate,
    feature_matrix,
)
from rag_core.models.training.claims import ClaimDocument, sentence_pairs

__all__ = ["LABEL_OF_STANCE", "calibrate", "figures", "fit", "predict_documents", "rationale_f1"]

LABEL_OF_STANCE = {"supports": "support", "contradicts": "contradict", "nei": "nei"}
Embed = Callable[[list[str]], np.ndarray]


def _features(claims: Sequence[str], sentences: Sequence[str], embed: Embed, embedding: bool) -> np.ndarray:
    u, v = embed(list(claims)), embed(list(sentences))
    return feature_matrix(claims, sentences, u, v, embedding=embedding)


def rules_meanings(docs: Sequence[ClaimDocument]) -> list[str]:
    """Today's rules on each claim against its whole document, as the check compares a paraphrase."""
    from rag_core.citations.meaning import meaning_of_verdict

    return [meaning_of_verdict("related", d.claim, closest=[{"text": " ".join(d.sentences)}]).meaning for d in docs]


def fit(docs: Sequence[ClaimDocument], embed: Embed, *, seed: int = 0, c: float = 0.5,
        nei_per_document: int = 2, name: str = "stance-lr", embedding: bool = False) -> tuple[StanceModel, dict]:
    """A model fitted on the sentence pairs of ``docs`` (balanced classes), and what it saw."""
    from sklearn.linear_model import LogisticRegression

    pairs = sentence_pairs(docs, nei_per_document=nei_per_document, seed=seed)
    claims, sentences, labels = zip(*pairs, strict=True) if pairs else ((), (), ())
    x = _features(claims, sentences, embed, embedding)
    y = np.array([CLASSES.index(lab) for lab in labels])
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    clf = LogisticRegression(C=c, class_weight="balanced", max_iter=2000, random_state=seed)
    clf.fit((x - mean) / scale, y)
    weights = np.zeros((x.shape[1], len(CLASSES)), dtype=np.float32)
    bias = np.zeros(len(CLASSES), dtype=np.float32)
    for k, cls in enumerate(clf.classes_):
        weights[:, cls] = clf.coef_[k] if len(clf.classes_) > 2 else (clf.coef_[0] if k else -clf.coef_[0])
        bias[cls] = clf.intercept_[k] if len(clf.classes_) > 2 else (clf.intercept_[0] if k else -clf.intercept_[0])
    for cls in range(len(CLASSES)):
        if cls not in clf.classes_:
            bias[cls] = -20.0  # a class never seen is never predicted
    model = StanceModel(name=name, weights=weights, bias=bias, mean=mean.astype(np.float32),
                        scale=scale.astype(np.float32), embedding=embedding, settings={"C": c, "seed": seed,
                                                                   "nei_per_document": nei_per_document})
    counts = {lab: int(sum(1 for x_ in labels if x_ == lab)) for lab in CLASSES}
    return model, {"pairs": len(pairs), "labels": counts}


def _doc_sentence_probs(model: StanceModel, docs: Sequence[ClaimDocument], embed: Embed,
                        top: int = EVIDENCE_TOP) -> list[tuple[list[int], np.ndarray]]:
    """Each document's evidence sentences (indexes, best first) and their class probabilities."""
    out = []
    for doc in docs:
        sentences = list(doc.sentences)
        if not sentences:
            out.append(([], np.zeros((0, 3), dtype=np.float32)))
            continue
        u = embed([doc.claim])[0]
        v = embed(sentences)
        overlaps = np.array([_overlap(doc.claim, s) for s in sentences], dtype=np.float32)
        relevance = v @ u + model.evidence_weight * overlaps
        order = [int(i) for i in np.argsort(-relevance, kind="stable")[:top]]
        x = feature_matrix([doc.claim] * len(order), [sentences[i] for i in order],
                           np.repeat(u[None, :], len(order), axis=0), v[order], embedding=model.embedding)
        out.append((order, model.probabilities(x)))
    return out


def predict_documents(model: StanceModel, docs: Sequence[ClaimDocument], embed: Embed, *,
                      top: int = EVIDENCE_TOP, cached: list | None = None,
                      rules: Sequence[str] | None = None) -> list[dict]:
    """Each document's answer: ``stance``, ``score`` and the ``evidence`` sentence indexes
    (``rules``: the rules' meanings of the documents, else computed)."""
    cached = cached if cached is not None else _doc_sentence_probs(model, docs, embed, top)
    rules = rules if rules is not None else rules_meanings(docs)
    out = []
    for (order, probs), meaning in zip(cached, rules, strict=True):
        stance, score, shown = aggregate(model, probs, meaning)
        out.append({"stance": stance, "score": score, "evidence": order, "probabilities": shown})
    return out


def calibrate(model: StanceModel, docs: Sequence[ClaimDocument], embed: Embed, *,
              top: int = EVIDENCE_TOP) -> dict:
    """Set ``model``'s temperature (pair log-loss on ``docs``' sentence pairs) and thresholds
    (on ``docs``: the SciFact-style label F1, less twice each point of contradictions called
    supported over 5% and of supports called contradicted over 10%: the issue's goals)."""
    pairs = sentence_pairs(docs, nei_per_document=2, seed=1)
    claims, sentences, labels = zip(*pairs, strict=True)
    x = _features(claims, sentences, embed, model.embedding)
    y = np.array([CLASSES.index(lab) for lab in labels])
    best_t, best_loss = 1.0, None
    for t in np.arange(0.5, 3.01, 0.1):
        model.temperature = float(t)
        p = model.probabilities(x)
        loss = float(-np.mean(np.log(p[np.arange(len(y)), y] + 1e-9)))
        if best_loss is None or loss < best_loss:
            best_t, best_loss = float(round(t, 2)), loss
    model.temperature = best_t
    cached = _doc_sentence_probs(model, docs, embed, top)
    rules = rules_meanings(docs)
    gold = [d.label for d in docs]
    best = None
    grid = [float(round(t, 2)) for t in np.arange(0.2, 1.001, 0.05)]
    for tv in grid:
        for tc in grid:
            for ts in grid:
                if tc < 0.5 or ts < 0.5:
                    continue
                model.threshold_veto, model.threshold_contradict, model.threshold_support = tv, tc, ts
                pred = [LABEL_OF_STANCE[r["stance"]]
                        for r in predict_documents(model, docs, embed, cached=cached, rules=rules)]
                f = figures(gold, pred)
                value = (f["label_f1"] - 2 * max(0.0, f["contradictions_called_same"] - 0.05)
                         - 2 * max(0.0, f["supports_flagged_changed"] - 0.10))
                if best is None or value > best[0] + 1e-9:
                    best = (value, tv, tc, ts)
    _, model.threshold_veto, model.threshold_contradict, model.threshold_support = best
    return {"temperature": best_t, "pair_log_loss": round(best_loss, 4), "threshold_veto": best[1],
            "threshold_contradict": best[2], "threshold_support": best[3]}


def figures(gold: Sequence[str], pred: Sequence[str]) -> dict:
    """The issue's figures of predicted labels (support/contradict/nei) against gold ones, and the
    confusion matrix (rows gold, columns predicted, CLASSES order)."""
    matrix = [[sum(1 for g, p in zip(gold, pred, strict=True) if g == a and p == b) for b in CLASSES] for a in CLASSES]
    n_con = sum(matrix[1])
    n_sup = sum(matrix[0])
    predicted = sum(1 for p in pred if p != "nei")
    actual = sum(1 for g in gold if g != "nei")
    right = sum(1 for g, p in zip(gold, pred, strict=True) if p != "nei" and g == p)
    precision = right / predicted if predicted else 0.0
    recall = right / actual if actual else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "n": len(gold), "contradictions": n_con, "supports": n_sup,
        "contradictions_called_same": matrix[1][0] / n_con if n_con else 0.0,
        "contradictions_flagged_changed": matrix[1][1] / n_con if n_con else 0.0,
        "supports_flagged_changed": matrix[0][1] / n_sup if n_sup else 0.0,
        "label_precision": precision, "label_recall": recall, "label_f1": f1,
        "accuracy": sum(matrix[i][i] for i in range(3)) / len(gold) if gold else 0.0,
        "confusion": matrix,
    }


def rationale_f1(docs: Sequence[ClaimDocument], picked: Sequence[Sequence[int]],
                 pred: Sequence[str] | None = None) -> dict:
    """Sentence-level rationale figures against the gold rationales: ``selection`` counts every
    picked sentence of documents with a rationale; ``scifact`` (when ``pred`` is given) counts,
    as SciFact does, only the picked sentences of documents predicted non-nei, a sentence right
    when it is in a gold rationale and the document's label is right."""
    out = {}
    for kind in ("selection", "scifact"):
        if kind == "scifact" and pred is None:
            continue
        tp = n_pred = n_gold = 0
        for k, (doc, chosen) in enumerate(zip(docs, picked, strict=True)):
            gold = set(doc.rationale)
            n_gold += len(gold)
            if kind == "selection":
                if not gold:
                    continue
                n_pred += len(chosen)
                tp += len(gold & set(chosen))
            else:
                if pred[k] == "nei":
                    continue
                n_pred += len(chosen)
                if pred[k] == doc.label:
                    tp += len(gold & set(chosen))
        p = tp / n_pred if n_pred else 0.0
        r = tp / n_gold if n_gold else 0.0
        out[kind] = {"precision": round(p, 4), "recall": round(r, 4),
                     "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0}
    return out
