"""Reading the ingest's inputs: no blocking on FIFOs or devices, the size checked before a byte is read, folders."""

from __future__ import annotations

import os
import threading

from rag_core.collections.ingest import inputs
from rag_core.collections.ingest.inputs import collect_pdf_files, read_input


def in_thread(fn, timeout: float):
    """``fn()``'s result, or a failure if it blocks longer than ``timeout``."""
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("value", fn()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "it blocked"
    return out["value"]


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "x.pdf"
    os.mkfifo(fifo)
    got = in_thread(lambda: read_input(fifo), 5)
    assert got.data is None and got.status == "unreadable_file" and "not a regular file" in got.reason


def test_a_device_behind_a_link_is_refused(tmp_path):
    link = tmp_path / "zero.pdf"
    link.symlink_to("/dev/zero")
    got = in_thread(lambda: read_input(link), 5)
    assert got.data is None and "not a regular file" in got.reason


def test_size_is_checked_before_reading(tmp_path, monkeypatch):
    sparse = tmp_path / "huge.pdf"
    with open(sparse, "wb") as handle:
        handle.truncate(2 * 1024**3)  # 2 GiB, sparse: costs no disk
    reads = []
    monkeypatch.setattr(inputs.os, "read", lambda *a: reads.append(a) or b"")
    got = read_input(sparse)
    assert got.status == "too_large" and "2.0 GiB" in got.reason and reads == []


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "empty.pdf").write_bytes(b"")
    assert read_input(tmp_path / "empty.pdf").status == "empty"
    missing = read_input(tmp_path / "sub" / "missing.pdf")
    assert missing.status == "unreadable_file" and str(tmp_path / "sub" / "missing.pdf") in missing.reason
    assert read_input(("", b"")).status == "empty"


def test_folders_are_expanded_and_what_is_skipped_is_said(tmp_path):
    folder = tmp_path / "papers"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.pdf").write_bytes(b"%PDF-1.4")
    (folder / "sub" / "B.PDF").write_bytes(b"%PDF-1.4")
    (folder / "notes.txt").write_text("x")
    outside = tmp_path / "outside.pdf"
    outside.write_bytes(b"%PDF-1.4")
    (folder / "link.pdf").symlink_to(outside)
    scan = collect_pdf_files([folder, tmp_path / "loose.pdf"])
    assert scan.files == [str(folder / "a.pdf"), str(folder / "sub" / "B.PDF"), str(tmp_path / "loose.pdf")]
    assert dict(scan.skipped) == {str(folder / "link.pdf"): "a link to a file outside the folder",
                                  str(folder / "notes.txt"): "not a .pdf file"}
