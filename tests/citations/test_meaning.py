"""Tests of the meaning layer (rag_core.citations.meaning and its tables): each rule, the labelled
meaning cases, and a property: harmless edits of real sentences never change the meaning."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_core.citations.meaning import compare_passages, compare_wording, meaning_of_verdict
from rag_core.citations.meaning_read import read
from rag_core.citations.meaning_tables import (
    CERTAINTY,
    DEGREE,
    DIRECTION,
    FILLERS,
    HEDGES,
    NEGATORS,
    QUANTIFIERS,
    key,
)
from tests.support import TEST_DATA

FLIPS = ("negation", "number", "direction", "quantifier")


def labelled() -> list[dict]:
    return json.loads((TEST_DATA / "citations_labelled.json").read_text(encoding="utf-8"))["statements"]


def kinds(check) -> set[str]:
    return {cue["kind"] for cue in check.cues}


# ------------------------------------------------------------------ near verbatim: each rule

SOURCE = "The dense retriever improves the result substantially on all five datasets."


@pytest.mark.parametrize("claim", [
    "The dense retriever does not improve the result substantially on all five datasets.",
    "The dense retriever doesn't improve the result substantially on all five datasets.",
    "The dense retriever never improves the result substantially on all five datasets.",
    "The dense retriever cannot improve the result substantially on all five datasets.",
    "The dense retriever fails to improve the result substantially on all five datasets.",
    "The dense retriever no longer improves the result substantially on all five datasets.",
])
def test_a_negation_added_changes_the_meaning(claim):
    check = compare_wording(claim, SOURCE)
    assert check.meaning == "changed" and kinds(check) == {"negation"}
    assert check.cues[0]["severity"] == "high"
    assert re.search(r"not|n't|never|fails|no longer", check.cues[0]["claim"])


@pytest.mark.parametrize(("claim", "source"), [
    ("Models are trained with labelled data.", "Models are trained without labelled data."),
    ("There is a single approach that wins.", "There is no single approach that wins."),
    ("None of the runs diverged.", "All of the runs diverged."),
    ("Nothing was compiled at that point.", "Everything was compiled at that point."),
    ("The model lacks a decoder here.", "The model has a decoder here."),
    ("The encoder is unable to read tables.", "The encoder is able to read tables."),
    ("Neither model was tuned on the test set.", "Each model was tuned on the test set."),
    ("These wormholes are traversable in general.", "These wormholes are non-traversable in general."),
    ("The learned weights are supervised signals.", "The learned weights are unsupervised signals."),
    ("The models are homogeneous and narrow.", "The models are inhomogeneous and narrow."),
])
def test_each_negator_and_negating_prefix(claim, source):
    assert "negation" in kinds(compare_wording(claim, source)), (claim, source)


def test_a_negation_the_source_limits_to_the_past_is_a_history_not_a_denial():
    # DPR's introduction: a history of the claim its own results then support (doors.sh check_pandoc_pp)
    history = ("Dense retrieval methods have thus never be shown to outperform TF-IDF/BM25 for open-domain QA "
               "before ORQA (Lee et al., 2019).")
    check = compare_wording("Dense retrieval outperforms BM25.", history)
    assert "negation" not in kinds(check) and check.meaning != "same"
    for source in ("Dense retrieval has never been shown to outperform BM25.",  # no limit: a denial
                   "Dense retrieval has never been shown to outperform BM25 before now.",
                   "Dense retrieval has never been shown to outperform BM25, but before ORQA nobody tried."):
        assert "negation" in kinds(compare_wording("Dense retrieval outperforms BM25.", source)), source


def test_not_only_is_not_a_negation():
    check = compare_wording("It is not only fast but also accurate.", "It is fast but also accurate.")
    assert "negation" not in kinds(check)


@pytest.mark.parametrize(("claim", "source"), [
    ("we mask 25% of all tokens", "we mask 15% of all tokens"),
    ("a BLEU score of 43.5 on the task", "a BLEU score of 41.0 on the task"),
    ("it takes 2.5 hours on one server", "it takes 8.5 hours on one server"),
    ("on 16/18 datasets", "on 11/18 datasets"),
    ("for 81M papers", "for 8.1M papers"),
    ("on four P100 GPUs", "on eight P100 GPUs"),
    ("the first approach, RAG-Token", "the second approach, RAG-Token"),
    ("by 9%-29% absolute", "by 9%-19% absolute"),
    ("takes several hours to build", "takes 8.5 hours to build"),
])
def test_a_number_changed(claim, source):
    check = compare_wording(claim, source)
    assert check.meaning == "changed" and "number" in kinds(check), check.cues


@pytest.mark.parametrize(("claim", "source"), [
    ("we mask fifteen percent of all tokens", "we mask 15% of all tokens"),
    ("for a total of 100000 steps or twelve hours", "for a total of 100,000 steps or 12 hours"),
    ("on one server", "on a single server"),
    ("by 7 to 18 points", "by 7-18 points"),
    ("do not sum to 100 percent", "do not sum to 100%"),
])
def test_the_same_number_written_otherwise(claim, source):
    assert compare_wording(claim, source).meaning == "same"


@pytest.mark.parametrize(("claim", "source"), [
    ("DPR performs consistently worse than BM25", "DPR performs consistently better than BM25"),
    ("the models underperform other approaches", "the models outperform other approaches"),
    ("model size predictably hurts performance", "model size predictably improves performance"),
    ("requiring significantly more time to train", "requiring significantly less time to train"),
    ("even faster than the interpreter", "even slower than the interpreter"),
    ("drops to more than 40% of that", "drops to less than 40% of that"),
    ("VP increases from 1p to 16p", "VP decreases from 1p to 16p"),
    ("their performance exceeds task-specific architectures", "their performance lags behind task-specific "
                                                              "architectures"),
    ("three times fewer papers", "three times more papers"),
    ("have been shown to perform poorly", "have been shown to perform well"),
    ("studied in heterogeneous settings", "studied in homogeneous settings"),
    ("unlike right-to-left pre-training", "unlike left-to-right pre-training"),
    ("in expanding spacetimes", "in contracting spacetimes"),
    ("acetylation exacerbates locomotor deficits", "acetylation rescues locomotor deficits"),
    ("the drug was protective in stroke patients", "the drug was harmful in stroke patients"),
])
def test_a_direction_turned_around(claim, source):
    assert "direction" in kinds(compare_wording(claim, source)), (claim, source)


@pytest.mark.parametrize(("claim", "source"), [
    ("outperforms other approaches on most datasets", "outperforms other approaches on all datasets"),
    ("in some pretraining settings", "in all pretraining settings"),
    ("spend all of their time in hot loops", "spend most of their time in hot loops"),
    ("we remove a few validation articles", "we remove all validation articles"),
    ("every token can attend to previous tokens", "every token can only attend to previous tokens"),
    ("in a few cases, such mechanisms are used", "in all but a few cases, such mechanisms are used"),
    ("it beats BM25 on four of the five datasets", "it beats BM25 on all five datasets"),
    ("such claims are rarely tested", "such claims are often tested"),
])
def test_a_quantifier_changed(claim, source):
    assert "quantifier" in kinds(compare_wording(claim, source)), (claim, source)


@pytest.mark.parametrize(("claim", "source"), [
    ("every token and every layer", "each token and each layer"),
    ("the majority of their time", "most of their time"),
])
def test_the_same_quantifier_in_other_words(claim, source):
    assert "quantifier" not in kinds(compare_wording(claim, source))


def test_a_hedge_is_a_cue_of_low_severity():
    check = compare_wording("The results show that pretraining is not needed.",
                            "The results suggest that pretraining is not needed.")
    assert kinds(check) == {"hedge"} and check.cues[0]["severity"] == "low"
    assert check.meaning != "changed" and "certainty" in check.note


@pytest.mark.parametrize(("claim", "source"), [
    ("is trained by fine-tuning all parameters", "is trained by simply fine-tuning all parameters"),
    ("methods have therefore never been shown to win", "methods have thus never be shown to win"),
    ("tasks like question answering", "tasks such as question answering"),
    ("for example, 21 million passages", "e.g., 21 million passages"),
    ("Challenging problems include retrieval, verification and more.",
     "Challenging problems include retrieval [8], verification [60] and more."),
    ("sequence modelling of distant positions", "sequence modeling of distant positions"),
    ("a \u201cbad guy\u201d with \u201cvillain\u201d", 'a "bad guy" with "villain"'),
    ("Furthermore, it is easy to constrain", "Moreover, it is easy to constrain"),
    ("as Beltagy et al. report", "as Beltagy et al. (2019) report"),
    ("BM25 considerably underperforms", "BM25 heavily underperforms"),
    ("a worldwide browser", "a world-wide browser"),
])
def test_harmless_edits_keep_the_meaning(claim, source):
    assert compare_wording(claim, source).meaning == "same", (claim, source)


def test_a_word_the_rules_cannot_judge_is_unclear():
    check = compare_wording("text of articles from the Wikidata dump", "text of articles from the Wikipedia dump")
    assert check.meaning == "unclear" and check.cues == []
    check = compare_wording("it improves slightly", "it improves substantially")  # a strong against a weak intensifier
    assert check.meaning == "unclear"


def test_changed_words_close_together_are_one_cue():
    check = compare_wording("adding one passage does not improve the result, while",
                            "adding one passage improves the result substantially, while")
    assert check.cues == [{"kind": "negation", "claim": "does not improve", "source": "improves \u2026 substantially",
                           "severity": "high"}]


def test_citation_markers_are_not_read():
    reading = read("BM25 [12] and DPR (Karpukhin et al., 2020) agree (2019).")
    assert [t.norm for t in reading.tokens] == ["bm25", "and", "dpr", "agree", "."]


# ------------------------------------------------------------------ paraphrases

DPR_RESULT = ("Table 2 compares different passage retrieval systems on five QA datasets. With the exception of "
              "SQuAD, DPR performs consistently better than BM25 on all datasets.")


@pytest.mark.parametrize(("claim", "kind"), [
    ("DPR was worse than BM25 on every dataset except SQuAD.", "direction"),
    ("Apart from SQuAD, DPR beats BM25 on only two of the five datasets.", "quantifier"),
    ("Except on SQuAD, DPR does not perform better than BM25 on the datasets.", "negation"),
])
def test_a_contradicting_paraphrase(claim, kind):
    check = compare_passages(claim, ["Something else entirely.", DPR_RESULT])
    assert check.meaning == "changed" and kind in kinds(check), check.cues
    assert check.passage == 1 and check.sentence.startswith("With the exception of SQuAD")
    assert DPR_RESULT[check.sentence_start:check.sentence_end] == check.sentence


@pytest.mark.parametrize("claim", [
    "Apart from SQuAD, DPR beat BM25 on every dataset.",
    "BM25 was outperformed by DPR on all the datasets except SQuAD.",  # swapped, and passive
    "BM25 is worse than DPR on all datasets except SQuAD.",  # swapped, and the opposite word
])
def test_a_faithful_paraphrase(claim):
    assert compare_passages(claim, [DPR_RESULT]).meaning == "same"


def test_treatment_and_harm_words_turn_a_paraphrase_around_only_across_sides():
    """SciFact dev: "exacerbates" against "rescues" was called the same; a synonym on the same side
    ("alleviates" / "relieved") and a word of another axis ("alleviates" / "reduced") are not a conflict."""
    source = "Increasing microtubule acetylation rescues axonal transport and locomotor deficits in flies."
    check = compare_passages("Increased microtubule acetylation exacerbates locomotor deficits in flies.", [source])
    assert check.meaning == "changed" and check.cues[0]["kind"] == "direction"
    assert compare_passages("Drug A alleviates pain in adults.", ["Drug A relieved pain in adults."]).meaning == "same"
    assert compare_passages("Drug A alleviates pain in adults.", ["Drug A reduced pain in adults."]).meaning != \
        "changed"


def test_no_evidence_for_a_clause_denies_it():
    denied = "There is currently no clear evidence that 5G networks spread the coronavirus."
    plain = "5G networks spread the coronavirus."
    for claim, source in ((plain, denied), (denied, plain)):
        check = compare_passages(claim, [source])
        assert check.meaning == "changed" and [c["kind"] for c in check.cues] == ["negation"]
    assert compare_passages("Statins increase the risk of stroke.",
                            ["We found no evidence of increased risk of stroke with statins."]).meaning == "changed"
    # a statement that denies it too says the same; one about other things is not turned around
    assert compare_passages("5G networks do not spread the coronavirus.", [denied]).meaning == "same"
    assert compare_passages("5G networks have not been shown to spread the coronavirus.", [denied]).meaning == "same"
    assert compare_passages("Hydroxychloroquine is associated with a higher risk of mechanical ventilation.",
                            ["We found no evidence that hydroxychloroquine reduced the risk of mechanical "
                             "ventilation."]).meaning != "changed"  # it denies the other direction
    other = "There is no evidence that vitamin D supplementation reduced mortality."
    assert compare_passages("Vitamin D deficiency increases COVID-19 severity in adults.", [other]).meaning != "changed"
    # a noun that is not evidence introduces nothing denied
    no_data = "There were no data of patients older than 80 with higher mortality."
    assert compare_passages("Patients older than 80 have higher mortality.", [no_data]).meaning != "changed"


@pytest.mark.parametrize(("claim", "source"), [
    ("Statin use is associated with lower dementia risk.",
     "There was no significant association between statin use and dementia risk."),
    ("Aspirin reduces colorectal cancer incidence.",
     "Aspirin had no significant effect on colorectal cancer incidence."),
    ("Smoking correlates with telomere length.", "No correlation was found between smoking and telomere length."),
    ("There is no correlation between smoking and COVID-19 progression.",
     "The meta-analysis showed a significant association between smoking and COVID-19 progression."),
    ("ADHD medications increase the risk of serious cardiovascular events.",
     "Use of ADHD medications was not associated with an increased risk of serious cardiovascular events."),
    ("Aspirin reduces mortality.", "Aspirin did not affect mortality."),
])
def test_a_null_result_denies_an_asserted_relation(claim, source):
    check = compare_passages(claim, [source])
    assert check.meaning == "changed" and [c["kind"] for c in check.cues] == ["negation"]


@pytest.mark.parametrize(("claim", "source"), [
    # both null
    ("Statin use is not associated with dementia risk.",
     "There was no significant association between statin use and dementia risk."),
    ("Aspirin has no effect on colorectal cancer incidence.",
     "Aspirin had no significant effect on colorectal cancer incidence."),
    # the null result is about something else the claim's word is also said of
    ("Aspirin reduces colorectal cancer incidence.",
     "Aspirin reduced colorectal cancer incidence, with no effect on gastric cancer."),
    # a relation asked about is not a relation found
    ("There is no correlation between smoking and COVID-19 progression.",
     "Objective: to determine the association between smoking and COVID-19 progression."),
    ("Aspirin does not reduce mortality.", "Aspirin did not affect mortality."),
    # the negator belongs to another predicate
    ("Vitamin C protects against COVID-19 risk.",
     "Vitamin D deficiency that is not sufficiently treated is associated with COVID-19 risk."),
])
def test_a_null_result_against_no_asserted_relation_is_no_conflict(claim, source):
    assert compare_passages(claim, [source]).meaning != "changed"


def test_paraphrase_numbers_attach_to_their_words():
    source = ["Beltagy et al. (2019) report a pretraining corpus consisting of 82% biomedical and 18% computer "
              "science papers."]
    assert compare_passages("Beltagy et al. report a corpus that was 82% biomedical and 18% computer science "
                            "papers.", source).meaning == "same"
    check = compare_passages("Beltagy et al. report a pretraining corpus with only 18% biomedical papers.", source)
    assert check.cues == [{"kind": "number", "claim": "18%", "source": "82%", "severity": "high"}]
    time = ["However, building the FAISS index on 21-million vectors on a single server takes 8.5 hours."]
    assert compare_passages("Building the FAISS index over twenty-one million vectors took about eight and a half "
                            "hours on one server.", time).meaning == "same"
    assert compare_passages("Building the FAISS index on 21 million vectors takes less than an hour on a single "
                            "server.", time).meaning == "changed"


def test_paraphrase_negations_need_their_words_aligned():
    source = ["Our empirical results also suggest that additional pretraining may not be needed."]
    check = compare_passages("The empirical results show that additional pretraining is needed.", source)
    assert kinds(check) == {"negation", "hedge"} and check.meaning == "changed"
    # a relative clause and a noun made of the word are not the claim turned around
    assert compare_passages("Current encoders are not robust when rows are reordered.",
                            ["(b) robustness to table row perturbation."]).meaning != "changed"


def test_too_little_aligned_is_unclear_never_same():
    check = compare_passages("Marathon runners who drink coffee finish faster.", [DPR_RESULT])
    assert check.meaning == "unclear" and check.cues == [] and check.aligned < 0.5


def test_an_unmatched_figure_leaves_the_meaning_open():
    check = compare_passages("DPR is better than BM25 on all 40 datasets except SQuAD.", [DPR_RESULT])
    assert check.meaning == "unclear"


def test_meaning_of_each_verdict():
    assert meaning_of_verdict("verbatim", "x").meaning == "same"
    assert meaning_of_verdict("not_found", "x").meaning == "unclear"
    best = {"match": "adding one passage improves the result"}
    assert meaning_of_verdict("near_verbatim", "adding one passage hurts the result", best=best).meaning == "changed"
    rows = [{"text": DPR_RESULT, "source": "dpr.pdf", "chunk_index": 4, "page_start": 5}]
    found = meaning_of_verdict("related", "DPR was worse than BM25 on every dataset except SQuAD.", closest=rows)
    assert found.meaning == "changed" and found.sentence_row["source"] == "dpr.pdf"
    assert found.sentence_row["page"] == 5 and found.sentence_row["sentence"].startswith("With the exception")


# ------------------------------------------------------------------ the tables


def test_tables_are_consistent():
    for senses in DIRECTION.values():
        axes = [axis for axis, _ in senses]
        assert len(axes) == len(set(axes)), senses  # no word on both sides of one axis
    assert key("improves") == key("improvement") and key("largely") != key("large")
    assert key("likely") != key("like") and key("hardly") != key("hard")
    assert not (NEGATORS & set(QUANTIFIERS)), "no, none, never are negations, not quantifiers"
    assert not (HEDGES & CERTAINTY)
    assert not (FILLERS & NEGATORS) and not (set(DEGREE) & NEGATORS)


# ------------------------------------------------------------------ the labelled meaning cases


def test_the_rules_on_the_labelled_meaning_cases():
    """Each case against the real sentence it was written from (the retrieval left out): the
    full check over the shared PDFs is measured in benchmarks/bench_citations.py."""
    caught = {kind: [] for kind in (*FLIPS, "contradiction")}
    false_changed = []
    for row in labelled():
        if row["kind"] in FLIPS or row["kind"] == "harmless":
            check = compare_wording(row["statement"], row["original"])
        elif row["kind"] in ("paraphrase", "contradiction") and row.get("original"):
            check = compare_passages(row["statement"], [row["original"]])
        else:
            continue
        if row["meaning"] == "changed":
            caught[row["kind"]].append(check.meaning == "changed")
        else:
            false_changed.append(check.meaning == "changed")
    flips = [hit for kind in FLIPS for hit in caught[kind]]
    assert len(flips) >= 60 and sum(flips) >= 0.95 * len(flips)
    assert sum(false_changed) <= 0.03 * len(false_changed)
    assert sum(caught["contradiction"]) >= 0.6 * len(caught["contradiction"])


# ------------------------------------------------------------------ property: harmless edits


def _sentences() -> list[str]:
    return sorted({row["original"] for row in labelled() if row.get("original")})


_SWAPS = [("thus", "therefore"), ("therefore", "thus"), ("such as", "like"), ("e.g.,", "for example,"),
          ("Moreover", "Furthermore"), ("However", "Nevertheless"), ("modeling", "modelling"),
          ("generalization", "generalisation"), ("optimized", "optimised"), ("specialized", "specialised"),
          ("parameterized", "parameterised"), ("labeled", "labelled"), ("color", "colour"), ("center", "centre"),
          ("15%", "fifteen percent"),
          ("12 hours", "twelve hours"), ("two", "2"), ("three", "3"), ("data set", "dataset")]
_DROPPABLE = ("simply", "also", "directly", "substantially", "significantly", "greatly", "heavily", "very",
              "currently", "further", "thus", "actually", "especially", "particularly", "strongly")
_CITATION = re.compile(r"\s*(\[\d+(?:,\s*\d+)*\]|\([A-Z][^()]*\d{4}[a-z]?\))")


def _harmless_edit(sentence: str, choices: list[int]) -> str:
    edited = sentence
    for n, choice in enumerate(choices):
        step = (choice + n) % 6
        if step == 0:
            for word in _DROPPABLE[choice % len(_DROPPABLE):] + _DROPPABLE:
                edited, count = re.subn(rf"\b{word} ", "", edited, count=1)
                if count:
                    break
        elif step == 1:
            for old, new in _SWAPS[choice % len(_SWAPS):] + _SWAPS:
                pattern = rf"(?<![\w-]){re.escape(old)}(?![\w-])"
                if re.search(pattern, edited):
                    edited = re.sub(pattern, new, edited, count=1)
                    break
        elif step == 2:
            edited = _CITATION.sub("", edited, count=1)
        elif step == 3:
            edited = edited.replace("\u201c", '"').replace("\u201d", '"').replace('"', "\u201c", 1)
        elif step == 4:  # a citation marker added after a word
            cut = [m.end() for m in re.finditer(r"[a-z](?= )", edited)]
            if cut:
                at = cut[choice % len(cut)]
                edited = f"{edited[:at]} [{choice % 90 + 1}]{edited[at:]}"
        else:
            edited = "Indeed, " + edited[:1].lower() + edited[1:]
    if edited == sentence:
        edited = "In fact, " + edited
    return edited


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_sentences()), st.lists(st.integers(0, 1000), min_size=1, max_size=4))
def test_harmless_edits_of_real_sentences_never_change_the_meaning(sentence, choices):
    edited = _harmless_edit(sentence, choices)
    assert compare_wording(edited, sentence).meaning != "changed", (edited, sentence)


@pytest.mark.slow
def test_harmless_edits_of_sentences_of_every_shared_pdf_never_change_the_meaning(shared_collection):
    """Sentences drawn with a seed from the shared PDFs, edited harmlessly, checked as a user would:
    found verbatim or near verbatim, and never with the meaning changed."""
    import random

    from rag_core.citations.verdicts import verify_quote
    from rag_core.retrieval.exact import document_texts
    from rag_core.text.sentences import split_sentences

    _, index, _ = shared_collection
    rng = random.Random(17)
    checked = 0
    for doc in document_texts(index.chunks):
        sentences = [" ".join(doc.text[a:b].split()) for a, b in split_sentences(doc.text)]
        sentences = [s for s in sentences if 12 <= len(s.split()) <= 40 and sum(c.isalpha() for c in s) > 0.8 * len(
            s.replace(" ", ""))]
        for sentence in rng.sample(sentences, min(4, len(sentences))):
            edited = _harmless_edit(sentence, [rng.randrange(1000) for _ in range(rng.randint(1, 3))])
            check = verify_quote(edited, index, meaning=False)
            if check.verdict in ("verbatim", "near_verbatim"):
                checked += 1
                assert check.meaning != "changed", (edited, sentence, check.meaning_cues)
    assert checked >= 60


@pytest.mark.slow
def test_meaning_on_the_labelled_set_through_the_whole_check(shared_collection):
    """Issue 17's goals, each labelled case checked against every shared PDF as a user would
    (a collection without embeddings; benchmarks/bench_citations.py measures both kinds):
    meaning changes caught >= 95%, changed on harmless edits and faithful paraphrases <= 3%,
    contradicting paraphrases caught >= 60%, every flipped sentence still near_verbatim."""
    from rag_core.citations.verdicts import verify_quote

    _, index, _ = shared_collection
    caught, false_changed, contradictions = [], [], []
    for row in labelled():
        if row["kind"] not in (*FLIPS, "harmless", "paraphrase", "contradiction"):
            continue
        check = verify_quote(row["statement"], index)
        if row["kind"] in FLIPS:
            assert check.verdict == "near_verbatim" and check.source == row["document"], row["id"]
            caught.append(check.meaning == "changed")
        elif row["kind"] == "contradiction":
            contradictions.append(check.meaning == "changed")
        else:
            false_changed.append(check.meaning == "changed")
    assert len(caught) >= 60 and sum(caught) >= 0.95 * len(caught)
    assert sum(false_changed) <= 0.03 * len(false_changed)
    assert sum(contradictions) >= 0.6 * len(contradictions)
