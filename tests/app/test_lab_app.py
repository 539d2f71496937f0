"""The relevance lab in the app (AppTest): judging on Compare, live metrics, the hybrid knobs and
each row's movement, and the Relevance lab page (query set, paired test, snapshots, optimiser,
export) with the same figures as `rag-core eval --collection`."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from rag_core.lab.judgments import load_judgments
from tests.app.support import COLLECTION, small_pdfs
from tests.support import REPO

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest

TIMEOUT = 180


@pytest.fixture()
def lab_dir(built_data_dir, tmp_path):
    """A copy of the two-paper data folder, so judgments made here stay here."""
    target = tmp_path / "data"
    shutil.copytree(built_data_dir, target)
    return target


def start(data_dir, monkeypatch, page: str) -> AppTest:
    monkeypatch.setenv("RAG_CORE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = AppTest.from_file(str(REPO / page), default_timeout=TIMEOUT)
    if page.endswith("compare.py"):
        at.session_state["cmp_view"] = "stacked"  # the lists as tables (side by side they are cards)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def clean(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not [h.value for h in at.html if h.value.startswith('<div class="rc-note rc-note-error"')], "an error box"
    return at


def frame_with(at: AppTest, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def table(at: AppTest, kind: str):
    return next(df.value for df in at.dataframe if (df.key or "").startswith(f"table_{kind}_"))


def grade_controls(at: AppTest):
    return [w for w in at.get("button_group") if (w.key or "").startswith("grade_")]


def test_judging_metrics_knobs_and_movement_on_compare(lab_dir, monkeypatch):
    at = start(lab_dir, monkeypatch, "pages/compare.py")
    at.text_input(key="cmp_query").input("how does the model learn whether one sentence follows another")
    at.button(key="FormSubmitter:compare_form-Compare").click().run()
    clean(at)
    assert not [df for df in at.dataframe if "nDCG@10" in df.value.columns], "no judgment yet: no table of blanks"
    assert any("appears once a passage is graded 2 or 3" in h.value for h in at.html), "the empty state says why"
    controls = grade_controls(at)
    assert len(controls) == 5, "the first five passages of the lists can be judged at once"
    pool = int(re.search(r"of (\d+) passages in these lists", " ".join(h.value for h in at.html)).group(1))
    while any(b.key == "judge_more" for b in at.button):
        at.button(key="judge_more").click().run()  # the rest, five at a time
    controls = grade_controls(at)
    assert len(controls) == pool > 5, "every passage of every list can be judged"

    # one click grades a passage; its grade shows in every list where it appears
    controls[0].set_value(3).run()
    clean(at)
    controls = grade_controls(at)
    controls[1].set_value(0).run()
    clean(at)
    judged = load_judgments(_library(lab_dir), COLLECTION)
    assert sorted(j.grade for j in judged) == [0, 3]
    graded = [t for t in ("tfidf", "hybrid") if (table(at, t)["grade"] == "3").any()]
    assert graded, "the grade shows in the lists"
    metrics = frame_with(at, "nDCG@10")
    assert {"TF-IDF", "BM25", "dense", "hybrid", "hybrid + MMR"} <= set(metrics["method"])
    assert metrics["nDCG@10"].notna().any() and (metrics["unjudged@10"] < 1).any()
    assert any("lower bounds" in c.value for c in at.caption), "the lower-bound note is on screen"

    # the fast pass: a button bound to the key "2" grades the next unjudged passage
    assert "Keys: 0 not relevant" in " ".join(c.value for c in at.caption)
    at.button(key="fast_2").click().run()
    clean(at)
    assert len(load_judgments(_library(lab_dir), COLLECTION)) == 3
    at.toggle(key="cmp_only_unjudged").set_value(True).run()
    unjudged = grade_controls(at)
    assert len(unjudged) == pool - 3 and all(c.value is None for c in unjudged), "only the unjudged are listed"

    # knobs: fusion and weights re-run the hybrid list, each row says how it moved and why
    before = list(table(at, "hybrid")["passage"])
    at.selectbox(key=f"cmp_fusion_{COLLECTION}").set_value("rrf").run()
    clean(at)
    # the next change comes before this result's lab lists have run (a rerun stopped by a quick
    # second change, as a slider's arrow keys make): the figures before are still there
    stored = at.session_state["cmp_result"]
    stored["lists"] = None
    at.session_state["cmp_result"] = stored
    at.slider(key=f"cmp_dense_weight_{COLLECTION}").set_value(0.9).run()
    clean(at)
    hybrid = table(at, "hybrid")
    assert "vs before" in hybrid.columns and "first stage" in hybrid.columns
    assert hybrid["vs before"].str.match(r"^[▲▼★=]").all()
    assert list(hybrid["passage"]) != before or (hybrid["vs before"] != "= same").any()
    metrics = frame_with(at, "nDCG@10")
    assert "change" in metrics.columns and "nDCG@10 before" in metrics.columns
    assert any("Compared with the last change" in h.value for h in at.html)

    # the reranker knob: MMR reorders the fused pool
    at.selectbox(key=f"cmp_reranker_{COLLECTION}").set_value("mmr").run()
    clean(at)
    assert "maximal marginal relevance" in " ".join(h.value for h in at.html)
    # the lab's tabs draw only the open one: no chart behind the judging cards
    assert not (at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart"))
    at.session_state["cmp_lab_tab"] = "What the reranker did"
    at.run()
    clean(at)
    assert at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart"), "the slope chart is drawn"
    assert not grade_controls(at), "the judging cards are not drawn behind the chart"


def _library(root):
    from rag_core.collections.library import Library

    return Library(root)


def _judge_some(root) -> None:
    """Judgments for three questions, made with the engine (as an import would)."""
    from rag_core.lab.judgments import add_judgments, make_judgment, passages_of
    from rag_core.retrieval.ranking import search

    lib = _library(root)
    index = lib.load_index(COLLECTION)
    passages = passages_of(index, lib.documents(COLLECTION))
    records = []
    for query in ("masked language model pre-training", "dense passage retriever training with negatives",
                  "next sentence prediction task"):
        rows = search(query, index, rerank=False, top=6)
        for n, row in enumerate(rows):
            records.append(make_judgment(query, passages, row["chunk_index"], (3, 0, 2, 1, 0, 2)[n],
                                         row["text"]))
    add_judgments(lib, COLLECTION, records)


def test_lab_page_query_set_snapshots_optimiser_and_cli_figures(lab_dir, monkeypatch, capsys):
    from rag_core.cli import main

    _judge_some(lab_dir)
    at = start(lab_dir, monkeypatch, "pages/lab.py")
    clean(at)
    summary = frame_with(at, "queries")
    assert {"TF-IDF", "BM25", "dense", "hybrid", "hybrid + MMR"} <= set(summary["method"])
    per_query = frame_with(at, "judged")
    assert len(per_query) == 3
    assert any("Paired randomisation test" in h.value for h in at.html)

    # the same figures on the command line
    assert main(["--data-dir", str(lab_dir), "eval", "--collection", COLLECTION, "--json", "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    labels = {"tfidf": "TF-IDF", "bm25": "BM25", "dense": "dense", "hybrid": "hybrid", "hybrid_mmr": "hybrid + MMR"}
    for method, label in labels.items():
        row = summary[summary["method"] == label].iloc[0]
        for metric, column in (("ndcg@10", "nDCG@10"), ("p@5", "P@5"), ("mrr@10", "MRR@10"),
                               ("recall@10", "Recall@10")):
            mean = printed["methods"][method][metric]["mean"]
            assert row[column].startswith(f"{mean:.3f}"), (method, metric, row[column], mean)

    # only the open tab is drawn: nothing of the snapshots or the optimiser behind the query set
    assert not [t for t in at.text_input if t.key == "snapshot_label"]
    assert not [b for b in at.button if b.key == "FormSubmitter:optimiser_form-Run the optimiser"]

    # snapshots: save, change a setting, save again, compare
    at.session_state["tab"] = "Snapshots"
    at.run()
    at.text_input(key="snapshot_label").input("defaults")
    at.button(key="FormSubmitter:snapshot_form-Save snapshot").click().run()
    clean(at)
    at.number_input(key=f"lab_pool_{COLLECTION}").set_value(5).run()
    at.text_input(key="snapshot_label").input("pool 5")
    at.button(key="FormSubmitter:snapshot_form-Save snapshot").click().run()
    clean(at)
    assert len(frame_with(at, "snapshot")) == 2
    diff_queries = frame_with(at, "status")
    assert set(diff_queries["status"]) <= {"gained", "lost", "same", "not scored", "new query", "dropped"}
    assert any("pool: 30 → 5" in h.value for h in at.html), "the snapshot diff names the changed setting"
    # the figures first, the long text last (every rank column in view); counts in their number
    assert list(diff_queries.columns)[:3] == ["A", "B", "change"] and list(diff_queries.columns)[-1] == "query"
    moved = [df.value for df in at.dataframe if df.key == "snap_moved"]
    assert not moved or list(moved[0].columns)[:3] == ["A rank", "B rank", "move"]
    line = next(h.value for h in at.html if "gained nDCG@10" in h.value)
    assert not re.search(r"\b1 queries\b", line) and re.search(r"\d+ quer(y|ies) gained nDCG@10", line), line

    # the optimiser, then its settings as the collection's default
    at.session_state["tab"] = "Optimiser"
    at.run()
    at.button(key="FormSubmitter:optimiser_form-Run the optimiser").click().run()
    clean(at)
    assert any("Held out (leave one query out)" in h.value for h in at.html)
    save = at.button(key="opt_save")
    if not save.disabled:
        save.click().run()
        clean(at)
        assert "search" in _library(lab_dir).settings(COLLECTION)

    # export
    at.session_state["tab"] = "Import / export"
    at.run()
    downloads = list(at.get("download_button"))
    assert len(downloads) == 2, "judgments as CSV and as a BEIR zip"


def test_lab_page_without_judgments_says_how_to_start(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/lab.py")
    clean(at)
    assert any("No judged queries yet" in h.value for h in at.html)
    assert small_pdfs()
