"""Ingest rates remembered on this machine, and how a remembered rate blends with a measured one."""

from __future__ import annotations

import pytest

from rag_core import settings
from rag_core.collections.ingest.rates import (
    _EMBED_DEFAULTS,
    _INDEX_BASE_S,
    _RATE_DEFAULTS,
    _remember_index_rate,
    blended_rate,
    embed_rate_key,
    expected_embed_rate,
    measured_rates,
    remember_rates,
)


def test_rates_are_remembered_for_the_next_estimate(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.RATES_FILE_ENV, str(tmp_path / "rates.json"))
    remember_rates(pages_per_s=42.0, embed_chunks_per_s=-1)
    rates = measured_rates()
    assert rates["pages_per_s"] == 42.0 and rates["embed_chunks_per_s"] == _RATE_DEFAULTS["embed_chunks_per_s"]


def test_each_encoder_variant_remembers_its_own_embedding_rate(tmp_path, monkeypatch):
    """A first upload with int8 ONNX was estimated at the torch rate (the estimate at 10% was 2.3x long)."""
    monkeypatch.setenv(settings.RATES_FILE_ENV, str(tmp_path / "rates.json"))
    rates = measured_rates()
    assert expected_embed_rate(rates, "onnx-int8") > expected_embed_rate(rates, "torch")
    remember_rates(**{embed_rate_key("torch"): 300.0})  # a GPU
    rates = measured_rates()
    assert expected_embed_rate(rates, "torch") == 300.0
    assert expected_embed_rate(rates, "onnx-int8") == _EMBED_DEFAULTS["onnx-int8"]


def test_the_rate_moves_from_the_remembered_one_to_the_measured_one():
    """The first pages and the longest passages are slow: an early measured rate alone made the
    upload's estimate 30-50% long until its end."""
    assert blended_rate(0, 0.0, 20.0, 100) == 20.0
    early = blended_rate(20, 2.0, 20.0, 100)  # 10 a second so far: mostly the remembered rate
    late = blended_rate(2000, 200.0, 20.0, 100)
    assert 15 < early < 20 and late == pytest.approx(10.0, rel=0.06)
    assert blended_rate(50, 5.0, 0.0, 100) == 10.0  # nothing remembered: the measured rate


def test_a_tiny_commit_is_not_remembered_as_the_index_rate(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.RATES_FILE_ENV, str(tmp_path / "rates.json"))
    _remember_index_rate(0.5, 20)
    assert measured_rates()["index_s_per_chunk"] == _RATE_DEFAULTS["index_s_per_chunk"]
    _remember_index_rate(_INDEX_BASE_S + 2.0, 1000)
    assert measured_rates()["index_s_per_chunk"] == pytest.approx(0.002)


def test_a_new_measurement_moves_the_remembered_rate_half_way(tmp_path, monkeypatch):
    """One unusual ingest (a commit three times slower than the last) must not make the next
    estimate three times too long."""
    monkeypatch.setenv(settings.RATES_FILE_ENV, str(tmp_path / "rates.json"))
    remember_rates(pages_per_s=40.0)
    assert measured_rates()["pages_per_s"] == 40.0  # the first measurement, as it is
    remember_rates(pages_per_s=20.0)
    assert measured_rates()["pages_per_s"] == 30.0
