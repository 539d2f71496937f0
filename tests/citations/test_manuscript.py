"""Tests of rag_core.citations.manuscript: reading drafts, statements and their citations, batch check, exports."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from rag_core.citations.manuscript import (
    CheckRow,
    ManuscriptError,
    check_statements,
    extract_statements,
    manuscript_from_text,
    parse_citations,
    printable,
    read_manuscript,
    rows_to_csv,
    rows_to_html,
    rows_to_json,
)
from rag_core.index.build import build_index_from_chunks
from rag_core.text.chunking import PageText, chunk_pages

DRAFT = """# Dense retrieval, checked

## Introduction

Karpukhin et al. (2020) report that \u201cour dense retriever outperforms a strong Lucene-BM25 system greatly\u201d.
BERT \u201ccan be fine-tuned with just one additional output layer\u201d [2].
Lexical models remain strong baselines [3, 4].
Ranges are cited too [5-7].
Dense models may underperform BM25 (Thakur et al., 2021).
Several works agree (Lewis et al., 2020; Borgeaud et al., 2021).
We use the term "bad guy" loosely, e.g. in Fig. 2.
A sentence with no marker says nothing checkable.

## References

[1] V. Karpukhin, B. Oguz, S. Min, and W. Yih. 2020. Dense passage retrieval for open-domain question answering.
In EMNLP.
[2] Jacob Devlin, Ming-Wei Chang, Kenton Lee, and Kristina Toutanova. 2019. BERT: Pre-training of deep
bidirectional transformers for language understanding. In NAACL.
[3] Thakur, N., Reimers, N. (2021). BEIR: A heterogeneous benchmark. NeurIPS.
[4] S. Robertson and H. Zaragoza. 2009. The probabilistic relevance framework: BM25 and beyond.
"""


def statements_of(text: str, kind: str = "markdown"):
    manuscript = manuscript_from_text(text, kind=kind)
    return manuscript, manuscript.statements()


# ------------------------------------------------------------------ statements and markers


def test_statements_and_each_marker_style():
    manuscript, statements = statements_of(DRAFT)
    assert [r.key for r in manuscript.references] == ["1", "2", "3", "4"]
    assert manuscript.references[1].surnames[:2] == ["Devlin", "Chang"] and manuscript.references[1].year == 2019
    assert manuscript.references[1].title.startswith("BERT: Pre-training of deep bidirectional")
    assert manuscript.references[2].surnames == ["Thakur", "Reimers"]
    got = [(s.kind, s.text, [c.marker for c in s.citations]) for s in statements]
    assert got == [
        ("quote", "our dense retriever outperforms a strong Lucene-BM25 system greatly", ["Karpukhin et al. (2020)"]),
        ("quote", "can be fine-tuned with just one additional output layer", ["[2]"]),
        ("claim", "Lexical models remain strong baselines.", ["[3]", "[4]"]),
        ("claim", "Ranges are cited too.", ["[5]", "[6]", "[7]"]),
        ("claim", "Dense models may underperform BM25.", ["(Thakur et al., 2021)"]),
        ("claim", "Several works agree.", ["(Lewis et al., 2020)", "(Borgeaud et al., 2021)"]),
    ]
    karpukhin = statements[0].citations[0]
    assert karpukhin.surnames == ["Karpukhin"] and karpukhin.year == 2020
    assert karpukhin.reference.startswith("V. Karpukhin")  # resolved against the reference list
    devlin = statements[1].citations[0]
    assert devlin.surnames[0] == "Devlin" and devlin.year == 2019
    assert statements[2].citations[1].surnames == ["Robertson", "Zaragoza"]
    assert statements[3].citations[0].reference is None  # [5] is not in the list
    assert statements[0].line == 5


def test_latex_cite_and_bibitems(tmp_path):
    tex = r"""\documentclass{article}
\begin{document}
\section{Introduction}
As shown by \citet{devlin2019bert}, ``pre-trained representations reduce the need for many heavily-engineered
task-specific architectures''. Dense retrieval works well~\cite{karpukhin2020dense, lewis2020rag}. % a comment
\emph{Attention} is central~\citep[p.~3]{vaswani2017}.
\begin{thebibliography}{9}
\bibitem{devlin2019bert} J.~Devlin, M.~Chang, K.~Lee and K.~Toutanova. 2019. \newblock BERT: Pre-training of deep
bidirectional transformers. \newblock In NAACL.
\bibitem{karpukhin2020dense} V.~Karpukhin et al. 2020. Dense passage retrieval for open-domain QA.
\end{thebibliography}
\end{document}
"""
    path = tmp_path / "draft.tex"
    path.write_text(tex, encoding="utf-8")
    manuscript = read_manuscript(path)
    assert manuscript.kind == "latex"
    assert [r.key for r in manuscript.references] == ["devlin2019bert", "karpukhin2020dense"]
    statements = manuscript.statements()
    got = [(s.kind, s.text, [c.key for c in s.citations]) for s in statements]
    assert got[0] == ("quote", "pre-trained representations reduce the need for many heavily-engineered "
                      "task-specific architectures", ["devlin2019bert"])
    assert got[1] == ("claim", "Dense retrieval works well.", ["karpukhin2020dense", "lewis2020rag"])
    assert got[2][0] == "claim" and got[2][1] == "Attention is central." and got[2][2] == ["vaswani2017"]
    lewis = statements[1].citations[1]  # not in the bibliography: the key is read as surname + year
    assert lewis.surnames == ["Lewis"] and lewis.year == 2020 and lewis.reference is None
    devlin = statements[0].citations[0]
    assert devlin.surnames[0] == "Devlin" and devlin.reference.startswith("J. Devlin")


def test_plain_text_markdown_and_docx(tmp_path):
    text = ("Surveys agree on this point (Smith and Jones, 2018).\n\n"
            "A quote: \u201cthe quick brown fox jumps\u201d [1].\n")
    for suffix in (".txt", ".md"):
        path = tmp_path / f"draft{suffix}"
        path.write_bytes(("\ufeff" + text).encode("utf-8"))
        statements = read_manuscript(path).statements()
        assert [s.kind for s in statements] == ["claim", "quote"], suffix
        assert statements[0].citations[0].surnames == ["Smith", "Jones"]
    import docx

    document = docx.Document()
    for paragraph in text.split("\n\n"):
        document.add_paragraph(paragraph.strip())
    buffer = io.BytesIO()
    document.save(buffer)
    manuscript = read_manuscript(buffer.getvalue(), name="draft.docx")
    assert manuscript.kind == "docx"
    assert [s.text for s in manuscript.statements()] == ["Surveys agree on this point.", "the quick brown fox jumps"]


def test_a_pdf_manuscript(pdf_dir):
    """A real paper read as a manuscript: its author-year citations become statements."""
    manuscript = read_manuscript(pdf_dir / "ml_dpr_karpukhin2020_arxiv2004.04906.pdf")
    assert manuscript.kind == "pdf" and manuscript.references
    statements = manuscript.statements()
    assert len(statements) > 20
    markers = [c.marker for s in statements for c in s.citations]
    assert any(m.startswith(("(Devlin et al.", "Devlin et al.")) for m in markers)
    assert not any("\n" in s.text for s in statements)
    assert len(manuscript.references) > 30  # one per entry of the paper's reference list
    assert any(r.surnames[:1] == ["Devlin"] and r.year == 2019 for r in manuscript.references)
    assert not any("In Proceedings of" in s.sentence for s in statements)  # nothing from the reference list


def test_reading_errors(tmp_path):
    with pytest.raises(ManuscriptError, match=r"cannot read \.odt"):
        read_manuscript(b"whatever", name="draft.odt")
    with pytest.raises(ManuscriptError, match="binary"):
        read_manuscript(b"\x00\x01\x02binary", name="draft.txt")
    with pytest.raises(ManuscriptError, match="No such file"):
        read_manuscript(tmp_path / "missing.md")
    with pytest.raises(ManuscriptError, match="docx"):
        read_manuscript(b"not a zip", name="draft.docx")
    with pytest.raises(ManuscriptError):
        read_manuscript(b"%PDF-1.4 broken", name="draft.pdf")
    assert read_manuscript(b"no citations here at all.", name="x.txt").statements() == []


def test_short_quotes_are_terms_not_quotes():
    statements = extract_statements('We call it "bad guy" here. They wrote "a much longer quoted passage here".')
    assert [s.text for s in statements] == ["a much longer quoted passage here"]


def test_a_quote_ending_inside_its_quote_marks_keeps_its_mark_and_its_citation():
    text = ('They wrote "building the index on one server takes 8.5 hours." [2] Later work found '
            '"the question encoder is frozen during training." (Karpukhin et al., 2020). '
            '"A quote that ends with its full stop inside." The next sentence cites nothing. '
            'A last "quote that is cited after its full stop." [3]')
    statements = extract_statements(text)
    assert [(s.text, s.cited) for s in statements] == [
        ("building the index on one server takes 8.5 hours.", "[2]"),
        ("the question encoder is frozen during training.", "(Karpukhin et al., 2020)"),
        ("A quote that ends with its full stop inside.", ""),
        ("quote that is cited after its full stop.", "[3]"),
    ]


def test_parse_citations_reads_a_marker_typed_by_hand():
    references = manuscript_from_text(DRAFT, kind="markdown").references
    citations = parse_citations("[2]; (Thakur et al., 2021)", references=references)
    assert [c.marker for c in citations] == ["[2]", "(Thakur et al., 2021)"]
    assert citations[0].surnames[0] == "Devlin" and citations[0].year == 2019
    assert parse_citations("no marker here") == []


# ------------------------------------------------------------------ batch check


@pytest.fixture(scope="module")
def tiny_index():
    pages = {"gao.pdf": ["Gao, Jafferis and Wall show that a traversable wormhole opens in an eternal BTZ black hole. "
                         "Information can leak through the wormhole."],
             "temme.pdf": ["Zero-noise extrapolation mitigates errors in short-depth quantum circuits. "
                           "Error mitigation needs no extra qubits."]}
    chunks = []
    for source, texts in pages.items():
        for chunk in chunk_pages([PageText(1, t) for t in texts], source):
            chunk["doc_id"] = source
            chunks.append(chunk)
    return build_index_from_chunks(chunks, compute_embeddings=False)


def test_check_statements_with_progress_and_misattribution(tiny_index):
    documents = [{"source": "gao.pdf", "authors": ["Ping Gao", "Daniel Jafferis"], "year": 2017, "title": None},
                 {"source": "temme.pdf", "authors": ["Kristan Temme"], "year": 2017, "title": None}]
    text = ("Temme et al. (2017) write that \u201cinformation can leak through the wormhole\u201d.\n\n"
            "As Gao et al. (2017) put it, \u201cinformation can leak through the wormhole\u201d.\n\n"
            "Mitigation \u201cneeds no extra qubits at all times\u201d (Temme et al., 2017).\n\n"
            "Cats solved quantum gravity long ago [9].")
    statements = manuscript_from_text(text).statements()
    calls = []
    rows = check_statements(statements, tiny_index, documents=documents,
                            progress=lambda done, total, s: calls.append((done, total)))
    assert calls == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert [r.verdict for r in rows] == ["verbatim", "verbatim", "near_verbatim", "not_found"]
    assert [r.misattributed for r in rows] == [True, False, False, False]
    assert rows[0].cited_sources == ["temme.pdf"] and rows[0].source == "gao.pdf"
    assert rows[2].diff == "\u201cat all times\u201d added" and rows[2].page == 1
    assert rows[3].cited == "[9]" and rows[3].cited_sources == []
    assert rows[0].check.verdict == "verbatim"  # the full check is kept for the page
    row = rows[0].to_dict()
    for key in ("statement", "verdict", "source", "page", "page_label", "similarity", "cited", "misattributed"):
        assert key in row


# ------------------------------------------------------------------ exports


def _row(**kwargs) -> CheckRow:
    base = {"statement": "s", "kind": "quote", "verdict": "verbatim", "source": "a.pdf", "page": 3, "page_label": "iii",
                "similarity": 1.0, "similarity_kind": "wording", "diff": "", "cited": "[1]", "cited_sources": ["a.pdf"],
                "misattributed": False, "message": "Found word for word.", "line": 1}
    base.update(kwargs)
    return CheckRow(**base)


def test_csv_has_a_bom_and_neutralised_cells():
    rows = [_row(statement="=HYPERLINK(\"http://x\")"), _row(statement="+1", diff="-2"), _row(statement="@SUM(A1)"),
            _row(statement="\tTAB", source="\rCR.pdf"), _row(statement="e\ufb03cient \u201cquote\u201d")]
    data = rows_to_csv(rows)
    assert data.startswith(b"\xef\xbb\xbf")
    table = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    assert table[0][:4] == ["statement", "kind", "verdict", "source"]
    cells = [row[0] for row in table[1:]]
    assert cells[:4] == ["'=HYPERLINK(\"http://x\")", "'+1", "'@SUM(A1)", "'\tTAB"]
    assert table[2][table[0].index("diff")] == "'-2"
    assert table[4][table[0].index("source")] == "'\rCR.pdf"
    assert cells[4] == "e\ufb03cient \u201cquote\u201d"  # ligatures and curly quotes kept
    assert table[1][table[0].index("similarity")] == "1.0"
    assert table[1][table[0].index("misattributed")] == "no"


def test_json_export():
    data = json.loads(rows_to_json([_row(), _row(verdict="not_found", source=None, page=None, similarity=None)]))
    assert data[0]["verdict"] == "verbatim" and data[1]["source"] is None
    assert set(data[0]) >= {"statement", "verdict", "source", "page", "page_label", "similarity", "cited",
                            "misattributed"}


def test_html_report_is_escaped_and_self_contained():
    evil = '<script>alert(1)</script><img src="http://evil/x.png">'
    page = rows_to_html([_row(statement=evil, source="<b>doc</b>.pdf", diff="a \u2192 <i>b</i>",
                              message="<a href='http://x'>x</a>", misattributed=True),
                         _row(verdict="near_verbatim", page_label=None)], title="Report <1>")
    assert "<script" not in page and "<img" not in page and "<b>doc" not in page and "<i>b" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;b&gt;doc&lt;/b&gt;.pdf" in page
    assert "Report &lt;1&gt;" in page
    assert not re.search(r"<[^>]+\s(?:src|href)\s*=", page)  # no external resource, no link
    assert "<link" not in page and "@import" not in page
    assert "different document than the one cited" in page
    assert "Verbatim: 1" in page and "Near verbatim: 1" in page
    assert "p.&nbsp;3 (printed iii)" in page


def test_printable_strips_control_characters():
    # whole escape sequences go (shown as ␛), so no "[31m" remnant reaches the terminal (issue 22)
    assert printable("a\x1b[31mred\x1b[0m\x07b\u202eevil\nline\tx") == "a␛red␛bevil line x"
    assert printable("x\x1b[2J\x1b]0;pwned\x07y") == "x␛␛y"
    assert printable(None) == ""
