"""Chunk embeddings of an evaluation dataset, computed once and then read from a cache.

Files live under ``~/.cache/rag_core/eval/`` (or ``$RAG_CORE_EVAL_CACHE``), named by a
hash of the chunk texts, the model, the long-text mode and a tag, stored with
``np.save(allow_pickle=False)`` and written atomically (a reader sees a whole file or none).
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rag_core.atomic import write_bytes_atomic
from rag_core.models.embedding import LONG_TEXT_STRATEGIES, encode_passages, token_limit
from rag_core.settings import DEFAULT_EMBEDDING_MODEL, DEFAULT_LONG_TEXT, eval_cache_dir

Progress = Callable[[str], None]


def chunks_hash(chunks: Sequence[dict]) -> str:
    """SHA-256 of the chunk texts, in order."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk["text"].encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


def cache_path(texts_hash: str, embedding_model: str, long_text: str, tag: str = "", variant: str = "torch") -> Path:
    """The cache file of one set of chunks (``texts_hash`` from :func:`chunks_hash`) and settings.

    Vectors of different encoder variants (torch fp32, ONNX int8, ...) never share a file;
    torch keeps the key it had before variants existed.
    """
    full_tag = "|".join(part for part in (tag, "" if variant == "torch" else variant) if part)
    key = hashlib.sha256(f"{texts_hash}|{embedding_model}|{long_text}|{full_tag}".encode()).hexdigest()[:24]
    return eval_cache_dir() / f"emb-{key}.npy"


def _load(path: Path, rows: int) -> np.ndarray | None:
    if not path.is_file():
        return None
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError):  # a damaged file: compute again and replace it
        return None
    return vectors if vectors.ndim == 2 and vectors.shape[0] == rows else None


def _save(path: Path, vectors: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    write_bytes_atomic(path, buffer.getvalue())


def cached_embeddings(
    chunks: Sequence[dict],
    embedding_model: str = DEFAULT_EMBEDDING_MODEL,
    *,
    long_text: str = DEFAULT_LONG_TEXT,
    tag: str = "",
    encoder=None,
    progress: Progress | None = None,
) -> np.ndarray:
    """Embeddings of the chunks, computed once and then read from the eval cache.

    ``encoder``: a bi-encoder object to use instead of loading ``embedding_model`` (give
    it a distinct ``tag``, e.g. "int8", so its vectors are cached apart).
    """
    if long_text not in LONG_TEXT_STRATEGIES:
        raise ValueError(f"long_text must be one of {LONG_TEXT_STRATEGIES}, got {long_text!r}")
    from rag_core.models.loading import encoder_variant, load_bi_encoder, planned_encoder

    texts_hash = chunks_hash(chunks)
    planned = encoder_variant(encoder) if encoder is not None else planned_encoder()
    vectors = _load(cache_path(texts_hash, embedding_model, long_text, tag, planned), len(chunks))
    if vectors is not None:
        return vectors
    model = encoder if encoder is not None else load_bi_encoder(embedding_model)
    variant = encoder_variant(model)
    path = cache_path(texts_hash, embedding_model, long_text, tag, variant)
    if variant != planned:  # the planned encoder fell back to another one
        vectors = _load(path, len(chunks))
        if vectors is not None:
            return vectors
    started = time.perf_counter()

    def report(done: int, total: int) -> None:
        if progress is not None:
            rate = done / max(time.perf_counter() - started, 1e-9)
            progress(f"embedding chunks ({variant}): {done:,}/{total:,} ({rate:.0f} chunks/s)")

    texts = [c["text"] for c in chunks]
    # "windows" and "truncate" differ only for chunks longer than the model's window:
    # when the other mode is cached, encode just those.
    other = "truncate" if long_text == "windows" else "windows"
    other_vectors = _load(cache_path(texts_hash, embedding_model, other, tag, variant), len(chunks))
    tokenizer = getattr(model, "tokenizer", None)
    if other_vectors is not None and tokenizer is not None:
        vectors = other_vectors.copy()
        limit = token_limit(model)
        lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]]
        long_idx = [i for i, n in enumerate(lengths) if n > limit]
        if progress is not None:
            progress(f"reusing {other} embeddings; re-encoding the {len(long_idx):,} chunks over {limit} word pieces")
        if long_idx:
            vectors[long_idx] = encode_passages(model, [texts[i] for i in long_idx], long_text=long_text,
                                                progress=report)
    else:
        vectors = encode_passages(model, texts, long_text=long_text, progress=report)
    _save(path, vectors)
    return vectors
