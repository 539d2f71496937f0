"""Fuzzing the manuscript readers: mutated .docx, .tex, .md and .txt drafts (hostile fragments
inserted, parts repeated, cut, bytes flipped, zip fields and XML broken) given to
``read_manuscript``/``extract_statements`` and to ``rag-core check`` never give a traceback: a
result, or one message (``ManuscriptError``; exit status 2 from the command line)."""

from __future__ import annotations

import io
import json
import random
import struct
import zipfile

import pytest

from rag_core.citations.manuscript import ManuscriptError, read_manuscript
from rag_core.cli import main
from rag_core.testing import docx_bytes

DRAFT = """# Dense retrieval, checked

Karpukhin et al. (2020) report that \u201cour dense retriever outperforms a strong Lucene-BM25 system greatly\u201d.
BERT \u201ccan be fine-tuned with just one additional output layer\u201d [2].
Lexical models remain strong baselines [3, 4]. Ranges are cited too [5-7].
Dense models may underperform BM25 (Thakur et al., 2021; Lewis et al., 2020).

## References

[1] V. Karpukhin, B. Oguz, S. Min, and W. Yih. 2020. Dense passage retrieval for open-domain question answering.
[2] Jacob Devlin, Ming-Wei Chang. 2019. \u201cBERT: Pre-training of deep bidirectional transformers.\u201d In NAACL.
[3] Thakur, N., Reimers, N. (2021). BEIR: A heterogeneous benchmark. NeurIPS.
"""
TEX = r"""\documentclass{article}
\begin{document}
\section{Introduction}
As shown by \citet{devlin2019bert}, ``pre-trained representations reduce the need for many heavily-engineered
task-specific architectures''. Dense retrieval works well~\cite{karpukhin2020dense, lewis2020rag}. % a comment
\emph{Attention} is central~\citep[p.~3]{vaswani2017}.
\begin{thebibliography}{9}
\bibitem{devlin2019bert} J.~Devlin, M.~Chang. 2019. \newblock BERT: Pre-training. \newblock In NAACL.
\bibitem{karpukhin2020dense} V.~Karpukhin et al. 2020. Dense passage retrieval for open-domain QA.
\end{thebibliography}
\end{document}
"""
FRAGMENTS = ["A-A-A-A-A-A", "\\cite[", "\\cite{", "\\ref{", "\\bibitem{", "\\begin{thebibliography}", "x. Y x. Y",
             "\u201c", "\u201d", '"', "(", ")", "[", "]", "[1", "-2]", "(2019", "2019)", " " * 300, "\n\n",
             "References\n", "1" * 5000, "\x00", "\x1b[2J", "\u202e", "\ud800", "\ufffd", "\u00a0", "\t", "\r",
             "et al.", "(Smith, 2019; Jones 2020)", "Smith (2019)", "\\end{thebibliography}", "%", "{", "}",
             "&amp;", "<w:t>", "]]>", "\u2022 ", "e.g.", "\u0663\u0663", "\U0001f600"]


def mutate_text(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 6)):
        choice = rng.random()
        at = rng.randrange(len(text) + 1)
        if choice < 0.5:
            text = text[:at] + rng.choice(FRAGMENTS) * rng.choice([1, 1, 3, 200]) + text[at:]
        elif choice < 0.65:
            end = min(len(text), at + rng.randint(1, 400))
            text = text[:at] + text[at:end] * rng.randint(2, 50) + text[end:]
        elif choice < 0.8:
            text = text[:at]
        elif choice < 0.9:
            lines = text.split("\n")
            rng.shuffle(lines)
            text = "\n".join(lines)
        else:
            text = text[:at] + "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randint(1, 50))) + text[at:]
    return text


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    choice = rng.random()
    if choice < 0.35:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif choice < 0.5:
        data = data[: rng.randrange(len(data))]
    elif choice < 0.85:  # a size, CRC or offset field of a central directory entry
        entries = [i for i in range(len(data) - 4) if data[i:i + 4] == b"PK\x01\x02"]
        if entries:
            at = rng.choice(entries)
            offset = rng.choice([16, 20, 24, 42])
            data[at + offset:at + offset + 4] = struct.pack("<I", rng.choice([0, 1, 10, 2**31, 0xFFFFFFFF,
                                                                              rng.randrange(2**32)]))
    else:
        at = rng.randrange(len(data))
        data[at:at] = data[rng.randrange(len(data)):][:rng.randint(1, 200)]
    return bytes(data)


def docx_of(rng: random.Random, text: str) -> bytes:
    """A .docx of the draft's paragraphs: well formed, with its XML mutated, or its bytes mutated."""
    paragraphs = [p for p in text.split("\n") if p.strip()]
    base = docx_bytes([p.replace("\x00", "").replace("\r", "") for p in paragraphs
                       if all(ord(c) >= 0x20 or c == "\t" for c in p) and "\ud800" not in p] or ["x"])
    choice = rng.random()
    if choice < 0.4:
        return base
    if choice < 0.7:
        with zipfile.ZipFile(io.BytesIO(base)) as archive:
            xml = archive.read("word/document.xml").decode("utf-8")
        if rng.random() < 0.5:  # entities the file declares itself, nested (never expanded)
            xml = xml.replace("<w:document", '<!DOCTYPE w:document [<!ENTITY e "laugh"><!ENTITY f "&e;&e;">]>'
                              "<w:document", 1).replace("</w:t>", "&f; after</w:t>", 3)
        else:
            xml = mutate_text(rng, xml)
        return docx_bytes(["x"], document_xml=xml.encode("utf-8", "surrogatepass"))
    return mutate_bytes(rng, base)


def variants(seed: int, count: int) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        kind = (".docx", ".tex", ".md", ".txt")[n % 4]
        text = mutate_text(rng, TEX if kind == ".tex" else DRAFT)
        data = docx_of(rng, text) if kind == ".docx" else text.encode(rng.choice(["utf-8", "utf-8-sig"]),
                                                                      "surrogatepass")
        out.append((f"draft{n}{kind}", data))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_mutated_manuscripts_give_statements_or_one_message(seed):
    for name, data in variants(seed, 60):
        try:
            manuscript = read_manuscript(data, name=name)
            statements = manuscript.statements()
        except ManuscriptError as exc:  # a message; never another exception
            assert str(exc) and "\n" not in str(exc).strip(), name
            continue
        for statement in statements:
            assert statement.text.strip() and statement.line >= 1, (name, statement)
            assert statement.kind in ("quote", "claim")


def test_mutated_manuscripts_through_rag_core_check(paper_library, tmp_path, capsys):
    """``rag-core check`` on mutated drafts: exit 0 with a report, or 2 with one line; never a
    traceback (an exception would escape main) nor a failure (exit 1) on a collection that exists."""
    outcomes = []
    for name, data in variants(99, 16):
        path = tmp_path / name
        path.write_bytes(data)
        code = main(["--data-dir", str(paper_library.root), "check", "papers", str(path), "--json", "--top", "1"])
        captured = capsys.readouterr()
        assert code in (0, 2), (name, code, captured.err)
        if code == 0:
            assert isinstance(json.loads(captured.out), list)
        else:
            assert len(captured.err.strip().splitlines()) == 1 and captured.err.startswith("rag-core: error:")
        outcomes.append(code)
    assert 0 in outcomes  # most mutated drafts are still read and checked
