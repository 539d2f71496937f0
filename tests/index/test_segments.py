"""Large collections in segments: adding without refitting, merging, searching as one, the HNSW graph."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_core.collections.library import Library
from rag_core.index.segments import SegmentedIndex
from rag_core.retrieval.exact import search_exact
from rag_core.retrieval.ranking import search, search_dense

PAPERS = ("phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf",  # 4 pages, 16 chunks
          "awkward_apl2011_custom_font_encoding_2col.pdf",  # 3 pages, 16 chunks
          "awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf")  # 2 pages, 5 chunks


@pytest.fixture()
def small_segments(monkeypatch):
    """Segments of at most 20 chunks, and an HNSW graph from 5 chunks, so real PDFs make several."""
    import rag_core.collections.ingest.pipeline as pipeline
    import rag_core.collections.ingest.progress as progress
    import rag_core.collections.store.folder.segments as folder
    import rag_core.collections.store.index_files as index_files

    for module in (folder, pipeline, progress):
        monkeypatch.setattr(module, "SEGMENT_MAX_CHUNKS", 20)
    for module in (folder, index_files):
        monkeypatch.setattr(module, "ANN_MIN_CHUNKS", 5)


def segments_of(library: Library, name: str = "c") -> list[dict]:
    collection = library.root / "collections" / name
    return json.loads((collection / "versions" / library.version(name) / "version.json").read_text())["segments"]


def test_a_large_collection_grows_by_segments_and_searches_as_one(tmp_path, pdf_dir, small_segments):
    library = Library(tmp_path / "data")
    library.add_pdfs("c", [pdf_dir / PAPERS[0]], compute_embeddings=False)
    library.add_pdfs("c", [pdf_dir / PAPERS[1]], compute_embeddings=False)  # 16 + 16 > 20: a second segment
    first = segments_of(library)
    assert [s["n_chunks"] for s in first] == [16, 16]
    library.add_pdfs("c", [pdf_dir / PAPERS[2]], compute_embeddings=False)  # 16 + 5 > 20: a third, unmerged
    segments = segments_of(library)
    assert [s["id"] for s in segments[:2]] == [s["id"] for s in first]  # nothing stored was rewritten
    assert [s["n_chunks"] for s in segments] == [16, 16, 5]
    index = library.load_index("c")
    assert isinstance(index, SegmentedIndex) and len(index) == 37
    assert [c["source"] for c in index.chunks] == [PAPERS[0]] * 16 + [PAPERS[1]] * 16 + [PAPERS[2]] * 5
    assert search("ultralight bosonic dark matter", index, rerank=False)[0]["source"] == PAPERS[0]
    assert search("solitary waves", index, rerank=False)[0]["source"] == PAPERS[2]
    hit = search_exact("solitary", index)[0]
    assert hit["source"] == PAPERS[2] and index.chunks[hit["chunk_index"]]["source"] == PAPERS[2]
    assert search("solitary waves", index, rerank=False, sources=[PAPERS[1]])[0]["source"] == PAPERS[1]
    assert library.check("c").ok

    # vectors are computed per segment and folded in; the graph answers the dense top-k
    library.embed_pending("c")
    index = library.load_index("c")
    assert index.dense_coverage == (37, 37) and index.ann is not None
    rows = search("solitary waves in plasma", index, top=3)
    assert rows[0]["source"] == PAPERS[2] and rows[0]["dense_cosine"] is not None
    dense = search_dense("solitary waves in plasma", index, top=5)
    exact = np.argsort(-np.asarray(index.dense_scores("solitary waves in plasma")))[:5]
    assert [r["chunk_index"] for r in dense] == exact.tolist()

    # removing a document rewrites what holds it; the others stay searchable
    library.remove_documents("c", [PAPERS[1]])
    index = library.load_index("c")
    assert {c["source"] for c in index.chunks} == {PAPERS[0], PAPERS[2]}
    assert index.dense_coverage == (21, 21) and [s["n_chunks"] for s in segments_of(library)] == [16, 5]
    assert library.check("c").ok


def test_small_tail_segments_are_merged(tmp_path, pdf_dir, small_segments, monkeypatch):
    import rag_core.collections.ingest.pipeline as pipeline
    import rag_core.collections.ingest.progress as progress
    import rag_core.collections.store.folder.segments as folder

    for module in (folder, pipeline, progress):
        monkeypatch.setattr(module, "SEGMENT_MAX_CHUNKS", 25)
    library = Library(tmp_path / "data")
    library.add_pdfs("c", [pdf_dir / PAPERS[0]], compute_embeddings=False)  # 16
    library.add_pdfs("c", [pdf_dir / PAPERS[1]], compute_embeddings=False)  # 16 + 16 > 25: a new segment
    first = segments_of(library)
    library.add_pdfs("c", [pdf_dir / PAPERS[2]], compute_embeddings=False)  # 16 + 5 <= 25: merged into it
    segments = segments_of(library)
    assert [s["n_chunks"] for s in segments] == [16, 21] and segments[0]["id"] == first[0]["id"]
    index = library.load_index("c")
    assert [c["source"] for c in index.chunks] == [PAPERS[0]] * 16 + [PAPERS[1]] * 16 + [PAPERS[2]] * 5


def test_dense_search_through_the_graph_finds_the_exact_top_10(tmp_path):
    """The HNSW graph's top 10 equals the exact top 10 on clustered vectors (recall@10 = 1 here)."""
    from rag_core.index.ann import AnnIndex

    rng = np.random.default_rng(7)
    centres = rng.standard_normal((50, 384)).astype(np.float32)
    vectors = centres[rng.integers(0, 50, 5_000)] + 0.5 * rng.standard_normal((5_000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    graph = AnnIndex.build(vectors)
    graph.save(tmp_path / "g.usearch")
    graph = AnnIndex.load(tmp_path / "g.usearch")
    recalls = []
    for query in vectors[rng.integers(0, 5_000, 20)] + 0.1:
        query = query / np.linalg.norm(query)
        rows, cosines = graph.search(query, 10)
        exact = np.argsort(-(vectors @ query))[:10]
        recalls.append(len(set(rows.tolist()) & set(exact.tolist())) / 10)
        assert np.allclose(cosines, vectors[rows] @ query, atol=2e-3)  # float16 copies: close, not equal
    assert np.mean(recalls) >= 0.98
