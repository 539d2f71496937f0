"""Dense vectors for a collection's new chunks: now, or in a background thread of this process.

:func:`embed_pending` embeds the chunks that have no dense vector yet, one document at a
time, each written as soon as it is done (crash-safe; a later run resumes), then folds the
vectors into a new version. Hybrid search uses the vectors written so far and says how
much of the collection they cover. :func:`start_background_embedding` runs it in a daemon
thread, which is asked to stop after its current document when the process exits.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rag_core.collections.ingest.rates import (
    _PRIOR_CHUNKS,
    blended_rate,
    embed_rate_key,
    expected_embed_rate,
    measured_rates,
    remember_rates,
)
from rag_core.collections.store.base import CollectionStore, EmbeddingStatus
from rag_core.output.render import seconds_text

log = logging.getLogger(__name__)


def embed_pending(
    store: CollectionStore,
    name: str,
    *,
    progress: Callable[[int, int], None] | None = None,
    stop: threading.Event | None = None,
) -> EmbeddingStatus:
    """Compute the dense vectors the collection still lacks, write each document's as it is
    done, then fold them into a new version. Returns at once when another process or
    thread is already doing it; a stopped or killed run is resumed by the next one."""
    from rag_core.models.embedding import encode_passages
    from rag_core.models.loading import encoder_variant, load_bi_encoder

    with store.embedding_slot(name) as mine:
        if not mine:
            return store.embedding_status(name)
        settings = store.read_settings(name)
        status = store.embedding_status(name)
        started, done_at_start = time.time(), status.done
        total = status.total
        if status.total > status.done:  # running from now on, while the model loads too (no rate yet)
            store.write_embedding_progress(name, {"running": True, "done": status.done, "total": total,
                                                  "started": started, "rate": None})
        model = None
        prior, rate_from = 0.0, started
        try:
            while not (stop is not None and stop.is_set()):
                pending = store.pending_vectors(name)
                if not pending:
                    break
                if model is None:
                    model = load_bi_encoder(settings["embedding_model"], encoder=settings["encoder"])
                    prior = expected_embed_rate(measured_rates(), encoder_variant(model))
                    rate_from = time.time()  # loading the model is not embedding
                status = store.embedding_status(name)
                done, total = status.done, status.total
                for doc in pending:
                    base = done
                    vectors = encode_passages(
                        model, list(doc.texts),
                        progress=lambda k, _n, base=base, total=total, prior=prior, rate_from=rate_from: _report(
                            store, name, base + k, total, started, done_at_start, progress, prior, rate_from))
                    store.write_vectors(name, doc.key, vectors)
                    done += len(doc.texts)
                    _report(store, name, done, total, started, done_at_start, progress, prior, rate_from)
                    if stop is not None and stop.is_set():
                        break
            elapsed = time.time() - rate_from
            embedded = store.embedding_status(name).done - done_at_start
            if embedded >= 16 and elapsed > 0:
                rate = embedded / elapsed
                remember_rates(**{"embed_chunks_per_s": rate, embed_rate_key(encoder_variant(model)): rate})
            store.fold_in_vectors(name)
            stopped = stop is not None and stop.is_set()  # asked to stop: the next run resumes
            store.write_embedding_progress(name, {"running": False, "stopped": stopped, "started": started})
        except Exception as exc:
            store.write_embedding_progress(name, {"running": False, "started": started,
                                                  "error": f"{type(exc).__name__}: {exc}"})
            raise
    return store.embedding_status(name)


def _report(store: CollectionStore, name: str, done: int, total: int, started: float, done_at_start: int,
            progress: Callable[[int, int], None] | None, prior_rate: float = 0.0,
            rate_from: float | None = None) -> None:
    """Keep how far an embedding run is (with its rate, for the app's estimate) and tell ``progress``."""
    elapsed = time.time() - (started if rate_from is None else rate_from)
    rate = blended_rate(done - done_at_start, elapsed, prior_rate, _PRIOR_CHUNKS) if elapsed > 0 else None
    store.write_embedding_progress(name, {"running": True, "done": done, "total": total, "started": started,
                                          "rate": rate})
    if progress is not None:
        progress(done, total)


_background: dict[tuple[str, str, str], threading.Thread] = {}
_background_lock = threading.Lock()


def start_background_embedding(store: CollectionStore, name: str) -> bool:
    """Embed the collection's missing vectors in a daemon thread of this process.

    Returns False when this process already runs one for the collection. Errors are
    logged and kept in the collection's embedding status, where the app shows them.
    """
    key = (store.kind, store.location, name)
    with _background_lock:
        thread = _background.get(key)
        if thread is not None and thread.is_alive():
            return False

        def run() -> None:
            try:
                embed_pending(store, name, stop=_stopping)
            except Exception:
                log.exception("Embedding collection %r in the background failed", name)

        thread = threading.Thread(target=run, name=f"rag-core-embed-{name}", daemon=True)
        _background[key] = thread
        thread.start()
        return True


_stopping = threading.Event()


@atexit.register
def _stop_background_embedding() -> None:
    """At exit, let background embedders stop after their current document (what they wrote is
    kept; the next run resumes): a daemon thread killed inside torch aborts the process."""
    _stopping.set()
    for thread in list(_background.values()):
        thread.join(120)


def background_embedding_alive(store: CollectionStore, name: str) -> bool:
    """Whether this process has a background embedder of ``name`` alive (also before it has said so
    in the collection's status: between its start and its first record)."""
    thread = _background.get((store.kind, store.location, name))
    return thread is not None and thread.is_alive()


@dataclass(frozen=True)
class EmbeddingView:
    """What the app says about a collection's embeddings: ``kind`` (ready, running, starting, error,
    waiting), a sentence, and the bar's fraction (None: no bar)."""

    kind: str
    text: str
    fraction: float | None = None


def embedding_view(status: EmbeddingStatus, *, starting: bool = False) -> EmbeddingView:
    """The truth about ``status`` in one sentence: ``starting``: this process has just started an
    embedder that has not reported yet."""
    total, done = status.total, min(status.done, status.total)
    if status.complete:
        return EmbeddingView("ready", f"Embeddings of all {total:,} passages are ready: hybrid search uses them all.",
                             1.0)
    fraction = done / max(total, 1)
    if status.running or starting:
        if status.eta_s is not None:
            left = f"about {seconds_text(status.eta_s)} left"
        elif done == 0 or not status.running:
            left = "loading the embedding model, then estimating the time left"
        else:
            left = "estimating the time left"
        return EmbeddingView("running", f"Embeddings for hybrid search: {done:,} of {total:,} passages so far, "
                                        f"{left}. TF-IDF, BM25 and exact search already cover every passage.",
                             fraction)
    if status.error:
        return EmbeddingView("error", f"Computing the embeddings stopped: {status.error}", fraction)
    return EmbeddingView("waiting", f"{total - done:,} of {total:,} passages have no embedding yet: hybrid search "
                                    "finds them by TF-IDF and BM25 only.", fraction)


def wait_for_background_embedding(store: CollectionStore, name: str, timeout: float | None = None) -> bool:
    """Wait for this process's background embedding of ``name``; True when none is running."""
    thread = _background.get((store.kind, store.location, name))
    if thread is None:
        return True
    thread.join(timeout)
    return not thread.is_alive()
