"""A LaTeX draft as plain text, its ``\\cite`` markers kept, and its ``thebibliography`` entries.

:func:`latex_to_text` drops comments, the preamble, environments, labels, references and
formatting commands, keeps the text of ``\\emph{...}`` and section titles (as paragraphs of
their own) and every ``\\cite``-like command as ``\\cite{keys}`` (page notes such as
``[p.~3]`` would split sentences), and reads each ``\\bibitem`` of the bibliography.

Linear in the length of the draft: every pattern that reads up to a closing brace or bracket
runs on RE2 (``\\cite[`` or ``\\ref{`` repeated and never closed took Python's ``re`` the square
of the length), the bibliography is found with ``str.find``, and an entry runs to the next
``\\bibitem`` (the entries' text never overlaps, so finding each end costs one pass in all).
"""

from __future__ import annotations

import re

from rag_core.citations.markers import TEX_CITE, TEX_CITE_COMMANDS, linear
from rag_core.citations.references import Reference, parse_reference

__all__ = ["bibliography_names", "latex_to_text", "records_to_references"]

_COMMENT = re.compile(r"(?<!\\)%.*")
_BIB_BEGIN, _BIB_END, _BIBITEM_WORD = "\\begin{thebibliography}", "\\end{thebibliography}", "\\bibitem"
_BIBITEM = linear(r"\\bibitem(?:\[[^\]]*\])?\{([^}]*)\}")
_STYLE = linear(r"\\(?:emph|textit|textbf|textsc|texttt|textrm|underline|mbox|text)\{([^{}]*)\}")
_SECTION = linear(r"\\(?:part|chapter|section|subsection|subsubsection|paragraph)\*?\{([^{}]*)\}")
_ENVIRONMENT = linear(r"\\(?:begin|end)\{[^}]*\}")
_DROPPED = linear(r"\\(?:label|ref|eqref|url|footnote|bibliography|bibliographystyle|addbibresource|nocite)"
                  r"(?:\[[^\]]*\])?\{[^}]*\}|\\printbibliography(?:\[[^\]]*\])?")
_DOCUMENT_END = re.compile(r"\\end\{document\}|\\maketitle")
_COMMAND = re.compile(rf"\\(?!{TEX_CITE_COMMANDS})[a-zA-Z]+\*?")  # any command but a citation
_BRACES = re.compile(r"[{}]")
_SPACES = re.compile(r"[ \t]+")
_LINE_START_SPACES = re.compile(r"\n[ \t]*(?=\S)")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def _group(match) -> str:
    return match.group(1)


def latex_to_text(tex: str) -> tuple[str, list[Reference]]:
    """Plain text with ``\\cite{...}`` kept as markers, and the ``thebibliography`` entries."""
    tex = _COMMENT.sub("", tex)
    references: list[Reference] = []
    begin = tex.find(_BIB_BEGIN)
    end = tex.find(_BIB_END, begin + len(_BIB_BEGIN)) if begin >= 0 else -1
    if end >= 0:
        end += len(_BIB_END)
        references = _bibliography(tex[begin:end])
        tex = tex[:begin] + tex[end:]
    if "\\begin{document}" in tex:
        tex = tex.split("\\begin{document}", 1)[1]
    tex = _DOCUMENT_END.sub("", tex)
    tex = TEX_CITE.sub(lambda m: "\\cite{" + m.group(1) + "}", tex)
    tex = _ENVIRONMENT.sub("\n", tex)
    tex = _SECTION.sub(lambda m: "\n\n" + m.group(1) + "\n\n", tex)
    for _ in range(3):
        tex = _STYLE.sub(_group, tex)
    tex = tex.replace("``", "\u201c").replace("''", "\u201d").replace("---", "\u2014").replace("--", "\u2013")
    tex = _DROPPED.sub("", tex)
    tex = tex.replace("~", " ").replace("\\&", "&").replace("\\%", "%").replace("\\\\", "\n")
    tex = _COMMAND.sub("", tex)
    # keep \cite{...} markers; drop other braces
    kept = []
    pos = 0
    for m in TEX_CITE.finditer(tex):
        kept.append(_BRACES.sub("", tex[pos:m.start()]))
        kept.append(m.group())
        pos = m.end()
    kept.append(_BRACES.sub("", tex[pos:]))
    text = "".join(kept)
    text = _SPACES.sub(" ", text)
    text = _LINE_START_SPACES.sub("\n", text)
    paragraphs = (" ".join(p.split()) for p in _PARAGRAPH_BREAK.split(text))
    return "\n\n".join(p for p in paragraphs if p), references


def _bibliography(block: str) -> list[Reference]:
    """The entries of a ``thebibliography`` block: each ``\\bibitem{key}`` and its text up to the
    next ``\\bibitem`` (or the block's end)."""
    references = []
    end = len(block) - len(_BIB_END)  # the block ends with the first \end{thebibliography} after its start
    for m in _BIBITEM.finditer(block):
        if m.end() > end:
            break  # the entry's braces ran past the end of the list
        found = block.find(_BIBITEM_WORD, m.end(), end)  # no two entries' text overlap: one pass in all
        stop = found if found >= 0 else end
        entry = " ".join(_STYLE.sub(_group, block[m.end():stop]).replace("\\newblock", " ").replace("~", " ").split())
        references.append(parse_reference(_BRACES.sub("", entry), key=m.group(1).strip()))
    return references


_BIB_COMMAND = linear(r"\\(?:bibliography|addbibresource)(?:\[[^\]]*\])?\{([^}]*)\}")


def bibliography_names(tex: str) -> list[str]:
    """The ``.bib`` files a LaTeX draft names (``\\bibliography{refs,more}``, ``\\addbibresource{refs.bib}``)."""
    names: list[str] = []
    for m in _BIB_COMMAND.finditer(tex):
        for part in m.group(1).split(","):
            part = part.strip()
            if part:
                names.append(part if part.lower().endswith(".bib") else part + ".bib")
    return list(dict.fromkeys(names))


def records_to_references(records: list[dict], via: str) -> list[Reference]:
    """Records (a .bib's entries) as reference-list entries keyed by their citation keys."""
    from rag_core.records.record import first_surname, split_name

    references = []
    for record in records:
        if not record.get("key"):
            continue
        authors = record.get("authors") or []
        text = "; ".join(authors[:3]) + (" et al." if len(authors) > 3 else "")
        text = f"{text} ({record.get('year') or 'n.d.'}). {record.get('title') or ''}".strip()
        references.append(Reference(key=record["key"], text=text,
                                    surnames=[first_surname(a) for a in authors if a.strip()],
                                    year=record.get("year"), title=record.get("title"), doi=record.get("doi"),
                                    arxiv_id=record.get("arxiv_id"), via=f"{via} entry {record['key']}",
                                    first_initial=_initial(split_name(authors[0])[0]) if authors else None))
    return references


def _initial(given: str) -> str | None:
    """The first letter of a first name ("Patrick", "P.", "M.-W."), or None."""
    letter = next((c for c in given if c.isalpha()), "")
    return letter.upper() or None
