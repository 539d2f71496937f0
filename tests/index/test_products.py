"""The dense products computed without BLAS threads give BLAS's numbers."""

from __future__ import annotations

import numpy as np

from rag_core.index.products import gram, matvec


def test_matvec_and_gram_agree_with_numpy_matmul(tmp_path):
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((1374, 384)).astype(np.float32)
    vector = rng.standard_normal(384).astype(np.float32)
    np.save(tmp_path / "m.npy", matrix)
    mapped = np.load(tmp_path / "m.npy", mmap_mode="r")  # as a stored index holds its vectors
    for m in (matrix, mapped):
        got = matvec(m, vector)
        assert got.dtype == np.float32 and got.shape == (1374,)
        assert np.allclose(got, matrix @ vector, rtol=1e-5, atol=1e-4)
    assert np.array_equal(np.argsort(-matvec(matrix, vector))[:10], np.argsort(-(matrix @ vector))[:10])
    few = matrix[:30]
    assert np.allclose(gram(few), few @ few.T, rtol=1e-5, atol=1e-4)
    assert np.allclose(matvec(matrix, vector.astype(np.float64)), matrix @ vector, rtol=1e-5, atol=1e-4)
