"""Chunks stored by column: every dict comes back as it was, and the column helpers agree."""

from __future__ import annotations

import numpy as np
import pytest

from rag_core.index.chunk_table import ChunkTable, chunk_sources_mask, write_chunk_table
from rag_core.text.chunking import PageText, chunk_pages, chunk_text

CHUNKS = [
    *chunk_text("Plain text without pages. " * 30, "plain.txt", 200, 50),
    *chunk_pages([PageText(1, "First page, ﬁne ligatures and ünïcode " * 10, "iv"),
                  PageText(2, "Second page " * 40, None)], "paged.pdf", 300, 60),
    {"text": "", "source": "empty.pdf"},  # an empty text, most keys absent
    {"text": "odd \udcff surrogate", "source": "odd.pdf", "page_label": 7, "custom": {"a": [1, 2]},
     "doc_id": "abc123", "start": None},
]


@pytest.fixture()
def table(tmp_path) -> ChunkTable:
    write_chunk_table(CHUNKS, tmp_path)
    return ChunkTable(tmp_path)


def test_every_chunk_comes_back_as_it_was(table):
    assert len(table) == len(CHUNKS)
    assert list(table) == CHUNKS
    assert table[-1] == CHUNKS[-1] and table[1:3] == CHUNKS[1:3]
    with pytest.raises(IndexError):
        table[len(CHUNKS)]
    assert "page_breaks" in table[len(CHUNKS) - 3] and "page_breaks" not in table[len(CHUNKS) - 2]


def test_column_helpers(table):
    mask = table.mask_of_sources({"paged.pdf", "nowhere.pdf"})
    assert mask.tolist() == [c["source"] == "paged.pdf" for c in CHUNKS]
    assert np.array_equal(chunk_sources_mask(table, ["odd.pdf"]), chunk_sources_mask(CHUNKS, ["odd.pdf"]))
    buffer, offsets = table.utf8()
    for i, chunk in enumerate(CHUNKS):
        assert bytes(buffer[offsets[i]:offsets[i + 1]]).decode("utf-8", "surrogatepass") == chunk["text"]
        if offsets[i] < offsets[i + 1]:
            assert table.locate(int(offsets[i])) == i
    assert [table.text(i) for i in range(len(table))] == [c["text"] for c in CHUNKS]


def test_damaged_column_files_are_refused(tmp_path):
    write_chunk_table(CHUNKS, tmp_path)
    columns = np.load(tmp_path / "chunk_columns.npy")
    np.save(tmp_path / "chunk_columns.npy", columns[:-1])
    with pytest.raises(ValueError, match="disagree"):
        ChunkTable(tmp_path)
    np.save(tmp_path / "chunk_columns.npy", columns)
    (tmp_path / "chunk_text.bin").write_bytes(b"short")
    with pytest.raises(ValueError, match=r"chunk_text\.bin"):
        ChunkTable(tmp_path)


def test_passage_context_is_a_string_column_not_extra_lines(tmp_path):
    from rag_core.index.chunk_table import CONTEXT_FILE, EXTRA_FILE, ChunkTable, write_chunk_table

    chunks = [{"text": f"t{i}", "source": "a.pdf", "context": "A Paper — 2 Methods" if i % 2 else "A Paper"}
              for i in range(6)] + [{"text": "plain", "source": "b.pdf"}]
    write_chunk_table(chunks, tmp_path)
    assert (tmp_path / CONTEXT_FILE).is_file() and not (tmp_path / EXTRA_FILE).exists()
    table = ChunkTable(tmp_path)
    assert list(table) == chunks
    assert table.strings("context") == ["A Paper", "A Paper — 2 Methods"]


def test_back_matter_is_a_column_and_a_table_without_it_still_loads(tmp_path):
    from rag_core.index.chunk_table import BACK_MATTER_FILE, EXTRA_FILE
    from rag_core.text.back_matter import back_matter_mask

    chunks = [{"text": f"t{i}", "source": "a.pdf", "back_matter": "references" if i % 3 == 0 else None}
              for i in range(6)] + [{"text": "old", "source": "b.pdf"}]  # the last stored before detection
    (tmp_path / "new").mkdir()
    write_chunk_table(chunks, tmp_path / "new")
    assert (tmp_path / "new" / BACK_MATTER_FILE).is_file() and not (tmp_path / "new" / EXTRA_FILE).exists()
    table = ChunkTable(tmp_path / "new")
    assert list(table) == chunks and "back_matter" not in table[6]
    assert table.back_matter_column().tolist() == [True, False, False, True, False, False, False]
    assert back_matter_mask(table).tolist() == table.back_matter_column().tolist()
    (tmp_path / "old").mkdir()
    write_chunk_table([{k: v for k, v in c.items() if k != "back_matter"} for c in chunks], tmp_path / "old")
    old = ChunkTable(tmp_path / "old")
    assert not (tmp_path / "old" / BACK_MATTER_FILE).exists()
    assert back_matter_mask(old) is None and not any("back_matter" in c for c in old)
