"""Tests of rag_core.index.ann: the HNSW graph of a large index."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rag_core.index.ann import AnnIndex
from tests.support import REPO


def test_the_graph_finds_its_own_rows():
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((500, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    graph = AnnIndex.build(vectors)
    rows, cosines = graph.search(vectors[42], 3)
    assert rows[0] == 42 and cosines[0] == pytest.approx(1.0, abs=1e-2)


def test_the_query_encoder_loads_after_a_graph_in_one_process():
    """A graph opened first, the ONNX runtime imported after (the app opening a large collection
    before its model warm-up): usearch's extension loaded first made onnxruntime's import crash
    the process (SIGSEGV)."""
    pytest.importorskip("onnxruntime")
    code = textwrap.dedent("""
        import numpy as np
        from rag_core.index.ann import AnnIndex
        AnnIndex.build(np.eye(8, dtype=np.float32))
        import onnxruntime
        print("both loaded")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0 and "both loaded" in done.stdout, (done.returncode, done.stderr[-2000:])
