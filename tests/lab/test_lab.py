"""The relevance lab engine: metrics, statistics, judgments that survive collection changes,
snapshots, the optimiser, search settings and the import/export round trip."""

from __future__ import annotations

import csv
import io
import json
import random
import zipfile

import numpy as np
import pytest

from rag_core.evaluation.metrics import query_metrics
from rag_core.lab.judgments import (
    Judgment,
    JudgmentError,
    Judgments,
    PassageKey,
    add_judgments,
    judgeable,
    load_judgments,
    make_judgment,
    normalise_query,
    parse_passage_id,
    passages_of,
    quote_from,
    set_grade,
)
from rag_core.lab.optimiser import QueryScores, default_grid, optimise, select
from rag_core.lab.snapshots import diff_snapshots, list_snapshots, load_snapshot, save_snapshot
from rag_core.lab.statistics import mean_ci, overlap_at_k, paired_test, rank_biased_overlap
from rag_core.lab.transfer import (
    beir_files,
    export_judgments,
    import_judgments,
    judgments_csv,
    parse_csv,
    write_beir,
)
from rag_core.retrieval import search_spec
from rag_core.retrieval.ranking import search
from rag_core.retrieval.search_spec import SearchSpec, SearchSpecError, save_collection_spec
from tests.support import SMALL_PDFS

DPR, DARK = SMALL_PDFS[1], SMALL_PDFS[0]


# ------------------------------------------------------------------ metrics


def _random_runs(seed: int = 3, queries: int = 40):
    rng = random.Random(seed)
    runs, qrels = {}, {}
    for q in range(queries):
        docs = [f"d{i}" for i in range(60)]
        qrels[f"q{q}"] = {d: rng.choice([0, 0, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 15))}
        runs[f"q{q}"] = rng.sample(docs, rng.randint(3, 30))
    return runs, qrels


def test_metrics_match_ir_measures_on_constructed_runs():
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import RR, Judged, P, R, Success, nDCG

    runs, qrels = _random_runs()
    qrel_list = [ir_measures.Qrel(q, d, g) for q, grades in qrels.items() for d, g in grades.items()]
    run_list = [ir_measures.ScoredDoc(q, d, 100.0 - r) for q, docs in runs.items() for r, d in enumerate(docs)]
    theirs: dict[str, dict] = {}
    measures = [nDCG @ 10, P(rel=2) @ 5, Success(rel=2) @ 5, RR(rel=2) @ 10, R(rel=2) @ 10, Judged @ 10]
    for m in ir_measures.iter_calc(measures, qrel_list, run_list):
        theirs.setdefault(m.query_id, {})[str(m.measure)] = m.value
    checked = 0
    for q, ranking in runs.items():
        ours = query_metrics(ranking, qrels[q])
        ref = theirs[q]
        if ours["ndcg@10"] is not None:
            assert ours["ndcg@10"] == pytest.approx(ref["nDCG@10"], abs=1e-9)
        assert ours["p@5"] == pytest.approx(ref["P(rel=2)@5"], abs=1e-9)
        assert ours["success@5"] == pytest.approx(ref["Success(rel=2)@5"], abs=1e-9)
        assert ours["mrr@10"] == pytest.approx(ref["RR(rel=2)@10"], abs=1e-9)
        if ours["recall@10"] is not None:
            assert ours["recall@10"] == pytest.approx(ref["R(rel=2)@10"], abs=1e-9)
        assert 1 - ours["unjudged@10"] == pytest.approx(ref["Judged@10"], abs=1e-9)
        checked += 1
    assert checked == 40


def test_metrics_by_hand():
    grades = {"a": 3, "b": 0, "c": 2, "z": 1}
    values = query_metrics(["b", "a", "x", "c"], grades)
    assert values["p@5"] == pytest.approx(2 / 5)
    assert values["mrr@10"] == pytest.approx(1 / 2)
    assert values["recall@10"] == 1.0
    assert values["unjudged@10"] == pytest.approx(1 / 4)
    ideal = 3 + 2 / np.log2(3) + 1 / np.log2(4)
    assert values["ndcg@10"] == pytest.approx((3 / np.log2(3) + 2 / np.log2(5)) / ideal)
    nothing = query_metrics(["b"], {"b": 0})
    assert nothing["ndcg@10"] is None and nothing["recall@10"] is None and nothing["mrr@10"] == 0.0


def test_overlap_and_rank_biased_overlap():
    assert overlap_at_k(list("abcdefghij"), list("abcdefghij")) == 1.0
    assert overlap_at_k(list("abcde"), list("vwxyz"), 5) == 0.0
    assert overlap_at_k(list("abcde"), list("edcba"), 5) == 1.0
    assert rank_biased_overlap(list("abcdefghij"), list("abcdefghij")) == pytest.approx(1.0)
    assert rank_biased_overlap(list("abc"), list("xyz")) == 0.0
    # the top weighs most: swapping the first two costs more than swapping the last two
    swap_top = rank_biased_overlap(list("abcdefghij"), list("bacdefghij"))
    swap_bottom = rank_biased_overlap(list("abcdefghij"), list("abcdefghji"))
    assert swap_top < swap_bottom < 1.0
    # Webber et al.'s definition at depth 1..3 for two 3-item lists (hand computed, p = 0.9):
    # X_1 = 0, X_2 = 2, X_3 = 3 -> (0.1/0.9)*(0 + 2/2*0.81 + 3/3*0.729) + 1*0.729
    assert rank_biased_overlap(list("abc"), list("bac")) == pytest.approx(0.1 / 0.9 * (0.81 + 0.729) + 0.729)
    assert rank_biased_overlap([], []) is None


def test_bootstrap_interval_and_paired_test_on_a_constructed_set():
    rng = np.random.default_rng(5)
    base = rng.uniform(0.2, 0.8, size=40)
    better = np.clip(base + 0.15 + rng.normal(0, 0.05, size=40), 0, 1)
    a = {f"q{i}": float(v) for i, v in enumerate(better)}
    b = {f"q{i}": float(v) for i, v in enumerate(base)}
    test = paired_test(a, b, names=("new", "old"))
    assert test.n == 40 and test.wins >= 38
    assert test.p_randomisation < 0.001 and test.p_ttest < 0.001
    assert test.difference.low > 0.1 and test.difference.high < 0.2
    assert "new beats old" in test.verdict()
    same = paired_test(b, dict(b), names=("x", "y"))
    assert same.p_randomisation == 1.0 and same.ties == 40
    noise = paired_test({k: v + rng.normal(0, 0.01) for k, v in b.items()}, b)
    assert noise.p_randomisation > 0.01
    estimate = mean_ci(list(base), seed=1)
    assert estimate.low < float(np.mean(base)) < estimate.high
    assert estimate.high - estimate.low < 0.2
    assert mean_ci([0.5]).low is None and mean_ci([]).mean is None
    assert mean_ci([None, 0.2, 0.4]).n == 2


# ------------------------------------------------------------------ the optimiser cannot memorise


def test_leave_one_out_does_not_reward_memorising_noise():
    rng = np.random.default_rng(11)
    matrix = rng.uniform(0, 1, size=(30, 200))  # 200 settings, none better than another in truth
    matrix[:, 0] = 0.5  # the baseline scores what every setting scores on average
    for scheme in ("loo", "split"):
        chosen = select(matrix, 0, scheme=scheme, seed=2)
        in_sample = matrix[:, chosen.best_all].mean() - matrix[:, 0].mean()
        held_out = np.mean(chosen.values) - np.mean(chosen.baseline_values)
        assert in_sample > 0.1  # the grid's best looks much better on the queries it was picked on
        assert held_out < in_sample / 2  # but not on queries it did not see (LOO leans low: no false gain)
        ci = mean_ci([v - b for v, b in zip(chosen.values, chosen.baseline_values, strict=True)])
        assert ci.low < 0.05  # no reliable gain


def test_leave_one_out_finds_a_real_gain():
    rng = np.random.default_rng(12)
    matrix = rng.uniform(0, 0.6, size=(25, 50))
    matrix[:, 7] += 0.3  # one setting is better on every query
    chosen = select(matrix, 0, scheme="loo")
    assert chosen.best_all == 7 and all(c == 7 for c in chosen.chosen)
    gain = mean_ci([v - b for v, b in zip(chosen.values, chosen.baseline_values, strict=True)])
    assert gain.low > 0


def test_select_needs_two_queries():
    with pytest.raises(ValueError, match="at least 2"):
        select(np.ones((1, 3)))


# ------------------------------------------------------------------ search settings


def test_search_config_validates_and_maps_to_search_arguments():
    config = SearchSpec(fusion="rrf", dense_weight=0.25, rrf_k=10, pool=50, lexical="tfidf")
    kwargs = config.search_kwargs()
    assert kwargs == {"pool": 50, "fusion": "rrf", "fusion_weights": {"tfidf": 1.5, "bm25": 0.0, "dense": 0.5},
                      "rrf_k": 10, "with_bm25": False, "with_tfidf": True}
    default = SearchSpec().search_kwargs()
    assert default["fusion_weights"] == {"tfidf": 0.0, "bm25": 1.0, "dense": 1.0}  # the package's 1 : 1
    for bad in ({"fusion": "sum"}, {"dense_weight": 1.5}, {"pool": 0}, {"lexical": "none"}, {"rrf_k": 0}):
        with pytest.raises(SearchSpecError):
            SearchSpec(**bad)
    assert SearchSpec.from_dict({"pool": -3, "fusion": "zscore"}, strict=False) == SearchSpec(fusion="zscore")
    assert SearchSpec.for_collection({}).search_kwargs() == SearchSpec().search_kwargs()
    saved = {"search": {"fusion": "rrf", "pool": 20, "dense_weight": "nonsense"}}
    assert SearchSpec.for_collection(saved).search_kwargs()["pool"] == 20
    assert SearchSpec.for_collection(saved).search_kwargs()["fusion"] == "rrf"


def test_search_takes_fusion_kind_tfidf_switch_and_mmr(worked_example_index):
    index = worked_example_index
    query = "does information leak through a wormhole"
    for kind in ("minmax", "zscore", "rrf"):
        rows = search(query, index, top=3, cross_encoder_model="", fusion=kind)
        assert rows[0]["source"] == "gao_wormhole.pdf"
        assert rows[0]["score_type"] == ("rrf" if kind == "rrf" else "fused")
    rows = search(query, index, top=3, cross_encoder_model="", fusion="zscore")
    assert "standardised" in rows[0]["reranker_detail"]
    no_tfidf = search(query, index, top=3, cross_encoder_model="", with_tfidf=False)
    assert all("tfidf" not in r["first_stage_ranks"] for r in no_tfidf)
    mmr = search(query, index, top=3, cross_encoder_model="", mmr_lambda=0.5)
    assert mmr[0]["reranker"] == "mmr" and all(r["pre_mmr_rank"] for r in mmr)
    with pytest.raises(ValueError, match="lexical"):
        search(query, index, cross_encoder_model="", with_tfidf=False, with_bm25=False)
    with pytest.raises(ValueError, match="fusion"):
        search(query, index, cross_encoder_model="", fusion="sum")


def test_optimiser_ranks_exactly_as_search(worked_example_index):
    index = worked_example_index
    scores = QueryScores(index, "cross-encoders rank passages")
    for config in default_grid(SearchSpec(), pools=(1, 2, 3), weights=(0.0, 0.3, 1.0)):
        rows = search("cross-encoders rank passages", index, top=10, cross_encoder_model="",
                      **config.search_kwargs())
        assert scores.top(config, 10) == [r["chunk_index"] for r in rows], config


# ------------------------------------------------------------------ judgments on a real collection


@pytest.fixture()
def lexical_library(tmp_path, pdf_dir):
    """Two real PDFs, TF-IDF and BM25 only (no embedding: fast)."""
    from rag_core.collections.library import Library

    library = Library(tmp_path / "data")
    report = library.add_pdfs("papers", [pdf_dir / DPR, pdf_dir / DARK], compute_embeddings=False)
    assert [f.status for f in report.files] == ["ok", "ok"]
    return library


def _passage_with(library, name: str, phrase: str) -> tuple[int, object]:
    index = library.load_index(name)
    hits = [i for i, c in enumerate(index.chunks) if phrase in c["text"]]
    assert hits, phrase
    return hits[0], index


def test_judgments_survive_removal_and_reingest(lexical_library, pdf_dir):
    lib = lexical_library
    query = "how do questions in a batch share negatives"
    i, index = _passage_with(lib, "papers", "in-batch negatives")
    text = index.chunks[i]["text"]
    passages = passages_of(index, lib.documents("papers"))
    set_grade(lib, "papers", make_judgment(query, passages, i, 3, text))
    set_grade(lib, "papers", make_judgment("  how do questions in a batch   share negatives ", passages, i, 2, text))
    judgments = load_judgments(lib, "papers")
    assert len(judgments) == 1 and judgments.records()[0].grade == 2  # same query, same passage: replaced
    assert judgments.records()[0].time > 0 and judgments.records()[0].quote in " ".join(text.split())

    def graded_text() -> list[str]:
        index = lib.load_index("papers")
        grades = load_judgments(lib, "papers").grades(query, passages_of(index, lib.documents("papers")))
        return [index.chunks[i]["text"] for i, g in grades.items() if not g.mapped] if index else []

    lib.remove_documents("papers", [DARK])  # another document goes
    assert graded_text() == [text]
    lib.remove_documents("papers", [DPR])  # the judged document goes: the judgment stays, unattached
    assert len(load_judgments(lib, "papers")) == 1 and graded_text() == []
    lib.add_pdfs("papers", [pdf_dir / DARK, pdf_dir / DPR], compute_embeddings=False)  # back, after another
    assert graded_text() == [text]


def test_a_question_too_long_to_judge_has_no_grades_and_keeps_none(lexical_library):
    """Issue 27 row 19: Compare's lists of a 2,001-10,000-character question ask for its grades."""
    lib = lexical_library
    long = "dense passage retrieval " * 90
    i, index = _passage_with(lib, "papers", "in-batch negatives")
    passages = passages_of(index, lib.documents("papers"))
    assert not judgeable(long) and not judgeable("   ") and judgeable("how are negatives shared")
    assert load_judgments(lib, "papers").grades(long, passages) == {}
    assert load_judgments(lib, "papers").get(long, passages.keys[i]) is None
    with pytest.raises(JudgmentError, match="at most 2,000 characters"):  # it is still never kept
        make_judgment(long, passages, i, 3, index.chunks[i]["text"])


def test_judgments_map_to_passages_of_other_chunk_settings(lexical_library, pdf_dir, tmp_path):
    from rag_core.collections.library import Library

    lib = lexical_library
    query = "what is the retriever trained to score"
    i, index = _passage_with(lib, "papers", "in-batch negatives")
    set_grade(lib, "papers", make_judgment(query, passages_of(index, lib.documents("papers")), i, 3,
                                           index.chunks[i]["text"]))
    judged = load_judgments(lib, "papers").records()[0]
    other = Library(tmp_path / "other")
    other.create("small chunks", chunk_size=500, overlap=100)
    other.add_pdfs("small chunks", [pdf_dir / DPR], compute_embeddings=False)
    small = other.load_index("small chunks")
    grades = load_judgments(lib, "papers").grades(query, passages_of(small, other.documents("small chunks")))
    assert grades and all(g.mapped and g.grade == 3 for g in grades.values())
    for i in grades:  # every mapped passage lies mostly inside the judged span
        chunk = small.chunks[i]
        inside = min(chunk["end"], judged.end) - max(chunk["start"], judged.start)
        assert inside >= 0.5 * (chunk["end"] - chunk["start"])


def test_import_export_round_trip_csv_and_beir(lexical_library, tmp_path):
    lib = lexical_library
    index = lib.load_index("papers")
    passages = passages_of(index, lib.documents("papers"))
    records = [make_judgment(q, passages, i, g, index.chunks[i]["text"])
               for q, i, g in (("=HYPERLINK(\"http://x\") dense retrieval", 3, 3), ("dark matter mass", 60, 1),
                               ("dark matter mass", 61, 0), ("dense retrieval", 5, 2))]
    add_judgments(lib, "papers", records)
    before = {(j.query, j.key, j.grade) for j in load_judgments(lib, "papers")}

    data = judgments_csv(load_judgments(lib, "papers"), index, lib.documents("papers"))
    assert data.startswith(b"\xef\xbb\xbf")
    text = data.decode("utf-8-sig")
    assert "'=HYPERLINK" in text and "\n=HYPERLINK" not in text  # neutralised, not a live formula
    rows = parse_csv(data)
    assert {r["query"] for r in rows} == {"'=HYPERLINK(\"http://x\") dense retrieval", "dark matter mass",
                                          "dense retrieval"}
    csv_path = tmp_path / "judgments.csv"
    export_judgments(lib, "papers", csv_path)
    zip_path = tmp_path / "judgments.zip"
    result = export_judgments(lib, "papers", zip_path)
    assert result["qrels"] == 4 and result["queries"] == 3
    folder = tmp_path / "beir"
    export_judgments(lib, "papers", folder)

    for source in (csv_path, zip_path, folder):
        lib.store.write_data("papers", "judgments", None)
        report = import_judgments(lib, "papers", source)
        assert report.imported == 4 and not report.problems, (source, report.to_dict())
        assert {(j.query, j.key, j.grade) for j in load_judgments(lib, "papers")} == before, source

    with zipfile.ZipFile(zip_path) as archive:
        assert set(archive.namelist()) == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels.txt"}
        trec = archive.read("qrels.txt").decode().splitlines()
        assert all(len(line.split()) == 4 and line.split()[1] == "0" for line in trec)
    from rag_core.evaluation import load_beir

    dataset = load_beir(folder)  # `rag-core eval` reads the export
    assert len(dataset.queries) == 3 and len(dataset.corpus) == len(index.chunks)


def test_import_spreadsheet_rows_by_quote(lexical_library):
    lib = lexical_library
    index = lib.load_index("papers")
    i, _ = _passage_with(lib, "papers", "in-batch negatives")
    quote = quote_from(index.chunks[i]["text"])
    out = io.StringIO()
    writer = csv.writer(out, delimiter=";")  # a semicolon spreadsheet, capitalised headers
    writer.writerows([["Query", "Document", "Quote", "Grade"],
                      ["how are negatives shared", DPR, quote.upper(), "3 exact"],
                      ["nothing", DPR, "this sentence is in no paper at all", "2"],
                      ["bad grade", DPR, quote, "7"],
                      ["unknown document", "nosuch.pdf", quote, "1"]])
    report = import_judgments(lib, "papers", out.getvalue().encode("cp1252"), kind="csv")
    assert report.added == 1 and [r for r, _ in report.problems] == [3, 4, 5]
    assert "not found" in report.problems[0][1] and "0, 1, 2 or 3" in report.problems[1][1]
    assert "nosuch.pdf" in report.problems[2][1]
    judged = load_judgments(lib, "papers").records()[0]
    assert judged.grade == 3 and judged.quote_start is not None
    grades = load_judgments(lib, "papers").grades("how are negatives shared", passages_of(index, lib.documents(
        "papers")))
    assert i in grades
    with pytest.raises(JudgmentError, match="query, document, quote and grade"):
        import_judgments(lib, "papers", b"a,b\n1,2\n", kind="csv")


def test_snapshots_save_list_and_diff(lexical_library):
    from rag_core.lab.queryset import evaluate_collection

    lib = lexical_library
    index = lib.load_index("papers")
    passages = passages_of(index, lib.documents("papers"))
    query = "dense passage retrieval with a dual encoder"
    ranked = search(query, index, rerank=False, top=10)
    add_judgments(lib, "papers", [make_judgment(query, passages, ranked[3]["chunk_index"], 3),
                                  make_judgment(query, passages, ranked[0]["chunk_index"], 0)])
    first = evaluate_collection(lib, "papers", methods="tfidf,bm25")
    sid_a = save_snapshot(lib, "papers", first, label="before")
    add_judgments(lib, "papers", [make_judgment(query, passages, ranked[1]["chunk_index"], 3)])
    second = evaluate_collection(lib, "papers", methods="tfidf,bm25", spec=SearchSpec(pool=10))
    sid_b = save_snapshot(lib, "papers", second, label="after")
    listed = list_snapshots(lib, "papers")
    assert [s["label"] for s in listed] == ["after", "before"]
    diff = diff_snapshots(load_snapshot(lib, "papers", sid_a), load_snapshot(lib, "papers", sid_b), method="tfidf")
    assert diff.settings == {"pool": (30, 10)}
    assert [q["status"] for q in diff.queries] == ["gained"]

    a = {"config": {}, "queries": {"q1": "x", "q2": "y"}, "rankings": {"m": {"q1": ["p1", "p2", "p3"], "q2": ["p9"]}},
         "per_query": {"m": {"q1": {"ndcg@10": 0.5}, "q2": {"ndcg@10": 0.7}}}, "grades": {"q1": {"p3": 3}}}
    b = {"config": {}, "queries": {"q1": "x", "q2": "y"}, "rankings": {"m": {"q1": ["p3", "p1", "p4"], "q2": ["p9"]}},
         "per_query": {"m": {"q1": {"ndcg@10": 0.9}, "q2": {"ndcg@10": 0.6}}}, "grades": {"q1": {"p3": 3}}}
    diff = diff_snapshots(a, b, method="m")
    assert [(q["query"], q["status"]) for q in diff.queries] == [("x", "gained"), ("y", "lost")]
    moves = {m["passage"]: (m["rank_a"], m["rank_b"], m["movement"], m["grade"]) for m in diff.moved}
    assert moves == {"p3": (3, 1, "up", 3), "p1": (1, 2, "down", None), "p4": (None, 3, "new", None),
                     "p2": (2, None, "dropped", None)}


def test_collection_defaults_reach_every_search(lexical_library, capsys):
    from rag_core.cli import main

    lib = lexical_library
    save_collection_spec(lib, "papers", SearchSpec(pool=3, fusion="rrf"), note="test")
    assert lib.settings("papers")["search"]["pool"] == 3
    assert SearchSpec.for_collection(lib.settings("papers")).search_kwargs()["fusion"] == "rrf"
    assert main(["--data-dir", str(lib.root), "search", "papers", "dense retrieval", "--json", "--top", "3"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert rows and all(r["pool_size"] <= 6 for r in rows)  # TF-IDF top 3 UNION BM25 top 3
    assert rows[0]["score_type"] == "rrf"
    assert main(["--data-dir", str(lib.root), "search", "papers", "dense retrieval", "--json", "--pool", "20"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["pool_size"] > 6
    save_collection_spec(lib, "papers", None)
    assert "search" not in lib.settings("papers")


def test_cli_judgments_and_eval_collection(lexical_library, tmp_path, capsys):
    from rag_core.cli import main
    from rag_core.lab.queryset import evaluate_collection, summary_json

    lib = lexical_library
    index = lib.load_index("papers")
    i, _ = _passage_with(lib, "papers", "in-batch negatives")
    quote = quote_from(index.chunks[i]["text"])
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(f"query,document,quote,grade\nhow are negatives shared,{DPR},\"{quote}\",3\n"
                     f"what is DPR,{DPR},Dense Passage Retriever,2\n", encoding="utf-8")
    argv = ["--data-dir", str(lib.root)]
    assert main([*argv, "judgments", "import", "papers", str(sheet)]) == 0
    assert "2 of 2 row(s) imported" in capsys.readouterr().out
    assert main([*argv, "judgments", "list", "papers"]) == 0
    assert "how are negatives shared" in capsys.readouterr().out
    assert main([*argv, "eval", "--collection", "papers", "--json", "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = json.loads(json.dumps(summary_json(evaluate_collection(lib, "papers"))))
    assert printed["methods"] == expected["methods"]
    assert set(printed["methods"]) == {"tfidf", "bm25", "hybrid", "hybrid_mmr"}  # no vectors: no dense
    assert "dense" in printed["skipped"]
    assert main([*argv, "eval", "--collection", "papers", "--methods", "tfidf", "--quiet"]) == 0
    assert "TF-IDF" in capsys.readouterr().out
    out = tmp_path / "out.csv"
    assert main([*argv, "judgments", "export", "papers", str(out)]) == 0
    assert out.read_bytes().startswith(b"\xef\xbb\xbf")
    assert main([*argv, "eval", "--collection", "papers", str(tmp_path)]) == 2


def test_small_helpers():
    assert normalise_query("  a \n b ") == "a b"
    with pytest.raises(JudgmentError):
        normalise_query("   ")
    key = PassageKey("ab" * 32, 10, 20)
    assert parse_passage_id(key.id) == ("ab" * 8, 10, 20)
    assert parse_passage_id("nonsense") is None and parse_passage_id("abababababababab:5-5") is None
    quote = quote_from("word " * 100)
    assert 60 <= len(quote) <= 120 and not quote.startswith(" ")
    with pytest.raises(JudgmentError):
        Judgment.from_dict({"query": "q", "doc": "d", "start": 0, "end": 1, "grade": 5})
    assert len(Judgments([Judgment("q", "d", 0, 1, 2, 1.0), Judgment("q", "d", 0, 1, 3, 2.0)])) == 1
    assert search_spec.DEFAULT_SPEC.describe().startswith("min-max")


def test_beir_export_of_an_index_without_the_document(lexical_library, tmp_path):
    lib = lexical_library
    index = lib.load_index("papers")
    passages = passages_of(index, lib.documents("papers"))
    add_judgments(lib, "papers", [make_judgment("q one", passages, 0, 3)])
    lib.remove_documents("papers", [lib.documents("papers")[0]["source"]])
    index = lib.load_index("papers")
    export = beir_files(load_judgments(lib, "papers"), index, lib.documents("papers"))
    assert export.left_out == 1 and export.queries == 0
    write_beir(export, tmp_path / "x.zip")
    assert zipfile.is_zipfile(io.BytesIO((tmp_path / "x.zip").read_bytes()))


def test_optimiser_on_a_real_collection(lexical_library):
    lib = lexical_library
    index = lib.load_index("papers")
    passages = passages_of(index, lib.documents("papers"))
    records = []
    for query, phrase in (("in-batch negatives", "in-batch negatives"), ("dark matter", "dark matter"),
                          ("question answering retrieval", "open-domain"), ("BM25 baseline", "BM25")):
        hits = [i for i, c in enumerate(index.chunks) if phrase in c["text"]][:2]
        records += [make_judgment(query, passages, i, 3) for i in hits]
    add_judgments(lib, "papers", records)
    result = optimise(index, lib.documents("papers"), load_judgments(lib, "papers"),
                      grid=default_grid(pools=(5, 30), weights=(0.5,)), scheme="loo")
    assert result.n_queries == 4 and result.n_settings >= 4
    assert result.best_mean >= result.baseline_mean
    assert result.held_out_mean <= result.best_mean + 1e-12
    assert result.advice()
    with pytest.raises(ValueError, match="at least 2"):
        optimise(index, lib.documents("papers"), Judgments(records[:1]))


def test_snapshots_saved_under_earlier_method_names_still_load(lexical_library):
    lib = lexical_library
    earlier = {"format": "rag_core.snapshot", "id": "20250101-000000-abcdef", "label": "old", "saved_at": 1.0,
               "config": {"fusion": "minmax", "dense_weight": 0.5, "rrf_k": 60, "pool": 30, "lexical": "both",
                          "reranker": "cross_encoder", "mmr_lambda": 0.7},
               "methods": ["tfidf", "hybrid_mmr", "cross_encoder"], "queries": {"q1": "x"},
               "rankings": {"tfidf": {"q1": ["p1"]}, "cross_encoder": {"q1": ["p2", "p1"]}},
               "per_query": {"tfidf": {"q1": {"ndcg@10": 0.5}}, "cross_encoder": {"q1": {"ndcg@10": 0.25}}},
               "summary": {"cross_encoder": {"ndcg@10": {"mean": 0.25}}}, "grades": {"q1": {"p1": 3}}}
    with lib.store.writing("papers"):
        lib.store.write_data("papers", "snapshots/" + earlier["id"], earlier)
    listed = list_snapshots(lib, "papers")
    assert listed[0]["methods"] == ["tfidf", "hybrid_mmr", "hybrid_ce"] and "hybrid_ce" in listed[0]["summary"]
    old = load_snapshot(lib, "papers", earlier["id"])
    assert set(old["rankings"]) == {"tfidf", "hybrid_ce"} and set(old["per_query"]) == {"tfidf", "hybrid_ce"}
    now = {**old, "config": SearchSpec(reranker="cross_encoder").to_dict(),
           "per_query": {"hybrid_ce": {"q1": {"ndcg@10": 1.0}}}, "rankings": {"hybrid_ce": {"q1": ["p1", "p2"]}}}
    diff = diff_snapshots(old, now, method="hybrid_ce")
    assert diff.settings == {}  # a setting the old snapshot did not record is not a change
    assert [q["status"] for q in diff.queries] == ["gained"]


def test_lab_figures_equal_ir_measures_on_the_exported_judgments(lexical_library, tmp_path):
    """Per question, the lab's figures of each method equal ir_measures' on the BEIR export of the
    same judgments (qrels graded 0..3, relevant from 2)."""
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import RR, Judged, P, R, Success, nDCG

    from rag_core.evaluation import load_beir
    from rag_core.lab.queryset import evaluate_collection

    lib = lexical_library
    index = lib.load_index("papers")
    passages = passages_of(index, lib.documents("papers"))
    rng = random.Random(8)
    records = []
    for query in ("dense passage retrieval", "dark matter mass", "in-batch negatives", "question answering",
                  "cosmic microwave background"):
        for n, row in enumerate(search(query, index, rerank=False, top=12)):
            if n % 3 != 2:  # leave some of every list unjudged
                records.append(make_judgment(query, passages, row["chunk_index"], rng.choice([0, 1, 2, 3])))
    add_judgments(lib, "papers", records)
    run = evaluate_collection(lib, "papers", methods="tfidf,bm25,hybrid,hybrid_mmr")
    export_judgments(lib, "papers", tmp_path / "beir")
    qrels = load_beir(tmp_path / "beir").qrels
    measures = {"ndcg@10": nDCG @ 10, "p@5": P(rel=2) @ 5, "success@5": Success(rel=2) @ 5,
                "mrr@10": RR(rel=2) @ 10, "recall@10": R(rel=2) @ 10}
    checked = 0
    for method in run.methods:
        scored = [ir_measures.ScoredDoc(q, p, 100.0 - r) for q, docs in run.rankings[method].items()
                  for r, p in enumerate(docs)]
        theirs: dict[str, dict] = {}
        for m in ir_measures.iter_calc([*measures.values(), Judged @ 10], qrels, scored):
            theirs.setdefault(m.query_id, {})[str(m.measure)] = m.value
        for qid, ours in run.per_query[method].items():
            if qid not in theirs:
                continue
            for name, measure in measures.items():
                if ours[name] is not None:
                    assert ours[name] == pytest.approx(theirs[qid][str(measure)], abs=1e-9), (method, qid, name)
                    checked += 1
            assert 1 - ours["unjudged@10"] == pytest.approx(theirs[qid]["Judged@10"], abs=1e-9)
    assert checked >= 40


def test_eval_collection_takes_earlier_method_names(lexical_library, capsys):
    from rag_core.cli import main

    lib = lexical_library
    index = lib.load_index("papers")
    passages = passages_of(index, lib.documents("papers"))
    rows = search("dense retrieval", index, rerank=False, top=3)
    add_judgments(lib, "papers", [make_judgment("dense retrieval", passages, rows[0]["chunk_index"], 3)])
    argv = ["--data-dir", str(lib.root), "eval", "--collection", "papers", "--json", "--quiet"]
    assert main([*argv, "--methods", "tfidf,mmr,cross_encoder"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed["methods"]) == {"tfidf", "hybrid_mmr"} and set(printed["skipped"]) == {"hybrid_ce"}


def test_list_change_against_a_baseline():
    from rag_core.lab.statistics import list_change

    change = list_change(list("abcde"), list("cabxd"), k=5)
    assert change.moves == {"c": (3, 1), "a": (1, 2), "b": (2, 3), "x": (None, 4), "d": (4, 5)}
    assert change.dropped == [("e", 5)]
    assert (change.up, change.down, change.same, change.new) == (1, 3, 0, 1)
    assert change.overlap == 0.8 and 0 < change.rbo < 1
    assert change.summary().startswith("overlap@5 0.80 · RBO ") and "1 fell out" in change.summary()
    same = list_change(list("abc"), list("abc"), k=3)
    assert same.identical and same.rbo == 1.0 and same.summary().endswith("3 same")
    assert list_change([], [], k=3).summary().endswith("both empty")
