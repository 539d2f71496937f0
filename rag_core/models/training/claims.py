"""Readers of the labelled claims in ``../shared/data/claims`` and the project's dev splits.

One rule for every model trained here (COMMON.md): SciFact's dev claims, Check-COVID test and
HealthVer test are held out and never in ../shared. Our own dev splits, the only data tuned on:

* Check-COVID: ``checkcovid_dev.jsonl``, all of it (``checkcovid_train.jsonl`` is train);
* SciFact train claims and HealthVer dev: a claim is in the dev slice when
  ``int(sha256(f"{dataset}:{key}").hexdigest()[:8], 16) % 100 < 25`` (:func:`in_dev_slice`),
  the key being SciFact's claim ``id`` as a string, or HealthVer's claim text folded
  (:func:`fold_claim`), so the same claim never lands on both sides;
* COVID-Fact and CLIMATE-FEVER: training only (a dev slice by the same rule, key the claim id,
  when one is asked for).

Every reader yields :class:`ClaimDocument` rows: one claim against one document (an abstract, a
passage, a list of evidence sentences) with the gold label (``support``, ``contradict``,
``nei``), the gold rationale sentences and, where a dataset labels each sentence, their labels.
:func:`sentence_pairs` turns them into (claim, sentence, label) pairs. Anything trained for
retrieval leaves the dev slices out too (``split="train"``).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rag_core.settings import CLAIMS_DIR_ENV

__all__ = [
    "CLAIMS_DIR_ENV", "DATASETS", "DEV_SHARE", "FILES", "LABELS", "ClaimDocument", "claims_dir", "dev_key",
    "fold_claim", "in_dev_slice", "read_all", "read_checkcovid", "read_climatefever", "read_covidfact",
    "read_healthver", "read_scifact", "sentence_pairs", "split_of",
]

LABELS = ("support", "contradict", "nei")
DATASETS = ("scifact", "checkcovid", "healthver", "covidfact", "climatefever")
DEV_SHARE = 25  # percent of the claims of a sliced dataset in its dev slice
FILES = {
    "scifact": ("scifact_claims_train.jsonl", "scifact_corpus.jsonl.gz"),
    "checkcovid": ("checkcovid_train.jsonl", "checkcovid_dev.jsonl", "checkcovid_corpus.jsonl"),
    "healthver": ("healthver_dev.jsonl",),
    "covidfact": ("covidfact.jsonl",),
    "climatefever": ("climatefever.jsonl",),
}


@dataclass(frozen=True)
class ClaimDocument:
    """One claim checked against one document.

    ``sentences``: the document's sentences (an abstract's, a passage split into sentences, or a
    list of evidence sentences); ``label``: the gold label of the claim against this document;
    ``evidence_sets``: the gold rationales (each a tuple of sentence indexes; SciFact counts a
    prediction right when one whole set is found); ``sentence_labels``: each sentence's own label
    where the dataset gives it (CLIMATE-FEVER), else None; ``split``: "train" or "dev".
    """

    dataset: str
    claim_id: str
    claim: str
    doc_id: str
    sentences: tuple[str, ...]
    label: str
    evidence_sets: tuple[tuple[int, ...], ...]
    split: str
    sentence_labels: tuple[str, ...] | None = None
    title: str = ""

    @property
    def rationale(self) -> tuple[int, ...]:
        """Every gold rationale sentence index, in order."""
        return tuple(sorted({i for s in self.evidence_sets for i in s}))


def fold_claim(text: str) -> str:
    """A claim's text folded for the split key: lower case, white space collapsed."""
    return " ".join(str(text).lower().split())


def dev_key(dataset: str, *, claim_id: object = None, claim: str | None = None) -> str:
    """The key the dev rule hashes: HealthVer's folded claim text, else the claim id."""
    if dataset == "healthver":
        if claim is None:
            raise ValueError("HealthVer's dev key is the claim text: pass claim=")
        return fold_claim(claim)
    if claim_id is None:
        raise ValueError(f"{dataset}'s dev key is the claim id: pass claim_id=")
    return str(claim_id)


def in_dev_slice(dataset: str, key: str) -> bool:
    """Whether the claim with this key is in ``dataset``'s dev slice (COMMON.md's rule)."""
    digest = hashlib.sha256(f"{dataset}:{key}".encode()).hexdigest()
    return int(digest[:8], 16) % 100 < DEV_SHARE


def split_of(dataset: str, *, claim_id: object = None, claim: str | None = None) -> str:
    """"dev" or "train" for a claim of a hash-sliced dataset (not Check-COVID: its files say)."""
    return "dev" if in_dev_slice(dataset, dev_key(dataset, claim_id=claim_id, claim=claim)) else "train"


def claims_dir(path: str | os.PathLike | None = None) -> Path:
    """The claims folder: ``path``, else ``$RAG_CORE_CLAIMS_DIR``, else ``../shared/data/claims``
    beside the repository (then /work/shared/data/claims). Raises FileNotFoundError saying where
    it looked."""
    tried = []
    for candidate in (path, os.environ.get(CLAIMS_DIR_ENV)):
        if candidate:
            folder = Path(candidate).expanduser()
            if folder.is_dir():
                return folder
            tried.append(str(folder))
    repo = Path(__file__).resolve().parents[3]
    for folder in (repo.parent / "shared" / "data" / "claims", repo / ".." / "shared" / "data" / "claims"):
        if folder.is_dir():
            return folder.resolve()
        tried.append(str(folder))
    raise FileNotFoundError(f"no claims folder found (tried {', '.join(tried)}): pass the folder or set "
                            f"${CLAIMS_DIR_ENV} to shared/data/claims")


def _jsonl(path: Path) -> Iterator[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _want(split: str, which: str | None) -> bool:
    return which is None or which == split


def _norm_label(label: str) -> str:
    label = str(label).strip().lower()
    if label not in LABELS:
        raise ValueError(f"unknown label {label!r} (expected one of {LABELS})")
    return label


def read_scifact(folder: str | os.PathLike | None = None, *, split: str | None = None) -> list[ClaimDocument]:
    """SciFact train claims, each against each cited abstract; a cited abstract without evidence is nei."""
    folder = claims_dir(folder)
    corpus = {str(row["doc_id"]): row for row in _jsonl(folder / FILES["scifact"][1])}
    out = []
    for row in _jsonl(folder / FILES["scifact"][0]):
        which = split_of("scifact", claim_id=row["id"])
        if not _want(which, split):
            continue
        evidence = {str(k): v for k, v in (row.get("evidence") or {}).items()}
        cited = [str(d) for d in row.get("cited_doc_ids") or []] or list(evidence)
        for doc_id in dict.fromkeys(cited):
            doc = corpus.get(doc_id)
            if doc is None:
                continue
            sets = evidence.get(doc_id) or []
            label = _norm_label(sets[0]["label"]) if sets else "nei"
            out.append(ClaimDocument(
                dataset="scifact", claim_id=str(row["id"]), claim=row["claim"], doc_id=doc_id,
                sentences=tuple(doc["abstract"]), label=label,
                evidence_sets=tuple(tuple(int(i) for i in s["sentences"]) for s in sets), split=which,
                title=doc.get("title") or ""))
    return out


def read_checkcovid(folder: str | os.PathLike | None = None, *, split: str | None = None) -> list[ClaimDocument]:
    """Check-COVID train and dev (its own files), each claim against its CORD-19 abstract."""
    folder = claims_dir(folder)
    corpus = {row["cord_id"]: row for row in _jsonl(folder / FILES["checkcovid"][2])}
    out = []
    for which, name in (("train", FILES["checkcovid"][0]), ("dev", FILES["checkcovid"][1])):
        if not _want(which, split):
            continue
        for row in _jsonl(folder / name):
            doc = corpus.get(row["cord_id"])
            if doc is None:
                continue
            rationale = tuple(sorted({int(e["sent_index"]) for e in row.get("evidence_set") or []}))
            out.append(ClaimDocument(
                dataset="checkcovid", claim_id=str(row["id"]), claim=row["claim"].strip(), doc_id=row["cord_id"],
                sentences=tuple(doc["abstract"]), label=_norm_label(row["label"]),
                evidence_sets=(rationale,) if rationale else (), split=which, title=doc.get("title") or ""))
    return out


def _split_passage(text: str) -> tuple[str, ...]:
    from rag_core.text.sentences import split_sentences

    spans = split_sentences(text)
    sentences = tuple(" ".join(text[a:b].split()) for a, b in spans if text[a:b].strip())
    return sentences or (text.strip(),)


def read_healthver(folder: str | os.PathLike | None = None, *, split: str | None = None) -> list[ClaimDocument]:
    """HealthVer's dev file, each claim against its evidence passage (split into sentences; the
    passage as a whole carries the label, so every sentence is its rationale)."""
    folder = claims_dir(folder)
    out = []
    for row in _jsonl(folder / FILES["healthver"][0]):
        which = split_of("healthver", claim=row["claim"])
        if not _want(which, split):
            continue
        sentences = _split_passage(row["evidence"])
        label = _norm_label(row["label"])
        out.append(ClaimDocument(
            dataset="healthver", claim_id=str(row["id"]), claim=row["claim"].strip(), doc_id=f"healthver:{row['id']}",
            sentences=sentences, label=label,
            evidence_sets=(tuple(range(len(sentences))),) if label != "nei" else (), split=which))
    return out


def read_covidfact(folder: str | os.PathLike | None = None, *, split: str | None = "train") -> list[ClaimDocument]:
    """COVID-Fact (training only by default): each claim against its evidence sentences."""
    folder = claims_dir(folder)
    out = []
    for row in _jsonl(folder / FILES["covidfact"][0]):
        which = split_of("covidfact", claim_id=row["id"])
        if not _want(which, split):
            continue
        sentences = tuple(s.strip() for s in row.get("evidence") or [] if s and s.strip())
        if not sentences:
            continue
        out.append(ClaimDocument(
            dataset="covidfact", claim_id=str(row["id"]), claim=row["claim"].strip(), doc_id=f"covidfact:{row['id']}",
            sentences=sentences, label=_norm_label(row["label"]),
            evidence_sets=(tuple(range(len(sentences))),), split=which))
    return out


def read_climatefever(folder: str | os.PathLike | None = None, *, split: str | None = "train") -> list[ClaimDocument]:
    """CLIMATE-FEVER (training only by default): each claim against its five labelled sentences
    (the claim-level label ``disputed`` is read as nei; each sentence keeps its own label)."""
    folder = claims_dir(folder)
    out = []
    for row in _jsonl(folder / FILES["climatefever"][0]):
        which = split_of("climatefever", claim_id=row["id"])
        if not _want(which, split):
            continue
        evidences = [e for e in row.get("evidences") or [] if (e.get("evidence") or "").strip()]
        if not evidences:
            continue
        labels = tuple(_norm_label(e["label"]) if e["label"] in LABELS else "nei" for e in evidences)
        claim_label = row["label"] if row["label"] in LABELS else "nei"
        out.append(ClaimDocument(
            dataset="climatefever", claim_id=str(row["id"]), claim=row["claim"].strip(),
            doc_id=f"climatefever:{row['id']}", sentences=tuple(e["evidence"].strip() for e in evidences),
            label=claim_label, evidence_sets=tuple((i,) for i, lab in enumerate(labels) if lab != "nei"),
            split=which, sentence_labels=labels))
    return out


READERS = {"scifact": read_scifact, "checkcovid": read_checkcovid, "healthver": read_healthver,
           "covidfact": read_covidfact, "climatefever": read_climatefever}


def read_all(folder: str | os.PathLike | None = None, *, split: str | None = None,
             datasets: Iterable[str] = DATASETS) -> list[ClaimDocument]:
    """Every dataset's rows of one split (None: both)."""
    out = []
    for name in datasets:
        out.extend(READERS[name](folder, split=split))
    return out


def sentence_pairs(docs: Iterable[ClaimDocument], *, nei_per_document: int | None = 2,
                   seed: int = 0) -> list[tuple[str, str, str]]:
    """(claim, sentence, label) pairs: each rationale sentence with its document's label (or its
    own label where the dataset gives one), and up to ``nei_per_document`` other sentences of the
    document as ``nei`` (None: all of them), picked reproducibly by ``seed``. A document labelled
    nei without rationale gives only nei pairs."""
    import random

    out = []
    for doc in docs:
        rng = random.Random(f"{seed}:{doc.dataset}:{doc.claim_id}:{doc.doc_id}")
        chosen = set(doc.rationale)
        for i in sorted(chosen):
            if i >= len(doc.sentences):
                continue
            label = doc.sentence_labels[i] if doc.sentence_labels is not None else doc.label
            out.append((doc.claim, doc.sentences[i], label))
        others = [i for i in range(len(doc.sentences)) if i not in chosen]
        if nei_per_document is not None and len(others) > nei_per_document:
            others = rng.sample(others, nei_per_document)
        for i in sorted(others):
            out.append((doc.claim, doc.sentences[i], "nei"))
    return out
