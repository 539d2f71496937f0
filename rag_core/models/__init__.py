"""The models: offline-first resolution and loading, the ONNX bi-encoder, dense embeddings.

* :mod:`.loading` -- model names resolved to something loadable offline, the encoder variant;
* :mod:`.onnx_encoder` -- the bi-encoder exported to ONNX and run by ONNX Runtime (int8 on a CPU);
* :mod:`.embedding` -- unit-normalised embeddings of passages and queries, long texts handled.
"""
