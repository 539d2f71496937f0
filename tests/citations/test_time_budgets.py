"""A check's time budgets (issue 27 row 18): the wording alignment of a long statement bounded, a
manuscript's check stopped at its budget with the statements left said "not_checked", never a
bare not_found. No test here times anything: the alignment's inputs are recorded, the clock is injected."""

from __future__ import annotations

import random

import pytest

from rag_core.citations.manuscript import Statement, check_statements
from rag_core.citations.report import OUTCOMES, outcome
from rag_core.citations.verdicts import verify_quote
from rag_core.settings import ALIGN_MAX_CHARS, MAX_QUERY_CHARS
from tests.citations.test_verdicts import small_index

WORDS = ("retrieval", "dense", "passage", "sparse", "index", "query", "encoder", "answer", "question", "model",
         "training", "negative", "batch", "score", "vector", "lexical", "corpus", "document", "reader", "span",
         "accuracy", "benchmark", "baseline", "gold", "recall")


def prose(seed: int, chars: int) -> str:
    rng = random.Random(seed)
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS) + ("." if rng.random() < 0.08 else ""))
    return " ".join(words)


@pytest.fixture(scope="module")
def long_index():
    return small_index({"long.pdf": [prose(1, 3000), prose(2, 3000)], "other.pdf": [prose(3, 3000)]})


@pytest.fixture()
def aligned_needles(monkeypatch):
    """Every needle rapidfuzz is asked to align, recorded (the alignment's cost grows with its square)."""
    from rapidfuzz import fuzz

    seen: list[str] = []
    real = fuzz.partial_ratio_alignment

    def recording(needle, window, **kwargs):
        seen.append(needle)
        return real(needle, window, **kwargs)

    monkeypatch.setattr(fuzz, "partial_ratio_alignment", recording)
    return seen


def test_a_long_statement_is_aligned_by_a_bounded_piece_and_still_found_nearly(long_index, aligned_needles):
    words = prose(1, 3000).split()[:300]  # the first page of long.pdf, across its chunks
    assert len(" ".join(words)) > 3 * ALIGN_MAX_CHARS
    changed = list(words)
    changed[200] = "zebra"  # one word changed, far past the piece that places the statement
    check = verify_quote(" ".join(changed), long_index, meaning=False)
    assert aligned_needles and max(len(n) for n in aligned_needles) <= ALIGN_MAX_CHARS
    assert check.verdict == "near_verbatim", check.message
    assert "zebra" in check.best["diff"] and check.best["changed_words"] == 1
    assert check.best["words_in_quote"] == 300  # the whole statement compared, word by word


def test_a_short_statement_is_aligned_whole(long_index, aligned_needles):
    words = prose(2, 3000).split()[:20]
    words[10] = "zebra"
    check = verify_quote(" ".join(words), long_index, meaning=False)
    assert check.verdict == "near_verbatim"
    assert " ".join(words) in aligned_needles


def test_past_the_budget_the_statements_left_are_not_checked_with_the_reason(long_index):
    ticks = iter(range(100))
    clock = lambda: float(next(ticks))  # noqa: E731 - one second a call: the budget runs out after the first
    statements = [Statement(text=prose(n, 80), kind="claim", sentence=prose(n, 80)) for n in range(3)]
    rows = check_statements(statements, long_index, meaning=False, seconds=1.5, clock=clock)
    assert [r.not_checked for r in rows] == [False, True, True]
    for row in rows[1:]:
        assert outcome(row) == "not_checked" and "not_checked" in OUTCOMES
        assert "time budget (1.5 s)" in row.message and "after 1 of 3 statements" in row.message
        assert row.to_dict()["not_checked"] is True and row.to_dict()["outcome"] == "not_checked"


def test_without_a_budget_every_statement_is_checked(long_index):
    statements = [prose(n, 80) for n in range(3)]
    rows = check_statements(statements, long_index, meaning=False)
    assert not any(r.not_checked for r in rows) and all(outcome(r) != "not_checked" for r in rows)


def test_a_statement_too_long_to_check_says_so_never_a_bare_not_found(long_index):
    text = "dense retrieval " * (MAX_QUERY_CHARS // 16 + 10)
    [row] = check_statements([text], long_index, meaning=False)
    assert row.not_checked and outcome(row) == "not_checked"
    assert row.message.startswith("Not checked:") and f"{MAX_QUERY_CHARS:,}" in row.message


def test_the_summary_names_not_checked_only_when_some_statement_is():
    from rag_core.citations.view import verdict_summary

    rows = [{"verdict": "verbatim"}, {"verdict": "not_found", "not_checked": True}]
    assert "1 not checked" in verdict_summary(rows)
    assert "not checked" not in verdict_summary(rows[:1])
