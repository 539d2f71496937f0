"""Issue 27 rows 7 and 10: one encoding decision for every imported text file -- a byte-order mark,
UTF-16 with or without one, strict UTF-8 with the byte named, Windows-1252 only for a file with no
UTF-8 in it (and said), never a silent Windows-1252 reading over right text."""

from __future__ import annotations

import pytest

from rag_core.text.encoding import TextEncodingError, decode_text

TEXT = "@article{b, author={Thakur, Nandan and Rücklé, Andreas}, title={BEIR – zero-shot}}"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_every_unicode_encoding_is_read_with_or_without_its_mark(encoding):
    decoded = decode_text(TEXT.encode(encoding), label="refs.bib")
    assert decoded.text == TEXT and decoded.note is None


def test_one_stray_byte_in_utf8_text_is_refused_with_its_place():
    data = ("line one\n" + TEXT).encode() + b" stray \x96 byte"
    with pytest.raises(TextEncodingError) as caught:
        decode_text(data, label="m.bib")
    message = str(caught.value)
    offset = data.index(b"\x96")
    assert f"byte 0x96 at offset {offset}" in message and "line 2" in message and "m.bib" in message


def test_a_stray_byte_past_a_megabyte_is_placed_right():
    data = b"a" * 1_500_000 + "ü".encode() + b"\nxy\x96"
    with pytest.raises(TextEncodingError, match=r"offset 1,500,005 \(line 2, column 3\)"):
        decode_text(data, label="big.bib")


def test_a_windows_1252_file_without_utf8_is_read_and_said():
    decoded = decode_text("Rücklé – 100 €".encode("cp1252"), label="old.bib")
    assert decoded.text == "Rücklé – 100 €" and decoded.encoding == "cp1252"
    assert "read as Windows-1252" in decoded.note and "old.bib" in decoded.note


def test_broken_utf16_is_refused_with_its_place():
    data = "Attention".encode("utf-16-le") + b"\x00\xd8"  # a lone high surrogate at the end
    with pytest.raises(TextEncodingError, match="not valid UTF-16 LE text"):
        decode_text(data, label="u.bib")
