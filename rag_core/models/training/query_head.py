"""Fit a query head (:mod:`rag_core.models.query_head`) on cached, frozen embeddings.

Each training item is one query vector against one pool of document vectors (the chunks of a
corpus, the evidence texts of a claims dataset) with the rows relevant to it. The loss is the
cross-entropy of the relevant rows against the query's candidates: its ``hard_negatives`` nearest
pool rows by the plain query vector (hard negatives; relevant ones count as positives) and the
other queries' positives in the batch (in-batch negatives). ``W`` starts at zero, so the head
starts as the identity, and weight decay keeps it near.
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
    batch: int = 256
    hard_negatives: int = 64
    seed: int = 0
    log: list[dict] = field(default_factory=list)


def _candidates(s: TrainingSet, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query: the rows of its top ``k`` by plain cosine and its positives (padded by repeating),
    which of them are relevant, and its first positive (for the in-batch negatives)."""
    scores = s.queries @ s.pool.T
    k = min(k, len(s.pool))
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    width = k + max(len(p) for p in s.positives)
    rows = np.zeros((len(s.queries), width), dtype=np.int64)
    relevant = np.zeros((len(s.queries), width), dtype=bool)
    first = np.zeros(len(s.queries), dtype=np.int64)
    for i, pos in enumerate(s.positives):
        pos = list(dict.fromkeys(int(r) for r in pos))
        cand = pos + [int(r) for r in top[i] if int(r) not in set(pos)]
        cand = (cand + cand * width)[:width]  # repeats count once more each: harmless, rare
        rows[i] = cand
        relevant[i] = [r in set(pos) for r in cand]
        first[i] = pos[0]
    return rows, relevant, first


def fit_query_head(sets: Sequence[TrainingSet], settings: FitSettings | None = None,
                   progress=None) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` of ``q' = normalize(q + W q + b)`` minimising the contrastive loss (module docstring)."""
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
        keep = [i for i, p in enumerate(s.positives) if len(p)]
        if not keep:
            continue
        s = TrainingSet(s.name, s.pool, s.queries[keep], [s.positives[i] for i in keep], s.weight)
        rows, relevant, first = _candidates(s, settings.hard_negatives)
        pool = torch.from_numpy(np.ascontiguousarray(s.pool, dtype=np.float32))
        prepared.append((s, pool, torch.from_numpy(np.ascontiguousarray(s.queries, dtype=np.float32)),
                         torch.from_numpy(rows), torch.from_numpy(relevant), torch.from_numpy(first)))
    total_weight = sum(s.weight for s, *_ in prepared)
    for step in range(settings.steps):
        opt.zero_grad()
        loss_total = torch.zeros(())
        for s, pool, queries, rows, relevant, first in prepared:
            take = torch.from_numpy(rng.choice(len(queries), size=min(settings.batch, len(queries)), replace=False))
            q = queries[take]
            q = q + q @ weight.T + bias
            q = q / q.norm(dim=1, keepdim=True).clamp_min(1e-6)
            cand = torch.einsum("bd,bkd->bk", q, pool[rows[take]]) / settings.temperature
            others = (q @ pool[first[take]].T) / settings.temperature  # in-batch: the batch's positives
            same = first[take][None, :] == first[take][:, None]
            others = others.masked_fill(same, float("-inf"))  # a query's own positive is in its candidates
            positive = cand.masked_fill(~relevant[take], float("-inf")).logsumexp(dim=1)
            loss = (torch.cat([cand, others], dim=1).logsumexp(dim=1) - positive).mean()
            loss_total = loss_total + (s.weight / total_weight) * loss
        loss_total = loss_total + settings.weight_decay * (weight.pow(2).sum() + bias.pow(2).sum())
        loss_total.backward()
        opt.step()
        if step % 50 == 0 or step == settings.steps - 1:
            value = round(float(loss_total.detach()), 4)
            settings.log.append({"step": step, "loss": value})
            if progress is not None:
                progress(step, value)
    return weight.detach().numpy().copy(), bias.detach().numpy().copy()
