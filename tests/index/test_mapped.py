"""Memory-mapped index files read without staying resident (rag_core.index.mapped)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from rag_core import testing
from rag_core.index import mapped


def resident_kib(path: Path) -> int:
    """Resident KiB of the mappings of ``path`` in this process (Linux)."""
    return testing.resident_kib(path).get(str(path), 0)


@pytest.fixture
def stored(tmp_path):
    vectors = np.random.default_rng(0).standard_normal((20_000, 64)).astype(np.float32)  # 5 MB
    np.save(tmp_path / "embeddings.npy", vectors)
    return vectors, np.load(tmp_path / "embeddings.npy", mmap_mode="r"), tmp_path / "embeddings.npy"


def test_read_rows_gives_the_rows_in_the_order_asked(stored):
    vectors, mapped_array, _ = stored
    rows = np.array([19_999, 0, 7, 7, 12_345])
    assert np.array_equal(mapped.read_rows(mapped_array, rows), vectors[rows])
    assert np.array_equal(mapped.read_rows(vectors, rows), vectors[rows])  # an array in memory: indexed
    view = mapped_array[100:200]  # a view of the mapping: indexed too
    assert np.array_equal(mapped.read_rows(view, np.array([0, 99])), vectors[[100, 199]])
    with pytest.raises(IndexError):
        mapped.read_rows(mapped_array, np.array([20_000]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_rows_read_for_a_search_do_not_stay_mapped(stored):
    """128 rows re-ranked in a 150 MB segment made 90 MB of it resident through the mapping."""
    vectors, mapped_array, path = stored
    rows = np.random.default_rng(1).choice(len(vectors), 200, replace=False)
    assert np.array_equal(mapped.read_rows(mapped_array, rows), vectors[rows])
    assert resident_kib(path) == 0
    np.asarray(mapped_array[rows])  # through the mapping, for contrast
    assert resident_kib(path) > 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_release_drops_the_pages_of_a_scan_and_keeps_the_data(stored):
    vectors, mapped_array, path = stored
    assert float(np.asarray(mapped_array).sum()) == pytest.approx(float(vectors.sum()), rel=1e-4)
    assert resident_kib(path) > 4_000
    mapped.release(mapped_array)
    assert resident_kib(path) == 0
    assert np.array_equal(np.asarray(mapped_array[5]), vectors[5])  # read again from the file
