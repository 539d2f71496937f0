"""Cross-encoder reranking with sentence-transformers, loaded through ``rag_core.models.loading``."""

from __future__ import annotations

import numpy as np

from rag_core.models.loading import load_cross_encoder
from rag_core.retrieval.rerankers.base import RerankerBase, result_text
from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL


class CrossEncoderReranker(RerankerBase):
    """Scores (query, passage) pairs with a cross-encoder; ``score`` becomes its raw logit.

    The model loads on first use (once per process). ``fastembed_model_name`` selects a
    fastembed ONNX cross-encoder instead, when the ``fastembed`` package is installed.
    """

    name = "cross_encoder"

    def __init__(
        self,
        model_name: str = DEFAULT_CROSS_ENCODER_MODEL,
        max_length: int = 512,
        fastembed_model_name: str | None = None,
        *,
        batch_size: int = 32,
    ):
        self.model_name = model_name
        self.max_length = max_length
        self.fastembed_model_name = fastembed_model_name
        self.batch_size = batch_size
        self._model = None

    @property
    def model(self):
        if self._model is None:
            if self.fastembed_model_name:
                try:
                    from fastembed.rerank.cross_encoder import TextCrossEncoder
                except ImportError as exc:
                    raise ImportError(
                        "fastembed_model_name needs the fastembed package: `pip install fastembed`, "
                        "or leave it unset to use sentence-transformers."
                    ) from exc
                self._model = TextCrossEncoder(model_name=self.fastembed_model_name)
            else:
                self._model = load_cross_encoder(self.model_name, max_length=self.max_length)
        return self._model

    def load(self) -> CrossEncoderReranker:
        """Load the model now (raises ``ModelUnavailableError`` when it cannot be found)."""
        _ = self.model
        return self

    def score(self, query: str, passages: list[str]) -> tuple[np.ndarray, list[bool]]:
        """Raw scores for each passage and whether each pair was cut to fit ``max_length``."""
        if not passages:
            return np.zeros(0, dtype=np.float32), []
        model = self.model
        if self.fastembed_model_name:
            scores = np.asarray(list(model.rerank(query, passages)), dtype=np.float32)
            return scores, [False] * len(passages)
        tokenizer = model.tokenizer
        lengths = [len(ids) for ids in tokenizer([query] * len(passages), passages, truncation=False)["input_ids"]]
        limit = getattr(model, "max_seq_length", None) or tokenizer.model_max_length
        truncated = [n > limit for n in lengths]
        # Length-sorted batches waste less padding; scores go back in the input order.
        order = np.argsort(lengths, kind="stable")
        import torch

        sorted_scores = model.predict(
            [(query, passages[i]) for i in order], batch_size=self.batch_size,
            activation_fn=torch.nn.Identity(), show_progress_bar=False, convert_to_numpy=True,
        )
        sorted_scores = np.asarray(sorted_scores, dtype=np.float32).reshape(len(passages), -1)[:, -1]
        scores = np.empty(len(passages), dtype=np.float32)
        scores[order] = sorted_scores
        return scores, truncated

    def rerank(self, query: str, results: list[dict], n_results: int | None = None) -> list[dict]:
        scores, truncated = self.score(query, [result_text(r) for r in results])
        reranked = []
        for result, score, cut in zip(results, scores, truncated, strict=True):
            reranked.append({**result, "score": float(score), "rerank_score": float(score),
                             "score_type": "rerank", "truncated": bool(cut)})
        reranked.sort(key=lambda r: r["score"], reverse=True)
        return self._cut(reranked, n_results)
