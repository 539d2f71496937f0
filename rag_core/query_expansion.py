"""Query reformulation through a caller-supplied text generator (an LLM, say)."""

from __future__ import annotations

import re
from collections.abc import Callable

PROMPT = (
    "Write {n} different reformulations of the search query below, one per line, "
    "as a numbered list (1., 2., ...). Keep each one short and on topic.\n\nQuery: {query}"
)
_NUMBERED = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*(.+?)\s*$")


class QueryExpander:
    """Ask ``llm_generate_fn`` (prompt in, text out) for variations of a query."""

    def __init__(
        self,
        llm_generate_fn: Callable[[str], str] | None = None,
        n_variations: int = 3,
        include_original: bool = True,
    ):
        self.llm_generate_fn = llm_generate_fn
        self.n_variations = int(n_variations)
        self.include_original = include_original

    def set_llm_function(self, fn: Callable[[str], str] | None) -> None:
        self.llm_generate_fn = fn

    def expand(self, query: str) -> list[str]:
        """The original query (first, when ``include_original``) and the parsed variations."""
        if self.llm_generate_fn is None:
            return [query]
        answer = self.llm_generate_fn(PROMPT.format(n=self.n_variations, query=query)) or ""
        variations: list[str] = []
        for line in str(answer).splitlines():
            match = _NUMBERED.match(line)
            if not match:
                continue
            text = match.group(1).strip().strip('"').strip()
            if text and text.lower() != query.lower() and text not in variations:
                variations.append(text)
        variations = variations[: self.n_variations]
        return ([query] if self.include_original else []) + variations or [query]
