"""The rules the backends share (rag_core.collections.store.base) and the store's place in the layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rag_core.collections.store.base import CollectionStore, embedding_status_from
from rag_core.settings import EMBEDDER_SILENT_S

NOW = 1_000_000.0


def status(progress, *, written=4, total=10, alive=True):
    return embedding_status_from(progress, total=total, written=written, embedder_alive=alive, now=NOW)


def test_a_live_embedder_is_running_and_its_computed_vectors_count_as_done():
    found = status({"running": True, "done": 7, "total": 10, "started": NOW - 60, "rate": 2.5, "updated": NOW - 1})
    assert (found.running, found.done, found.written, found.rate, found.interrupted) == (True, 7, 4, 2.5, False)
    assert not found.complete and found.eta_s == pytest.approx(3 / 2.5)


@pytest.mark.parametrize("why", ["dead", "silent", "stopped"])
def test_a_run_that_ended_before_the_vectors_did_is_interrupted(why):
    progress = {"running": why != "stopped", "stopped": why == "stopped", "done": 7, "started": NOW - 60,
                "rate": 2.5, "updated": NOW - (EMBEDDER_SILENT_S + 1 if why == "silent" else 1)}
    found = status(progress, alive=why != "dead")
    assert (found.running, found.done, found.written, found.rate, found.interrupted) == (False, 4, 4, None, True)
    assert found.started == NOW - 60


def test_a_finished_run_or_no_run_is_not_interrupted():
    assert not status({"running": False, "started": NOW - 60, "updated": NOW - 30}).interrupted
    assert not status({"running": True, "updated": NOW - 1}, written=10, alive=False).interrupted  # all written
    for record in (None, {}, [], "garbage"):
        found = status(record)
        assert (found.running, found.interrupted, found.done, found.updated) == (False, False, 4, None)
    found = status({"running": True, "updated": "yesterday", "done": "7"})  # a record of the wrong types
    assert (found.running, found.interrupted, found.done, found.updated) == (False, True, 4, None)


def test_an_error_is_reported_and_written_never_exceeds_total():
    found = status({"running": False, "error": "RuntimeError: out of memory"}, written=12)
    assert found.error == "RuntimeError: out of memory" and found.done == found.written == 10 and found.complete


def test_the_interface_keeps_to_what_a_backend_must_do():
    """Helpers derivable from other methods are concrete in the base class."""
    abstract = CollectionStore.__abstractmethods__
    assert len(abstract) == 21, sorted(abstract)
    assert not {"exists", "read_pdf", "pdf_path", "pending_vectors", "fold_in_vectors", "notes", "close"} & abstract


# ---------------------------------------------------------------- the layers


def _imported_modules(path: Path, package: str) -> set[str]:
    """Every module ``path`` imports, relative imports resolved against ``package``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _store_modules(repo_root: Path) -> dict[str, set[str]]:
    store = repo_root / "rag_core" / "collections" / "store"
    out = {}
    for path in sorted(store.rglob("*.py")):
        module = ".".join(path.relative_to(repo_root).with_suffix("").parts)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        out[module.removesuffix(".__init__")] = _imported_modules(path, package)
    return out


def test_nothing_in_the_store_imports_the_ingest_pipeline(repo_root):
    """Repair that re-reads PDFs lives above the store (rag_core.collections.repair)."""
    modules = _store_modules(repo_root)
    assert len(modules) > 10
    for module, imports in modules.items():
        up = sorted(name for name in imports if name == "rag_core.collections.ingest"
                    or name.startswith(("rag_core.collections.ingest.", "rag_core.collections.library",
                                        "rag_core.collections.repair")))
        assert not up, f"{module} imports {up}, above the store"


def test_no_backend_imports_another(repo_root):
    """Rules the backends share live in store/base.py, not in one backend."""
    for module, imports in _store_modules(repo_root).items():
        for backend, other in (("folder", "postgres"), ("postgres", "folder")):
            if module.startswith(f"rag_core.collections.store.{backend}"):
                bad = sorted(n for n in imports if n.startswith(f"rag_core.collections.store.{other}"))
                assert not bad, f"{module} imports {bad}"
