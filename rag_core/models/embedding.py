"""Dense embeddings with a bi-encoder: sentence-transformers (torch), or on a CPU by default
the int8 ONNX Runtime encoder of :mod:`rag_core.models.onnx_encoder` (chosen by
:func:`rag_core.models.loading.load_bi_encoder`); both give unit-normalised float32 rows.

all-MiniLM-L6-v2 reads at most 256 word pieces; a 1,200-character chunk of scientific
text often holds more. With ``long_text="windows"`` a long chunk is cut into windows the
model can read whole, and its embedding is the normalised mean of the windows'
embeddings. With ``long_text="truncate"`` (the default) the model reads the first 256
word pieces. Measured on SciFact (docs/benchmarks.md), truncation was better on the
train queries (dense nDCG@10 0.668 vs 0.649, hybrid 0.737 vs 0.734) and on test for
dense (0.646 vs 0.635; hybrid 0.727 vs 0.729), and embeds ~25% more chunks per second:
the mean of windows blurs the chunk's opening, where a passage usually says what it is
about. The lexical half of hybrid search still reads the whole chunk.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager

import numpy as np

from rag_core.settings import DEFAULT_LONG_TEXT

LONG_TEXT_STRATEGIES = ("windows", "truncate")
WINDOW_OVERLAP_TOKENS = 32


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


def embedding_dimension(model) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


def token_limit(model) -> int:
    """Word pieces of text the model reads in one pass (its window, less [CLS] and [SEP])."""
    limit = int(getattr(model, "max_seq_length", 256) or 256)
    return max(limit - 2, 8)  # room for [CLS] and [SEP]


def split_into_windows(text: str, tokenizer, limit: int, overlap: int = WINDOW_OVERLAP_TOKENS) -> list[str]:
    """Character spans of ``text`` that hold at most ``limit`` word pieces each."""
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False)
    offsets = encoded["offset_mapping"]
    if len(offsets) <= limit:
        return [text]
    step = max(limit - overlap, 1)
    windows = []
    for first in range(0, len(offsets), step):
        last = min(first + limit, len(offsets)) - 1
        windows.append(text[offsets[first][0] : offsets[last][1]])
        if last >= len(offsets) - 1:
            break
    return windows


def encode_passages(
    model,
    texts: Sequence[str],
    *,
    batch_size: int = 32,
    long_text: str = DEFAULT_LONG_TEXT,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """Unit-normalised float32 embeddings, one row per text.

    ``progress(done, total)`` is called after each batch of texts.
    """
    if long_text not in LONG_TEXT_STRATEGIES:
        raise ValueError(f"long_text must be one of {LONG_TEXT_STRATEGIES}, got {long_text!r}")
    dim = embedding_dimension(model)
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    out = np.zeros((len(texts), dim), dtype=np.float32)
    tokenizer = getattr(model, "tokenizer", None)
    limit = token_limit(model)
    # Longest first over the whole input (so batches of similar length pad little), in slices
    # so progress can be reported; the encoder batches each slice (the ONNX encoder by a token
    # budget, sentence-transformers by count after its own length sort). Rows go back to input order.
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    slice_size = min(max(batch_size * 8, 64), max(batch_size, len(texts) // 20))
    for begin in range(0, len(texts), slice_size):
        rows = order[begin : begin + slice_size]
        part = [texts[i] for i in rows]
        if long_text == "windows" and tokenizer is not None:
            pieces: list[str] = []
            owners: list[int] = []
            for i, text in enumerate(part):
                for window in split_into_windows(text, tokenizer, limit):
                    pieces.append(window)
                    owners.append(i)
            vectors = model.encode(pieces, batch_size=batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
            summed = np.zeros((len(part), dim), dtype=np.float32)
            np.add.at(summed, np.asarray(owners), vectors)
            out[rows] = _normalise(summed)
        else:
            out[rows] = model.encode(
                part, batch_size=batch_size, convert_to_numpy=True,
                normalize_embeddings=True, show_progress_bar=False,
            )
        if progress is not None:
            progress(min(begin + len(part), len(texts)), len(texts))
    return out


_threads_lock = threading.Lock()
_single_thread_users = 0
_saved_threads: int | None = None


@contextmanager
def single_torch_thread():
    """Run torch (and the ONNX encoder) on one intra-op thread inside the block (restored when the
    last user leaves).

    A short query gains nothing from a second thread, and on a busy 2-core machine the
    two threads wait on each other: measured here, a query's encoding took 0.5-1 s
    median with 2 threads and 30-45 ms with 1 (docs/benchmarks.md).
    """
    global _single_thread_users, _saved_threads
    from rag_core.models.onnx_encoder import one_thread

    # torch is not imported here: a torch model imported it when it loaded, and the ONNX
    # encoder (the default on a CPU) needs no torch, which takes ~2 s to import
    torch = sys.modules.get("torch")
    if torch is None:
        with one_thread():
            yield
        return

    with _threads_lock:
        if _single_thread_users == 0:
            _saved_threads = torch.get_num_threads()
            if _saved_threads != 1:
                torch.set_num_threads(1)
        _single_thread_users += 1
    try:
        with one_thread():
            yield
    finally:
        with _threads_lock:
            _single_thread_users -= 1
            if _single_thread_users == 0 and _saved_threads and _saved_threads != 1:
                torch.set_num_threads(_saved_threads)


def encode_query(model, query: str) -> np.ndarray:
    """The query's unit-normalised embedding (queries are short: no windows).

    One intra-op thread: torch is switched to one thread for the call; the ONNX encoder runs
    a single text on its own one-thread session.
    """
    if getattr(model, "variant", "torch") == "torch":
        with single_torch_thread():
            vector = model.encode([query], convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    else:
        vector = model.encode([query], convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    return np.asarray(vector[0], dtype=np.float32)
