"""A learned transform of the bi-encoder's query embedding (documents' vectors unchanged).

``q' = normalize(q + blend * (W q + b))``: ``W`` (d x d) and ``b`` were fitted contrastively on
claim -> evidence pairs over frozen all-MiniLM-L6-v2 vectors (``benchmarks/train_query_head.py``;
figures in its ``card.json`` and docs/benchmarks.md). Only query vectors change, so collections
embedded before stay valid. A head ships as ``rag_core/models/trained/<name>/head.safetensors``
with ``card.json`` (its SHA-256, data, licences, settings); loading checks the checksum, and a
missing or damaged head leaves plain query embeddings, said once in the log and in
:func:`query_head_status`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_core.settings import DEFAULT_EMBEDDING_MODEL, DEFAULT_QUERY_HEAD, QUERY_HEAD_ENV

log = logging.getLogger(__name__)

TRAINED_DIR = Path(__file__).resolve().parent / "trained"
HEAD_FILE = "head.safetensors"
CARD_FILE = "card.json"
NO_HEAD = ("", "none", "off", "0", "false", "no")
BASE_ALIASES = {DEFAULT_EMBEDDING_MODEL, "all-MiniLM-L6-v2"}


class QueryHeadError(RuntimeError):
    """A query head that cannot be used: missing, damaged, or made for another model."""


@dataclass(frozen=True)
class QueryHead:
    """A loaded head: ``apply`` maps unit query vectors to unit query vectors."""

    name: str
    weight: np.ndarray  # (d, d)
    bias: np.ndarray  # (d,)
    blend: float
    base_model: str
    sha256: str

    @property
    def dimension(self) -> int:
        return int(self.weight.shape[0])

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """``normalize(q + blend * (W q + b))`` of one vector or of each row."""
        q = np.asarray(vectors, dtype=np.float32)
        out = q + np.float32(self.blend) * (q @ self.weight.T + self.bias)
        norms = np.linalg.norm(out, axis=-1, keepdims=True)
        norms[norms == 0] = 1.0
        return (out / norms).astype(np.float32)

    def fits(self, embedding_model: str) -> bool:
        """Whether the head was made for query vectors of ``embedding_model``."""
        names = BASE_ALIASES if self.base_model in BASE_ALIASES else {self.base_model}
        return embedding_model in names


def head_folder(name: str | os.PathLike) -> Path:
    """A shipped head's folder by name, or a folder given as a path."""
    path = Path(name).expanduser()
    if path.is_dir() or os.sep in str(name):
        return path
    return TRAINED_DIR / str(name)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_query_head(name: str | os.PathLike) -> QueryHead:
    """Load a head by name or folder; raises :class:`QueryHeadError` saying what is wrong."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    folder = head_folder(name)
    weights, card_path = folder / HEAD_FILE, folder / CARD_FILE
    if not weights.is_file():
        raise QueryHeadError(f"query head {name!r}: no {HEAD_FILE} in {folder}")
    try:
        card = json.loads(card_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise QueryHeadError(f"query head {name!r}: {card_path} cannot be read ({exc})") from exc
    expected = str(card.get("file", {}).get("sha256", ""))
    found = file_sha256(weights)
    if found != expected:
        raise QueryHeadError(f"query head {name!r}: {weights} is damaged or changed (SHA-256 {found[:12]}…, "
                             f"the card says {expected[:12] or 'nothing'}…)")
    try:
        tensors = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as exc:
        raise QueryHeadError(f"query head {name!r}: {weights} cannot be read ({exc})") from exc
    weight, bias = tensors.get("weight"), tensors.get("bias")
    if weight is None or bias is None or weight.ndim != 2 or weight.shape[0] != weight.shape[1] \
            or bias.shape != (weight.shape[0],):
        raise QueryHeadError(f"query head {name!r}: {weights} does not hold a square 'weight' and its 'bias'")
    settings = card.get("settings", {})
    return QueryHead(name=str(card.get("name") or Path(folder).name), weight=weight.astype(np.float32),
                     bias=bias.astype(np.float32), blend=float(settings.get("blend", 1.0)),
                     base_model=str(card.get("base_model", DEFAULT_EMBEDDING_MODEL)), sha256=found)


def save_query_head(folder: str | os.PathLike, weight: np.ndarray, bias: np.ndarray, card: dict) -> dict:
    """Write ``head.safetensors`` and ``card.json`` (the file's size and SHA-256 added); the card."""
    from safetensors.numpy import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / HEAD_FILE
    save_file({"weight": np.ascontiguousarray(weight, dtype=np.float32),
               "bias": np.ascontiguousarray(bias, dtype=np.float32)}, str(weights))
    card = {**card, "file": {"name": HEAD_FILE, "bytes": weights.stat().st_size, "sha256": file_sha256(weights)}}
    (folder / CARD_FILE).write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return card


def wanted_head(name: str | None = None) -> str | None:
    """The head asked for: ``name``, else ``$RAG_CORE_QUERY_HEAD``, else the default (None: no head)."""
    choice = name if name is not None else os.environ.get(QUERY_HEAD_ENV, DEFAULT_QUERY_HEAD or "")
    choice = str(choice).strip()
    return None if choice.lower() in NO_HEAD else choice


@dataclass(frozen=True)
class QueryHeadStatus:
    """Which head query vectors go through (``head`` None: plain embeddings) and why, for people."""

    asked: str | None
    head: QueryHead | None
    detail: str


@functools.lru_cache(maxsize=16)
def _status(asked: str | None) -> QueryHeadStatus:
    if asked is None:
        return QueryHeadStatus(None, None, "plain query embeddings (no query head)")
    try:
        head = load_query_head(asked)
    except QueryHeadError as exc:
        log.warning("%s; queries use plain embeddings", exc)
        return QueryHeadStatus(asked, None, f"plain query embeddings: {exc}")
    return QueryHeadStatus(asked, head, f"query head {head.name} (SHA-256 {head.sha256[:12]}…)")


def query_head_status(name: str | None = None) -> QueryHeadStatus:
    """The status of the head asked for (loaded once per process; never raises)."""
    return _status(wanted_head(name))


def active_query_head(embedding_model: str = DEFAULT_EMBEDDING_MODEL, name: str | None = None) -> QueryHead | None:
    """The head query vectors of ``embedding_model`` go through, or None."""
    head = query_head_status(name).head
    return head if head is not None and head.fits(embedding_model) else None


def query_encoding(embedding_model: str = DEFAULT_EMBEDDING_MODEL, name: str | None = None) -> str:
    """What embeds queries, in words: the model, and the head when one is used."""
    head = active_query_head(embedding_model, name)
    short = embedding_model.rsplit("/", 1)[-1]
    return f"{short} + query head {head.name}" if head is not None else short


def forget_query_heads() -> None:
    """Load heads again on next use (after a setting or file changed)."""
    _status.cache_clear()
