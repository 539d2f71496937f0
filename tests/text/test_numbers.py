"""Tests of rag_core.text.numbers: amounts in text, digits and words alike."""

from __future__ import annotations

import pytest

from rag_core.text.numbers import Quantity, compatible, quantities
from rag_core.text.words import words


def amounts(text: str) -> list[Quantity]:
    return quantities(words(text))


def one(text: str) -> Quantity:
    [q] = amounts(text)
    return q


@pytest.mark.parametrize(("text", "value"), [
    ("15", 15), ("8.5", 8.5), ("100,000", 100_000), ("21m", 21e6), ("8.1M", 8.1e6), ("100k", 100_000),
    ("21 million", 21e6), ("4.5 million", 4.5e6), ("fifteen", 15), ("twenty-one", 21), ("twenty one million", 21e6),
    ("one hundred and twenty", 120), ("eight and a half", 8.5), ("a dozen", 12), ("a single", 1),
])
def test_values(text, value):
    assert one(f"about {text} things").value == pytest.approx(value)


def test_percentages_ranges_and_units():
    q = one("we mask 15% of the tokens")
    assert q.value == 15 and q.percent
    assert one("fifteen percent of them").percent and one("15 per cent of them").percent
    q = one("by 9%-19% absolute")
    assert (q.value, q.high, q.percent) == (9, 19, True)
    q = one("by 7 to 18 points")
    assert (q.value, q.high, q.unit) == (7, 18, "point")
    q = one("between 2 and 7 times smaller")
    assert (q.value, q.high, q.unit) == (2, 7, "times")
    q = one("took 12 hours")
    assert q.unit == "time" and q.seconds == 3600
    assert [q.value for q in amounts("drops from above 80% to less than 40%")] == [80, 40]  # not a range


def test_proportions_ordinals_multiples():
    q = one("on 11/18 datasets")
    assert (q.value, q.denominator, q.unit) == (11, 18, "proportion") and q.share == pytest.approx(11 / 18)
    assert one("only 8 out of 19 datasets").share == pytest.approx(8 / 19)
    assert one("four of the five datasets").share == pytest.approx(0.8)
    assert one("half of the tokens").share == 0.5 and one("a quarter of them").share == 0.25
    assert one("two thirds of them").share == pytest.approx(2 / 3)
    assert one("the second approach").unit == "ordinal" and one("the 2nd approach").value == 2
    assert one("three times more papers").unit == "times" and one("twice as fast").value == 2
    assert one("10x faster").unit == "times"


def test_approximations_and_bounds():
    assert one("about 12 hours").approx and one("~2 to 7 times").approx
    assert one("less than 5%").bound == "<" and one("at least 5 runs").bound == ">"
    assert one("less than an hour").bound == "<" and one("less than an hour").seconds == 3600
    assert one("more than 200 million users").bound == ">"


def test_not_every_one_is_a_number():
    assert amounts("a second one was added") and all(q.unit == "ordinal" for q in amounts("a second one was added"))
    assert amounts("one can see that") == []
    assert amounts("in the 1990s") == []
    assert amounts("BM25 and GPT3") == []


@pytest.mark.parametrize(("claim", "source"), [
    ("15%", "fifteen percent"), ("half", "50%"), ("4 of the 5", "80%"), ("three days", "72 hours"),
    ("twelve hours", "12 hours"), ("21 million", "21m"), ("100k", "100,000"), ("4.6 points", "4.6%"),
    ("about 8.5 hours", "8.8 hours"), ("15%", "9%-19%"), ("less than 5%", "3%"),
])
def test_compatible(claim, source):
    assert compatible(one(f"x {claim} y"), one(f"x {source} y"), tolerance=0.1)


@pytest.mark.parametrize(("claim", "source"), [
    ("25%", "15%"), ("a quarter", "15%"), ("three days", "12 hours"), ("8.5 hours", "8.8 hours"),
    ("16/18", "11/18"), ("9%-29%", "9%-19%"), ("less than an hour", "8.5 hours"), ("more than 40%", "less than 40%"),
    ("81M", "8.1M"), ("four", "eight"),
])
def test_not_compatible(claim, source):
    assert not compatible(one(f"x {claim} y"), one(f"x {source} y"), tolerance=0.1)
