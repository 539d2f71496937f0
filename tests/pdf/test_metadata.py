"""The record read from a PDF: every author without marks, the year by the issue's precedence."""

from __future__ import annotations

import pytest

from rag_core.pdf.authors import clean_name, fix_spacing_accents, split_author_names
from rag_core.pdf.metadata import arxiv_year, find_arxiv_id, find_doi


def test_arxiv_year_and_ids():
    assert arxiv_year("2005.11401") == 2020 and arxiv_year("0807.3577") == 2008
    assert arxiv_year("hep-th/9901001") == 1999 and arxiv_year("1713.00001") is None
    assert find_arxiv_id("see arXiv:2005.11401v4 [cs.CL]") == "2005.11401"
    assert find_doi("doi:10.1088/1475-7516/2008/10/003.") == "10.1088/1475-7516/2008/10/003"
    assert find_doi("no identifier here") is None


def test_names_lose_their_marks_and_keep_their_accents():
    assert fix_spacing_accents("Barlas O\u02d8guz") == "Barlas O\u011fuz"
    assert fix_spacing_accents("Montr\u00b4eal") == "Montr\u00e9al"
    assert clean_name("Author: Jeffrey Morais") == "Jeffrey Morais"
    # the mark "a)" set as a superscript is read as a separator: ",a, "
    assert split_author_names("G. Rodary,a, J.-C. Girard, and Z.-Z. Wang") == ["G. Rodary", "J.-C. Girard",
                                                                              "Z.-Z. Wang"]
    assert split_author_names("Woo-Pyo Hong and Young-Dae Jung''") == ["Woo-Pyo Hong", "Young-Dae Jung"]
    assert split_author_names("Department of Physics, McGill University") == []


@pytest.mark.parametrize("name, first, count, year", [
    ("ml_retro_borgeaud2021_arxiv2112.04426.pdf", "Sebastian Borgeaud", 28, 2021),  # not "Borgeaudy"
    ("ml_rag_lewis2020_arxiv2005.11401.pdf", "Patrick Lewis", 12, 2020),  # the arXiv id's year, not the stamp's
    ("ml_transformer_vaswani2017_arxiv1706.03762v5.pdf", "Ashish Vaswani", 8, 2017),  # a grid of names
    ("ml_tableformer_yang2022_acl.pdf", "Jingfeng Yang", 6, 2022),
    ("ml_papermage_lo2023_emnlp-demo.pdf", "Kyle Lo", 17, 2023),  # the venue line
    ("cs_tracemonkey_gal2009_pldi.pdf", "Andreas Gal", 16, 2009),  # "Mozilla Corporation" is no author
    ("phys_de_sitter_vacua_susy_morais.pdf", "Jeffrey Morais", 1, None),  # the supervisor is not an author
])
def test_every_author_and_the_year_of_real_pdfs(pdf_dir, name, first, count, year):
    from rag_core.pdf.extraction import extract_pdf

    record = extract_pdf(pdf_dir / name).metadata
    assert record["authors"][0] == first and len(record["authors"]) == count
    assert not any(ch in "".join(record["authors"]) for ch in "\u2217\u2020\u2021\u03b1,")
    if year:
        assert record["year"] == year
    assert record["origin"]["authors"] == "pdf"


def test_origin_of_the_year_and_the_venue(pdf_dir):
    from rag_core.pdf.extraction import extract_pdf

    rag = extract_pdf(pdf_dir / "ml_rag_lewis2020_arxiv2005.11401.pdf").metadata
    assert rag["arxiv_id"] == "2005.11401" and rag["origin"]["year"] == "arxiv"
    ieee = extract_pdf(pdf_dir / "awkward_scanned_ocr_layer_ieee_imtc1996.pdf").metadata
    assert ieee["title"] == "A new PRBA-based instrument to measure the shape of the cornea"  # venue cut off
    assert ieee["year"] == 1996 and "Conference" in ieee["venue"]
