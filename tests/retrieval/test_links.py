"""A comparison as the parameters of an address, and back (rag_core.retrieval.links)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from rag_core.retrieval.links import choice_problem, comparison_from_params, comparison_params, page_address
from rag_core.retrieval.search_spec import SearchSpec


def test_every_hybrid_setting_goes_into_the_address_and_comes_back():
    spec = SearchSpec(fusion="rrf", rrf_k=25, dense_weight=0.7, pool=40, lexical="bm25", reranker="none")
    params = comparison_params("my papers", "what limits dense retrieval?", source="a.pdf", top=7,
                               exact_mode="literal", phrase="dense", spec=spec)
    assert params == {"collection": "my papers", "q": "what limits dense retrieval?", "doc": "a.pdf", "top": "7",
                      "exact": "literal", "phrase": "dense", "reranker": "none", "fusion": "rrf", "rrf_k": "25",
                      "alpha": "0.7", "pool": "40", "lexical": "bm25"}
    back = comparison_from_params(params)
    assert not back.problems
    assert (back.collection, back.query, back.source, back.top, back.exact_mode, back.phrase) == \
        ("my papers", "what limits dense retrieval?", "a.pdf", 7, "literal", "dense")
    model = SearchSpec().cross_encoder_model
    assert SearchSpec().with_changes(**back.spec) == spec.with_changes(cross_encoder_model=model)


def test_defaults_stay_out_and_settings_that_do_not_apply_are_left_out():
    params = comparison_params("c", "q", spec=SearchSpec(reranker="mmr", mmr_lambda=0.3, fusion="minmax"))
    assert "top" not in params and "exact" not in params and "doc" not in params
    assert params["mmr"] == "0.3" and "rrf_k" not in params
    assert "mmr" not in comparison_params("c", "q", spec=SearchSpec(reranker="none"))
    assert comparison_params("c") == {"collection": "c"}


def test_bad_values_are_named_and_ignored_never_guessed():
    link = comparison_from_params({"collection": "c", "q": "x", "top": "1000", "alpha": "2", "pool": "ten",
                                   "fusion": "magic", "reranker": "oracle", "exact": "fuzzy", "rrf_k": "0"})
    assert link.top is None and link.exact_mode is None and link.spec == {}
    joined = " | ".join(link.problems)
    for word in ("top=1000", "alpha=2", "pool='ten'", "fusion='magic'", "reranker='oracle'", "exact='fuzzy'",
                 "rrf_k=0"):
        assert word in joined, (word, joined)



def test_a_huge_bad_value_is_cut_in_its_message_not_echoed_whole():
    """Issue 27 row 22: a 5,000-digit ``top=`` was echoed whole in the note."""
    link = comparison_from_params({"collection": "c", "top": "9" * 5000, "alpha": "7" * 5000, "fusion": "x" * 5000})
    assert link.top is None and link.spec == {}
    assert len(link.problems) == 3
    for problem in link.problems:
        assert len(problem) < 200 and "(5,000 characters)" in problem, problem
    assert link.problems[0].startswith("top='" + "9" * 40 + "'… (5,000 characters) is not a whole number")


def test_a_value_not_understood_is_said():
    assert choice_problem("tab", "Optimiser", ("Query set", "Optimiser")) is None
    assert choice_problem("tab", "", ("Query set",)) is None
    said = choice_problem("mode", "bogus", ("statement", "manuscript"))
    assert said == "mode='bogus' is not one of statement, manuscript; it was not understood and was ignored"


def test_the_full_address_keeps_the_server_and_encodes_the_question():
    address = page_address("http://127.0.0.1:8501/compare?collection=old", "/compare",
                           {"collection": "my papers", "q": "a & b = c?"})
    parts = urlsplit(address)
    assert (parts.scheme, parts.netloc, parts.path) == ("http", "127.0.0.1:8501", "/compare")
    assert dict(parse_qsl(parts.query)) == {"collection": "my papers", "q": "a & b = c?"}
    assert page_address("https://lab.example/rag/verify", "/compare", {"q": "x"}) == \
        "https://lab.example/rag/compare?q=x"
    assert page_address(None, "/compare", {}) == "/compare"
