"""``rag-core check``: a statement whose cited work is not in the collection says so as its outcome,
shows what was found elsewhere for reference only, is counted apart, and ``--fail-on
not_in_collection`` flags it (issue 28)."""

from __future__ import annotations

import json

from rag_core.cli import main

DRAFT = """Dense retrieval works. Karpukhin et al. (2020) write that \u201cour dense retriever outperforms a
strong Lucene-BM25 system greatly by 9%-19% absolute\u201d.
Committees of cats have solved quantum gravity [2].

References
[1] V. Karpukhin, B. Oguz, S. Min. 2020. Dense passage retrieval for open-domain question answering.
[2] A. Cat. 1850. Quantum gravity, solved.
"""


def test_the_cli_says_not_in_collection(paper_library, tmp_path, capsys):
    path = tmp_path / "draft.md"
    path.write_text(DRAFT, encoding="utf-8")
    base = ["--data-dir", str(paper_library.root), "check", "papers", str(path)]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "#2   not_in_collection" in out
    assert "the cited work is not in the collection" in out
    assert "1 verbatim, 0 near_verbatim, 0 related, 0 not_found, 1 not in collection;" in out
    assert main([*base, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["outcome"] for r in rows] == ["verbatim", "not_in_collection"]
    assert rows[1]["meaning"] == "unclear" and rows[1]["meaning_cues"] == []
    assert {p["role"] for p in rows[1]["evidence"]} <= {"for reference"}
    assert main([*base, "--fail-on", "not_in_collection"]) == 3
    assert "--fail-on not_in_collection: statement #2." in capsys.readouterr().out
