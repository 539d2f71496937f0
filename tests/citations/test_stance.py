"""The learned stance of a citation check (rag_core.citations.stance): fitting end to end on a
tiny slice, the shipped model's checksum and card, offline loading, the damaged-model path, and
``meaning`` never ``same`` where the stance contradicts."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest

from rag_core.citations import stance as st
from rag_core.citations.stance_fit import LABEL_OF_STANCE, calibrate, figures, fit, predict_documents
from rag_core.citations.verdicts import CitationCheck, apply_stance
from rag_core.models.training.claims import ClaimDocument


@pytest.fixture(autouse=True)
def no_reader(monkeypatch):
    """These tests are of the logistic regression: the stance reader is left out
    (tests/models/test_stance_encoder.py has its own)."""
    from rag_core.models.stance_encoder import StanceEncoderError

    def unavailable():
        raise StanceEncoderError("left out of this test")

    monkeypatch.setattr(st, "load_reader", unavailable)


def fake_embed(texts):
    """Deterministic unit vectors by text (no model): tests stay offline and fast."""
    rows = []
    for text in texts:
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        rows.append(v / np.linalg.norm(v))
    return np.vstack(rows)


def tiny_docs(n: int = 12) -> list[ClaimDocument]:
    docs = []
    for i in range(n):
        thing, effect = f"drug{i}", f"marker{i}"
        claim = f"Treatment with {thing} increases {effect} levels in adults."
        support = f"Treatment with {thing} increased {effect} levels in adults by 20%."
        contra = f"Treatment with {thing} reduced {effect} levels in adults."
        other = f"The weather in city{i} was mild during the study period."
        for k, (label, sentence) in enumerate((("support", support), ("contradict", contra), ("nei", other))):
            docs.append(ClaimDocument(dataset="tiny", claim_id=f"{i}-{k}", claim=claim, doc_id=f"d{i}-{k}",
                                      sentences=(other, sentence, f"Participants numbered {10 + i}."), label=label,
                                      evidence_sets=((1,),) if label != "nei" else (), split="train"))
    return docs


def test_fitting_on_a_tiny_slice_end_to_end_tells_support_from_contradiction():
    docs = tiny_docs()
    model, seen = fit(docs[:24], fake_embed, seed=0, c=1.0, name="tiny")
    assert seen["pairs"] > 0 and seen["labels"]["contradict"] > 0
    calibrate(model, docs[24:], fake_embed)
    answers = predict_documents(model, docs[24:], fake_embed)
    pred = [LABEL_OF_STANCE[a["stance"]] for a in answers]
    f = figures([d.label for d in docs[24:]], pred)
    assert f["contradictions_flagged_changed"] >= 0.75 and f["contradictions_called_same"] == 0.0
    assert f["supports_flagged_changed"] <= 0.25
    # the model goes through JSON and back unchanged
    again = st.StanceModel.from_json(json.loads(json.dumps(model.to_json())))
    x = np.ones((2, model.weights.shape[0]), dtype=np.float32)
    assert np.allclose(again.probabilities(x), model.probabilities(x), atol=1e-4)


def test_the_shipped_model_matches_its_card():
    path = st.MODEL_DIR / st.MODEL_FILE
    card = json.loads((st.MODEL_DIR / "card.json").read_text(encoding="utf-8"))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == card["model_file"]["sha256"]
    assert path.stat().st_size < 10 * 1024 * 1024
    assert "non-commercial" in card["licences"]["scifact"] and "non-commercial" in card["non_commercial"]
    assert card["seed"] == 0 and card["rebuild"].endswith("benchmarks/train_stance.py")
    assert all(len(v["sha256"]) == 64 for v in card["data_files"].values())
    assert set(card["dev_figures"]) == {"scifact", "checkcovid", "healthver"}
    for figures_ in card["dev_figures"].values():
        assert {"rules", "model"} <= set(figures_) and 0.0 <= figures_["model"]["label_f1"] <= 1.0
    model = st.load_model()
    assert model.name == card["name"]


def test_the_shipped_model_loads_and_decides_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    st.clear_cache()
    model = st.load_model()
    decision = st.decide("Aspirin reduces the risk of stroke.",
                         [{"text": "Aspirin reduced the risk of stroke in the trial. The weather was mild.",
                           "source": "a.pdf", "page_start": 3}], rules_meaning="unclear", model=model,
                         embed=fake_embed)
    assert decision.stance in st.STANCES and decision.model == model.name
    assert decision.evidence_sentences and decision.evidence_sentences[0]["source"] == "a.pdf"
    first = decision.evidence_sentences[0]
    assert {"page", "start", "end", "score", "sentence"} <= set(first) and first["page"] == 3
    assert 0.0 <= decision.score <= 1.0


@pytest.mark.parametrize("damage", ["missing", "garbled", "edited", "no card"])
def test_a_missing_or_damaged_model_gives_the_rules_answer_and_says_so(tmp_path, monkeypatch, damage):
    folder = tmp_path / "stance"
    shutil.copytree(st.MODEL_DIR, folder)
    target = folder / st.MODEL_FILE
    if damage == "missing":
        target.unlink()
    elif damage == "garbled":
        target.write_bytes(target.read_bytes()[:100])
    elif damage == "edited":
        data = json.loads(target.read_text())
        data["bias"] = [9.0, 9.0, 9.0]
        target.write_text(json.dumps(data))
    else:
        (folder / "card.json").unlink()
    st.clear_cache()
    with pytest.raises(st.StanceModelError) as err:
        st.load_model(folder)
    assert "stance model" in str(err.value)
    monkeypatch.setattr(st, "MODEL_DIR", folder)
    decision = st.decide("X increases Y.", ["X reduces Y."], rules_meaning="changed", embed=fake_embed)
    assert decision.model == "rules" and decision.stance == "contradicts"
    assert "rules' answer" in decision.note and "could not be used" in decision.note
    st.clear_cache()


def test_a_model_file_with_arrays_that_do_not_fit_is_refused():
    data = st.load_model().to_json()
    data["mean"] = data["mean"][:-1]
    with pytest.raises(st.StanceModelError):
        st.StanceModel.from_json(data)


@pytest.mark.parametrize("rules", ["same", "changed", "unclear"])
@pytest.mark.parametrize("stance", st.STANCES)
def test_meaning_is_never_same_where_the_stance_contradicts(rules, stance):
    decision = st.StanceDecision(stance=stance, score=0.9, model="m")
    meaning, note = st.meaning_of_stance(decision, rules, "rules note")
    assert meaning == {"contradicts": "changed", "supports": "same", "nei": "unclear"}[stance]
    assert note


def _always(column: int) -> st.StanceModel:
    n = len(st.RULE_FEATURES)
    bias = np.full(3, -5.0, dtype=np.float32)
    bias[column] = 5.0
    return st.StanceModel(name="always", weights=np.zeros((n, 3), np.float32), bias=bias,
                          mean=np.zeros(n, np.float32), scale=np.ones(n, np.float32), threshold_contradict=0.6,
                          threshold_support=0.6, threshold_veto=0.4)


def test_by_default_the_model_withholds_same_but_flags_nothing_the_rules_do_not(monkeypatch):
    monkeypatch.setattr(st, "default_embed", fake_embed)
    monkeypatch.setattr(st, "load_model", lambda folder=None: _always(1))
    check = CitationCheck(quote="X improves Y.", verdict="related", message="", meaning="same")
    apply_stance(check, [{"text": "X and Y were studied.", "source": "a.pdf"}])
    assert check.stance == "nei" and check.meaning == "unclear" and check.stance_model == "always"
    check = CitationCheck(quote="X improves Y.", verdict="related", message="", meaning="changed")
    apply_stance(check, [{"text": "X harms Y.", "source": "a.pdf"}])
    assert check.stance == "contradicts" and check.meaning == "changed"
    monkeypatch.setattr(st, "load_model", lambda folder=None: _always(0))
    check = CitationCheck(quote="X improves Y.", verdict="related", message="", meaning="unclear")
    apply_stance(check, [{"text": "X improved Y.", "source": "a.pdf"}])
    assert check.stance == "supports" and check.meaning == "same"


def test_a_related_check_takes_the_stance_and_its_evidence(monkeypatch):
    from rag_core import settings

    monkeypatch.setattr(settings, "STANCE_MAY_FLAG", True)
    monkeypatch.setattr(st, "default_embed", fake_embed)
    monkeypatch.setattr(st, "load_model", lambda folder=None: _always(1))
    rows = [{"text": "Other work. ALDH1 expression was associated with poorer outcomes.", "source": "b.pdf",
             "chunk_index": 4, "start": 100, "page_start": 2},
            {"text": "ALDH1 expression and breast cancer outcomes.", "source": "a.pdf", "chunk_index": 1,
             "start": 0, "page_start": 1}]
    check = CitationCheck(quote="ALDH1 expression is associated with better breast cancer outcomes.",
                          verdict="related", message="", meaning="same", cited_sources=["b.pdf"])
    apply_stance(check, rows)
    assert check.stance == "contradicts" and check.meaning == "changed" and check.stance_model == "always"
    cited = [e for e in check.evidence_sentences if e["source"] == "b.pdf"]
    assert cited and all(e["doc_start"] == 100 + e["start"] and e["page"] == 2 for e in cited)
    assert any(e["sentence"].startswith("ALDH1 expression was associated") for e in cited)
    d = check.to_dict()
    assert {"stance", "stance_score", "stance_model", "evidence_sentences", "meaning", "verdict", "source"} <= set(d)
    assert d["stance"] == "contradicts" and d["evidence_sentences"][0]["sentence"]


def test_verbatim_and_near_verbatim_checks_keep_the_rules_meaning(monkeypatch):
    monkeypatch.setattr(st, "load_model", lambda folder=None: _always(1))
    check = CitationCheck(quote="q", verdict="verbatim", message="", meaning="same",
                          hits=[{"source": "a.pdf", "page": 1, "start": 0, "end": 1, "match": "q"}])
    apply_stance(check, [])
    assert check.meaning == "same" and check.stance == "supports" and check.stance_model == "rules"
    check = CitationCheck(quote="q", verdict="near_verbatim", message="", meaning="changed",
                          best={"source": "a.pdf", "page": 1, "match": "not q", "similarity": 0.8})
    apply_stance(check, [])
    assert check.meaning == "changed" and check.stance == "contradicts"


def test_a_manuscript_row_carries_the_stance_for_the_json_output():
    from rag_core.citations.manuscript import CheckRow

    row = CheckRow("s", "paraphrase", "related", "a.pdf", 2, None, 0.7, "meaning", "", "", [], False, "m",
                   meaning="changed", stance="contradicts", stance_score=0.8, stance_model="m",
                   evidence_sentences=[{"source": "a.pdf", "page": 2, "sentence": "x", "score": 0.5}])
    d = row.to_dict()
    assert d["stance"] == "contradicts" and d["stance_score"] == 0.8 and d["evidence_sentences"][0]["page"] == 2
    assert {"outcome", "evidence", "meaning", "meaning_cues", "verdict"} <= set(d)
