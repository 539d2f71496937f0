"""Ingest rates measured on this machine, remembered for the next time estimate.

Pages read a second, passages a page, seconds of indexing a passage, passages embedded a
second (per bi-encoder variant) and scanned pages read by OCR a second (per core) are kept in
the rates file (:func:`rag_core.settings.rates_file`); each new measurement moves a remembered
rate half way. :func:`blended_rate` mixes a remembered
rate with the one measured so far in a run.
"""

from __future__ import annotations

import json

from rag_core.atomic import write_json_atomic
from rag_core.settings import rates_file

# Until an ingest on this machine has measured them: pages a second per reader process, passages
# a page, seconds of indexing a passage, passages embedded a second by each bi-encoder variant,
# and scanned pages read by OCR a second per core (measured on a 2-core CPU: the two shared scans,
# 2 pages in 4.4 s of Tesseract on one core, a dense brochure page 2.9 s; the first ingest elsewhere
# replaces them with its own figures).
_RATE_DEFAULTS = {"pages_per_s": 25.0, "chunks_per_page": 2.8, "embed_chunks_per_s": 15.0,
                  "index_s_per_chunk": 0.0015, "ocr_pages_per_s": 0.4}
# An index commit costs a fixed part (the lock, files written and synced) and a part per chunk
# it indexes; a commit of fewer chunks than this says little about the second, so is not remembered.
_INDEX_BASE_S = 0.25
_INDEX_RATE_MIN_CHUNKS = 500
_EMBED_DEFAULTS = {"onnx-int8": 28.0, "onnx-fp32": 18.0, "torch": 15.0}
_EMBED_KEY = "embed_chunks_per_s:"  # + the encoder variant: each variant's rate is remembered apart


# How many pages (passages) of work the remembered rate counts for against the rate measured in
# this run: early measurements are rough (each file's first pages, the longest passages first),
# so the estimate moves from the remembered rate to the measured one as the work goes on.
_PRIOR_PAGES = 200
_PRIOR_CHUNKS = 128
_PRIOR_OCR_PAGES = 4


def blended_rate(done: float, seconds: float, prior_rate: float, prior_weight: float) -> float:
    """Work a second: ``done`` in ``seconds`` measured, plus ``prior_weight`` units at ``prior_rate``."""
    if prior_rate <= 0:
        return done / max(seconds, 1e-3)
    return (done + prior_weight) / (max(seconds, 0.0) + prior_weight / prior_rate)


def embed_rate_key(variant: str) -> str:
    """The rates file's key of the ``variant`` bi-encoder's embedding rate."""
    return _EMBED_KEY + variant


def expected_embed_rate(rates: dict[str, float], variant: str | None) -> float:
    """Passages a second the ``variant`` bi-encoder embedded here before (else a default)."""
    if variant is None:
        return rates["embed_chunks_per_s"]
    return rates.get(embed_rate_key(variant), _EMBED_DEFAULTS.get(variant, rates["embed_chunks_per_s"]))


def _is_rate_key(key: str) -> bool:
    return key in _RATE_DEFAULTS or key.startswith(_EMBED_KEY)


def _saved_rates() -> dict[str, float]:
    """The rates an earlier ingest measured here (valid entries of the rates file only)."""
    try:
        saved = json.loads(rates_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(saved, dict):
        return {}
    return {k: float(v) for k, v in saved.items()
            if _is_rate_key(k) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0}


def measured_rates() -> dict[str, float]:
    """Rates measured by earlier ingests on this machine (defaults where none were)."""
    return {**_RATE_DEFAULTS, **_saved_rates()}


def remember_rates(**rates: float) -> None:
    """Fold newly measured rates into the remembered ones: the mean of the two, so one unusual
    ingest (another program busy, a commit three times slower than the last) moves the next
    estimate half way; a rate measured for the first time is taken as it is."""
    saved = _saved_rates()
    current = {**_RATE_DEFAULTS, **saved}
    for k, v in rates.items():
        if v and v > 0 and _is_rate_key(k):
            current[k] = (saved[k] + float(v)) / 2 if k in saved else float(v)
    try:
        path = rates_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, current)
    except OSError:
        pass


def _remember_index_rate(seconds: float, chunks: int) -> None:
    """Remember the seconds a chunk of a commit of ``chunks`` took (not for a tiny commit)."""
    if chunks >= _INDEX_RATE_MIN_CHUNKS:
        remember_rates(index_s_per_chunk=max(seconds - _INDEX_BASE_S, 0.0) / chunks)
