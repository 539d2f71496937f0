"""Part of the reference-list benchmark (benchmarks/bench_reference_lists.py): the dev set's seven
styles, written by hand in benchmarks/data/reference_lists.json, against the records the shared
PDFs give (as read at ingest: docs/metadata.md). Every entry is resolved to its document or to
"not in collection"; none to another paper with the same first author and year."""

from __future__ import annotations

import json

import pytest

from rag_core.citations.manuscript import manuscript_from_text
from rag_core.citations.resolution import resolve_citation
from tests.support import REPO

DATA = json.loads((REPO / "benchmarks" / "data" / "reference_lists.json").read_text(encoding="utf-8"))
# The records of the shared PDFs the dev set cites, as the PDFs give them (first authors, years
# of the arXiv versions: BERT 2018, RETRO 2021), and two of their neighbours.
DOCUMENTS = [
    {"source": "ml_bert_devlin2018_arxiv1810.04805.pdf", "authors": ["Jacob Devlin", "Ming-Wei Chang", "Kenton Lee"],
     "year": 2018, "title": "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"},
    {"source": "ml_rag_lewis2020_arxiv2005.11401.pdf", "authors": ["Patrick Lewis", "Ethan Perez"], "year": 2020,
     "title": "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks"},
    {"source": "ml_dpr_karpukhin2020_arxiv2004.04906.pdf", "authors": ["Vladimir Karpukhin", "Barlas Oğuz"],
     "year": 2020, "title": "Dense Passage Retrieval for Open-Domain Question Answering"},
    {"source": "ml_transformer_vaswani2017_arxiv1706.03762v5.pdf", "authors": ["Ashish Vaswani", "Noam Shazeer"],
     "year": 2017, "title": "Attention Is All You Need"},
    {"source": "ml_beir_thakur2021_arxiv2104.08663v4.pdf", "authors": ["Nandan Thakur", "Nils Reimers"], "year": 2021,
     "title": "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of Information Retrieval Models"},
    {"source": "ml_retro_borgeaud2021_arxiv2112.04426.pdf", "authors": ["Sebastian Borgeaud", "Arthur Mensch"],
     "year": 2021, "title": "Improving language models by retrieving from trillions of tokens"},
    {"source": "ml_s2orc_lo2020_acl2020-main447.pdf", "authors": ["Kyle Lo", "Lucy Lu Wang"], "year": 2020,
     "title": "S2ORC: The Semantic Scholar Open Research Corpus"},
    {"source": "ml_seal_bevilacqua2022_arxiv2204.10628.pdf", "authors": ["Michele Bevilacqua", "Giuseppe Ottaviano"],
     "year": 2022, "title": "Autoregressive Search Engines: Generating Substrings as Document Identifiers"},
    {"source": "ml_papermage_lo2023_emnlp-demo.pdf", "authors": ["Kyle Lo", "Zejiang Shen"], "year": 2023,
     "title": "PaperMage: A Unified Toolkit for Processing, Representing, and Manipulating Visually-Rich Scientific "
              "Documents"},
    {"source": "cs_tracemonkey_gal2009_pldi.pdf", "authors": ["Andreas Gal", "Brendan Eich"], "year": 2009,
     "title": "Trace-based Just-in-Time Type Specialization for Dynamic Languages"},
]


def _manuscript(style: dict, entries: list[dict]) -> str:
    lines, refs = [], []
    for n, item in enumerate(entries, start=1):
        if style.get("numbering"):
            lines.append(f"This was shown before in earlier work [{n}].")
            refs.append(style["numbering"].format(n=n) + item["entry"])
        else:
            marker = item["marker"]
            lines.append(f"{marker} describe a method that we build on." if not marker.startswith("(")
                         else f"This was shown before in earlier work {marker}.")
            refs.append(item["entry"])
    return "\n\n".join(lines) + "\n\nReferences\n\n" + "\n".join(refs) + "\n"


@pytest.mark.parametrize("style", sorted(DATA["sets"]["dev"]))
def test_every_entry_of_a_style_is_its_document_or_not_in_the_collection(style):
    entries = DATA["sets"]["dev"][style]
    statements = manuscript_from_text(_manuscript(DATA["styles"][style], entries)).statements()
    assert len(statements) == len(entries)
    got, want = [], []
    for statement, item in zip(statements, entries, strict=True):
        (citation,) = statement.citations
        resolution = resolve_citation(citation, DOCUMENTS)
        got.append((item["work"], resolution.status, resolution.source))
        file = DATA["works"][item["work"]]["file"]
        want.append((item["work"], "matched", file) if file else (item["work"], "not_in_collection", None))
    assert got == want


def test_the_set_has_its_traps():
    traps = {work for work, info in DATA["works"].items() if info.get("trap")}
    assert {"bart", "paq", "devlin_madeup", "augsbert"} <= traps
    for style in DATA["sets"]["dev"].values():
        assert {item["work"] for item in style} >= {"bart", "rag", "devlin_madeup", "bert"}
