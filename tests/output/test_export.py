"""rag_core.output.export: the comparison as CSV (settings, one column per list, BOM, no formulas) and JSON."""

from __future__ import annotations

import csv
import io
import json

import pytest

from rag_core.output.export import CSV_COLUMNS, comparison_csv, comparison_json

SETTINGS = {"collection": "papers", "collection_version": "v000003", "documents": "All documents",
            "query": "=cmd|' /C calc'!A0", "exact_phrase": None, "top_k": 2, "pool_per_list": 30,
            "reranker": "fused", "exact_mode": "normalized", "searched_at": "2026-01-02T03:04:05+0000"}


def ranked_row(rank: int, **extra) -> dict:
    return {"rank": rank, "source": "ré sumé.pdf", "doc_id": "abc", "text": "A passage — with “quotes”.",
            "score": 0.5, "score_type": "fused", "cosine": 0.25, "chunk_index": rank, "page_start": 3,
            "page_end": 4, "page_label": "117", "tfidf_list_rank": 1, "hybrid_list_rank": rank,
            "exact_list_rank": None, "movement": "up", **extra}


RESULT = {
    "query": SETTINGS["query"],
    "tfidf": [ranked_row(1)],
    "hybrid": [ranked_row(1, dense_cosine=0.7, bm25_score=3.5, found_by="both", pool_size=42,
                          first_stage_ranks={"tfidf": 1, "bm25": None, "dense": 4},
                          text="=HYPERLINK(\"http://evil\",\"click\")"),
               ranked_row(2, source="@evil.pdf", first_stage_ranks={"dense": 1}, pool_size=42)],
    "exact": [{"rank": 1, "source": "+x.pdf", "chunk_index": 1, "match": "-1", "snippet": "...-1...",
               "start": 4, "end": 6, "page": 3, "page_start": 3, "page_end": 3, "score": 1.0,
               "score_type": "exact", "cosine": 0.1, "doc_id": "def", "tfidf_list_rank": None,
               "hybrid_list_rank": 2}],
}


@pytest.fixture()
def rows():
    data = comparison_csv(RESULT, SETTINGS, {"abc": "Smith 2020 · Résumés"})
    assert data.startswith(b"\xef\xbb\xbf"), "UTF-8 with a byte-order mark, so spreadsheets read the accents"
    reader = csv.DictReader(io.StringIO(data.decode("utf-8-sig")))
    assert tuple(reader.fieldnames) == CSV_COLUMNS
    return list(reader)


def test_csv_has_one_column_per_setting_and_first_stage_list(rows):
    assert [r["list"] for r in rows] == ["tfidf", "hybrid", "hybrid", "exact"]
    for key in ("collection", "collection_version", "top_k", "pool_per_list", "reranker", "exact_mode",
                "searched_at", "documents"):
        assert {r[key] for r in rows} == {str(SETTINGS[key])}, key
    assert "first_stage_ranks" not in rows[0] and "pool_size" not in rows[0]
    hybrid = rows[1]
    assert (hybrid["first_stage_tfidf_rank"], hybrid["first_stage_bm25_rank"], hybrid["first_stage_dense_rank"]) \
        == ("1", "", "4")
    assert hybrid["candidates_in_union"] == "42" and hybrid["found_by"] == "both"
    assert rows[0]["title"] == "Smith 2020 · Résumés" and rows[0]["document"] == "ré sumé.pdf"
    assert rows[0]["passage"] == "A passage — with “quotes”."
    assert (rows[3]["rank_in_exact_list"], rows[3]["rank_in_hybrid_list"], rows[3]["match_start"]) == ("1", "2", "4")


def test_csv_cells_never_start_a_formula(rows):
    assert rows[0]["query"] == "'=cmd|' /C calc'!A0"
    assert rows[1]["passage"] == "'=HYPERLINK(\"http://evil\",\"click\")"
    assert rows[2]["document"] == "'@evil.pdf"
    assert rows[3]["document"] == "'+x.pdf" and rows[3]["match"] == "'-1"
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value


def test_json_keeps_every_key_and_the_settings():
    payload = json.loads(comparison_json(RESULT, SETTINGS, {"abc": "Smith 2020"}).decode("utf-8"))
    assert payload["settings"] == SETTINGS
    assert payload["titles"] == {"abc": "Smith 2020"}
    assert payload["hybrid"][0]["first_stage_ranks"] == {"tfidf": 1, "bm25": None, "dense": 4}
    assert payload["hybrid"][0]["text"].startswith("=HYPERLINK")  # JSON is data, not a spreadsheet
    assert payload["tfidf"][0]["source"] == "ré sumé.pdf"
