"""Reading the old tool's pickle-based index folders: an explicit, trusted opt-in only.

Never called unless the user passes ``trust_pickle=True`` to ``load_index``. Even then
the pickles are read by an unpickler that builds only the classes such a folder holds
(scikit-learn's TF-IDF vectorizer, SciPy sparse matrices, NumPy arrays and a few
builtins) and refuses any other global, so a crafted file cannot call ``exec`` or
``os.system``. Save the result again to get the safe format.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np

from rag_core.index.build import RagIndex

_ALLOWED_MODULE_PREFIXES = ("sklearn.feature_extraction.", "scipy.sparse.")
_ALLOWED_GLOBALS = {
    ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"), ("builtins", "complex"),
    ("numpy", "dtype"), ("numpy", "ndarray"), ("numpy", "float64"), ("numpy", "float32"), ("numpy", "int64"),
    ("numpy", "int32"), ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"), ("copyreg", "_reconstructor"),
    ("builtins", "object"),
}


class LegacyPickleError(ValueError):
    """An old-format pickle asked for something an index folder never holds."""


class _IndexUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _ALLOWED_GLOBALS or (
            module.startswith(_ALLOWED_MODULE_PREFIXES) and not name.startswith("_")
        ):
            return super().find_class(module, name)
        raise LegacyPickleError(
            f"refusing to load {module}.{name} from an old index pickle: index folders hold only "
            "TF-IDF vectorizers, sparse matrices and arrays"
        )


def _read_pickle(path: Path):
    with open(path, "rb") as handle:
        return _IndexUnpickler(handle).load()


def load_legacy_index(folder: Path) -> RagIndex:
    """Load ``chunks.json``, ``vectorizer.pkl``, ``matrix.pkl`` and ``embeddings.npy``."""
    chunks = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
    vectorizer = _read_pickle(folder / "vectorizer.pkl")
    matrix = _read_pickle(folder / "matrix.pkl")
    embeddings_path = folder / "embeddings.npy"
    embeddings = np.load(embeddings_path, allow_pickle=False) if embeddings_path.exists() else None
    return RagIndex(chunks=chunks, vectorizer=vectorizer, matrix=matrix.tocsr(), embeddings=embeddings)
