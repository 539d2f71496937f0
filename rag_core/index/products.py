"""The dense product of a query vector with a matrix of passage vectors, on this thread.

NumPy's ``matrix @ vector`` hands a matrix-vector product to OpenBLAS, which splits it over
every core: on a machine whose cores are busy with other work the threads wait on each other,
and the product of 1,374 x 384 took 12-24 ms instead of 0.3 ms (issue 21, measured at load
average 11 on 2 cores; 150 of them were most of the relevance lab's first open). The product
is memory-bound, so one thread loses little even on a large matrix, and a large index runs its
segments' products in threads of its own.
"""

from __future__ import annotations

import numpy as np


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` (float32 rows, one float32 vector) without BLAS threads."""
    return np.einsum("ij,j->i", matrix, np.asarray(vector, dtype=matrix.dtype))


def gram(vectors: np.ndarray) -> np.ndarray:
    """``vectors @ vectors.T`` of a few rows, without BLAS threads."""
    return np.einsum("ij,kj->ik", vectors, vectors)
