"""What every ``rag-core`` command shares: exit codes, :class:`UsageError`, the parser class, the
library a command opens, and text made safe to print."""

from __future__ import annotations

import argparse
import json
import re

from rag_core.output.render import ESCAPE_SHOWN, printable_data, terminal_safe

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A mistake in how the command was called (exit code 2)."""


class Parser(argparse.ArgumentParser):
    """A parser whose mistakes are one clear line (a :class:`UsageError`), not a usage dump."""

    def error(self, message: str):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def open_library(args):
    """The library the command names (``--data-dir``, ``--store``)."""
    from rag_core.collections.library import Library

    return Library(args.data_dir or None, store=args.store)


def line(text: object) -> str:
    """Text from a document or a user, safe to print on one terminal line (no control characters)."""
    return terminal_safe(text, one_line=True)


def text(value: str) -> str:
    """Several lines of text that may hold a collection's or document's words, safe to print."""
    return terminal_safe(value)


def warm_query_encoder(library, collection: str) -> None:
    """Start loading the collection's bi-encoder in a thread while the collection is read (the
    two overlap: ~0.1 s of a command). Only the ONNX encoder: torch takes seconds, which a
    collection without vectors would then wait for at exit."""
    from rag_core.errors import RagCoreError
    from rag_core.models.loading import warm_up_bi_encoder

    try:
        settings = library.settings(collection)
    except (RagCoreError, OSError, ValueError):
        return  # the command itself says what is wrong
    model, encoder = settings.get("embedding_model"), settings.get("encoder")
    if isinstance(model, str) and isinstance(encoder, str) and encoder.startswith("onnx"):
        warm_up_bi_encoder(model, encoder=encoder)


_RAW_IN_JSON = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def json_text(value, *, one_line: bool = False) -> str:
    """``value`` as the JSON a ``--json`` option prints: no raw control character or bidirectional
    override reaches the terminal, and the data round-trips exactly -- JSON escapes C0 controls
    itself, and DEL, C1 controls, bidi marks, overrides and isolates, line and paragraph
    separators and lone surrogates are written as ``\\uXXXX`` too. ``one_line``: every string is
    first made printable on one line (:func:`~rag_core.output.render.printable_data`, escape
    sequences shown as ``␛``), as ``check`` prints its statements."""
    if one_line:
        value = printable_data(value, one_line=True, shown=ESCAPE_SHOWN)
    text = json.dumps(value, ensure_ascii=False, indent=1)
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
