"""The folder store under damage and races: clear messages, no silent loss, no false "damaged"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from rag_core.cli import main
from rag_core.collections.library import Library
from rag_core.collections.store.folder import segments as folder_segments
from rag_core.collections.store.folder import store as folder_store
from rag_core.errors import CollectionError, RagCoreError
from rag_core.retrieval.exact import search_exact
from rag_core.retrieval.ranking import search
from tests.support import PDF_DIR, REPO

SMALL = "phys_ultralight_bosonic_dark_matter_cmb_arxiv0908.0054.pdf"  # 4 pages
OTHER = "awkward_apl2011_custom_font_encoding_2col.pdf"  # 3 pages
THIRD = "awkward_scanned_ocr_layer_zfn_a_1999_solitary_waves.pdf"  # 2 pages
QUERY = "ultralight bosonic dark matter"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, pdf_dir) -> Path:
    """A data folder with collection "c" (two PDFs, embedded) and a healthy neighbour "ok"."""
    root = tmp_path_factory.mktemp("pristine")
    library = Library(root)
    library.add_pdfs("c", [pdf_dir / SMALL, pdf_dir / OTHER])
    library.add_pdfs("ok", [pdf_dir / OTHER], compute_embeddings=False)
    return root


@pytest.fixture()
def copy(pristine, tmp_path) -> Library:
    target = tmp_path / "data"
    shutil.copytree(pristine, target)
    return Library(target)


def collection(library: Library, name: str = "c") -> Path:
    return library.root / "collections" / name


def live_segment(library: Library, name: str = "c") -> Path:
    """The (first) segment folder of the live version: where its index files are."""
    record = json.loads((collection(library, name) / "versions" / library.version(name) / "version.json").read_text())
    return collection(library, name) / "segments" / record["segments"][0]["id"]


def stored_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and p.name not in (".lock", ".embed.lock") and "vectors" not in p.parts)


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "emptied":
        path.write_bytes(b"")
    elif how == "halved":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbled":
        rng = np.random.default_rng(len(data))
        junk = bytearray(data)
        for i in rng.integers(0, max(len(junk), 1), size=max(len(junk) // 50, 8)):
            if len(junk):
                junk[int(i)] = (junk[int(i)] + 1 + int(rng.integers(0, 254))) % 256
        path.write_bytes(bytes(junk))
    elif how == "deleted":
        path.unlink()
    else:  # pragma: no cover
        raise ValueError(how)


def user_operations(library: Library) -> dict[str, object]:
    """What a user does; each outcome is a value or a RagCoreError, never another exception."""
    outcomes: dict[str, object] = {}

    def attempt(label, fn):
        try:
            outcomes[label] = fn()
        except RagCoreError as exc:
            assert "'c'" in str(exc), f"{label}: the message does not name the collection: {exc}"
            outcomes[label] = exc

    infos = library.list()  # never raises, and never hides the healthy neighbour
    assert [i.name for i in infos] == ["c", "ok"]
    assert infos[1].error is None and infos[1].documents == 1
    attempt("info", lambda: library.info("c"))
    attempt("documents", lambda: [d["source"] for d in library.documents("c")])
    attempt("index", lambda: library.load_index("c"))
    index = outcomes["index"]
    if not isinstance(index, Exception) and index is not None:
        attempt("tfidf", lambda: search(QUERY, index, rerank=False))
        attempt("hybrid", lambda: search(QUERY, index, top=3))
        attempt("exact", lambda: search_exact("dark matter", index))
    attempt("check", lambda: library.check("c"))
    return outcomes


@pytest.mark.slow
@pytest.mark.parametrize("how", ["emptied", "garbled", "deleted"])
def test_every_stored_file_damaged_in_turn(pristine, tmp_path, how, capsys):
    """Each stored file emptied, halved, garbled or deleted: never a traceback, never a silent loss."""
    files = stored_files(pristine / "collections" / "c")
    assert len(files) >= 12, files
    for rel in files:
        root = tmp_path / f"{how}-{rel.replace('/', '_')}"
        shutil.copytree(pristine, root)
        library = Library(root)
        damage(collection(library) / rel, how)
        outcomes = user_operations(library)
        assert main(["--data-dir", str(root), "list"]) in (0, 1)
        out, err = capsys.readouterr()
        assert "Traceback" not in err and "ok" in out
        report = outcomes["check"]
        if rel.startswith(("versions/", "files/")) or rel in ("collection.json",):
            assert not isinstance(report, Exception) and report.problems, (rel, how)
        # an ingest either works and keeps every committed document, or refuses clearly
        try:
            library.add_pdfs("c", [("third.pdf", (PDF_DIR / THIRD).read_bytes())], compute_embeddings=False)
        except CollectionError as exc:
            assert "check-store" in str(exc), (rel, how, exc)
        else:
            assert {SMALL, OTHER} <= {d["source"] for d in library.documents("c")}, (rel, how)
        # and a repair always leaves a usable collection with every committed document
        repaired = library.check("c", repair=True)
        sources = {d["source"] for d in library.documents("c")}
        lost = {SMALL, OTHER} - sources
        assert not lost or (rel.startswith("files/") and how != "garbled" and repaired.problems), (rel, how, lost)
        index = library.load_index("c")
        assert search(QUERY, index, rerank=False)




def test_missing_or_empty_current_is_recovered_not_lost(copy, pdf_dir):
    for how in ("deleted", "emptied"):
        damage(collection(copy) / "CURRENT", how)
        info = copy.info("c")
        assert info.documents == 2 and any("CURRENT" in n for n in info.notes)
        copy.add_pdfs("c", [pdf_dir / THIRD], compute_embeddings=False)
        assert {d["source"] for d in copy.documents("c")} == {SMALL, OTHER, THIRD}
        copy.remove_documents("c", [THIRD])


def test_a_missing_manifest_is_reported_and_ingest_refuses(copy, pdf_dir):
    version = copy.version("c")
    (live_segment(copy) / "manifest.json").unlink()
    with pytest.raises(CollectionError, match=r"manifest\.json"):
        copy.load_index("c")
    with pytest.raises(CollectionError, match="check-store"):
        copy.add_pdfs("c", [pdf_dir / THIRD], compute_embeddings=False)
    assert copy.version("c") == version  # nothing was committed, nothing deleted
    assert (collection(copy) / "versions" / version).is_dir()
    report = copy.check("c", repair=True)
    assert report.ok and {d["source"] for d in copy.documents("c")} == {SMALL, OTHER}


@pytest.mark.parametrize("what", ["nan", "altered"])
def test_altered_embeddings_are_reported_not_searched(copy, what):
    path = live_segment(copy) / "embeddings.npy"
    array = np.load(path)
    array[3, 5] = np.nan if what == "nan" else array[3, 5] + 0.5
    np.save(path, array)
    with pytest.raises(CollectionError, match=r"embeddings\.npy was altered"):
        copy.load_index("c")
    assert not copy.check("c").ok
    assert copy.check("c", repair=True).ok
    assert copy.load_index("c") is not None


def test_a_broken_collection_never_hides_the_others(copy, capsys):
    (collection(copy) / "collection.json").write_bytes(b"\xff\xfe not utf-8")
    infos = {i.name: i for i in copy.list()}
    assert infos["ok"].error is None and "collection.json" in infos["c"].error
    assert main(["--data-dir", str(copy.root), "list"]) == 0
    out = capsys.readouterr().out
    assert "ok" in out and "damaged" in out.lower()
    (collection(copy) / "collection.json").write_text(json.dumps({"chunk_size": "big"}))
    assert "chunk_size" in {i.name: i for i in copy.list()}["c"].error


def test_wrong_json_types_give_messages(copy):
    version_file = collection(copy) / "versions" / copy.version("c") / "version.json"
    record = json.loads(version_file.read_text())
    record["documents"][0]["pages"] = "four"
    version_file.write_text(json.dumps(record))
    with pytest.raises(CollectionError, match="document 1"):
        copy.documents("c")


def test_lost_settings_file_and_a_lock_folder_stay_visible_and_removable(copy, capsys):
    (collection(copy) / "collection.json").unlink()
    assert "c" in copy.names()
    assert copy.info("c").documents == 2  # settings recovered from the version record
    (collection(copy) / ".lock").unlink(missing_ok=True)
    (collection(copy) / ".lock").mkdir()
    with pytest.raises(CollectionError, match="lock"):
        copy.add_pdfs("c", [("x.pdf", b"%PDF-1.4 junk")])
    assert main(["--data-dir", str(copy.root), "check-store", "c", "--repair"]) == 0
    assert (collection(copy) / ".lock").is_dir() is False and (collection(copy) / "collection.json").is_file()
    (collection(copy) / ".lock").unlink(missing_ok=True)
    (collection(copy) / ".lock").mkdir()
    assert main(["--data-dir", str(copy.root), "remove", "c", "--yes"]) == 0
    assert copy.names() == ["ok"]


def test_a_folder_with_anything_in_it_can_be_removed(copy):
    junk = copy.root / "collections" / "junk"
    junk.mkdir()
    (junk / "random.bin").write_bytes(b"\0" * 10)
    assert "junk" in copy.names() and copy.list()[1].error
    copy.delete("junk", force=True)
    assert "junk" not in copy.names()


def test_partial_files_of_killed_writes_are_cleaned(copy, pdf_dir):
    files = collection(copy) / "files"
    partial = files / f".{'a' * 64}.pdf.x1y2z3"
    partial.write_bytes(b"%PDF-" + b"x" * 1000)
    (collection(copy) / "versions" / ".v000099-abcd").mkdir()
    assert "temporary" in " ".join(copy.check("c").problems)
    copy.add_pdfs("c", [pdf_dir / THIRD], compute_embeddings=False)
    assert not partial.exists() and not (collection(copy) / "versions" / ".v000099-abcd").exists()


def test_a_reader_retries_when_a_commit_replaces_its_version(copy, pdf_dir, monkeypatch):
    """The version a reader resolved disappears before it loads: it reads the new one instead."""
    store = copy.store
    real_load = folder_store.load_index
    calls = []

    def racing_load(folder, **kwargs):
        if not calls:
            calls.append(folder)
            monkeypatch.setattr(folder_store, "load_index", real_load)
            copy.add_pdfs("c", [pdf_dir / THIRD], compute_embeddings=False)  # a commit lands...
            shutil.rmtree(folder)  # ...and (past its grace period) the old version goes
        return real_load(folder, **kwargs)

    monkeypatch.setattr(folder_store, "load_index", racing_load)
    index = store.load_index("c")
    assert calls and {c["source"] for c in index.chunks} == {SMALL, OTHER, THIRD}


def test_a_reader_never_sees_vectors_missing_while_they_are_folded_in(copy, monkeypatch):
    """Right after "every passage has its embedding", a search said "dense: 1,358 of 1,374":
    the reader had resolved the version before the fold-in and found the vector files gone."""
    store = copy.store
    copy.add_pdfs("n", [copy.store.pdf_path("ok", copy.documents("ok")[0]["sha256"])], compute_embeddings=False)
    for doc in store.pending_vectors("n"):
        vectors = np.random.default_rng(0).standard_normal((len(doc.texts), 384)).astype(np.float32)
        store.write_vectors("n", doc.key, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    assert store.embedding_status("n").complete
    real_overlay = store._with_written_vectors
    calls = []

    def racing_overlay(path, parts, record):
        if not calls:
            calls.append(path)
            store.fold_in_vectors("n")  # a new version holds the vectors; their files are removed
        return real_overlay(path, parts, record)

    monkeypatch.setattr(store, "_with_written_vectors", racing_overlay)
    index = store.load_index("n")
    assert calls and index.dense_coverage == (len(index.chunks), len(index.chunks))


def test_vectors_computed_but_not_written_do_not_count_as_complete(copy):
    """The page said "all embeddings ready" while the last document's vectors were still being
    written, and the next search covered 1,358 of 1,374 passages."""
    store = copy.store
    total = store.embedding_status("ok").total
    store.write_embedding_progress("ok", {"running": True, "done": total, "total": total,
                                          "started": time.time(), "rate": 20.0})
    status = store.embedding_status("ok")
    assert status.running and status.done == total  # the progress bar is full...
    assert not status.complete and status.written == 0  # ...but searches have no vector yet


def test_old_versions_stay_for_their_grace_period(copy, pdf_dir, monkeypatch):
    versions = collection(copy) / "versions"
    before = sorted(p.name for p in versions.iterdir())
    for name in (THIRD,):
        copy.add_pdfs("c", [pdf_dir / name], compute_embeddings=False)
    copy.remove_documents("c", [THIRD])
    assert set(before) <= {p.name for p in versions.iterdir()}  # nothing a reader may hold was removed
    monkeypatch.setattr(folder_segments, "VERSION_GRACE_S", 0)
    copy.add_pdfs("c", [pdf_dir / THIRD], compute_embeddings=False)
    live = copy.version("c")
    kept = sorted(p.name for p in versions.iterdir())
    assert live in kept and len(kept) == 2  # the live one and its parent


READER = textwrap.dedent("""
    import sys, time, traceback
    from rag_core.collections.library import Library
    from rag_core.retrieval.ranking import search
    from rag_core.retrieval.exact import search_exact
    lib = Library(store=sys.argv[1])
    errors = n = 0
    stop = time.time() + float(sys.argv[2])
    while time.time() < stop:
        try:
            index = lib.load_index("c")
            search("dense passage retrieval", index, rerank=False, top=3)
            search_exact("retrieval", index, max_hits=2)
            lib.documents("c"); lib.list()
            n += 1
        except Exception as exc:
            errors += 1
            print("ERROR", type(exc).__name__, exc, file=sys.stderr)
    print(n, errors)
""")

WRITER = textwrap.dedent("""
    import sys, time
    from rag_core.collections.library import Library
    lib = Library(store=sys.argv[1])
    stop = time.time() + float(sys.argv[2])
    pdf, side = sys.argv[3], sys.argv[4]  # each writer renames its own side collection back and forth
    while time.time() < stop:
        lib.add_pdfs("c", [pdf], compute_embeddings=False)
        lib.remove_documents("c", [pdf.rsplit("/", 1)[-1]])
        lib.rename(side, side + "-renamed"); lib.rename(side + "-renamed", side)
    print("done")
""")


@pytest.mark.slow
def test_searchers_and_ingests_at_once_see_no_false_damage(tmp_path, pdf_dir, store_location):
    """4 searching and 2 writing processes on one collection: no error, no lost document (both backends)."""
    library = Library(tmp_path / "data", store=store_location)
    library.add_pdfs("c", [pdf_dir / THIRD], compute_embeddings=False)
    sides = ("side-a", "side-b")  # one a writer: two writers renaming the same one would race each other
    for side in sides:
        library.create(side)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    seconds = os.environ.get("RAG_CORE_STRESS_SECONDS", "40")
    readers = [subprocess.Popen([sys.executable, "-c", READER, store_location, seconds], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    time.sleep(1)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, store_location, seconds, str(pdf_dir / name), side],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
               for name, side in zip((SMALL, OTHER), sides, strict=True)]
    for proc in writers:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0 and out.strip() == "done", err[-2000:]
    searches = 0
    for proc in readers:
        out, err = proc.communicate(timeout=600)
        n, errors = map(int, out.split())
        assert errors == 0, err[-3000:]
        searches += n
    assert searches > 20
    assert [d["source"] for d in library.documents("c")] == [THIRD]
    assert library.check("c").ok


def test_side_data_lives_outside_versions(tmp_path, store_location, pdf_dir):
    """Both backends: side data survives new versions; keys are checked."""
    copy = Library(tmp_path / "data", store=store_location)
    copy.add_pdfs("c", [pdf_dir / OTHER], compute_embeddings=False)
    store = copy.store
    with store.writing("c"):
        store.write_data("c", "judgments", [{"query": "q", "grade": 3}])
        store.write_data("c", "snapshots/first-run", {"metrics": {}})
    copy.add_pdfs("c", [pdf_dir / THIRD], compute_embeddings=False)  # a new version...
    assert store.read_data("c", "judgments") == [{"query": "q", "grade": 3}]  # ...keeps them
    assert store.list_data("c") == ["judgments", "snapshots/first-run"]
    assert store.list_data("c", "snapshots/") == ["snapshots/first-run"]
    for bad in ("../x", "a/../b", "UPPER", "", "a/b/c"):
        with pytest.raises(ValueError):
            store.read_data("c", bad)
    store.write_data("c", "judgments", None)
    assert store.list_data("c") == ["snapshots/first-run"]


def test_damaged_side_data_is_reported(copy):
    """A damaged live value is read from its committed copy, reported, and restored by a repair;
    when the copy is damaged as well, reading it is an error that names it."""
    store = copy.store
    with store.writing("c"):
        store.write_data("c", "judgments", [{"query": "q", "grade": 3}])
    (collection(copy) / "data" / "judgments.json").write_text("{broken")
    assert store.read_data("c", "judgments") == [{"query": "q", "grade": 3}]
    assert any("judgments" in p for p in copy.check("c").problems)
    assert copy.check("c", repair=True).ok and copy.check("c").problems == []
    assert json.loads((collection(copy) / "data" / "judgments.json").read_text()) == [{"query": "q", "grade": 3}]
    (collection(copy) / "data" / "judgments.json").write_text("{broken")
    for kept in (collection(copy) / "data-history").rglob("*.json"):
        kept.write_text("{broken")
    with pytest.raises(CollectionError, match="judgments"):
        store.read_data("c", "judgments")
