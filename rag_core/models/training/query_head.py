"""Fit a query head (:mod:`rag_core.models.query_head`) on cached, frozen embeddings.

Each training item is one query vector against one pool of document vectors (the chunks of a
corpus, the evidence texts of a claims dataset) with the rows relevant to it. The loss is the
cross-entropy of the relevant rows against the whole pool (softmax over every pool row at
temperature ``temperature``): every other query's positives and the query's nearest
non-relevant rows (the hard negatives) are in the denominator. ``W`` starts at zero, so the
head starts as the identity, and weight decay keeps it near.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class TrainingSet:
    """One pool of document vectors and the queries fitted against it.

    ``queries``: (n, d) unit vectors; ``positives[i]``: pool rows relevant to query ``i``;
    ``weight``: this set's share of the loss.
    """

    name: str
    pool: np.ndarray
    queries: np.ndarray
    positives: list[Sequence[int]]
    weight: float = 1.0


@dataclass
class FitSettings:
    steps: int = 300
    lr: float = 2e-3
    temperature: float = 0.05
    weight_decay: float = 1e-3
    batch: int = 512
    seed: int = 0
    log: list[dict] = field(default_factory=list)


def fit_query_head(sets: Sequence[TrainingSet], settings: FitSettings | None = None,
                   progress=None) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` of ``q' = normalize(q + W q + b)`` minimising the pooled contrastive loss."""
    import torch

    settings = settings or FitSettings()
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    dim = int(sets[0].queries.shape[1])
    weight = torch.zeros(dim, dim, requires_grad=True)
    bias = torch.zeros(dim, requires_grad=True)
    opt = torch.optim.AdamW([weight, bias], lr=settings.lr, weight_decay=0.0)
    prepared = []
    for s in sets:
        if len(s.queries) == 0:
            continue
        mask = np.zeros((len(s.queries), len(s.pool)), dtype=bool)
        for i, rows in enumerate(s.positives):
            mask[i, list(rows)] = True
        keep = mask.any(axis=1)
        prepared.append((s, torch.from_numpy(np.ascontiguousarray(s.pool, dtype=np.float32)),
                         torch.from_numpy(np.ascontiguousarray(s.queries[keep], dtype=np.float32)),
                         torch.from_numpy(mask[keep])))
    total_weight = sum(s.weight for s, *_ in prepared)
    for step in range(settings.steps):
        opt.zero_grad()
        loss_total = torch.zeros(())
        for s, pool, queries, mask in prepared:
            take = rng.choice(len(queries), size=min(settings.batch, len(queries)), replace=False)
            q = queries[take]
            q = q + q @ weight.T + bias
            q = q / q.norm(dim=1, keepdim=True).clamp_min(1e-6)
            logits = (q @ pool.T) / settings.temperature
            positive = logits.masked_fill(~mask[take], float("-inf")).logsumexp(dim=1)
            loss = (logits.logsumexp(dim=1) - positive).mean()
            loss_total = loss_total + (s.weight / total_weight) * loss
        loss_total = loss_total + settings.weight_decay * (weight.pow(2).sum() + bias.pow(2).sum())
        loss_total.backward()
        opt.step()
        if progress is not None and (step % 50 == 0 or step == settings.steps - 1):
            progress(step, float(loss_total.detach()))
        if step % 50 == 0 or step == settings.steps - 1:
            settings.log.append({"step": step, "loss": round(float(loss_total.detach()), 4)})
    return weight.detach().numpy().copy(), bias.detach().numpy().copy()
