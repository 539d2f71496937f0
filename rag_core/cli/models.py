"""``rag-core models``: where each model loads from, the bi-encoder's ONNX variants, the query
head and the stance reader."""

from __future__ import annotations

import json

from rag_core.cli.common import EXIT_OK


def cmd_models(args) -> int:
    from rag_core.models.loading import resolve_model, select_device
    from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL, DEFAULT_EMBEDDING_MODEL

    rows = []
    for role, name in (("bi-encoder", args.embedding_model or DEFAULT_EMBEDDING_MODEL),
                       ("cross-encoder", args.cross_encoder or DEFAULT_CROSS_ENCODER_MODEL)):
        source = resolve_model(name)
        rows.append({"role": role, "name": name, "origin": source.origin, "available": source.available,
                     "detail": source.detail})
    encoder = _encoder_report(args.embedding_model or DEFAULT_EMBEDDING_MODEL, prepare=args.prepare)
    from rag_core.models.query_head import query_head_status

    head = query_head_status()
    query_head = {"asked": head.asked, "used": head.head.name if head.head else None, "detail": head.detail}
    reader = _reader_report(prepare=args.prepare)
    if args.json:
        print(json.dumps({"device": select_device(import_torch=False), "models": rows, "encoder": encoder,
                          "query_head": query_head, "stance_reader": reader}, indent=1))
    else:
        print(f"device: {select_device(import_torch=False)}")
        for r in rows:
            print(f"{r['role']:14s} {r['name']}: {r['origin']} - {r['detail']}")
        print(f"{'encoder':14s} {encoder['variant']} (asked: {encoder['requested']})")
        for variant, state in encoder["onnx"].items():
            print(f"{'':14s} {variant}: {state}")
        if encoder["fallback"]:
            print(f"{'':14s} using torch instead of {encoder['planned']}: {encoder['fallback']}")
        print(f"{'query head':14s} {query_head['detail']}")
        print(f"{'stance reader':14s} {reader['detail']}")
    return EXIT_OK


def _reader_report(*, prepare: bool) -> dict:
    """The stance reader: its name, and whether it runs on ONNX Runtime (prepared) or PyTorch."""
    from rag_core.models import stance_encoder as SE

    try:
        card, _ = SE._checked_card(SE.ENCODER_DIR)
    except SE.StanceEncoderError as exc:
        return {"name": None, "backend": None, "detail": f"not usable ({exc}): citation checks use the rules' "
                                                         "answer and the logistic regression"}
    name = card.get("name")
    if prepare:
        try:
            SE.prepare_onnx_reader()
        except SE.StanceEncoderError as exc:
            return {"name": name, "backend": "torch", "detail": f"{name}: on PyTorch ({exc})"}
    try:
        SE.OnnxStanceReader()
    except SE.StanceEncoderError as exc:
        return {"name": name, "backend": "torch", "detail": f"{name}: on PyTorch ({exc})"}
    return {"name": name, "backend": SE.READER_VARIANT, "detail": f"{name}: {SE.READER_VARIANT}, prepared"}


def _encoder_report(name: str, *, prepare: bool) -> dict:
    """Which bi-encoder variant runs, the state of each ONNX conversion, and why torch runs if it does."""
    import importlib.util
    import os

    from rag_core.models.loading import planned_encoder, resolve_model
    from rag_core.settings import ENCODER_ENV

    planned = planned_encoder()
    report = {"requested": os.environ.get(ENCODER_ENV) or "auto", "planned": planned, "variant": planned,
              "onnx": {}, "fallback": None}
    source = resolve_model(name)
    if not source.available:
        return report
    from rag_core.models.onnx_encoder import (
        ONNX_VARIANTS,
        OnnxEncoderError,
        cache_state,
        prepare_onnx_model,
        read_layout,
    )

    try:
        read_layout(source.location)
    except OnnxEncoderError as exc:
        report["onnx"] = dict.fromkeys(ONNX_VARIANTS, f"not possible for this model: {exc}")
    else:
        for variant in ONNX_VARIANTS:
            if prepare:
                try:
                    prepare_onnx_model(source.location, variant)
                except OnnxEncoderError as exc:
                    report["onnx"][variant] = f"conversion failed: {exc}"
                    continue
            report["onnx"][variant] = cache_state(source.location, variant)
    if planned != "torch":
        if importlib.util.find_spec("onnxruntime") is None:
            report["fallback"] = "onnxruntime is not installed (pip install onnxruntime)"
        elif report["onnx"].get(planned, "").startswith(("conversion failed", "not possible")):
            report["fallback"] = report["onnx"][planned]
        if report["fallback"]:
            report["variant"] = "torch"
    return report


def add_parsers(sub, common) -> None:
    """The sub-commands ``models``."""
    p = sub.add_parser("models", parents=[common], help="show where each model loads from")
    p.add_argument("--embedding-model")
    p.add_argument("--cross-encoder")
    p.add_argument("--json", action="store_true")
    p.add_argument("--prepare", action="store_true",
                   help="convert the bi-encoder (fp32 and int8) and the stance reader to ONNX now instead of at "
                        "first use")
    p.set_defaults(func=cmd_models)
