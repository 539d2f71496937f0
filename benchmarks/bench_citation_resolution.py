"""Citation resolution on each manuscript format (not a test): how many citations are matched to
the document they mean, in a collection of the 25 shared PDFs (records as read from the PDFs).

    HF_HUB_OFFLINE=1 python benchmarks/bench_citation_resolution.py [--data-dir DIR]

Eight works of the collection, each cited once with a real sentence of its first page, in each
form a manuscript takes: plain author-year text ("Lewis et al., 2020", "Lewis and Perez (2020)",
groups "(A et al. 2020; B et al. 2020)"), author-year with the arXiv year where the venue year
differs, a numeric list, LaTeX ``\\cite`` keys through a ``.bib``, pandoc ``[@key]`` with a
``.bib``, CSL-JSON and RIS given as ``--bib``, and a ``.docx`` whose citations carry Zotero field
codes; plus two works that are not in the collection (they must come out ``not in collection``,
never misattributed). Prints, per format: matched to the right document, ambiguous, not in
collection, wrong document. The collection is built without embeddings (TF-IDF, key words).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
PDFS = REPO.parent / "shared" / "data" / "pdfs"

# key, file, first author, given name, venue year, arXiv year, arXiv id or DOI, title
WORKS = [
    ("lewis2020rag", "ml_rag_lewis2020_arxiv2005.11401.pdf", "Lewis", "Patrick", 2020, 2020, "arxiv:2005.11401",
     "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks"),
    ("karpukhin2020dpr", "ml_dpr_karpukhin2020_arxiv2004.04906.pdf", "Karpukhin", "Vladimir", 2020, 2020,
     "arxiv:2004.04906", "Dense Passage Retrieval for Open-Domain Question Answering"),
    ("devlin2019bert", "ml_bert_devlin2018_arxiv1810.04805.pdf", "Devlin", "Jacob", 2019, 2018, "arxiv:1810.04805",
     "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"),
    ("vaswani2017", "ml_transformer_vaswani2017_arxiv1706.03762v5.pdf", "Vaswani", "Ashish", 2017, 2017,
     "arxiv:1706.03762", "Attention Is All You Need"),
    ("borgeaud2022retro", "ml_retro_borgeaud2021_arxiv2112.04426.pdf", "Borgeaud", "Sebastian", 2022, 2021,
     "arxiv:2112.04426", "Improving language models by retrieving from trillions of tokens"),
    ("thakur2021beir", "ml_beir_thakur2021_arxiv2104.08663v4.pdf", "Thakur", "Nandan", 2021, 2021,
     "arxiv:2104.08663", "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of Information Retrieval Models"),
    ("lo2020s2orc", "ml_s2orc_lo2020_acl2020-main447.pdf", "Lo", "Kyle", 2020, 2020,
     "doi:10.18653/v1/2020.acl-main.447", "S2ORC: The Semantic Scholar Open Research Corpus"),
    ("bolejko2008", "phys_jcap2008_apparent_average_accelerations_arxiv0807.3577.pdf", "Bolejko", "Krzysztof", 2008,
     2008, "doi:10.1088/1475-7516/2008/10/003", "Apparent and average accelerations of the Universe"),
]
ABSENT = [("izacard2021fid", "Izacard", "Gautier", 2021, "Leveraging Passage Retrieval with Generative Models"),
          ("guu2020realm", "Guu", "Kelvin", 2020, "REALM: Retrieval-Augmented Language Model Pre-Training")]
CLAIM = "{who} describe a method that we build on in this work"


def _bib(works, absent) -> str:
    out = []
    for key, _, surname, given, year, _, ident, title in works:
        extra = (f"eprint = {{{ident[6:]}}}, archivePrefix = {{arXiv}}" if ident.startswith("arxiv:")
                 else f"doi = {{{ident[4:]}}}")
        out.append(f"@article{{{key}, author = {{{surname}, {given} and Other, Anne}}, title = {{{title}}}, "
                   f"year = {{{year}}}, {extra}}}")
    for key, surname, given, year, title in absent:
        out.append(f"@article{{{key}, author = {{{surname}, {given}}}, title = {{{title}}}, year = {{{year}}}}}")
    return "\n".join(out)


def _csl_item(key, surname, given, year, title, ident=None) -> dict:
    item = {"id": key, "type": "article-journal", "title": title, "author": [{"family": surname, "given": given}],
            "issued": {"date-parts": [[year]]}}
    if ident and ident.startswith("arxiv:"):
        item["URL"] = f"https://arxiv.org/abs/{ident[6:]}"
    elif ident:
        item["DOI"] = ident[4:]
    return item


def manuscripts(folder: Path) -> dict[str, tuple[Path, Path | None]]:
    """Each format's manuscript (and its records file)."""
    from rag_core.testing import make_field_code_docx, zotero_field_code

    items = [(w[0], w[2], w[4], w[5], w) for w in WORKS]
    out: dict[str, tuple[Path, Path | None]] = {}
    lines = [CLAIM.format(who=f"{s} et al. ({y})") + "." for _, s, y, _, _ in items]
    lines += [CLAIM.format(who=f"{s} et al. ({y})") + "." for _, s, _, y, _ in [(a[0], a[1], a[3], a[3], a)
                                                                                  for a in ABSENT]]
    (folder / "author-year.md").write_text("\n\n".join(lines), encoding="utf-8")
    out["author-year text (venue year)"] = (folder / "author-year.md", None)
    lines = [f"This was shown before ({s} et al., {ay})." for _, s, _, ay, _ in items]
    lines += [f"This was shown before ({a[1]} et al., {a[3]})." for a in ABSENT]
    (folder / "arxiv-year.md").write_text("\n\n".join(lines), encoding="utf-8")
    out["author-year text (arXiv year)"] = (folder / "arxiv-year.md", None)
    refs = [f"[{n}] {w[2]}, {w[3][0]}. et al. {w[7]}. {w[4]}." for n, w in enumerate(WORKS, 1)]
    refs += [f"[{n}] {a[1]}, {a[2][0]}. {a[4]}. {a[3]}." for n, a in enumerate(ABSENT, len(WORKS) + 1)]
    lines = [f"This was shown before [{n}]." for n in range(1, len(WORKS) + len(ABSENT) + 1)]
    (folder / "numeric.md").write_text("\n\n".join(lines) + "\n\nReferences\n\n" + "\n".join(refs), encoding="utf-8")
    out["numeric with a reference list"] = (folder / "numeric.md", None)
    bib = folder / "refs.bib"
    bib.write_text(_bib(WORKS, ABSENT), encoding="utf-8")
    keys = [w[0] for w in WORKS] + [a[0] for a in ABSENT]
    tex = "\\documentclass{article}\\begin{document}\n" + "\n\n".join(
        f"This was shown before \\citep{{{k}}}." for k in keys) + "\n\\bibliography{refs}\n\\end{document}\n"
    (folder / "draft.tex").write_text(tex, encoding="utf-8")
    out["LaTeX \\cite + .bib beside"] = (folder / "draft.tex", None)
    (folder / "pandoc.md").write_text("\n\n".join(f"This was shown before [@{k}]." for k in keys), encoding="utf-8")
    out["pandoc [@key] + --bib .bib"] = (folder / "pandoc.md", bib)
    csl = [_csl_item(w[0], w[2], w[3], w[4], w[7], w[6]) for w in WORKS] + [_csl_item(a[0], a[1], a[2], a[3], a[4])
                                                                          for a in ABSENT]
    (folder / "refs.json").write_text(json.dumps(csl), encoding="utf-8")
    out["pandoc [@key] + --bib CSL-JSON"] = (folder / "pandoc.md", folder / "refs.json")
    ris = []
    for item in csl:
        author = item["author"][0]
        ris += ["TY  - JOUR", f"ID  - {item['id']}", f"AU  - {author['family']}, {author['given']}",
                f"TI  - {item['title']}", f"PY  - {item['issued']['date-parts'][0][0]}"]
        if item.get("DOI"):
            ris.append(f"DO  - {item['DOI']}")
        if item.get("URL"):
            ris.append(f"UR  - {item['URL']}")
        ris.append("ER  - ")
    (folder / "refs.ris").write_text("\n".join(ris) + "\n", encoding="utf-8")
    out["pandoc [@key] + --bib RIS"] = (folder / "pandoc.md", folder / "refs.ris")
    paragraphs = []
    for item in csl:
        shown = f"({item['author'][0]['family']} et al., {item['issued']['date-parts'][0][0]})"
        paragraphs.append([("This was shown before ", None), (shown, zotero_field_code([item], shown)), (".", None)])
    (folder / "draft.docx").write_bytes(make_field_code_docx(paragraphs))
    out[".docx with Zotero field codes"] = (folder / "draft.docx", None)
    return out


def main() -> int:
    from rag_core import Library
    from rag_core.citations.manuscript import read_manuscript
    from rag_core.citations.resolution import resolve_citation

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "rag-core-bench-resolution")
    args = parser.parse_args()
    library = Library(args.data_dir)
    if not library.exists("shared"):
        t = time.time()
        library.add_pdfs("shared", sorted(PDFS.glob("*.pdf")), compute_embeddings=False)
        print(f"built the collection in {time.time() - t:.0f} s")
    docs = library.documents("shared")
    index = library.load_index("shared")
    from rag_core.retrieval.exact import document_texts

    openings = {d.source: d.text[:2000] for d in document_texts(index.chunks)}
    infos = [{**{k: d.get(k) for k in ("source", "title", "authors", "year", "doi", "arxiv_id")},
              "first_page": openings.get(d["source"], "")} for d in docs]
    expected = [w[1] for w in WORKS] + [None] * len(ABSENT)
    folder = Path(tempfile.mkdtemp(prefix="rag-core-resolution-"))
    print(f"{'format':34} {'right':>6} {'ambig.':>6} {'absent ok':>9} {'wrong':>5}   (of {len(WORKS)} in the "
          f"collection + {len(ABSENT)} not)")
    for label, (path, bib) in manuscripts(folder).items():
        manuscript = read_manuscript(path, bib=bib)
        citations = [c for s in manuscript.statements() for c in s.citations]
        right = ambiguous = absent_ok = wrong = 0
        for citation, want in zip(citations, expected, strict=True):
            res = resolve_citation(citation, infos)
            if want is None:
                absent_ok += res.status == "not_in_collection"
                wrong += res.status in ("matched", "ambiguous")
            elif res.status == "matched" and res.source == want:
                right += 1
            elif res.status == "ambiguous" and want in res.candidates:
                ambiguous += 1
            else:
                wrong += 1
                print(f"   {label}: {res.text()} (wanted {want})")
        print(f"{label:34} {right:>6} {ambiguous:>6} {absent_ok:>9} {wrong:>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
