"""The claims readers and the project's dev rule (COMMON.md)."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from rag_core.models.training import claims
from rag_core.models.training.claims import fold_claim, in_dev_slice, sentence_pairs, split_of


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture()
def tiny_claims(tmp_path):
    _write(tmp_path / "scifact_claims_train.jsonl", [
        {"id": 1, "claim": "A raises B.", "evidence": {"10": [{"label": "support", "sentences": [1]}]},
         "cited_doc_ids": [10, 11]},
        {"id": 2, "claim": "A lowers B.", "evidence": {"10": [{"label": "contradict", "sentences": [1, 2]}]},
         "cited_doc_ids": [10]},
    ])
    with gzip.open(tmp_path / "scifact_corpus.jsonl.gz", "wt", encoding="utf-8") as handle:
        for doc_id in (10, 11):
            handle.write(json.dumps({"doc_id": doc_id, "title": f"T{doc_id}",
                                     "abstract": ["Background.", "A raised B.", "By a lot.", "Methods."]}) + "\n")
    _write(tmp_path / "checkcovid_corpus.jsonl", [{"cord_id": "c1", "title": "t", "abstract": ["S0.", "S1."]}])
    _write(tmp_path / "checkcovid_train.jsonl", [{"id": "x_0", "claim": "C. ", "cord_id": "c1", "label": "support",
                                                 "evidence_set": [{"sent_index": 1, "type": "PRIMARY"}]}])
    _write(tmp_path / "checkcovid_dev.jsonl", [{"id": "y_0", "claim": "D", "cord_id": "c1", "label": "nei",
                                               "evidence_set": [{"sent_index": 0, "type": "PRIMARY"}]}])
    _write(tmp_path / "healthver_dev.jsonl", [{"id": "5", "claim": "Masks  work", "evidence": "One. Two more.",
                                              "label": "contradict", "question": "q"}])
    _write(tmp_path / "covidfact.jsonl", [{"id": 0, "claim": "X", "evidence": ["E1", "E2"], "label": "support"}])
    _write(tmp_path / "climatefever.jsonl", [{"id": "0", "claim": "W", "label": "disputed", "evidences": [
        {"article": "a", "evidence": "s1", "label": "support"}, {"article": "a", "evidence": "s2", "label": "nei"}]}])
    return tmp_path


def test_the_dev_rule_is_commons_formula():
    for dataset, key in (("scifact", "13"), ("healthver", "vitamin d cures covid"), ("covidfact", "7")):
        expected = int(hashlib.sha256(f"{dataset}:{key}".encode()).hexdigest()[:8], 16) % 100 < 25
        assert in_dev_slice(dataset, key) is expected
    assert fold_claim("  Vitamin D\tcures COVID ") == "vitamin d cures covid"
    assert split_of("healthver", claim="Vitamin  D cures covid") == split_of("healthver", claim="vitamin d CURES covid")
    shares = sum(in_dev_slice("scifact", str(i)) for i in range(4000)) / 4000
    assert 0.22 < shares < 0.28


def test_scifact_reads_each_cited_abstract_with_its_label(tiny_claims):
    rows = claims.read_scifact(tiny_claims)
    by = {(r.claim_id, r.doc_id): r for r in rows}
    assert by[("1", "10")].label == "support" and by[("1", "10")].rationale == (1,)
    assert by[("1", "11")].label == "nei" and by[("1", "11")].evidence_sets == ()
    assert by[("2", "10")].evidence_sets == ((1, 2),)
    assert all(r.split == split_of("scifact", claim_id=r.claim_id) for r in rows)
    assert {r.split for r in claims.read_scifact(tiny_claims, split="dev")} <= {"dev"}


def test_every_reader_yields_claim_documents(tiny_claims):
    cc = claims.read_checkcovid(tiny_claims)
    assert [(r.claim, r.split, r.rationale) for r in cc] == [("C.", "train", (1,)), ("D", "dev", (0,))]
    (hv,) = claims.read_healthver(tiny_claims, split=None)
    assert hv.sentences == ("One.", "Two more.") and hv.evidence_sets == ((0, 1),)
    (cf,) = claims.read_covidfact(tiny_claims, split=None)
    assert cf.label == "support" and cf.sentences == ("E1", "E2")
    (fever,) = claims.read_climatefever(tiny_claims, split=None)
    assert fever.label == "nei" and fever.sentence_labels == ("support", "nei") and fever.evidence_sets == ((0,),)


def test_sentence_pairs_label_rationales_and_sample_the_rest_as_nei(tiny_claims):
    rows = [r for r in claims.read_scifact(tiny_claims) if r.claim_id == "2"]
    pairs = sentence_pairs(rows, nei_per_document=1)
    assert [p[2] for p in pairs].count("contradict") == 2
    assert [p[2] for p in pairs].count("nei") == 1
    assert pairs == sentence_pairs(rows, nei_per_document=1)  # reproducible
    assert len(sentence_pairs(rows, nei_per_document=None)) == 4


def test_a_missing_folder_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv(claims.CLAIMS_DIR_ENV, str(tmp_path / "nowhere"))
    monkeypatch.setattr(claims, "__file__", str(tmp_path / "a" / "b" / "c" / "claims.py"))
    with pytest.raises(FileNotFoundError, match="nowhere"):
        claims.claims_dir()


def test_the_shared_data_splits_hold_the_published_counts():
    try:
        folder = claims.claims_dir()
    except FileNotFoundError:
        pytest.skip("../shared/data/claims is not here")
    scifact = claims.read_scifact(folder)
    assert len({r.claim_id for r in scifact}) == 809 - sum(1 for r in claims._jsonl(folder / claims.FILES["scifact"][0])
                                                           if not r.get("cited_doc_ids") and not r.get("evidence"))
    dev_ids = {r.claim_id for r in scifact if r.split == "dev"}
    assert dev_ids and not dev_ids & {r.claim_id for r in scifact if r.split == "train"}
    checkcovid = claims.read_checkcovid(folder)
    assert sum(r.split == "dev" for r in checkcovid) == 207 and sum(r.split == "train" for r in checkcovid) == 1068
    healthver = claims.read_healthver(folder)
    dev_claims = {fold_claim(r.claim) for r in healthver if r.split == "dev"}
    assert not dev_claims & {fold_claim(r.claim) for r in healthver if r.split == "train"}
