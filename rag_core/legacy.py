"""Reading the old tool's pickle-based index folders: an explicit, trusted opt-in only.

Never called unless the user passes ``trust_pickle=True`` to ``load_index``: unpickling
runs code from the file. Save the result again to get the safe format.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np

from .index import RagIndex


def load_legacy_index(folder: Path) -> RagIndex:
    """Load ``chunks.json``, ``vectorizer.pkl``, ``matrix.pkl`` and ``embeddings.npy``."""
    chunks = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
    with open(folder / "vectorizer.pkl", "rb") as handle:
        vectorizer = pickle.load(handle)  # trusted by the caller's explicit opt-in
    with open(folder / "matrix.pkl", "rb") as handle:
        matrix = pickle.load(handle)  # trusted by the caller's explicit opt-in
    embeddings_path = folder / "embeddings.npy"
    embeddings = np.load(embeddings_path, allow_pickle=False) if embeddings_path.exists() else None
    return RagIndex(chunks=chunks, vectorizer=vectorizer, matrix=matrix.tocsr(), embeddings=embeddings)
