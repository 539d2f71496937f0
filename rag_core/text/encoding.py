"""One encoding decision for every text file a person imports (records files, manuscripts, the
lab's judgment spreadsheets and query files).

:func:`text_encoding` decides, :func:`decode_text` decodes by that decision:

1. a byte-order mark says it: UTF-8, UTF-16 LE/BE, UTF-32 LE/BE;
2. no mark, but every other byte is NUL in the opening (English text saved as UTF-16 without a
   mark): UTF-16 LE or BE;
3. otherwise strict UTF-8;
4. not UTF-8, and not one UTF-8 character (nor a NUL byte) in it (only ASCII and single high
   bytes: a file an old Windows program saved): Windows-1252, with a note saying so. A file that holds UTF-8
   characters and a byte that is not one mixes encodings: it is refused with the byte's offset,
   line and column, never read as Windows-1252 over its right text ("RÃ¼cklÃ©").

Every refusal is a :class:`TextEncodingError` (a ``ValueError``) naming the file and the byte;
callers raise their own error type with its message.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["DecodedText", "TextEncodingError", "decode_text", "text_encoding"]

_BOMS = (  # longest first: UTF-32 LE's mark starts with UTF-16 LE's
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
_NAMES = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8", "utf-16": "UTF-16", "utf-16-le": "UTF-16 LE",
          "utf-16-be": "UTF-16 BE", "utf-32": "UTF-32", "cp1252": "Windows-1252"}
# A whole UTF-8 character of two to four bytes (RFC 3629's table): one of these in a file means
# it was meant as UTF-8.
_UTF8_CHARACTER = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]"
    rb"|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}")
_SNIFF_BYTES = 4096
_CHECK_BLOCK = 1 << 20


class TextEncodingError(ValueError):
    """A file's bytes are not text in an encoding this reads (the message names the byte)."""


@dataclass(frozen=True)
class DecodedText:
    """A file's text, the codec it was read with, and a note for the reader when it was not
    UTF-8 or UTF-16 (None otherwise)."""

    text: str
    encoding: str
    note: str | None = None


def _utf16_without_mark(data: bytes) -> str | None:
    head = data[:_SNIFF_BYTES]
    pairs = len(head) // 2
    if pairs < 2:
        return None
    even = head[0::2].count(0)
    odd = head[1::2].count(0)
    if odd >= 0.3 * pairs and even * 4 < odd:
        return "utf-16-le"
    if even >= 0.3 * pairs and odd * 4 < even:
        return "utf-16-be"
    return None


def _where(data: bytes, offset: int) -> str:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f"offset {offset:,} (line {line}, column {column})"


def _first_error(data: bytes, encoding: str) -> UnicodeDecodeError | None:
    """The first decoding error of ``data`` under ``encoding``, checked block by block (the text is
    never held whole), or None."""
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    done = 0
    try:
        for start in range(0, len(data), _CHECK_BLOCK):
            block = data[start:start + _CHECK_BLOCK]
            decoder.decode(block, final=start + _CHECK_BLOCK >= len(data))
            done = start + len(block)
        if not data:
            decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        # the offset inside the block, plus what the decoder held back from the block before
        held = len(decoder.getstate()[0]) if hasattr(decoder, "getstate") else 0
        exc.start += done - held if exc.start >= 0 else 0
        return exc
    return None


def text_encoding(data: bytes, *, label: str) -> tuple[str, str | None]:
    """``(codec, note)`` for ``data`` by the module's rules; :class:`TextEncodingError` when it is
    not text in one of them."""
    marked = [encoding for mark, encoding in _BOMS if data.startswith(mark)]
    encoding = marked[0] if marked else _utf16_without_mark(data) or "utf-8"
    error = _first_error(data, encoding)
    if error is None:
        return encoding, None
    if encoding not in ("utf-8", "utf-8-sig"):
        raise TextEncodingError(f"{label}: is not valid {_NAMES.get(encoding, encoding)} text ({error.reason} at "
                                f"{_where(data, max(error.start, 0))}); save it again as UTF-8.")
    offset = max(error.start, 0)
    byte = data[offset:offset + 1].hex() if offset < len(data) else ""
    if b"\x00" not in data and _UTF8_CHARACTER.search(data) is None and _first_error(data, "cp1252") is None:
        return "cp1252", (f"{label} is not UTF-8 (byte 0x{byte} at {_where(data, offset)}) and holds no UTF-8 "
                          "character: it was read as Windows-1252; if its accents look wrong, save it as UTF-8.")
    raise TextEncodingError(
        f"{label}: is not valid UTF-8: byte 0x{byte} at {_where(data, offset)} is not part of a UTF-8 character, "
        "while the rest of the file is UTF-8 (it mixes encodings, so no reading of it would be right); fix that byte "
        "or save the file again as UTF-8.")


def decode_text(data: bytes, *, label: str) -> DecodedText:
    """``data`` decoded by the module's rules (a leading byte-order mark dropped)."""
    encoding, note = text_encoding(data, label=label)
    text = data.decode(encoding)
    return DecodedText(text.removeprefix("\ufeff"), encoding, note)
