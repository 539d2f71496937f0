"""Training sets of the query head: claim -> evidence pairs of ``../shared/data/claims`` (train parts only).

Each set is one dataset's pool of evidence texts and its claims, each with the pool rows that
support or contradict it (relevant for retrieval) and, where the dataset gives them, rows shown
beside the claim that do not bear on it (``nei``: hard negatives). SciFact's own pairs come from
the BEIR train qrels (``bench_ranking``/``train_query_head``), not from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_core.models.training.claims import (
    read_checkcovid,
    read_climatefever,
    read_covidfact,
    read_healthver,
)


@dataclass
class ClaimSet:
    dataset: str
    docs: list[str] = field(default_factory=list)
    # (claim, positive rows, nei rows)
    items: list[tuple[str, list[int], list[int]]] = field(default_factory=list)
    _rows: dict[str, int] = field(default_factory=dict, repr=False)

    def row(self, text: str) -> int:
        text = " ".join(text.split())
        if text not in self._rows:
            self._rows[text] = len(self.docs)
            self.docs.append(text)
        return self._rows[text]


def _document_text(doc) -> str:
    body = " ".join(doc.sentences)
    return f"{doc.title}. {body}" if doc.title else body


def claim_sets(split: str | None = "train") -> list[ClaimSet]:
    """Check-COVID, HealthVer, COVID-Fact and CLIMATE-FEVER as :class:`ClaimSet` rows of ``split``
    (``train``: never a dev row; None: both)."""
    out = []
    # Check-COVID: the pool is every abstract; a claim's positive is its abstract unless nei
    s = ClaimSet("checkcovid")
    for doc in read_checkcovid(split=split):
        row = s.row(_document_text(doc))
        if doc.label != "nei":
            s.items.append((doc.claim, [row], []))
    out.append(s)
    # HealthVer: each claim against a passage; nei passages are hard negatives of the claim
    s = ClaimSet("healthver")
    by_claim: dict[str, tuple[list[int], list[int]]] = {}
    for doc in read_healthver(split=split):
        row = s.row(" ".join(doc.sentences))
        pos, neg = by_claim.setdefault(doc.claim, ([], []))
        (neg if doc.label == "nei" else pos).append(row)
    s.items = [(c, p, n) for c, (p, n) in by_claim.items() if p]
    out.append(s)
    # COVID-Fact: a claim against its evidence sentences (both labels are about the claim)
    s = ClaimSet("covidfact")
    for doc in read_covidfact(split=split):
        s.items.append((doc.claim, [s.row(" ".join(doc.sentences))], []))
    out.append(s)
    # CLIMATE-FEVER: each labelled sentence; the nei ones of the same claim are hard negatives
    s = ClaimSet("climatefever")
    for doc in read_climatefever(split=split):
        labels = doc.sentence_labels or ()
        rows = [s.row(t) for t in doc.sentences]
        pos = [r for r, lab in zip(rows, labels, strict=False) if lab != "nei"]
        neg = [r for r, lab in zip(rows, labels, strict=False) if lab == "nei"]
        if pos:
            s.items.append((doc.claim, pos, neg))
    out.append(s)
    return out


def claim_training_texts(split: str | None = None) -> tuple[list[str], list[str]]:
    """(claims, evidence texts) of every set, each once, in a fixed order (what gets embedded)."""
    queries: dict[str, None] = {}
    docs: dict[str, None] = {}
    for s in claim_sets(split):
        docs.update(dict.fromkeys(s.docs))
        queries.update(dict.fromkeys(c for c, _, _ in s.items))
    return list(queries), list(docs)
