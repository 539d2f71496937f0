"""Citations matched to the documents of a collection: the first author's surname and the year.

:func:`match_documents` is the older entry point of :func:`rag_core.citations.resolution.resolve_citation`:
the sources a citation by ``surnames`` and ``year`` points to, best first (the FIRST cited
surname must be the document's first author's; the year may be one off).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rag_core.records.record import name_key

__all__ = ["match_documents", "name_key"]


def match_documents(
    surnames: Sequence[str],
    year: int | None,
    documents: Iterable[dict],
    *,
    title: str | None = None,
) -> list[str]:
    """The sources of the documents a citation points to, best first ([] when none fits).

    ``documents`` are dicts with ``source`` and, when known, ``authors``, ``year``, ``title``
    and ``first_page`` (the opening text of the document, for PDFs whose metadata is unknown).
    A document fits when the first cited surname is its FIRST author's (or, with no authors on
    record, stands in its opening lines) and the years differ by at most one (arXiv versions and
    proceedings differ); a title from the reference list, when given, must match the document's
    title or opening.
    """
    from rag_core.citations.markers import Citation
    from rag_core.citations.resolution import resolve_citation

    wanted = [s for s in surnames if name_key(s)]
    if not wanted:
        return []
    citation = Citation(marker=f"({wanted[0]}, {year})", surnames=list(wanted), year=year, title=title)
    resolution = resolve_citation(citation, list(documents))
    return list(resolution.candidates) if resolution.status in ("matched", "ambiguous") else []
