from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from rag_core.text.chunking import PageText, chunk_pages, chunk_text, page_at
from tests.support import REPO


def test_fixed_stride_and_size():
    text = "".join(chr(65 + i % 26) for i in range(3000))
    chunks = chunk_text(text, "a.pdf")
    assert [c["start"] for c in chunks] == [0, 1000, 2000]
    assert all(len(c["text"]) <= 1200 for c in chunks)
    assert chunks[0]["text"] == text[:1200]
    assert chunks[-1]["text"] == text[2000:]
    assert all(c["source"] == "a.pdf" for c in chunks)


def test_custom_sizes_and_coverage():
    text = "word " * 100
    chunks = chunk_text(text, "s", chunk_size=50, overlap=10)
    assert all(len(c["text"]) <= 50 for c in chunks)
    assert [c["start"] for c in chunks][:3] == [0, 40, 80]
    assert chunks[-1]["end"] == len(text)


@pytest.mark.parametrize("blank", ["", "   ", "\n\n\t"])
def test_blank_text_gives_no_chunks(blank):
    assert chunk_text(blank, "x") == []


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_bad_sizes_are_refused(size, overlap):
    with pytest.raises(ValueError):
        chunk_text("some text", "x", chunk_size=size, overlap=overlap)


def test_pages_are_tracked_across_chunks():
    pages = [PageText(1, "a" * 700, "i"), PageText(2, "b" * 700, "ii"), PageText(3, "", None),
             PageText(4, "c" * 700, "1")]
    chunks = chunk_pages(pages, "doc.pdf", chunk_size=1000, overlap=100)
    first = chunks[0]
    assert (first["page_start"], first["page_end"], first["page_label"]) == (1, 2, "i")
    assert page_at(first, 10) == 1
    assert page_at(first, 705) == 2
    last = chunks[-1]
    assert last["page_end"] == 4
    assert all(c["page_start"] != 3 for c in chunks)  # an empty page holds no text
    # every character maps back to the page it came from
    for chunk in chunks:
        for offset, char in enumerate(chunk["text"]):
            if char in "abc":
                assert page_at(chunk, offset) == {"a": 1, "b": 2, "c": 4}[char]


def test_chunking_imports_without_optional_dependencies():
    code = (
        "import sys\n"
        "for name in ['numpy', 'sklearn', 'torch', 'sentence_transformers', 'pypdf', 'scipy']:\n"
        "    sys.modules[name] = None\n"
        "from rag_core import chunk_text\n"
        "assert len(chunk_text('x' * 2500, 's')) == 3\n"
    )
    importlib.import_module("rag_core.text.chunking")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=str(REPO))
    assert result.returncode == 0, result.stderr
