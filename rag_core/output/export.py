"""Exports of a comparison: a CSV a spreadsheet opens safely, and JSON with everything.

Both carry the settings the lists were made with (collection and its version, query, top-k,
pool, reranker, exact mode, time), so a file read later says what it is.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping

from rag_core.output.render import spreadsheet_safe

__all__ = ["CSV_COLUMNS", "comparison_csv", "comparison_json", "comparison_records"]

LISTS = ("tfidf", "hybrid", "exact")
FIRST_STAGE_LISTS = ("tfidf", "bm25", "dense")
SETTING_COLUMNS = ("collection", "collection_version", "documents", "query", "exact_phrase", "top_k",
                   "pool_per_list", "reranker", "exact_mode", "searched_at")
ROW_COLUMNS = (
    "list", "rank", "document", "title", "doc_id", "page_start", "page_end", "page_label",
    "score", "score_type", "tfidf_cosine", "dense_cosine", "bm25_score", "found_by",
    *(f"first_stage_{name}_rank" for name in FIRST_STAGE_LISTS),
    "candidates_in_union", "rank_in_tfidf_list", "rank_in_hybrid_list", "rank_in_exact_list",
    "movement_vs_tfidf", "match", "match_start", "match_end", "chunk_index", "passage",
)
CSV_COLUMNS = SETTING_COLUMNS + ROW_COLUMNS


def comparison_records(result: Mapping, settings: Mapping, titles: Mapping[str, str] | None = None) -> list[dict]:
    """One flat record per row of the three lists, settings first; no nested values.

    ``result`` is ``Comparison.to_dict()``; ``settings`` has the keys of ``SETTING_COLUMNS``
    (missing ones stay empty); ``titles`` maps a ``doc_id`` to a short title.
    """
    titles = titles or {}
    fixed = {key: settings.get(key) for key in SETTING_COLUMNS}
    records = []
    for kind in LISTS:
        for row in result.get(kind) or []:
            stages = row.get("first_stage_ranks") or {}
            record = dict(fixed)
            record.update({
                "list": kind, "rank": row.get("rank"), "document": row.get("source"),
                "title": titles.get(row.get("doc_id") or "", ""), "doc_id": row.get("doc_id"),
                "page_start": row.get("page_start") or row.get("page"), "page_end": row.get("page_end"),
                "page_label": row.get("page_label"), "score": row.get("score"), "score_type": row.get("score_type"),
                "tfidf_cosine": row.get("cosine"), "dense_cosine": row.get("dense_cosine"),
                "bm25_score": row.get("bm25_score"), "found_by": row.get("found_by"),
                "candidates_in_union": row.get("pool_size"),
                "rank_in_tfidf_list": row.get("tfidf_list_rank"),
                "rank_in_hybrid_list": row.get("hybrid_list_rank"),
                "rank_in_exact_list": row.get("exact_list_rank") if kind != "exact" else row.get("rank"),
                "movement_vs_tfidf": row.get("movement"), "match": row.get("match"),
                "match_start": row.get("start"), "match_end": row.get("end"),
                "chunk_index": row.get("chunk_index"),
                "passage": row.get("text") if kind != "exact" else row.get("snippet"),
            })
            for name in FIRST_STAGE_LISTS:
                record[f"first_stage_{name}_rank"] = stages.get(name)
            records.append(record)
    return records


def comparison_csv(result: Mapping, settings: Mapping, titles: Mapping[str, str] | None = None) -> bytes:
    """The three lists as CSV: UTF-8 with a byte-order mark (so spreadsheets read the accents),
    one column per setting and per first-stage list, and every text cell that a spreadsheet
    would take for a formula prefixed with ``'``."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for record in comparison_records(result, settings, titles):
        writer.writerow({key: spreadsheet_safe(value) for key, value in record.items()})
    return out.getvalue().encode("utf-8-sig")


def comparison_json(result: Mapping, settings: Mapping, titles: Mapping[str, str] | None = None) -> bytes:
    """The settings and the whole comparison (every row with all its keys) as UTF-8 JSON."""
    payload = {"settings": {key: settings.get(key) for key in SETTING_COLUMNS},
               "titles": dict(titles or {}), **result}
    return json.dumps(payload, ensure_ascii=False, indent=1, default=str).encode("utf-8")
