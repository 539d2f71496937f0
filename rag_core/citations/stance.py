"""Does the evidence support the statement, contradict it, or not say? A learned stance.

:func:`decide` splits the candidate passages (the cited document first, then the closest
passages) into sentences, scores each against the statement (bi-encoder cosine and the share
of the statement's content words it holds), classifies the best ones with a small
multinomial logistic regression over pair features, and returns a :class:`StanceDecision`:
``stance`` ("supports", "contradicts", "nei"), a calibrated ``score``, the ``model`` that
decided and the ``evidence_sentences`` (document, page, offsets, score) that bear on it.

The features of a (statement, sentence) pair (:func:`pair_features`): the InferSent-style
products of their all-MiniLM-L6-v2 embeddings (``u*v``, ``|u-v|``), their cosine, and the rule
cues of :mod:`rag_core.citations.meaning` on the pair (negation, number, direction,
quantifier conflicts, hedges), negations on either side, exclusivity words ("only",
"exclusively"), polarity words (better/worse, increases/reduces, protective/harmful,
good/poor outcome) on each side and whether they disagree, and the lexical overlap.

Two learned parts, the first at hand decides:

* the **stance reader** (:mod:`rag_core.models.stance_encoder`): the bundled bi-encoder read as a
  cross-encoder over the statement and its evidence sentences, with its decision thresholds in
  its card (rebuilt by ``benchmarks/train_stance_encoder.py``);
* the **logistic regression** of ``rag_core/models/trained/stance/stance.json`` over the pair
  features below (rebuilt by ``benchmarks/train_stance.py``), the reader's fallback.

A missing or damaged file makes :func:`decide` fall back to the next one, and to the rules'
answer (``model="rules"``) when neither can be used, and say why in ``note``.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag_core.citations.meaning_align import align_keys, conflicts
from rag_core.citations.meaning_read import read
from rag_core.text.sentences import split_sentences

__all__ = [
    "MODEL_DIR", "MODEL_FILE", "RULE_FEATURES", "STANCES", "StanceDecision", "StanceModel", "StanceModelError",
    "candidate_sentences", "decide", "load_model", "load_reader", "meaning_of_stance", "pair_features",
    "reader_stance", "rule_features", "rules_conflict", "rules_stance",
]

STANCES = ("supports", "contradicts", "nei")
CLASSES = ("support", "contradict", "nei")  # the datasets' labels, in the weights' column order
MODEL_DIR = Path(__file__).resolve().parents[1] / "models" / "trained" / "stance"
MODEL_FILE = "stance.json"
FEATURE_VERSION = 1
EVIDENCE_TOP = 3          # sentences classified and returned per statement
PASSAGES_READ = 5         # candidate passages whose sentences are read
MAX_SENTENCES = 8         # sentences embedded per statement at most (the best by key words first)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_EXCLUSIVE = _words("only exclusively solely entirely always never all every sole determined")
# Polarity words of findings that the rules' direction axes do not hold (biomedical outcomes).
_GOOD = _words(
    "better best improve improves improved improvement improving benefit benefits beneficial protective protects "
    "protect protection favorable favourable good positive effective efficacy safe success successful increase "
    "increases increased increasing higher high enhance enhances enhanced promote promotes promoted survival "
    "prolong prolongs prolonged activate activates activated elevated elevate upregulate upregulates greater more "
    "gain gains rise raises raised induce induces induced"
)
_BAD = _words(
    "worse worst poor poorer poorly harm harms harmful detrimental adverse risk risks negative ineffective unsafe "
    "failure fail fails decrease decreases decreased decreasing lower low reduce reduces reduced reduction "
    "reducing impair impairs impaired inhibit inhibits inhibited inhibition suppress suppresses suppressed "
    "mortality death deaths shorter downregulate downregulates less fewer decline declines loss lose diminish "
    "diminished attenuate attenuates attenuated block blocks blocked prevent prevents prevented"
)
RULE_FEATURES = (
    "cosine", "overlap", "overlap_sentence", "cue_negation", "cue_number", "cue_direction", "cue_quantifier",
    "cue_hedge", "cue_any_high", "unmatched_number", "claim_negated", "sentence_negated", "negation_parity",
    "claim_exclusive", "sentence_exclusive", "claim_hedge", "sentence_hedge", "claim_polarity",
    "sentence_polarity", "polarity_product", "polarity_disagree", "claim_numbers", "sentence_numbers",
    "length_ratio",
)


class StanceModelError(RuntimeError):
    """The stance model file is missing, damaged, or not the one its card names."""


@dataclass
class StanceDecision:
    """What the evidence says of a statement: ``stance`` (one of :data:`STANCES`), ``score``
    (the calibrated probability of that stance), ``model`` (the model's name, or "rules"),
    ``evidence_sentences`` (each ``{source, page, chunk_index, passage, start, end, sentence,
    score, stance, probabilities}``, best first), ``probabilities`` (per stance) and ``note``."""

    stance: str
    score: float
    model: str
    evidence_sentences: list[dict] = field(default_factory=list)
    probabilities: dict = field(default_factory=dict)
    note: str = ""
    raw: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- features


def _polarity(reading) -> int:
    """Net polarity of a text's finding words: good minus bad, a negated word counted reversed."""
    total = 0
    for i, word in enumerate(reading.plain):
        sign = 1 if word in _GOOD or reading.keys[i] in _GOOD else -1 if word in _BAD or reading.keys[i] in _BAD else 0
        if sign and i in reading.negated:
            sign = -sign
        total += sign
    return total


def rule_features(statement: str, sentence: str, cosine: float = 0.0) -> np.ndarray:
    """The rule-side features of one pair (:data:`RULE_FEATURES`, in order)."""
    rc, rs = read(statement), read(sentence)
    cues, unmatched = conflicts(rc, rs)
    kinds = {c["kind"] for c in cues if c.get("severity") == "high"}
    hedge = any(c["kind"] == "hedge" for c in cues)
    c_keys = [align_keys(rc, i) for i, c in enumerate(rc.content) if c]
    s_keys = {k for j, c in enumerate(rs.content) if c for k in align_keys(rs, j)}
    overlap = sum(1 for ks in c_keys if ks & s_keys) / len(c_keys) if c_keys else 0.0
    s_count = sum(rs.content)
    overlap_s = sum(1 for ks in c_keys if ks & s_keys) / s_count if s_count else 0.0
    pc, ps = _polarity(rc), _polarity(rs)
    c_excl = any(k in _EXCLUSIVE for k in rc.keys)
    s_excl = any(k in _EXCLUSIVE for k in rs.keys)
    values = [
        cosine, overlap, overlap_s, "negation" in kinds, "number" in kinds, "direction" in kinds,
        "quantifier" in kinds, hedge, bool(kinds), bool(unmatched), bool(rc.negators), bool(rs.negators),
        (len(rc.negators) % 2) != (len(rs.negators) % 2), c_excl, s_excl and not c_excl,
        any(v == "hedge" for v in rc.hedges.values()), any(v == "hedge" for v in rs.hedges.values()),
        math.tanh(pc), math.tanh(ps), math.tanh(pc) * math.tanh(ps), (pc > 0 > ps) or (pc < 0 < ps),
        min(len(rc.amounts), 3) / 3, min(len(rs.amounts), 3) / 3,
        min(len(rs.tokens) / max(len(rc.tokens), 1), 5.0) / 5,
    ]
    return np.asarray(values, dtype=np.float32)


def pair_features(u: np.ndarray, v: np.ndarray, rules: np.ndarray, *, embedding: bool = False) -> np.ndarray:
    """One pair's feature row: the rule features, after ``u*v`` and ``|u-v|`` of the unit
    embeddings when ``embedding``."""
    parts = [u * v, np.abs(u - v), rules] if embedding else [rules]
    return np.concatenate(parts).astype(np.float32)


def feature_matrix(statements: Sequence[str], sentences: Sequence[str], u: np.ndarray, v: np.ndarray, *,
                   embedding: bool = False) -> np.ndarray:
    """Feature rows of many pairs (``u``/``v``: the statements' and sentences' unit embeddings)."""
    cos = np.sum(u * v, axis=1)
    rules = np.vstack([rule_features(a, b, float(c)) for a, b, c in zip(statements, sentences, cos, strict=True)])
    return (np.hstack([u * v, np.abs(u - v), rules]) if embedding else rules).astype(np.float32)


# --------------------------------------------------------------------------- the model


@dataclass
class StanceModel:
    """A multinomial logistic regression over :func:`pair_features` (standardised), with a
    temperature and the decision thresholds; read from and written to JSON."""

    name: str
    weights: np.ndarray      # features x 3 (CLASSES order)
    bias: np.ndarray         # 3
    mean: np.ndarray
    scale: np.ndarray
    temperature: float = 1.0
    threshold_contradict: float = 0.5   # a contradiction this likely is called one, whatever the rules say
    threshold_support: float = 0.5      # a support this likely is called one where the rules cannot tell
    threshold_veto: float = 0.5         # a contradiction this likely keeps the rules' "same" from standing
    evidence_weight: float = 0.5        # weight of key-word overlap beside cosine when picking sentences
    embedding: bool = False             # whether u*v and |u-v| are among the features
    settings: dict = field(default_factory=dict)

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """Calibrated class probabilities (rows: pairs; columns: CLASSES)."""
        z = ((features - self.mean) / self.scale) @ self.weights + self.bias
        z = z / max(self.temperature, 1e-6)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def to_json(self) -> dict:
        return {
            "format": "rag_core.stance", "feature_version": FEATURE_VERSION, "name": self.name,
            "classes": list(CLASSES), "rule_features": list(RULE_FEATURES),
            "weights": np.round(self.weights, 6).tolist(), "bias": np.round(self.bias, 6).tolist(),
            "mean": np.round(self.mean, 6).tolist(), "scale": np.round(self.scale, 6).tolist(),
            "temperature": self.temperature, "threshold_contradict": self.threshold_contradict,
            "threshold_support": self.threshold_support, "threshold_veto": self.threshold_veto,
            "evidence_weight": self.evidence_weight, "embedding": self.embedding, "settings": self.settings,
        }

    @classmethod
    def from_json(cls, data: dict) -> StanceModel:
        if not isinstance(data, dict) or data.get("format") != "rag_core.stance":
            raise StanceModelError("not a stance model file (format is not rag_core.stance)")
        features = list(data.get("rule_features") or [])
        if data.get("feature_version") != FEATURE_VERSION or features != list(RULE_FEATURES):
            raise StanceModelError("the stance model was fitted on other features: rebuild it "
                                   "(benchmarks/train_stance.py)")
        try:
            weights = np.asarray(data["weights"], dtype=np.float32)
            bias = np.asarray(data["bias"], dtype=np.float32)
            mean = np.asarray(data["mean"], dtype=np.float32)
            scale = np.asarray(data["scale"], dtype=np.float32)
            model = cls(name=str(data["name"]), weights=weights, bias=bias, mean=mean, scale=scale,
                        temperature=float(data["temperature"]),
                        threshold_contradict=float(data["threshold_contradict"]),
                        threshold_support=float(data["threshold_support"]),
                        threshold_veto=float(data["threshold_veto"]), embedding=bool(data["embedding"]),
                        evidence_weight=float(data.get("evidence_weight", 0.5)),
                        settings=dict(data.get("settings") or {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise StanceModelError(f"the stance model file is damaged ({exc})") from exc
        n = weights.shape[0] if weights.ndim == 2 else -1
        if weights.ndim != 2 or weights.shape[1] != len(CLASSES) or bias.shape != (len(CLASSES),) \
                or mean.shape != (n,) or scale.shape != (n,) \
                or (n - len(RULE_FEATURES) <= 0 or (n - len(RULE_FEATURES)) % 2 if model.embedding
                    else n != len(RULE_FEATURES)) \
                or not all(np.isfinite(a).all() for a in (weights, bias, mean, scale)):
            raise StanceModelError("the stance model file is damaged (its arrays do not fit together)")
        return model

    @property
    def embedding_dim(self) -> int | None:
        """The embedding size the features need (None: any; only the cosine is read)."""
        return (self.weights.shape[0] - len(RULE_FEATURES)) // 2 if self.embedding else None


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


_cache: dict[str, StanceModel] = {}
_lock = threading.Lock()


def load_model(folder: str | Path | None = None) -> StanceModel:
    """The stance model of ``folder`` (default :data:`MODEL_DIR`), checked against the SHA-256 its
    ``card.json`` records. Raises :class:`StanceModelError` with a clear message otherwise."""
    folder = Path(folder) if folder is not None else MODEL_DIR
    path = folder / MODEL_FILE
    key = str(path.resolve())
    with _lock:
        if key in _cache:
            return _cache[key]
    if not path.is_file():
        raise StanceModelError(f"no stance model at {path}: rebuild it with benchmarks/train_stance.py")
    card_path = folder / "card.json"
    try:
        card = json.loads(card_path.read_text(encoding="utf-8"))
        expected = card["model_file"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StanceModelError(f"the stance model's card {card_path} is missing or damaged ({exc})") from exc
    if _sha256(path) != expected:
        raise StanceModelError(f"the stance model {path} is damaged: its SHA-256 is not the one its card records")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StanceModelError(f"the stance model {path} is damaged ({exc})") from exc
    model = StanceModel.from_json(data)
    with _lock:
        _cache[key] = model
    return model


def clear_cache() -> None:
    """Forget loaded models (tests)."""
    with _lock:
        _cache.clear()


# --------------------------------------------------------------------------- the stance reader

# How the reader's probabilities become a stance, when its card does not say (the card's
# "decision" holds the values chosen on the dev splits: docs/citations.md).
READER_DECISION = {"combine": "set", "contradict": 0.5, "support": 0.5, "rules_keep": 1.01, "not_found": False,
                   "not_found_support": 1.01, "not_found_combine": "each"}


def load_reader():
    """The stance reader (:func:`rag_core.models.stance_encoder.load_stance_encoder`); raises
    :class:`rag_core.models.stance_encoder.StanceEncoderError` when it cannot be used."""
    from rag_core.models.stance_encoder import load_stance_encoder

    return load_stance_encoder()


def reader_decision(reader) -> dict:
    """The reader's decision settings: its card's, over :data:`READER_DECISION`."""
    card = getattr(reader, "card", None) or {}
    return {**READER_DECISION, **(card.get("decision") or {})}


def combined(p_set: np.ndarray, p_each: np.ndarray, combine: str = "set") -> np.ndarray:
    """The probabilities a decision reads: the evidence read together (``set``), with the
    strongest single sentence's support and contradiction beside it (``max``), or the single
    sentences alone (``each``: one sentence must decide)."""
    p = np.asarray(p_set, dtype=np.float64).copy()
    if combine == "each":
        if not len(p_each):
            return np.array([0.0, 0.0, 1.0])
        p[0], p[1] = float(np.max(p_each[:, 0])), float(np.max(p_each[:, 1]))
        p[2] = 1.0 - min(1.0, max(p[0], p[1]))
    elif combine == "max" and len(p_each):
        p[0] = max(p[0], float(np.max(p_each[:, 0])))
        p[1] = max(p[1], float(np.max(p_each[:, 1])))
        p[2] = 1.0 - min(1.0, max(p[0], p[1]))
    return p


def reader_stance(p: Sequence[float], rules_meaning: str | None, decision: dict) -> tuple[str, float]:
    """The stance from the reader's probabilities ``p`` (support, contradict, nei) and the rules'
    meaning: a contradiction past its threshold contradicts; a rules' "changed" (a number, negation,
    direction or quantifier that differs) stands unless the reader supports past ``rules_keep``; a
    support past its threshold supports; anything else does not decide."""
    p_sup, p_con, p_nei = (float(x) for x in p[:3])
    if p_con >= decision["contradict"] and p_con >= p_sup:
        return "contradicts", p_con
    if rules_meaning == "changed" and p_sup < decision["rules_keep"]:
        return "contradicts", max(p_con, 0.5)
    if p_sup >= decision["support"] and p_sup > p_con:
        return "supports", p_sup
    return "nei", max(p_nei, 1.0 - max(p_sup, p_con))


def _order_in_document(rows: Sequence[dict]) -> list[int]:
    return sorted(range(len(rows)), key=lambda i: (rows[i]["passage"], rows[i]["start"]))


def _decide_with_reader(reader, statement: str, chosen: list[dict], relevance: np.ndarray, order,
                        rules_meaning: str | None, combine: str | None = None) -> StanceDecision:
    from rag_core.models.stance_encoder import stance_input

    settings = reader_decision(reader)
    in_document = [chosen[i]["sentence"] for i in _order_in_document(chosen)]
    texts = [stance_input(in_document), *[r["sentence"] for r in chosen]]
    probs = reader.probabilities([statement] * len(texts), texts)
    p_set, p_each = probs[0], probs[1:]
    p = combined(p_set, p_each, combine or settings["combine"])
    stance, score = reader_stance(p, rules_meaning, settings)
    evidence = []
    for r, i, q in zip(chosen, order, p_each, strict=True):
        evidence.append({**r, "score": round(float(relevance[i]), 4), "stance": STANCES[int(np.argmax(q))],
                         "probabilities": {s: round(float(x), 4) for s, x in zip(STANCES, q, strict=True)}})
    column = {"supports": 0, "contradicts": 1}.get(stance)
    if column is not None:
        evidence.sort(key=lambda e: -e["probabilities"][STANCES[column]])
    shown = {s: round(float(x), 4) for s, x in zip(STANCES, p, strict=True)}
    note = f"{_NOTES[stance]} ({reader.name}, {score:.2f})."
    if stance == "contradicts" and not (p[1] >= settings["contradict"] and p[1] >= p[0]):
        note = f"{_NOTES[stance]}: the rules found a difference the reader does not outweigh ({reader.name})."
        # the rules decided: the sentence they find a conflict in (the one most of the statement
        # aligns with, where several) is the deciding one, shown first, not the sentence the
        # reader leans to contradict most, which may say nothing against the statement
        evidence.sort(key=lambda e: -_conflict_alignment(statement, e["sentence"]))
    conflict = rules_conflict(statement, evidence[0]["sentence"]) if stance == "supports" else ""
    if conflict:  # never "supports" where the rules find a conflict in the very sentence that decides
        note = (f"The reader reads the first evidence sentence as supporting the statement ({reader.name}, "
                f"{score:.2f}), but the rules find a conflict in that sentence ({conflict}): read it to judge.")
        stance, score = "nei", max(float(p[2]), 1.0 - max(float(p[0]), float(p[1])))  # as reader_stance's nei
    return StanceDecision(stance=stance, score=round(float(score), 4), model=reader.name, evidence_sentences=evidence,
                          probabilities=shown, note=note,
                          raw={"set": [float(x) for x in p_set], "each": [[float(x) for x in q] for q in p_each],
                               "sentences": [r["sentence"] for r in chosen]})


def _conflict_alignment(statement: str, sentence: str) -> float:
    """How much of ``statement`` aligns with ``sentence`` where the rules find a conflict in it, else 0."""
    from rag_core.citations.meaning import compare_passages

    found = compare_passages(statement, [sentence])
    return float(found.aligned or 0.0) if found.meaning == "changed" else 0.0


def rules_conflict(statement: str, sentence: str) -> str:
    """The rules' conflicts between ``statement`` and one evidence ``sentence`` in words ("direction:
    claim “increases” · source “reduce”"), or "" when they find none."""
    from rag_core.citations.meaning import compare_passages

    found = compare_passages(statement, [sentence])
    if found.meaning != "changed":
        return ""
    return "; ".join(f"{c.get('kind')}: claim “{c.get('claim') or ''}” · source “{c.get('source') or ''}”"
                     for c in found.cues[:2])


# --------------------------------------------------------------------------- deciding


def rules_stance(meaning: str | None) -> str:
    """The stance the rules' ``meaning`` stands for (changed: contradicts, same: supports)."""
    return {"changed": "contradicts", "same": "supports"}.get(meaning or "", "nei")


def candidate_sentences(candidates: Sequence[dict | str], *, passages: int = PASSAGES_READ) -> list[dict]:
    """The sentences of the first ``passages`` candidates (a dict with ``text``, or a text), each
    ``{passage, start, end, sentence, source, page, chunk_index}`` (offsets in the passage's text)."""
    out = []
    for p, row in enumerate(list(candidates)[:passages]):
        text = row if isinstance(row, str) else (row.get("text") or "")
        meta = {} if isinstance(row, str) else row
        for a, b in split_sentences(text):
            sentence = " ".join(text[a:b].split())
            if len(sentence) < 3:
                continue
            out.append({"passage": p, "start": a, "end": b, "sentence": sentence, "source": meta.get("source"),
                        "chunk_index": meta.get("chunk_index"), "doc_start": _doc_offset(meta, a),
                        "doc_end": _doc_offset(meta, b),
                        "page": _page_of(meta, a)})
    return out


def _doc_offset(row: dict, a: int):
    offset = row.get("start")
    return offset + a if isinstance(offset, int) and not isinstance(offset, bool) else None


def _page_of(row: dict, a: int):
    if row.get("sentence_start") == a and row.get("sentence_page") is not None:
        return row.get("sentence_page")
    return row.get("page_start", row.get("page"))


def default_embed(texts: list[str]) -> np.ndarray:
    """Unit embeddings from the bundled bi-encoder (cached by text, as the check's sentences are)."""
    from rag_core.citations.closeness import _sentence_vectors
    from rag_core.models.loading import load_bi_encoder
    from rag_core.settings import DEFAULT_EMBEDDING_MODEL

    return _sentence_vectors(load_bi_encoder(DEFAULT_EMBEDDING_MODEL), DEFAULT_EMBEDDING_MODEL, list(texts))


def _overlap(statement: str, sentence: str) -> float:
    rc, rs = read(statement), read(sentence)
    c_keys = [align_keys(rc, i) for i, c in enumerate(rc.content) if c]
    s_keys = {k for j, c in enumerate(rs.content) if c for k in align_keys(rs, j)}
    return sum(1 for ks in c_keys if ks & s_keys) / len(c_keys) if c_keys else 0.0


def classify(model: StanceModel, statement: str, sentences: Sequence[str], u: np.ndarray,
             v: np.ndarray) -> np.ndarray:
    """Class probabilities (CLASSES order) of ``statement`` against each sentence."""
    if not len(sentences):
        return np.zeros((0, len(CLASSES)), dtype=np.float32)
    uu = np.repeat(u[None, :], len(sentences), axis=0)
    return model.probabilities(feature_matrix([statement] * len(sentences), sentences, uu, v,
                                              embedding=model.embedding))


def aggregate(model: StanceModel, probs: np.ndarray, rules_meaning: str | None = None, *,
              may_flag: bool = True) -> tuple[str, float, dict]:
    """The document-level stance from the evidence sentences' probabilities and the rules'
    meaning (the rules' answer stands unless the model is sure): the strongest contradiction
    past ``threshold_contradict`` (and above the strongest support) contradicts; a rules'
    "changed" contradicts; a rules' "same" against a contradiction past ``threshold_veto`` is
    nei; where the rules cannot tell, a support past ``threshold_support`` supports. With
    ``may_flag`` False the model never contradicts where the rules do not."""
    if not len(probs):
        p_sup = p_con = 0.0
        p_nei = 1.0
    else:
        p_sup, p_con = float(probs[:, 0].max()), float(probs[:, 1].max())
        p_nei = float(probs[:, 2].min())
    shown = {"supports": round(p_sup, 4), "contradicts": round(p_con, 4), "nei": round(p_nei, 4)}
    rules = rules_stance(rules_meaning)
    nei_score = max(p_nei, 1.0 - max(p_sup, p_con))
    if may_flag and p_con >= model.threshold_contradict and p_con >= p_sup:
        return "contradicts", p_con, shown
    if rules == "contradicts":
        return "contradicts", max(p_con, 0.5), shown
    if rules == "supports":
        if p_con >= model.threshold_veto:
            return "nei", nei_score, shown
        return "supports", max(p_sup, 0.5), shown
    if p_sup >= model.threshold_support and p_sup > p_con:
        return "supports", p_sup, shown
    return "nei", nei_score, shown


def decide(statement: str, candidates: Sequence[dict | str], *, cues: Sequence[dict] | None = None,
           rules_meaning: str | None = None, model: StanceModel | None = None,
           embed: Callable[[list[str]], np.ndarray] | None = None, top: int = EVIDENCE_TOP,
           may_flag: bool | None = None, reader=None, use_reader: bool = True,
           combine: str | None = None) -> StanceDecision:
    """The stance of the ``candidates`` (passages, best first: the cited document's first) on
    ``statement``. ``cues``/``rules_meaning``: the rules' answer, given back (``model="rules"``)
    when no learned part can be used or the bi-encoder is not at hand. ``reader``: the stance
    reader (default :func:`load_reader`; ``use_reader=False`` leaves it out); without one the
    logistic regression ``model`` decides (default :func:`load_model`), and ``may_flag`` says
    whether it may contradict where the rules found no conflict (default STANCE_MAY_FLAG).
    ``combine``: how the reader's readings combine (:func:`combined`; default its card's)."""
    from rag_core.settings import STANCE_MAY_FLAG

    may_flag = STANCE_MAY_FLAG if may_flag is None else may_flag
    fallback_stance = rules_stance(rules_meaning)
    if rules_meaning is None and cues:
        fallback_stance = "contradicts" if any(c.get("severity") == "high" for c in cues) else "nei"

    def fallback(reason: str) -> StanceDecision:
        return StanceDecision(stance=fallback_stance, score=1.0 if fallback_stance != "nei" else 0.0, model="rules",
                              note=f"{reason} The stance is the rules' answer.")

    why_not_reader = ""
    if reader is None and use_reader:
        from rag_core.models.stance_encoder import StanceEncoderError

        try:
            reader = load_reader()
        except (StanceEncoderError, ImportError, OSError) as exc:
            why_not_reader = f"The stance reader could not be used: {exc}."
    if reader is None and model is None:
        try:
            model = load_model()
        except StanceModelError as exc:
            return fallback(f"{why_not_reader} The stance model could not be used: {exc}.".strip())
    name = reader.name if reader is not None else model.name
    rows = candidate_sentences(candidates)
    if not rows:
        return StanceDecision(stance="nei", score=1.0, model=name, note="No sentence of the closest passages to weigh.")
    overlaps = np.array([_overlap(statement, r["sentence"]) for r in rows], dtype=np.float32)
    if len(rows) > MAX_SENTENCES:
        keep = np.sort(np.argsort(-overlaps, kind="stable")[:MAX_SENTENCES])
        rows, overlaps = [rows[i] for i in keep], overlaps[keep]
    try:
        vectors = (embed or default_embed)([statement, *[r["sentence"] for r in rows]])
    except (ImportError, OSError, ValueError, RuntimeError) as exc:
        return fallback(f"The bi-encoder could not be used ({exc}).")
    vectors = np.asarray(vectors, dtype=np.float32)
    u, v = vectors[0], vectors[1:]
    evidence_weight = model.evidence_weight if model is not None else 0.5
    relevance = v @ u + evidence_weight * overlaps
    order = np.argsort(-relevance, kind="stable")[:max(top, 1)]
    chosen = [rows[i] for i in order]
    if reader is not None:
        try:
            return _decide_with_reader(reader, statement, chosen, relevance, order, rules_meaning, combine)
        except Exception as exc:  # noqa: BLE001 - tokenizers and ONNX Runtime raise their own or bare
            return fallback(f"The stance reader failed ({exc}).")  # Exceptions: a failed reading never fails a check
    if model.embedding_dim is not None and vectors.shape[1] != model.embedding_dim:
        return fallback("The stance model was fitted on another embedding size.")
    probs = classify(model, statement, [r["sentence"] for r in chosen], u, v[order])
    stance, score, shown = aggregate(model, probs, rules_meaning, may_flag=may_flag)
    evidence = []
    for r, i, p in zip(chosen, order, probs, strict=True):
        evidence.append({**r, "score": round(float(relevance[i]), 4),
                         "stance": STANCES[int(np.argmax(p))],
                         "probabilities": {s: round(float(x), 4) for s, x in zip(STANCES, p, strict=True)}})
    # the deciding sentence first
    column = {"supports": 0, "contradicts": 1}.get(stance)
    if column is not None:
        evidence.sort(key=lambda e: -e["probabilities"][STANCES[column]])
    note = f"{_NOTES[stance]} ({model.name}, {score:.2f})."
    return StanceDecision(stance=stance, score=round(float(score), 4), model=model.name, evidence_sentences=evidence,
                          probabilities=shown, note=f"{note} {why_not_reader}".strip())


_NOTES = {"supports": "The evidence sentence supports the statement",
          "contradicts": "The evidence sentence contradicts the statement",
          "nei": "The closest sentences do not say whether the statement holds"}


def meaning_of_stance(decision: StanceDecision, rules_meaning: str, rules_note: str = "") -> tuple[str, str]:
    """The check's ``meaning`` and note from a stance (which already weighed the rules' answer):
    ``changed`` when it contradicts, ``same`` only when it supports, ``unclear`` otherwise."""
    if decision.stance == "contradicts" or (rules_meaning == "changed" and decision.model == "rules"):
        meaning = "changed"
    elif decision.stance == "supports":
        meaning = "same"
    else:
        meaning = "unclear"
    said = decision.note or _NOTES[decision.stance] + "."
    if meaning == rules_meaning and rules_note:
        return meaning, f"{said} {rules_note}"
    if meaning == "same":
        return meaning, f"{said} Read the sentence: a model's judgement, not a proof."
    return meaning, said
