"""Model and product names with digits (GPT-3, Llama-2, BM25, T5, ResNet-50, Jurassic-1) are names,
not numbers to compare (issue 28: "number: claim 3 · source 1" for GPT-3 against Jurassic-1)."""

from __future__ import annotations

import pytest

from rag_core.citations.meaning import compare_wording
from rag_core.text.numbers import quantities
from rag_core.text.words import words


@pytest.mark.parametrize("name, norm", [("GPT-3", "gpt3"), ("Llama-2", "llama2"), ("ResNet-50", "resnet50"),
                                        ("Jurassic-1", "jurassic1"), ("COVID-19", "covid19"), ("GPT-3.5", "gpt3.5"),
                                        ("BM25", "bm25"), ("T5", "t5")])
def test_a_name_with_digits_is_one_word(name, norm):
    tokens = words(f"We compare {name} with others.")
    assert [(t.norm, t.kind) for t in tokens if t.norm == norm] == [(norm, "word")]
    assert quantities(tokens) == []


@pytest.mark.parametrize("text, number", [("top-20 accuracy", "20"), ("Top-5 accuracy", "5"), ("Table-2", "2"),
                                          ("a 21-million index", "21")])
def test_a_count_after_a_hyphen_stays_a_number(text, number):
    assert (number, "number") in [(t.norm, t.kind) for t in words(text)]


def test_gpt3_against_jurassic1_is_not_a_number_conflict():
    check = compare_wording("It matches GPT-3 with 25x fewer parameters.",
                            "It matches Jurassic-1 with 25x fewer parameters.")
    assert not [c for c in check.cues if c["kind"] == "number"]


def test_a_real_number_change_beside_a_name_is_still_caught():
    check = compare_wording("Llama-2 matches GPT-3 with 250 times fewer parameters.",
                            "Llama-2 matches GPT-3 with 25 times fewer parameters.")
    assert check.meaning == "changed"
    assert [(c["kind"], c["claim"], c["source"]) for c in check.cues] == [("number", "250 times", "25 times")]
