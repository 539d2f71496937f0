"""rag_core.models.embedding with a stand-in encoder: longest-first slices, rows back in input order."""

from __future__ import annotations

import numpy as np

from rag_core.models.embedding import encode_passages, encode_query


class RecordingEncoder:
    """Embeds a text as a unit vector on the axis given by its length; records each call."""

    variant = "onnx-int8"  # not torch: encode_query must not touch torch threads
    max_seq_length = 256
    tokenizer = None

    def __init__(self):
        self.calls: list[list[str]] = []

    def get_embedding_dimension(self) -> int:
        return 64

    def encode(self, texts, **_options):
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, len(text) % 64] = 1.0
        return out


def test_passages_are_encoded_longest_first_and_returned_in_input_order():
    texts = [("w" * n) for n in (3, 40, 7, 12, 60, 1, 25, 33, 9, 50)] * 10
    model = RecordingEncoder()
    vectors = encode_passages(model, texts, batch_size=2)
    assert vectors.dtype == np.float32 and vectors.shape == (100, 64)
    assert [int(np.argmax(v)) for v in vectors] == [len(t) % 64 for t in texts]
    seen = [len(t) for call in model.calls for t in call]
    assert seen == sorted(seen, reverse=True) and len(model.calls) > 1


def test_query_with_a_non_torch_encoder():
    vector = encode_query(RecordingEncoder(), "abc")
    assert vector.dtype == np.float32 and int(np.argmax(vector)) == 3
