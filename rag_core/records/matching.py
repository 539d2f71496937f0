"""Records matched to a collection's documents: by DOI, then arXiv id, then normalised title.

:func:`match_records` pairs each record with at most one document and each document with at most
one record, and reports what matched nothing, both ways (records with no document, documents with
no record). A record that fits two documents equally is ``ambiguous`` and matched to neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_core.records.record import title_key
from rag_core.settings import RECORD_TITLE_MATCH

__all__ = ["RecordMatch", "match_records"]


@dataclass
class RecordMatch:
    """``pairs``: (record position, document source, how: "DOI", "arXiv id" or "title");
    ``unmatched_records`` (positions), ``unmatched_documents`` (sources), ``ambiguous``
    (record position, the sources it fits)."""

    pairs: list[tuple[int, str, str]] = field(default_factory=list)
    unmatched_records: list[int] = field(default_factory=list)
    unmatched_documents: list[str] = field(default_factory=list)
    ambiguous: list[tuple[int, list[str]]] = field(default_factory=list)


def match_records(records: Sequence[dict], documents: Sequence[dict]) -> RecordMatch:
    """Each record matched to a document (see the module's text)."""
    from rapidfuzz import fuzz

    result = RecordMatch()
    taken: set[str] = set()
    by_doi: dict[str, list[str]] = {}
    by_arxiv: dict[str, list[str]] = {}
    titles: list[tuple[str, str]] = []
    for doc in documents:
        if doc.get("doi"):
            by_doi.setdefault(str(doc["doi"]).lower(), []).append(doc["source"])
        if doc.get("arxiv_id"):
            by_arxiv.setdefault(str(doc["arxiv_id"]), []).append(doc["source"])
        if doc.get("title"):
            titles.append((title_key(doc["title"]), doc["source"]))
    for n, record in enumerate(records):
        how, fits = None, []
        if record.get("doi") and by_doi.get(record["doi"]):
            how, fits = "DOI", by_doi[record["doi"]]
        elif record.get("arxiv_id") and by_arxiv.get(record["arxiv_id"]):
            how, fits = "arXiv id", by_arxiv[record["arxiv_id"]]
        elif record.get("title"):
            wanted = title_key(record["title"])
            scored = [(fuzz.ratio(wanted, key), source) for key, source in titles if key]
            best = max((s for s, _ in scored), default=0)
            if best >= RECORD_TITLE_MATCH:
                how, fits = "title", [source for s, source in scored if s == best]
        fits = [s for s in dict.fromkeys(fits) if s not in taken]
        if len(fits) == 1:
            result.pairs.append((n, fits[0], how))
            taken.add(fits[0])
        elif len(fits) > 1:
            result.ambiguous.append((n, fits))
        else:
            result.unmatched_records.append(n)
    result.unmatched_documents = [d["source"] for d in documents if d["source"] not in taken]
    return result
