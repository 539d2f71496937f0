"""Reference lists read as a reader reads them (issue 27, rows 12-17): numbered entries with the
year last, "et al." and initials; gaps in the numbering; locators; a sentence that starts with its
citation; two entries with one first author and year; what a LaTeX draft names; Word field codes
that are not what they say. Above all: a citation never resolves to a different paper with the same
first author and year (M. Lewis's BART is not P. Lewis's RAG)."""

from __future__ import annotations

import json

import pytest

from rag_core.citations.manuscript import manuscript_from_text, read_manuscript
from rag_core.citations.references import parse_reference, split_references
from rag_core.citations.resolution import resolve_citation
from rag_core.testing import make_field_code_docx

DOCUMENTS = [
    {"source": "rag.pdf", "authors": ["Patrick Lewis", "Ethan Perez"], "year": 2020,
     "title": "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks"},
    {"source": "bert.pdf", "authors": ["Jacob Devlin", "Ming-Wei Chang"], "year": 2018,
     "title": "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"},
    {"source": "transformer.pdf", "authors": ["Ashish Vaswani", "Noam Shazeer"], "year": 2017,
     "title": "Attention Is All You Need"},
    {"source": "beir.pdf", "authors": ["Nandan Thakur", "Nils Reimers"], "year": 2021,
     "title": "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of Information Retrieval Models"},
]
REFERENCES = """References

[1] J. Devlin, M.-W. Chang, K. Lee, and K. Toutanova. BERT: Pre-training of deep bidirectional transformers.
In NAACL, 2019.
[2] M. Lewis, Y. Liu, and N. Goyal. BART: Denoising sequence-to-sequence pre-training. In ACL, 2020.
[3] A. Vaswani et al. Attention is all you need. In NIPS, 2017.
"""


def resolved(text: str) -> list[tuple[str, str, str | None]]:
    """(marker, status, source) of every citation of the text's statements."""
    manuscript = manuscript_from_text(text)
    return [(c.marker, (r := resolve_citation(c, DOCUMENTS)).status, r.source)
            for s in manuscript.statements() for c in s.citations]


# ------------------------------------------------------------------ row 12: entries, initials, the wrong Lewis


@pytest.mark.parametrize("entry, surnames, initial, year, title", [
    ("M. Lewis, Y. Liu, and N. Goyal. BART: Denoising sequence-to-sequence pre-training. In ACL, 2020.",
     ["Lewis", "Liu", "Goyal"], "M", 2020, "BART: Denoising sequence-to-sequence pre-training"),
    ("A. Vaswani et al. Attention is all you need. In NIPS, 2017.", ["Vaswani"], "A", 2017,
     "Attention is all you need"),
    ('J. Devlin, M.-W. Chang, K. Lee, and K. Toutanova, "BERT: Pre-training of deep bidirectional transformers," in '
     "Proc. NAACL-HLT, 2019, pp. 4171\u20134186.", ["Devlin", "Chang", "Lee", "Toutanova"], "J", 2019,
     "BERT: Pre-training of deep bidirectional transformers"),
    ("Devlin, J., Chang, M.-W., Lee, K., & Toutanova, K. (2019). BERT: Pre-training of deep bidirectional "
     "transformers. In Proceedings of NAACL-HLT (pp. 4171\u20134186).", ["Devlin", "Chang", "Lee", "Toutanova"], "J",
     2019, "BERT: Pre-training of deep bidirectional transformers"),
    ("Devlin, J., Chang, M.-W., Lee, K. & Toutanova, K. BERT: pre-training of deep bidirectional transformers. In "
     "Proc. NAACL-HLT 4171\u20134186 (2019).", ["Devlin", "Chang", "Lee", "Toutanova"], "J", 2019,
     "BERT: pre-training of deep bidirectional transformers"),
    ("Devlin J, Chang MW, Lee K, Toutanova K. BERT: pre-training of deep bidirectional transformers. In: "
     "Proceedings of NAACL-HLT; 2019. p. 4171-86.", ["Devlin", "Chang", "Lee", "Toutanova"], "J", 2019,
     "BERT: pre-training of deep bidirectional transformers"),
    ("Jacob Devlin, Ming-Wei Chang, Kenton Lee, and Kristina Toutanova. 2019. BERT: Pre-training of deep "
     "bidirectional transformers. In NAACL, pages 4171\u20134186.", ["Devlin", "Chang", "Lee", "Toutanova"], "J", 2019,
     "BERT: Pre-training of deep bidirectional transformers"),
    ("Lewis, P. et al. Retrieval-augmented generation for knowledge-intensive NLP tasks. arXiv:2005.11401 (2020).",
     ["Lewis"], "P", 2020, "Retrieval-augmented generation for knowledge-intensive NLP tasks"),
])
def test_an_entry_is_read_as_a_reader_reads_it(entry, surnames, initial, year, title):
    reference = parse_reference(entry)
    assert reference.surnames == surnames
    assert reference.first_initial == initial
    assert reference.year == year
    assert reference.title == title


def test_bart_by_m_lewis_is_not_rag_by_p_lewis():
    got = resolved("Denoising sequence-to-sequence pretraining helps generation [2].\n\n"
                   "BERT is designed to pretrain deep bidirectional representations [1].\n\n" + REFERENCES)
    assert got == [("[2]", "not_in_collection", None), ("[1]", "matched", "bert.pdf")]


@pytest.mark.parametrize("entry", [
    "[2] M. Lewis. 2020.",  # no title read: the first initial alone blocks it
    "[2] P. Lewis. BART: Denoising sequence-to-sequence pre-training. In ACL, 2020.",  # the title alone blocks it
    "[2] Lewis, M. (2020). Something else entirely.",
])
def test_an_initial_or_a_title_that_disagrees_blocks_a_match(entry):
    (got,) = resolved(f"Denoising helps generation [2].\n\nReferences\n\n{entry}\n")
    assert got[1] == "not_in_collection"


def test_a_made_up_devlin_2019_is_not_bert_and_the_right_one_is():
    got = resolved("Deep models need data [1]. BERT pretrains bidirectional representations [2].\n\nReferences\n\n"
                   "[1] J. Devlin and A. Smith. Scaling laws for the pretraining of recurrent parsers. In ACL, 2019.\n"
                   "[2] J. Devlin et al. BERT: Pre-training of deep bidirectional transformers for language "
                   "understanding. In NAACL, 2019.\n")
    assert got == [("[1]", "not_in_collection", None), ("[2]", "matched", "bert.pdf")]


def test_the_first_author_is_never_in():
    _, references = split_references("x\n\n" + REFERENCES)
    assert [r.surnames[0] for r in references] == ["Devlin", "Lewis", "Vaswani"]


# ------------------------------------------------------------------ row 13: a gap in the numbering


def test_a_gap_in_the_numbering_does_not_glue_entries():
    text = ("Zero-shot retrieval is hard [5].\n\nBM25 is strong [8].\n\nReferences\n\n"
            "[5] N. Thakur, N. Reimers, A. Ruckle. BEIR: A heterogeneous benchmark for zero-shot evaluation of "
            "information retrieval models. 2021.\n"
            "[8] S. Robertson and H. Zaragoza. The probabilistic relevance framework: BM25 and beyond. 2009.\n")
    _, references = split_references(text)
    assert [(r.key, r.surnames[0], r.year) for r in references] == [("5", "Thakur", 2021), ("8", "Robertson", 2009)]
    assert resolved(text) == [("[5]", "matched", "beir.pdf"), ("[8]", "not_in_collection", None)]


def test_numbered_lists_with_and_without_brackets():
    for first, second in (("1.", "2."), ("(1)", "(3)"), ("1", "2")):
        _, references = split_references(
            f"x\n\nReferences\n\n{first} Devlin J, Chang MW. BERT: pre-training. In: NAACL; 2019. p. 4171-\n86.\n"
            f"{second} Lewis M, Liu Y. BART: denoising. In: ACL; 2020.\n")
        assert [(r.surnames[0], r.year) for r in references] == [("Devlin", 2019), ("Lewis", 2020)], first


def test_a_page_number_that_starts_a_line_is_not_an_entry():
    _, references = split_references("x\n\nReferences\n\n1. Devlin, J. BERT. In NAACL, pages 220-\n228. 2019.\n"
                                     "2. Lewis, M. BART. 2020.\n")
    assert [r.key for r in references] == ["1", "2"] and references[0].year == 2019


# ------------------------------------------------------------------ row 14: locators


@pytest.mark.parametrize("text, marker", [
    ("Dense retrieval outperforms BM25 [see @karpukhin2020dense, pp. 1-2].", "[@karpukhin2020dense]"),
    ("BERT helps classification (see Devlin et al., 2019, pp. 3-4).", "(Devlin et al., 2019)"),
    ("BERT helps classification (Devlin et al., 2019, chap. 3).", "(Devlin et al., 2019)"),
    ("Dense retrieval works well [4, pp. 4-5].", "[4]"),
    ("Dense retrieval works well [4, chap. 3].", "[4]"),
])
def test_a_locator_neither_splits_the_sentence_nor_loses_the_statement(text, marker):
    statements = manuscript_from_text(text + " A second sentence follows it.").statements()
    assert [(s.text.split()[0], [c.marker for c in s.citations]) for s in statements] == [(text.split()[0], [marker])]



@pytest.mark.parametrize("text", ["BERT helps (see Devlin et al., 2019, pp. 3-4).", "BERT helps [4, chap. 3].",
                                  "Helps (Devlin et al., 2019)."])
def test_a_cited_claim_too_short_to_check_is_kept_and_reported_not_dropped(text):
    """Row 14: a cited sentence never disappears: a claim under the minimum is a row not_checked, said why."""
    from rag_core.citations.manuscript import check_statements
    from rag_core.index.build import build_index_from_chunks
    from rag_core.text.chunking import PageText, chunk_pages

    chunks = [dict(c, doc_id="bert.pdf") for c in chunk_pages([PageText(1, "BERT helps a lot.")], "bert.pdf")]
    tiny_index = build_index_from_chunks(chunks, compute_embeddings=False)
    statements = manuscript_from_text(text + "\n\n" + REFERENCES).statements()
    assert [(s.kind, s.too_short) for s in statements] == [("claim", True)]
    [row] = check_statements(statements, tiny_index, documents=DOCUMENTS)
    assert row.not_checked and row.to_dict()["outcome"] == "not_checked"
    assert "too short to check" in row.message and "at least 3" in row.message
    assert row.cited == statements[0].cited


def test_a_sentence_of_markers_alone_states_nothing():
    assert manuscript_from_text("[1]. [2, pp. 3-4].\n\n" + REFERENCES).statements() == []


def test_a_latex_page_note_keeps_the_statement(tmp_path):
    path = tmp_path / "d.tex"
    path.write_text("\\begin{document}\nAttention is central~\\citep[p.~3]{vaswani2017}. So is data "
                    "\\citep[chap.~3]{devlin2019}.\n\\end{document}\n", encoding="utf-8")
    statements = read_manuscript(path).statements()
    assert [(s.text, s.cited) for s in statements] == [("Attention is central.", "\\cite{vaswani2017}"),
                                                       ("So is data.", "\\cite{devlin2019}")]


# ------------------------------------------------------------------ row 15: a sentence that starts with its citation


def test_a_numeric_marker_that_starts_a_sentence_stays_with_it():
    statements = manuscript_from_text("BERT pretrains deep bidirectional representations [1]. [3] propose a network "
                                      "based solely on attention mechanisms.\n\n" + REFERENCES).statements()
    assert [(s.text, s.cited) for s in statements] == [
        ("BERT pretrains deep bidirectional representations.", "[1]"),
        ("propose a network based solely on attention mechanisms.", "[3]")]


def test_a_marker_after_a_quote_still_belongs_to_the_quote():
    statements = manuscript_from_text('They find that "building the index takes 8.5 hours on one server." [2] '
                                      "They also note more.").statements()
    assert [(s.kind, s.cited) for s in statements] == [("quote", "[2]")]


def test_a_latex_citet_that_starts_a_sentence_is_its_own_statement(tmp_path):
    path = tmp_path / "d.tex"
    path.write_text("\\begin{document}\nBERT is designed to pretrain deep representations \\cite{devlin2019bert}.\n"
                    "\\citet{vaswani2017attention} propose a network based solely on attention.\n"
                    "[@lewis2020] show that retrieval helps generation.\n\\end{document}\n", encoding="utf-8")
    statements = read_manuscript(path).statements()
    assert [s.cited for s in statements] == ["\\cite{devlin2019bert}", "\\cite{vaswani2017attention}",
                                             "[@lewis2020]"]
    assert statements[1].text == "propose a network based solely on attention."


# ------------------------------------------------------------------ row 16: LaTeX's bibliography


def _two_lewis_draft(folder, bibliography="refs"):
    (folder / "refs.bib").write_text(
        "@article{lewis2020rag, title={Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks}, "
        "author={Lewis, Patrick}, year={2020}}\n"
        "@article{lewis2020bart, title={BART: Denoising Sequence-to-Sequence Pre-training}, author={Lewis, Mike}, "
        "year={2020}}\n", encoding="utf-8")
    path = folder / "d.tex"
    path.write_text("\\begin{document}\nDenoising autoencoders help text generation \\cite{lewis2020}.\n"
                    "Retrieval helps generation \\cite{lewis2020rag}.\n"
                    "Denoising helps generation \\cite{lewis2020bart}.\n"
                    f"\\bibliography{{{bibliography}}}\n\\end{{document}}\n", encoding="utf-8")
    return path


def test_a_key_missing_from_a_bib_with_two_lewis_2020_is_ambiguous(tmp_path):
    manuscript = read_manuscript(_two_lewis_draft(tmp_path))
    statements = manuscript.statements()
    results = [resolve_citation(s.citations[0], DOCUMENTS) for s in statements]
    assert [(r.status, r.source, r.candidates) for r in results] == [
        ("ambiguous", None, ["rag.pdf"]), ("matched", "rag.pdf", ["rag.pdf"]), ("not_in_collection", None, [])]
    assert "2 entries of refs.bib are Lewis 2020" in results[0].why
    # \bibliography{refs} is not text: it is appended to no statement
    assert statements[-1].text == "Denoising helps generation."
    assert "refs" not in manuscript.text


def test_a_bibliography_outside_the_drafts_folder_is_not_read(tmp_path):
    draft_folder = tmp_path / "draft"
    draft_folder.mkdir()
    outside = tmp_path / "x.bib"
    outside.write_text("@article{lewis2020rag, title={Retrieval-Augmented Generation}, author={Lewis, Patrick}, "
                       "year={2020}}\n", encoding="utf-8")
    path = _two_lewis_draft(draft_folder, bibliography=f"../x,{outside.with_suffix('')},refs")
    (draft_folder / "link.bib").symlink_to(outside)
    path.write_text(path.read_text().replace("{../x,", "{link,../x,"), encoding="utf-8")
    manuscript = read_manuscript(path)
    outside_notes = [n for n in manuscript.notes if "outside the draft's folder" in n]
    assert len(outside_notes) == 3, manuscript.notes  # ../x.bib, /abs/x.bib and a link that leads out
    assert sum(1 for r in manuscript.references if r.key == "lewis2020rag") == 1  # refs.bib's only


# ------------------------------------------------------------------ row 17: Word field codes


def _docx(code: str) -> bytes:
    return make_field_code_docx([[("BERT is designed to pretrain deep bidirectional representations ", None),
                                  ("(Devlin et al., 2019)", code), (".", None)]])


@pytest.mark.parametrize("payload", [
    {"citationItems": 5},
    {"citationItems": [{"itemData": "Devlin 2019"}]},
    {"citationItems": [5, None]},
    {"citationItems": [{"itemData": {"author": 5, "issued": "x", "title": ["BERT"]}}]},
    [1, 2],
    "just a string",
])
def test_a_field_code_of_the_wrong_shape_is_a_note_not_a_traceback(tmp_path, payload):
    path = tmp_path / "f.docx"
    path.write_bytes(_docx("ADDIN ZOTERO_ITEM CSL_CITATION " + json.dumps(payload)))
    manuscript = read_manuscript(path)
    (statement,) = manuscript.statements()
    assert statement.cited == "(Devlin et al., 2019)"
    assert resolve_citation(statement.citations[0], DOCUMENTS).source == "bert.pdf"  # by its look
    if payload != {"citationItems": [{"itemData": {"author": 5, "issued": "x", "title": ["BERT"]}}]}:
        assert any("could not be read" in n for n in manuscript.notes), manuscript.notes


def test_a_10_mb_field_code_is_skipped_with_a_note_and_the_draft_is_read(tmp_path):
    path = tmp_path / "f10.docx"
    path.write_bytes(_docx('ADDIN ZOTERO_ITEM CSL_CITATION {"pad": "' + "x" * 10_000_000 + '"}'))
    manuscript = read_manuscript(path)
    (statement,) = manuscript.statements()
    assert statement.text == "BERT is designed to pretrain deep bidirectional representations."
    (note,) = [n for n in manuscript.notes if "skipped" in n]
    assert "1 field code skipped (10,000,042 characters" in note
