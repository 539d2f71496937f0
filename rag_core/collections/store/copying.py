"""Copy a collection between stores (a folder and PostgreSQL, either way), and prove nothing was lost.

:func:`copy_collection` writes the documents, chunks, dense vectors, original files and
side data of one collection into another store in one commit, reads the copy back and
compares counts and SHA-256 checksums of every part (:class:`CopyReport`). A copy that
does not match is removed again; the source is only read.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np

from rag_core.collections.store.base import CollectionStore, validate_collection_name
from rag_core.errors import CollectionExistsError

PARTS = ("documents", "chunks", "dense vectors", "original files", "side data")


@dataclass
class CollectionDigest:
    """Counts and checksums of what a collection holds."""

    counts: dict[str, int] = field(default_factory=dict)
    checksums: dict[str, str] = field(default_factory=dict)


@dataclass
class CopyReport:
    source: str
    target: str
    source_store: str
    target_store: str
    before: CollectionDigest
    after: CollectionDigest
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    removed_copy: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems and self.before.counts == self.after.counts \
            and self.before.checksums == self.after.checksums

    def rows(self) -> list[tuple[str, str, str, bool]]:
        """``(what, source, copy, same)`` for every count and checksum."""
        out = []
        for part in PARTS:
            a, b = self.before.counts.get(part), self.after.counts.get(part)
            out.append((part, str(a), str(b), a == b))
        for part in PARTS:
            a, b = self.before.checksums.get(part, ""), self.after.checksums.get(part, "")
            out.append((f"{part} sha256", a[:16], b[:16], a == b))
        return out

    def to_dict(self) -> dict:
        return {"source": self.source, "target": self.target, "source_store": self.source_store,
                "target_store": self.target_store, "ok": self.ok, "problems": self.problems, "notes": self.notes,
                "removed_copy": self.removed_copy,
                "parts": [{"what": w, "source": a, "copy": b, "same": same} for w, a, b, same in self.rows()]}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=True).encode()


def digest_collection(store: CollectionStore, name: str) -> tuple[CollectionDigest, dict]:
    """Counts and checksums of a collection, and what was read (to copy it)."""
    documents = store.read_documents(name)
    index = store.load_index(name)
    chunks = [] if index is None else index.chunks
    embeddings = None if index is None else index.embeddings
    mask = None
    if embeddings is not None:
        mask = np.ones(len(chunks), dtype=bool) if index.dense_mask is None else np.asarray(index.dense_mask)
    files: dict[str, bytes] = {}
    missing = []
    for doc in documents:
        data = store.read_pdf(name, doc["sha256"])
        if data is None:
            missing.append(doc["source"])
        else:
            files[doc["sha256"]] = data
    data_keys = store.list_data(name)
    side = {key: store.read_data(name, key) for key in data_keys}
    vectors = hashlib.sha256()
    if embeddings is not None:
        vectors.update(np.packbits(mask).tobytes())
        vectors.update(np.ascontiguousarray(np.asarray(embeddings, dtype="<f4")[mask]).tobytes())
    digest = CollectionDigest(
        counts={"documents": len(documents), "chunks": len(chunks),
                "dense vectors": 0 if mask is None else int(mask.sum()), "original files": len(files),
                "side data": len(side)},
        checksums={
            "documents": _sha(_canonical(documents)),
            "chunks": _sha(b"\n".join(_canonical(c) for c in chunks)),
            "dense vectors": vectors.hexdigest(),
            "original files": _sha(_canonical(sorted((sha, _sha(data)) for sha, data in files.items()))),
            "side data": _sha(_canonical(side)),
        },
    )
    read = {"documents": documents, "chunks": chunks, "embeddings": embeddings, "mask": mask, "files": files,
            "side": side, "missing": missing, "settings": store.read_settings(name)}
    return digest, read


def copy_collection(source: CollectionStore, name: str, target: CollectionStore, new_name: str | None = None) \
        -> CopyReport:
    """Copy collection ``name`` of ``source`` into ``target`` as ``new_name`` (default: the same name)."""
    new_name = validate_collection_name(new_name or name)
    if target.exists(new_name) or any(n.casefold() == new_name.casefold() for n in target.names()):
        raise CollectionExistsError(f"A collection named {new_name!r} already exists in {target.location}; "
                                    "choose another name for the copy, or remove it first.")
    before, read = digest_collection(source, name)
    settings = read["settings"]
    stored = target.create(new_name, {k: settings[k] for k in ("chunk_size", "overlap", "embedding_model")})
    notes = [f"the original of {s!r} is missing in the source too (copied without it)" for s in read["missing"]]
    try:
        with target.writing(stored):
            if read["documents"]:
                target.commit(stored, documents=read["documents"], chunks=list(read["chunks"]),
                              embeddings=read["embeddings"], dense_mask=read["mask"], new_files=read["files"])
            for key, value in read["side"].items():
                target.write_data(stored, key, value)
        after, _ = digest_collection(target, stored)
    except BaseException:
        target.delete(stored, force=True)
        raise
    report = CopyReport(name, stored, f"{source.kind}: {source.location}", f"{target.kind}: {target.location}",
                        before, after, notes=notes)
    if not (before.counts == after.counts and before.checksums == after.checksums):
        target.delete(stored, force=True)
        report.removed_copy = True
        report.problems.append("the copy did not match the source, so it was removed again")
    elif hasattr(target, "ensure_ann_index"):
        target.ensure_ann_index(stored)  # a large collection gets its HNSW index, as after embedding
    return report
