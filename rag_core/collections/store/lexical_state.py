"""The fitted lexical state of an index (TF-IDF and BM25) as files: one format for both stores.

An index folder (:mod:`rag_core.collections.store.index_files`) holds these files beside its
chunks and vectors; the PostgreSQL store keeps the same files, by name, in its
``lexical_files`` table (:func:`lexical_state_bytes`, :func:`lexical_state_from_bytes`), so
a process loads them instead of fitting TF-IDF again. Never pickle::

    tfidf_vocabulary.json   term -> column
    tfidf_idf.npy           idf weight per column
    tfidf_csc_data.npy      the unit-normalised TF-IDF matrix by column: the posting list of
    tfidf_csc_indices.npy   each term, what a query reads (memory-mapped when read from a
    tfidf_csc_indptr.npy    folder)
    bm25/                   bm25s index files (JSON and .npy)

Read, never written: ``tfidf_matrix.npz`` (the matrix by row, SciPy's format) in place of the
three column files, as index folders of format 1 and PostgreSQL libraries written before
this module hold it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from rag_core.errors import IndexFormatError
from rag_core.index.postings import Postings

if TYPE_CHECKING:
    import scipy.sparse as sp

    from rag_core.index.build import RagIndex
    from rag_core.index.lexical import BM25Index
    from rag_core.index.tfidf import TfidfTerms

VOCABULARY = "tfidf_vocabulary.json"
IDF = "tfidf_idf.npy"
CSC_FILES = ("tfidf_csc_data.npy", "tfidf_csc_indices.npy", "tfidf_csc_indptr.npy")
ROW_MAJOR_MATRIX = "tfidf_matrix.npz"  # read only
BM25_DIR = "bm25"
_TOP_LEVEL = {VOCABULARY, IDF, *CSC_FILES, ROW_MAJOR_MATRIX}


class LexicalState(NamedTuple):
    """What TF-IDF and BM25 search need besides the chunks."""

    vectorizer: TfidfTerms  # the stored vocabulary and idf (rag_core.index.tfidf)
    matrix: Postings | sp.spmatrix  # by column (SciPy's by row for the old tfidf_matrix.npz)
    bm25: BM25Index | None


def write_lexical_state(index: RagIndex, folder: Path) -> int:
    """Write the TF-IDF and BM25 files of ``index`` into ``folder``; returns the matrix's
    stored entries."""
    from rag_core.index.lexical import tfidf_state

    folder = Path(folder)
    vocabulary, idf = tfidf_state(index.tfidf_model)
    (folder / VOCABULARY).write_text(json.dumps(vocabulary, ensure_ascii=False), encoding="utf-8")
    np.save(folder / IDF, idf, allow_pickle=False)
    csc = index.tfidf_matrix
    if not isinstance(csc, Postings):  # a matrix fitted in this process (SciPy's, by row)
        import scipy.sparse as sp

        csc = sp.csc_matrix(csc, dtype=np.float32)
    for name, array in zip(CSC_FILES, (np.asarray(csc.data, dtype=np.float32), np.asarray(csc.indices, dtype=np.int32),
                                       np.asarray(csc.indptr, dtype=np.int64)), strict=True):
        np.save(folder / name, array, allow_pickle=False)
    if index.bm25 is not None:
        index.bm25.save(folder / BM25_DIR)
    return int(csc.nnz)


def read_lexical_state(folder: Path, *, n_chunks: int, mmap: bool = True, bm25: bool | None = None,
                       row_major: bool = False) -> LexicalState:
    """The state :func:`write_lexical_state` wrote for ``n_chunks`` chunks (``row_major``: the
    old single ``tfidf_matrix.npz`` instead). ``bm25``: whether to read it (None: when its
    folder is there). Files that disagree raise ``IndexFormatError`` saying how."""
    from rag_core.index.lexical import BM25Index, tfidf_from_state

    folder = Path(folder)
    vocabulary = json.loads((folder / VOCABULARY).read_text(encoding="utf-8"))
    if not isinstance(vocabulary, dict):
        raise IndexFormatError(f"{VOCABULARY} is not a term -> column mapping")
    idf = np.load(folder / IDF, allow_pickle=False)
    vectorizer = tfidf_from_state(vocabulary, idf)
    if row_major:
        import scipy.sparse as sp

        matrix = sp.load_npz(folder / ROW_MAJOR_MATRIX).tocsr()
        if matrix.shape != (n_chunks, len(vocabulary)):
            raise IndexFormatError("the TF-IDF matrix does not match the chunks and terms")
    else:
        data, indices, indptr = (np.load(folder / name, allow_pickle=False, mmap_mode="r" if mmap else None)
                                 for name in CSC_FILES)
        if data.dtype != np.float32 or indices.dtype != np.int32 or len(indptr) != len(vocabulary) + 1 \
                or len(data) != len(indices) or int(indptr[-1]) != len(data):
            raise IndexFormatError("the TF-IDF matrix files disagree with each other")
        if len(indices) and (int(indices.max()) >= n_chunks or int(indices.min()) < 0):
            raise IndexFormatError("the TF-IDF matrix points at chunks that do not exist")
        matrix = Postings(data, indices, indptr, (n_chunks, len(vocabulary)))
    if bm25 is None:
        bm25 = (folder / BM25_DIR).is_dir()
    return LexicalState(vectorizer, matrix, BM25Index.load(folder / BM25_DIR, mmap=mmap) if bm25 else None)


def lexical_state_bytes(index: RagIndex) -> dict[str, bytes]:
    """The files of :func:`write_lexical_state` by relative name (``bm25/...``), for a database."""
    with tempfile.TemporaryDirectory(prefix="rag-core-lexical-") as tmp:
        folder = Path(tmp)
        write_lexical_state(index, folder)
        return {path.relative_to(folder).as_posix(): path.read_bytes()
                for path in sorted(folder.rglob("*")) if path.is_file()}


def lexical_state_from_bytes(files: dict[str, bytes], *, n_chunks: int) -> LexicalState:
    """The state from :func:`lexical_state_bytes`' files (or the older ones with
    ``tfidf_matrix.npz``), held in memory."""
    with tempfile.TemporaryDirectory(prefix="rag-core-lexical-") as tmp:
        write_lexical_files(files, Path(tmp))
        return read_lexical_files(Path(tmp), files, n_chunks=n_chunks, mmap=False)


def write_lexical_files(files: dict[str, bytes], folder: Path) -> None:
    """:func:`lexical_state_bytes`' files written into the empty ``folder`` (names checked)."""
    (folder / BM25_DIR).mkdir()
    for name, data in files.items():
        inner = name[len(BM25_DIR) + 1:] if name.startswith(f"{BM25_DIR}/") else None
        if name not in _TOP_LEVEL and not (inner and "/" not in inner and not inner.startswith(".")):
            raise ValueError(f"unexpected lexical file name {name!r}")
        (folder / name).write_bytes(data)


def read_lexical_files(folder: Path, names, *, n_chunks: int, mmap: bool = True) -> LexicalState:
    """The state from a folder :func:`write_lexical_files` wrote the files ``names`` into."""
    row_major = ROW_MAJOR_MATRIX in names and CSC_FILES[-1] not in names
    return read_lexical_state(folder, n_chunks=n_chunks, mmap=mmap, row_major=row_major,
                              bm25=any(name.startswith(f"{BM25_DIR}/") for name in names))
