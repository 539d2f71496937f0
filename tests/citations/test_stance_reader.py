"""The stance reader in a citation check (rag_core.citations.stance with
rag_core.models.stance_encoder): how its probabilities and the rules' cues make a stance, the
deciding sentence, a statement found nowhere that its cited document answers, and the fallback
when the reader cannot be used. A fake reader keeps these fast; the shipped one is read once."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from rag_core.citations import stance as st
from rag_core.citations.verdicts import CitationCheck, apply_stance
from rag_core.models import stance_encoder as SE


def fake_embed(texts):
    rows = []
    for text in texts:
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        rows.append(v / np.linalg.norm(v))
    return np.vstack(rows)


class FakeReader:
    """Contradicts where the evidence says "reduced", supports where it says "increased", else nei."""

    name = "fake-reader"

    def __init__(self, decision=None):
        self.card = {"decision": decision or {"combine": "set", "contradict": 0.6, "support": 0.6, "rules_keep": 0.8,
                                              "not_found": True}}
        self.seen = []

    def probabilities(self, claims, evidence):
        self.seen.append(list(evidence))
        out = []
        for text in evidence:
            if "reduced" in text:
                out.append([0.05, 0.9, 0.05])
            elif "increased" in text:
                out.append([0.9, 0.05, 0.05])
            else:
                out.append([0.1, 0.1, 0.8])
        return np.asarray(out)


@pytest.fixture(autouse=True)
def _fake_embedding(monkeypatch):
    monkeypatch.setattr(st, "default_embed", fake_embed)


DECISION = {"combine": "set", "contradict": 0.6, "support": 0.6, "rules_keep": 0.8}


@pytest.mark.parametrize(("p", "rules", "stance"), [
    ((0.1, 0.8, 0.1), "unclear", "contradicts"),
    ((0.1, 0.8, 0.1), "same", "contradicts"),      # the reader overrides the rules' "same"
    ((0.8, 0.1, 0.1), "unclear", "supports"),
    ((0.5, 0.1, 0.4), "unclear", "nei"),           # a support below its threshold does not decide
    ((0.3, 0.2, 0.5), "changed", "contradicts"),   # the rules' cue stands ...
    ((0.85, 0.1, 0.05), "changed", "supports"),    # ... unless the reader supports past rules_keep
])
def test_the_readers_probabilities_and_the_rules_make_the_stance(p, rules, stance):
    assert st.reader_stance(p, rules, DECISION)[0] == stance


def test_combining_reads_the_strongest_single_sentence_beside_the_set():
    p_set = np.array([0.2, 0.3, 0.5])
    each = np.array([[0.1, 0.7, 0.2], [0.6, 0.1, 0.3]])
    assert np.allclose(st.combined(p_set, each, "set"), p_set)
    assert np.allclose(st.combined(p_set, each, "max")[:2], [0.6, 0.7])
    assert np.allclose(st.combined(p_set, each, "each"), [0.6, 0.7, 0.3])  # the single sentences alone
    assert np.allclose(st.combined(p_set, each[:0], "each"), [0.0, 0.0, 1.0])


def test_the_reader_decides_a_related_check_and_puts_the_deciding_sentence_first():
    reader = FakeReader()
    rows = [{"text": "Marker B was measured. Drug A reduced marker B in adults.", "source": "a.pdf", "page_start": 4,
             "chunk_index": 2, "start": 50}]
    decision = st.decide("Drug A increases marker B.", rows, rules_meaning="unclear", reader=reader)
    assert decision.stance == "contradicts" and decision.model == "fake-reader"
    assert decision.evidence_sentences[0]["sentence"] == "Drug A reduced marker B in adults."
    assert decision.evidence_sentences[0]["page"] == 4 and decision.evidence_sentences[0]["doc_start"] == 50 + 23
    assert "fake-reader" in decision.note and len(decision.raw["each"]) == len(decision.evidence_sentences)
    # the evidence is read together, in document order, and each sentence alone
    together = reader.seen[0][0]
    assert together.index("Marker B was measured.") < together.index("Drug A reduced")


class SupportingReader(FakeReader):
    """Reads every sentence as supporting (a reader fooled by shared words)."""

    def probabilities(self, claims, evidence):
        self.seen.append(list(evidence))
        return np.asarray([[0.9, 0.05, 0.05]] * len(evidence))


def test_the_reader_never_supports_where_the_rules_find_a_conflict_in_the_deciding_sentence():
    """SciFact dev: "Polymeal nutrition increases cardiovascular mortality" was read as supported by
    "... strategy to reduce cardiovascular disease by more than 75%" (direction: increases/reduce)."""
    rows = [{"text": "The Polymeal is a strategy to reduce cardiovascular mortality by more than 75%.",
             "source": "a.pdf"}]
    decision = st.decide("Polymeal nutrition increases cardiovascular mortality.", rows, rules_meaning="unclear",
                         reader=SupportingReader())
    assert decision.stance == "nei" and "the rules find a conflict in that sentence" in decision.note
    assert "direction" in decision.note and "reduce" in decision.note
    assert st.meaning_of_stance(decision, "unclear")[0] == "unclear"  # never "same"
    agreeing = st.decide("Polymeal nutrition reduces cardiovascular mortality.", rows, rules_meaning="unclear",
                         reader=SupportingReader())
    assert agreeing.stance == "supports" and "conflict" not in agreeing.note


class UnsureReader(FakeReader):
    """Never sure of a contradiction; leans to it most for sentences about combining."""

    def probabilities(self, claims, evidence):
        self.seen.append(list(evidence))
        return np.asarray([[0.1, 0.45, 0.45] if "combining" in t else [0.1, 0.3, 0.6] for t in evidence])


def test_where_the_rules_decide_the_sentence_they_conflict_with_is_the_deciding_one():
    """The Verify screenshot of a direction flip ("DPR was worse than BM25 ...") showed "Results can be
    improved further ... by combining DPR with BM25" as the deciding sentence: the reader's favourite,
    where the rules read a weaker conflict ("worse" against "improved"), not the sentence they
    compared the statement with, which all of it aligns with."""
    rows = [{"text": "Results can be improved further in some cases by combining DPR with BM25 in both single- "
                     "and multi-dataset settings. With the exception of SQuAD, DPR performs consistently better "
                     "than BM25 on all datasets.", "source": "dpr.pdf"}]
    decision = st.decide("DPR was worse than BM25 on every dataset except SQuAD.", rows, rules_meaning="changed",
                         reader=UnsureReader())
    assert decision.stance == "contradicts" and "does not outweigh" in decision.note
    assert decision.evidence_sentences[0]["sentence"].startswith("With the exception of SQuAD")
    assert len(decision.evidence_sentences) == 2


def test_a_related_check_takes_the_readers_stance(monkeypatch):
    monkeypatch.setattr(st, "load_reader", lambda: FakeReader())
    check = CitationCheck(quote="Drug A increases marker B.", verdict="related", message="", meaning="same")
    apply_stance(check, [{"text": "Drug A reduced marker B in adults.", "source": "a.pdf"}])
    assert check.stance == "contradicts" and check.meaning == "changed" and check.stance_model == "fake-reader"


def test_without_the_reader_the_logistic_regression_decides_and_says_why(monkeypatch):
    def unavailable():
        raise SE.StanceEncoderError("no stance reader at /nowhere")

    monkeypatch.setattr(st, "load_reader", unavailable)
    decision = st.decide("Drug A increases marker B.", ["Drug A reduced marker B."], rules_meaning="changed")
    assert decision.model == st.load_model().name
    assert "stance reader could not be used" in decision.note


class BrokenReader(FakeReader):
    def probabilities(self, claims, evidence):
        raise Exception("Truncation error: Sequence to truncate too short")  # what tokenizers raises


def test_a_reader_that_fails_gives_the_rules_answer_and_says_why():
    decision = st.decide("Drug A increases marker B.", ["Drug A reduced marker B."], rules_meaning="changed",
                         reader=BrokenReader())
    assert decision.model == "rules" and decision.stance == "contradicts"
    assert "The stance reader failed (Truncation error" in decision.note


def not_found_check(cited=("a.pdf",)):
    return CitationCheck(quote="Drug A increases marker B.", verdict="not_found", message="nothing close",
                         meaning="unclear", cited_sources=list(cited))


def test_a_statement_found_nowhere_that_its_cited_document_answers_is_read(monkeypatch):
    monkeypatch.setattr(st, "load_reader", lambda: FakeReader())
    check = not_found_check()
    apply_stance(check, [{"text": "Drug A reduced marker B in adults.", "source": "a.pdf", "page_start": 2}])
    assert check.verdict == "related" and check.meaning == "changed" and check.stance == "contradicts"
    assert check.found_in_cited is True and "a.pdf, page 2 contradicts it" in check.message
    # a passage that does not answer it leaves it not found
    check = not_found_check()
    apply_stance(check, [{"text": "The weather was mild.", "source": "a.pdf"}])
    assert check.verdict == "not_found" and check.meaning == "unclear" and check.stance == "nei"


def test_a_statement_found_nowhere_is_not_read_where_the_card_or_the_caller_says_not(monkeypatch):
    rows = [{"text": "Drug A reduced marker B in adults.", "source": "a.pdf"}]
    monkeypatch.setattr(st, "load_reader", lambda: FakeReader({**DECISION, "not_found": False}))
    check = not_found_check()
    apply_stance(check, rows)
    assert check.verdict == "not_found" and check.meaning == "unclear"
    monkeypatch.setattr(st, "load_reader", lambda: FakeReader())
    check = not_found_check()
    apply_stance(check, rows, read_not_found=False)  # a cited work that is not in the collection
    assert check.verdict == "not_found" and check.meaning == "unclear"
    check = not_found_check(cited=("b.pdf",))  # the cited document is not among the closest passages
    apply_stance(check, rows)
    assert check.verdict == "not_found"


class TogetherReader(FakeReader):
    """Supports whatever several sentences read together say; no single sentence decides."""

    def probabilities(self, claims, evidence):
        return np.asarray([[0.95, 0.02, 0.03] if text.count(".") > 1 else [0.1, 0.1, 0.8] for text in evidence])


def test_a_statement_found_nowhere_needs_one_sentence_that_answers_it(monkeypatch):
    """A fragment of another paper, looked for in a document it is not in: read together, that
    document's closest sentences may seem to support it; no single one does, so it stays not found."""
    rows = [{"text": "Dense encodings are learnable. Sparse ones are fast. Both are used.", "source": "a.pdf"}]
    monkeypatch.setattr(st, "load_reader", lambda: TogetherReader({**DECISION, "not_found": True}))
    check = not_found_check()
    apply_stance(check, rows)
    assert check.verdict == "not_found" and check.meaning == "unclear" and check.stance == "nei"
    # the same reading of a related check (its card's "set") does decide
    check = CitationCheck(quote="Drug A increases marker B.", verdict="related", message="", meaning="unclear")
    apply_stance(check, rows)
    assert check.stance == "supports" and check.meaning == "same"


shipped = pytest.mark.skipif(not (SE.ENCODER_DIR / SE.ADAPTER_FILE).is_file(), reason="no stance reader shipped")


@shipped
def test_the_shipped_reader_matches_its_card():
    path = SE.ENCODER_DIR / SE.ADAPTER_FILE
    card = json.loads((SE.ENCODER_DIR / "card.json").read_text(encoding="utf-8"))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == card["model_file"]["sha256"]
    assert all(p.stat().st_size < 10 * 1024 * 1024 for p in SE.ENCODER_DIR.iterdir())
    assert "non-commercial" in card["licences"]["scifact"] and "non-commercial" in card["non_commercial"]
    assert card["rebuild"].endswith("benchmarks/train_stance_encoder.py") and card["seed"] == 0
    assert all(len(v["sha256"]) == 64 for v in card["data_files"].values())
    assert set(card["dev_figures"]) == {"scifact", "checkcovid", "healthver"}
    assert {"combine", "contradict", "support", "rules_keep"} <= set(card["decision"])


@shipped
@pytest.mark.slow
def test_the_shipped_reader_loads_offline_and_reads_a_contradiction(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    SE.clear_stance_encoders()
    reader = SE.load_stance_encoder()
    p = reader.probabilities(
        ["Vitamin D supplementation reduces mortality in adults.", "Vitamin D supplementation reduces mortality."],
        ["Vitamin D supplementation did not reduce mortality in adults (hazard ratio 1.02).",
         "Vitamin D supplementation reduced mortality in adults by 12%."])
    assert p.shape == (2, 3) and np.allclose(p.sum(axis=1), 1.0, atol=1e-5)
    assert p[0, 1] > p[0, 0] and p[1, 0] > p[1, 1]


@shipped
def test_a_claim_longer_than_the_reader_reads_is_read_by_its_start(monkeypatch):
    """A 10,000-character statement (a Verify link's limit) left no room for the evidence and the
    tokenizer refused the pair; the claim is now cut after CLAIM_MAX_TOKENS word pieces."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reader = SE.load_stance_encoder()
    long_claim = ("dense retrieval " * 700)[:10_000]
    p = reader.probabilities([long_claim, "Dense retrieval works."], ["DPR beats BM25.", "DPR beats BM25."])
    assert p.shape == (2, 3) and np.allclose(p.sum(axis=1), 1.0, atol=1e-5)
    tokenizer = SE.untruncated(getattr(reader.tokenizer, "backend_tokenizer", reader.tokenizer))
    [cut] = SE.cut_claims(tokenizer, [long_claim])
    assert long_claim.startswith(cut) and len(tokenizer.encode(cut, add_special_tokens=False).ids) == \
        SE.CLAIM_MAX_TOKENS
    assert SE.cut_claims(tokenizer, ["A short claim."]) == ["A short claim."]


@pytest.mark.parametrize("damage", ["missing", "garbled", "no card", "other format"])
def test_a_missing_or_damaged_reader_is_refused_with_what_to_do(tmp_path, damage):
    folder = tmp_path / "reader"
    folder.mkdir()
    (folder / SE.ADAPTER_FILE).write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    card = {"format": "rag_core.stance_encoder", "model_file": {"sha256": hashlib.sha256(
        (folder / SE.ADAPTER_FILE).read_bytes()).hexdigest()}, "config": {"lora_rank": 4, "lora_alpha": 8}}
    if damage == "missing":
        (folder / SE.ADAPTER_FILE).unlink()
    elif damage == "garbled":
        (folder / SE.ADAPTER_FILE).write_bytes(b"garbled")
    elif damage == "other format":
        card["format"] = "something else"
    if damage != "no card":
        (folder / "card.json").write_text(json.dumps(card))
    SE.clear_stance_encoders()
    with pytest.raises(SE.StanceEncoderError) as err:
        SE.load_stance_encoder(folder)
    assert "stance reader" in str(err.value)


@shipped
@pytest.mark.slow
def test_the_shipped_reader_on_onnx_runtime_reads_as_pytorch_does(tmp_path):
    cache = tmp_path / "cache"
    SE.clear_stance_encoders()
    with pytest.raises(SE.StanceEncoderError, match="not prepared"):
        SE.OnnxStanceReader(cache_dir=cache)
    SE.prepare_onnx_reader(cache_dir=cache)
    onnx = SE.OnnxStanceReader(cache_dir=cache)
    torch_reader = SE.load_stance_encoder(backend="torch")
    claims = ["Aspirin reduces the risk of stroke.", "Exercise improves memory in older adults."]
    evidence = ["In the trial aspirin did not reduce the risk of stroke (p = 0.4). Bleeding was more common.",
                "Memory scores rose after six months of walking in adults over 65."]
    assert np.allclose(onnx.probabilities(claims, evidence), torch_reader.probabilities(claims, evidence), atol=1e-4)
    assert onnx.name == torch_reader.name and onnx.card["decision"] == torch_reader.card["decision"]
    SE.clear_stance_encoders()
