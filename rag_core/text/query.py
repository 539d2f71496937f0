"""What a query must be before any search reads it: text, not empty, not too long, valid Unicode."""

from __future__ import annotations

from rag_core.errors import QueryError
from rag_core.settings import MAX_QUERY_CHARS


def check_unicode(text: str, what: str = "query") -> str:
    """``text`` unchanged, or :class:`QueryError` when it holds lone surrogates.

    A command-line argument that is not valid UTF-8 reaches Python with each bad byte as a
    lone surrogate ("\\udcff"); no tokenizer or regex engine can read it.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QueryError(
            f"The {what} is not valid text: character {exc.start + 1} is an undecodable byte "
            "(is the terminal's encoding UTF-8?). Retype it or paste it as UTF-8 text."
        ) from None
    return text


def check_query(query: str) -> str:
    """The stripped query, or :class:`QueryError` with what to do instead."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    stripped = query.strip()
    if not stripped:
        raise QueryError("The query is empty: type a question, a claim or some key words.")
    if len(stripped) > MAX_QUERY_CHARS:
        raise QueryError(f"The query is {len(stripped):,} characters long; the limit is {MAX_QUERY_CHARS:,}.")
    return check_unicode(stripped)
