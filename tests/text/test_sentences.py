"""Tests of rag_core.text.sentences."""

from __future__ import annotations

from rag_core.text.sentences import split_sentences


def test_split_sentences():
    text = ("As Devlin et al. (2019) show, BERT works. See Fig. 3 for e.g. the numbers. J. Smith agreed! "
            "A new paragraph\n\nstarts here.")
    got = [text[a:b] for a, b in split_sentences(text)]
    assert got == ["As Devlin et al. (2019) show, BERT works.", "See Fig. 3 for e.g. the numbers.",
                   "J. Smith agreed!", "A new paragraph", "starts here."]
    bullets = ("Our contributions are as follows: \u2022 We identified the limitation of current table-text "
               "encoding models when facing row or column perturbation. \u2022 We propose TABLEFORMER.")
    assert [bullets[a:b] for a, b in split_sentences(bullets)] == [
        "Our contributions are as follows:",
        "We identified the limitation of current table-text encoding models when facing row or column perturbation.",
        "We propose TABLEFORMER."]
