"""The lab's figures read by people: the paired test's cautions, settings under their panel names, metric help."""

from __future__ import annotations

from rag_core.evaluation.metrics import JUDGED_METRICS, METRIC_HELP
from rag_core.lab.statistics import Estimate, PairedTest, paired_test
from rag_core.retrieval.search_spec import FIELD_LABELS, SearchSpec, settings_for_people


def _test(n: int, low: float, high: float, p: float) -> PairedTest:
    return PairedTest("hybrid", "TF-IDF", "ndcg@10", n, 0.6, 0.4, Estimate(0.2, low, high, n), p, p, n, 0, 0)


def test_four_queries_are_too_few_and_the_disagreement_is_explained():
    cautions = _test(4, 0.05, 0.35, 0.25).cautions()
    assert len(cautions) == 2
    assert "Only 4 queries" in cautions[0] and "0.125" in cautions[0] and "10" in cautions[0]
    assert "excludes zero while p = 0.250" in cautions[1] and "Trust the test" in cautions[1]


def test_enough_queries_that_agree_need_no_caution():
    assert _test(12, 0.05, 0.35, 0.01).cautions() == []
    assert _test(12, -0.05, 0.35, 0.4).cautions() == []
    assert "includes zero" in _test(12, -0.01, 0.35, 0.03).cautions()[0]


def test_a_real_paired_test_of_four_queries_warns():
    test = paired_test({"q1": 0.9, "q2": 0.8, "q3": 0.7, "q4": 0.95}, {"q1": 0.5, "q2": 0.6, "q3": 0.4, "q4": 0.6},
                       names=("hybrid", "TF-IDF"), resamples=200)
    assert test.n == 4 and test.p_randomisation >= 0.05
    assert any("Only 4 queries" in c for c in test.cautions())


def test_optimiser_settings_carry_the_settings_panel_names_and_words():
    rrf = settings_for_people(SearchSpec(fusion="rrf", rrf_k=10, dense_weight=0.25, pool=50, lexical="both").saved())
    assert rrf == {"Fusion": "reciprocal rank fusion", "Dense weight α": "0.25", "RRF k": "10", "Pool size": "50",
                   "Lexical lists in the pool": "BM25 + TF-IDF"}
    minmax = settings_for_people(SearchSpec(fusion="minmax", lexical="bm25").saved())
    assert minmax["RRF k"] == "–", "RRF k changes nothing without RRF: not shown as if it did"
    assert minmax["Lexical lists in the pool"] == "BM25 only"
    assert set(rrf) <= set(FIELD_LABELS.values())
    assert not {"dense_weight", "rrf_k", "both"} & (set(rrf) | set(rrf.values()))


def test_every_metric_the_lab_shows_is_explained():
    for metric in (*JUDGED_METRICS, "overlap@10", "rbo"):
        assert len(METRIC_HELP[metric]) > 40, metric
