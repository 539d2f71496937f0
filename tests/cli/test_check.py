"""``rag-core check COLLECTION FILE [--json] [--top N]``: a manuscript checked from the command line."""

from __future__ import annotations

import json

import pytest

from rag_core.cli import main

DPR = "ml_dpr_karpukhin2020_arxiv2004.04906.pdf"
MANUSCRIPT = """Dense retrieval works. Karpukhin et al. (2020) write that \u201cour dense retriever outperforms a
strong Lucene-BM25 system greatly by 9%-19% absolute\u201d.
They also say that \u201cour dense retriever outperforms a strong Lucene-BM25 system greatly by 9%-29%
absolute\u201d [1].
Ultra light bosonic dark matter \u201cis equivalent to an increase of non-relativistic
matter\u201d (Karpukhin et al., 2020).
Committees of cats have solved quantum gravity [2].

References
[1] V. Karpukhin, B. Oguz, S. Min. 2020. Dense passage retrieval for open-domain question answering.
[2] A. Cat. 1850. Quantum gravity, solved.
"""


@pytest.fixture(scope="module")
def manuscript(tmp_path_factory):
    path = tmp_path_factory.mktemp("manuscript") / "draft.md"
    path.write_text(MANUSCRIPT, encoding="utf-8")
    return path


def test_check_json(paper_library, manuscript, capsys):
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(manuscript), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4
    for row in rows:
        assert {"statement", "verdict", "source", "page", "page_label", "similarity", "cited",
                "misattributed"} <= set(row)
    assert [r["verdict"] for r in rows[:3]] == ["verbatim", "near_verbatim", "verbatim"]
    assert rows[0]["source"] == DPR and rows[0]["page"] == 1 and rows[0]["cited"] == "Karpukhin et al. (2020)"
    assert rows[0]["misattributed"] is False
    assert rows[1]["diff"] == "9%-19% \u2192 9%-29%" and rows[1]["cited"] == "[1]"
    assert rows[2]["misattributed"] is True and rows[2]["source"] != DPR
    assert rows[3]["verdict"] in ("not_found", "related") and rows[3]["misattributed"] is False


def test_check_table_for_a_person(paper_library, manuscript, capsys):
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(manuscript), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "verbatim" in out and "near_verbatim" in out and DPR in out
    assert "changed: 9%-19% \u2192 9%-29%" in out
    assert "! found, but in a different document than the one cited" in out
    assert "1 misattributed (4 statements)" in out


def test_check_prints_no_control_characters(paper_library, tmp_path, capsys):
    path = tmp_path / "evil.txt"
    path.write_text("They wrote \u201cour dense retriever \x1b[31moutperforms\x1b[0m a strong\u201d [1].\n",
                    encoding="utf-8")
    for extra in ([], ["--json"]):
        assert main(["--data-dir", str(paper_library.root), "check", "papers", str(path), *extra]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "outperforms" in out


def test_check_with_nothing_to_check(paper_library, tmp_path, capsys):
    path = tmp_path / "plain.txt"
    path.write_text("No quotes and no citations here.", encoding="utf-8")
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(path)]) == 0
    assert "No checkable statements" in capsys.readouterr().out
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.parametrize("argv", [["check"], ["check", "papers"], ["check", "papers", "x.md", "--top", "0"],
                                  ["check", "papers", "x.md", "--top", "many"]])
def test_check_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rag-core: error:")


def test_check_unreadable_manuscript_is_a_usage_error(paper_library, tmp_path, capsys):
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(tmp_path / "missing.md")]) == 2
    assert "No such file" in capsys.readouterr().err
    odd = tmp_path / "draft.odt"
    odd.write_bytes(b"x")
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(odd)]) == 2
    assert "cannot read .odt" in capsys.readouterr().err


def test_check_unknown_collection_exits_1(tmp_path, manuscript, capsys):
    assert main(["--data-dir", str(tmp_path), "check", "missing", str(manuscript)]) == 1
    assert "No collection named 'missing'" in capsys.readouterr().err


@pytest.mark.slow
def test_check_as_a_user_runs_it(paper_library, manuscript, run_cli):
    done = run_cli("check", "papers", str(manuscript), "--json", data_dir=paper_library.root)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["verdict"] for r in rows[:3]] == ["verbatim", "near_verbatim", "verbatim"]


def test_check_reads_standard_input(paper_library, monkeypatch, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(MANUSCRIPT))
    assert main(["--data-dir", str(paper_library.root), "check", "papers", "-", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 4


MEANING_MANUSCRIPT = """Karpukhin et al. (2020) write that \u201cwe find that adding a single BM25 negative
passage does not improve the result substantially while adding two does not help further\u201d.
They also report that \u201cDPR performs consistently better than BM25 on all datasets\u201d [1].

References
[1] V. Karpukhin, B. Oguz, S. Min. 2020. Dense passage retrieval for open-domain question answering.
"""


@pytest.fixture(scope="module")
def meaning_manuscript(tmp_path_factory):
    path = tmp_path_factory.mktemp("meaning") / "draft.md"
    path.write_text(MEANING_MANUSCRIPT, encoding="utf-8")
    return path


def test_check_reports_a_changed_meaning(paper_library, meaning_manuscript, capsys):
    argv = ["--data-dir", str(paper_library.root), "check", "papers", str(meaning_manuscript)]
    assert main([*argv, "--json"]) == 0  # no --fail-on: 0 whatever the outcomes
    rows = json.loads(capsys.readouterr().out)
    assert [(r["verdict"], r["meaning"]) for r in rows] == [("near_verbatim", "changed"), ("verbatim", "same")]
    assert rows[0]["meaning_cues"] == [{"kind": "negation", "claim": "does not improve", "source": "improves",
                                        "severity": "high"}]
    assert rows[1]["meaning_cues"] == []
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "! meaning changed: negation: claim \u201cdoes not improve\u201d \u00b7 source \u201cimproves\u201d" in out
    assert "Meaning changed (the source says otherwise): 1 statement." in out


def test_check_fail_on_exits_3_when_a_statement_has_the_outcome(paper_library, meaning_manuscript, capsys):
    argv = ["--data-dir", str(paper_library.root), "check", "papers", str(meaning_manuscript)]
    assert main([*argv, "--fail-on", "changed,not_found"]) == 3
    assert "--fail-on changed,not_found: statement #1." in capsys.readouterr().out
    assert main([*argv, "--fail-on", "changed", "--json"]) == 3
    assert len(json.loads(capsys.readouterr().out)) == 2
    assert main([*argv, "--fail-on", "not_found,misattributed"]) == 0
    assert main([*argv, "--fail-on", "verbatim"]) == 3
    capsys.readouterr()
    assert main([*argv, "--fail-on", "changed,wrong"]) == 2
    err = capsys.readouterr().err
    assert "--fail-on takes" in err and "not wrong" in err


def test_a_statement_too_long_to_check_says_why_in_the_table_and_the_json(paper_library, tmp_path, capsys):
    """Issue 27 row 18: never a bare not_found: the outcome is not_checked, with the reason."""
    path = tmp_path / "long.md"
    path.write_text("dense retrieval " * 1000 + " (Karpukhin et al., 2020).\n", encoding="utf-8")
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[1] == "not_checked"
    assert "! Not checked: The query is" in out and "the limit is 10,000" in out
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(path), "--json",
                 "--fail-on", "not_checked"]) == 3
    [row] = json.loads(capsys.readouterr().out)
    assert row["not_checked"] is True and row["outcome"] == "not_checked" and "limit is 10,000" in row["message"]



def test_a_cited_claim_too_short_to_check_says_so_in_the_table_and_the_json(paper_library, tmp_path, capsys):
    """Issue 27 row 14: "BERT helps (see Devlin et al., 2019, pp. 3-4)." was dropped without a word."""
    path = tmp_path / "pp.md"
    path.write_text("Dense retrieval outperforms BM25 [see @karpukhin2020dense, pp. 1-2].\n\n"
                    "BERT helps (see Devlin et al., 2019, pp. 3-4).\n", encoding="utf-8")
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(path)]) == 0
    out = capsys.readouterr().out
    assert "BERT helps" in out and "! Not checked: this cited claim is too short to check (2 words" in out
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["outcome"] == "not_checked" for r in rows] == [False, True]
    assert rows[1]["statement"].startswith("BERT helps") and "too short to check" in rows[1]["message"]
    assert rows[1]["cited"] == "(Devlin et al., 2019)"


def test_the_check_keeps_a_time_budget_and_says_what_it_left(paper_library, manuscript, capsys, monkeypatch):
    """A budget spent before the first statement (no clock is raced): every statement not_checked, said."""
    from rag_core.cli import check

    budgets = []
    monkeypatch.setattr(check, "_time_budget", lambda args, n: budgets.append((args.time_budget, n)) or 0.0)
    assert main(["--data-dir", str(paper_library.root), "check", "papers", str(manuscript), "--json",
                 "--time-budget", "42"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert budgets == [(42.0, 4)]
    assert [r["outcome"] for r in rows] == ["not_checked"] * 4
    assert all("time budget (0 s) ran out after 0 of 4 statements" in r["message"] for r in rows)


def test_the_default_time_budget_is_the_apps(monkeypatch):
    from argparse import Namespace

    from rag_core.cli.check import _time_budget
    from rag_core.settings import CHECK_SECONDS_BASE, CHECK_SECONDS_PER_STATEMENT

    assert _time_budget(Namespace(time_budget=None), 3) == CHECK_SECONDS_BASE + 3 * CHECK_SECONDS_PER_STATEMENT
    assert _time_budget(Namespace(time_budget=7.5), 3) == 7.5


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon", "1e99"])
def test_a_bad_time_budget_is_a_usage_error(value, capsys):
    assert main(["check", "papers", "x.md", "--time-budget", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rag-core: error: argument --time-budget")
