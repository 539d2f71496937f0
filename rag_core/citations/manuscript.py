"""A whole manuscript at once: its checkable statements, the batch check, and the report.

:func:`read_manuscript` reads pasted text or a draft (``.txt``, ``.md``, ``.tex``, ``.pdf``,
``.docx``) into plain text and its reference list. :func:`extract_statements` finds what can
be checked: quoted passages and sentences that carry a citation marker (``[12]``,
``[3, 7]``, ``(Devlin et al., 2019)``, ``Devlin et al. (2019)``, ``\\cite{...}``), each with
the references it cites. :func:`check_statements` runs :func:`rag_core.citations.verdicts.verify_quote`
on each, the cited documents first, and returns one :class:`CheckRow` per statement;
:func:`rows_to_csv`, :func:`rows_to_json` and :func:`rows_to_html` (from
:mod:`rag_core.citations.report`) export the report.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.citations.bibliography import match_documents
from rag_core.citations.report import rows_to_csv, rows_to_html, rows_to_json
from rag_core.citations.verdicts import verify_quote
from rag_core.errors import RagCoreError
from rag_core.output.render import strip_escape_sequences
from rag_core.retrieval.exact import document_texts
from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL, MAX_MANUSCRIPT_BYTES, MIN_QUOTE_WORDS
from rag_core.text.sentences import split_sentences

__all__ = [
    "CheckRow",
    "Citation",
    "Manuscript",
    "ManuscriptError",
    "Reference",
    "Statement",
    "check_statements",
    "extract_statements",
    "manuscript_from_text",
    "parse_citations",
    "printable",
    "read_manuscript",
    "rows_to_csv",
    "rows_to_html",
    "rows_to_json",
]

MANUSCRIPT_TYPES = (".txt", ".md", ".markdown", ".tex", ".pdf", ".docx")


class ManuscriptError(RagCoreError):
    """The manuscript cannot be read (type, size, encoding, a damaged file)."""


@dataclass
class Reference:
    """One entry of the manuscript's reference list: ``key`` ("12", a BibTeX key or None),
    the entry's ``text``, the authors' ``surnames`` (first author first), ``year``, ``title``."""

    key: str | None
    text: str
    surnames: list[str] = field(default_factory=list)
    year: int | None = None
    title: str | None = None


@dataclass
class Citation:
    """A citation marker in a statement, with what it resolves to."""

    marker: str
    key: str | None = None
    surnames: list[str] = field(default_factory=list)
    year: int | None = None
    title: str | None = None
    reference: str | None = None  # the reference-list entry it points to, when found

    def label(self) -> str:
        if self.reference:
            return self.reference
        return self.marker


@dataclass
class Statement:
    """A checkable statement: ``kind`` "quote" (a quoted passage) or "claim" (a sentence with a
    citation marker, markers removed); ``sentence`` is the whole sentence as written."""

    text: str
    kind: str
    sentence: str
    citations: list[Citation] = field(default_factory=list)
    line: int | None = None

    @property
    def cited(self) -> str:
        return "; ".join(c.marker for c in self.citations)


@dataclass
class Manuscript:
    name: str
    kind: str
    text: str
    references: list[Reference] = field(default_factory=list)
    body: str = ""  # the text before the reference list

    def statements(self) -> list[Statement]:
        return extract_statements(self.body or self.text, references=self.references)


# --------------------------------------------------------------------------- reading

_REFERENCE_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*|\d+\.?[ \t]+)?(?:references|bibliography|works cited|literature cited|"
    r"reference list)[ \t]*:?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def printable(text: object) -> str:
    """``text`` with control characters (ANSI escapes included) and bidirectional overrides
    removed; line breaks and tabs become spaces. For anything from a document that is printed."""
    if text is None:
        return ""
    text = strip_escape_sequences(str(text))  # whole sequences first: no remnant such as "[2J" is left
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")
    return _UNPRINTABLE.sub("", text)


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def manuscript_from_text(text: str, *, name: str = "pasted text", kind: str = "text") -> Manuscript:
    """A manuscript from text (``kind`` "text", "markdown" or "latex")."""
    if not isinstance(text, str):
        raise ManuscriptError(f"The manuscript must be text, got {type(text).__name__}")
    references: list[Reference] = []
    if kind == "latex":
        text, references = _latex_to_text(text)
        body = text
    else:
        body, references = _split_references(text)
    return Manuscript(name=name, kind=kind, text=text, references=references, body=body)


def read_manuscript(source: str | Path | bytes, *, name: str | None = None) -> Manuscript:
    """Read a draft by its file type: ``.txt``/``.md`` (UTF-8), ``.tex``, ``.pdf``, ``.docx``.

    ``source`` is a path or the file's bytes (then ``name`` gives the file name and type).
    Raises :class:`ManuscriptError` with what to do for an unknown type, a file too large, or a
    file that cannot be read.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        display = name or "manuscript.txt"
    else:
        path = Path(source)
        display = name or path.name
        try:
            if path.stat().st_size > MAX_MANUSCRIPT_BYTES:
                raise ManuscriptError(f"{display} is larger than {MAX_MANUSCRIPT_BYTES // 2**20} MiB; split it first.")
            data = path.read_bytes()
        except FileNotFoundError:
            raise ManuscriptError(f"No such file: {path}") from None
        except IsADirectoryError:
            raise ManuscriptError(f"{path} is a folder; give a manuscript file") from None
    if len(data) > MAX_MANUSCRIPT_BYTES:
        raise ManuscriptError(f"{display} is larger than {MAX_MANUSCRIPT_BYTES // 2**20} MiB; split it first.")
    suffix = Path(display).suffix.lower()
    if suffix in ("", ".txt", ".text"):
        return manuscript_from_text(_decode(data, display), name=display, kind="text")
    if suffix in (".md", ".markdown"):
        return manuscript_from_text(_decode(data, display), name=display, kind="markdown")
    if suffix == ".tex":
        return manuscript_from_text(_decode(data, display), name=display, kind="latex")
    if suffix == ".pdf":
        return manuscript_from_text(_pdf_text(data, display), name=display, kind="pdf")
    if suffix == ".docx":
        return manuscript_from_text(_docx_text(data, display), name=display, kind="docx")
    raise ManuscriptError(
        f"{display}: cannot read {suffix or 'this'} files; give a .txt, .md, .tex, .pdf or .docx manuscript, "
        "or paste the text."
    )


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data[:4096]:
        raise ManuscriptError(f"{name} is not a text file (it holds binary data); give a .txt, .md or .tex file.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _pdf_text(data: bytes, name: str) -> str:
    from rag_core.pdf.extraction import extract_pdf

    extraction = extract_pdf(data, name=name)
    if not extraction.ok:
        raise ManuscriptError(f"{name}: {extraction.reason}")
    text = extraction.text
    # Lines of a PDF are not sentences: join them into paragraphs (blank lines kept), except in
    # the reference list, where each line may start an entry.
    headings = list(_REFERENCE_HEADING.finditer(text))
    body, tail = (text[:headings[-1].start()], text[headings[-1].start():]) if headings else (text, "")
    paragraphs = re.split(r"\n\s*\n", body)
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines() if line.strip()) for p in paragraphs) + (
        "\n\n" + tail if tail else "")


def _docx_text(data: bytes, name: str) -> str:
    try:
        import docx
    except ImportError:  # pragma: no cover - python-docx is a dependency
        raise ManuscriptError("Reading .docx needs the package python-docx: `pip install python-docx`.") from None
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - python-docx raises several types for a bad file
        raise ManuscriptError(f"{name} is not a readable .docx file ({type(exc).__name__}); save it again "
                              "from your word processor or paste the text.") from None
    return "\n\n".join(p.text for p in document.paragraphs if p.text.strip())


# --------------------------------------------------------------------------- LaTeX

_TEX_CITE = re.compile(r"\\(?:cite|citep|citet|citealp|citeauthor|citeyear|parencite|textcite|autocite|footcite)"
                       r"\*?(?:\[[^\]]*\]){0,2}\{([^}]*)\}")
_TEX_STYLE = re.compile(r"\\(?:emph|textit|textbf|textsc|texttt|textrm|underline|mbox|text)\{([^{}]*)\}")
_TEX_SECTION = re.compile(r"\\(?:part|chapter|section|subsection|subsubsection|paragraph)\*?\{([^{}]*)\}")


def _latex_to_text(tex: str) -> tuple[str, list[Reference]]:
    """Plain text with ``\\cite{...}`` kept as markers, and the ``thebibliography`` entries."""
    tex = re.sub(r"(?<!\\)%.*", "", tex)  # comments
    references: list[Reference] = []
    bib = re.search(r"\\begin\{thebibliography\}.*?\\end\{thebibliography\}", tex, re.DOTALL)
    if bib:
        for m in re.finditer(r"\\bibitem(?:\[[^\]]*\])?\{([^}]*)\}(.*?)(?=\\bibitem|\\end\{thebibliography\})",
                             bib.group(), re.DOTALL):
            entry = " ".join(_TEX_STYLE.sub(r"\1", m.group(2)).replace("\\newblock", " ").replace("~", " ").split())
            entry = re.sub(r"[{}]", "", entry)
            references.append(_parse_reference(entry, key=m.group(1).strip()))
        tex = tex[:bib.start()] + tex[bib.end():]
    if "\\begin{document}" in tex:
        tex = tex.split("\\begin{document}", 1)[1]
    tex = re.sub(r"\\end\{document\}|\\maketitle", "", tex)
    tex = _TEX_CITE.sub(lambda m: "\\cite{" + m.group(1) + "}", tex)  # page notes ([p.~3]) would split sentences
    tex = re.sub(r"\\(?:begin|end)\{[^}]*\}", "\n", tex)
    tex = _TEX_SECTION.sub(lambda m: "\n\n" + m.group(1) + "\n\n", tex)
    for _ in range(3):
        tex = _TEX_STYLE.sub(r"\1", tex)
    tex = tex.replace("``", "\u201c").replace("''", "\u201d").replace("---", "\u2014").replace("--", "\u2013")
    tex = re.sub(r"\\(?:label|ref|eqref|url|footnote)\{[^}]*\}", "", tex)
    tex = tex.replace("~", " ").replace("\\&", "&").replace("\\%", "%").replace("\\\\", "\n")
    tex = re.sub(r"\\(?!cite|citep|citet|citealp|citeauthor|citeyear|parencite|textcite|autocite|footcite)"
                 r"[a-zA-Z]+\*?", "", tex)
    # keep \cite{...} markers; drop other braces
    kept = []
    pos = 0
    for m in _TEX_CITE.finditer(tex):
        kept.append(re.sub(r"[{}]", "", tex[pos:m.start()]))
        kept.append(m.group())
        pos = m.end()
    kept.append(re.sub(r"[{}]", "", tex[pos:]))
    text = "".join(kept)
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r"\n[ \t]*(?=\S)", "\n", text)
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paragraphs if p), references


# --------------------------------------------------------------------------- references

_YEAR = re.compile(r"\b((?:19|20)\d{2})[a-z]?\b")
_NUMBERED_ENTRY = re.compile(r"^\s*(?:\[(\d+)\]|(\d+)\.)\s+(.*)$")


def _split_references(text: str) -> tuple[str, list[Reference]]:
    """The text before the reference list, and the parsed entries (empty when there is none)."""
    headings = list(_REFERENCE_HEADING.finditer(text))
    if not headings:
        return text, []
    heading = headings[-1]
    body, tail = text[:heading.start()], text[heading.end():]
    entries: list[list] = []  # [key, text]
    expected: int | None = None  # numbered entries count up ("228. Springer." ends a page range)
    after_blank = False
    for line in tail.splitlines():
        stripped = line.strip()
        if not stripped:
            after_blank = True
            continue
        m = _NUMBERED_ENTRY.match(stripped)
        number = int(m.group(1) or m.group(2)) if m else None
        if m and ((expected is None and not entries) or number == expected):  # a numbered list from its start
            entries.append([str(number), m.group(3)])
            expected = number + 1
        elif entries and entries[-1][0] is not None:
            entries[-1][1] += " " + stripped  # a numbered entry runs on until the next number
        elif entries and not (entries[-1][1].rstrip().endswith(".")
                              and (_starts_entry(stripped) or (after_blank and stripped[0].isupper()))):
            entries[-1][1] += " " + stripped
        else:
            entries.append([None, stripped])
        after_blank = False
    references = [_parse_reference(entry, key=key) for key, entry in entries if entry.strip()]
    return body, references


def _starts_entry(line: str) -> bool:
    """An unnumbered reference entry starts with a name: "Devlin, J.", "J. Devlin,", "Jacob Devlin,"."""
    if re.match(r"^(?:In|Proceedings|Association|Conference|Journal|Transactions|Advances|pages)\b", line):
        return False
    name = r"[A-Z][\w'\u2019\-\u02b0-\u02ff\u0300-\u036f]*"
    return bool(re.match(rf"^{name},\s+[A-Z]", line) or re.match(r"^[A-Z]\.\s", line)
                or re.match(rf"^{name}(?:\s+{name}\.?){{1,3}}(?:,|\s+and\s)", line))


def _parse_reference(entry: str, *, key: str | None = None) -> Reference:
    entry = " ".join(entry.split())
    year_match = _YEAR.search(entry)
    year = int(year_match.group(1)) if year_match else None
    authors_part = entry[:year_match.start()] if year_match else entry[:120]
    quoted = re.search(r"[\u201c\"]([^\u201d\"]{8,}?)[,.]?[\u201d\"]", entry)
    if quoted:
        authors_part = entry[:quoted.start()]
    title = quoted.group(1).strip() if quoted else None
    if title is None and year_match:
        after = entry[year_match.end():].lstrip(").,:; ")
        m = re.match(r"(.{8,}?)(?<!\b[A-Z])\.(?:\s|$)", after)
        if m:
            title = m.group(1).strip()
    return Reference(key=key, text=entry, surnames=_surnames(authors_part), year=year, title=title)


def _surnames(authors: str) -> list[str]:
    """Surnames from the author part of an entry: "J. Devlin, M.-W. Chang and K. Lee",
    "Devlin, J., Chang, M.-W.", "Jacob Devlin, Ming-Wei Chang"."""
    authors = authors.strip(" .,(")
    authors = re.sub(r"\bet al\.?", "", authors)
    parts = [p.strip() for p in re.split(r",|;|\band\b|&", authors) if p.strip()]
    names: list[str] = []
    i = 0
    while i < len(parts):
        words = [w for w in parts[i].split() if w]
        if not words:
            i += 1
            continue
        if len(words) == 1 and not _is_initials(words[0]):
            # "Devlin, J." : a surname followed by its initials
            names.append(words[0])
            if i + 1 < len(parts) and all(_is_initials(w) for w in parts[i + 1].split()):
                i += 1
        elif not all(_is_initials(w) for w in words):
            surname = [w for w in words if not _is_initials(w)][-1]
            names.append(surname)
        i += 1
    return [n.strip(".") for n in names if n[:1].isupper()]


def _is_initials(word: str) -> bool:
    return bool(re.fullmatch(r"(?:[A-Z]\.?-?)+", word))


# --------------------------------------------------------------------------- statements

_NUMERIC = re.compile(r"\[(\d+(?:\s*[-\u2013,]\s*\d+)*)\]")
_PAREN = re.compile(r"\(([^()]*?\b(?:19|20)\d{2}[a-z]?\b[^()]*)\)")
_AUTHOR_YEAR = re.compile(
    r"(?P<names>[A-Z][\w'\u2019\-]+(?:\s+(?:and|&)\s+[A-Z][\w'\u2019\-]+)?(?:\s+et\s+al\.?)?)"
    r",?\s+(?P<year>(?:19|20)\d{2})[a-z]?"
)
_NARRATIVE = re.compile(
    r"(?P<names>\b[A-Z][\w'\u2019\-]+(?:\s+(?:and|&)\s+[A-Z][\w'\u2019\-]+)?(?:\s+et\s+al\.?)?)\s*"
    r"\((?P<year>(?:19|20)\d{2})[a-z]?\)"
)
_QUOTE = re.compile(r"\u201c([^\u201c\u201d]+)\u201d|(?<![\w\"])\"([^\"\n]+)\"(?![\w\"])")


def _numbers(spec: str) -> list[str]:
    out: list[str] = []
    for part in re.split(r"\s*,\s*", spec):
        m = re.fullmatch(r"(\d+)\s*[-\u2013]\s*(\d+)", part)
        if m and int(m.group(2)) >= int(m.group(1)) and int(m.group(2)) - int(m.group(1)) < 50:
            out.extend(str(n) for n in range(int(m.group(1)), int(m.group(2)) + 1))
        elif part.strip().isdigit():
            out.append(part.strip())
    return out


def _name_list(names: str) -> list[str]:
    names = re.sub(r"\s+et\s+al\.?", "", names)
    return [n.strip() for n in re.split(r"\s+(?:and|&)\s+", names) if n.strip()]


def _citations(sentence: str, references: Sequence[Reference]) -> tuple[list[Citation], list[tuple[int, int]]]:
    """The citation markers of a sentence (resolved against the reference list) and their spans."""
    by_key = {r.key: r for r in references if r.key}
    found: list[Citation] = []
    spans: list[tuple[int, int]] = []

    def resolve(citation: Citation) -> Citation:
        ref = by_key.get(citation.key) if citation.key else None
        if ref is None and citation.surnames and references:
            wanted = citation.surnames[0].lower()
            for candidate in references:
                if candidate.surnames and candidate.surnames[0].lower() == wanted and (
                        citation.year is None or candidate.year == citation.year):
                    ref = candidate
                    break
        if ref is not None:
            citation.reference = ref.text
            citation.surnames = citation.surnames or list(ref.surnames)
            citation.year = citation.year or ref.year
            citation.title = ref.title
        return citation

    for m in _TEX_CITE.finditer(sentence):
        spans.append(m.span())
        for key in (k.strip() for k in m.group(1).split(",")):
            if not key:
                continue
            guess = re.match(r"([A-Za-z]+?)[_:\-]?((?:19|20)\d{2})", key)
            citation = Citation(marker=f"\\cite{{{key}}}", key=key)
            if guess and key not in by_key:
                citation.surnames = [guess.group(1).capitalize()]
                citation.year = int(guess.group(2))
            found.append(resolve(citation))
    for m in _NUMERIC.finditer(sentence):
        numbers = _numbers(m.group(1))
        if not numbers:
            continue
        spans.append(m.span())
        for number in numbers:
            found.append(resolve(Citation(marker=f"[{number}]", key=number)))
    for m in _NARRATIVE.finditer(sentence):
        if any(a <= m.start() < b for a, b in spans):
            continue
        spans.append((m.start("year") - 1, m.end()))
        found.append(resolve(Citation(marker=f"{m.group('names')} ({m.group('year')})",
                                      surnames=_name_list(m.group("names")), year=int(m.group("year")))))
    for m in _PAREN.finditer(sentence):
        if any(a <= m.start() < b for a, b in spans):
            continue
        items = [item for item in re.split(r";", m.group(1)) if _AUTHOR_YEAR.search(item)]
        if not items:
            continue
        spans.append(m.span())
        for item in items:
            inner = _AUTHOR_YEAR.search(item)
            found.append(resolve(Citation(marker=f"({inner.group('names')}, {inner.group('year')})",
                                          surnames=_name_list(inner.group("names")), year=int(inner.group("year")))))
    return found, spans


def parse_citations(text: str, *, references: Sequence[Reference] = ()) -> list[Citation]:
    """The citation markers in ``text`` (``[3]``, ``[3, 7]``, ``(Devlin et al., 2019)``,
    ``Devlin et al. (2019)``, ``\\cite{key}``), resolved against the reference list, in the
    order :func:`extract_statements` finds them (for a marker typed or edited by hand)."""
    return _citations(text, references)[0]


def _without(sentence: str, spans: list[tuple[int, int]]) -> str:
    out, pos = [], 0
    for a, b in sorted(spans):
        if a < pos:
            continue
        out.append(sentence[pos:a])
        pos = b
    out.append(sentence[pos:])
    text = " ".join("".join(out).split())
    return re.sub(r"\s+([.,;:!?])", r"\1", text)


_CLOSERS = "\"'\u201d\u2019)]"


def _sentences(paragraph: str) -> list[tuple[int, int]]:
    """The sentences of a manuscript paragraph: a quote ending inside its quote marks
    (``"... 8.5 hours."``) keeps its closing mark, and a citation marker after its full stop
    (``"...hours." [2]``, ``"...hours." (Karpukhin et al., 2020).``) stays with the sentence
    it cites."""
    out: list[tuple[int, int]] = []
    for a, b in split_sentences(paragraph):
        while b < len(paragraph) and paragraph[b] in _CLOSERS:  # the splitter leaves them out
            b += 1
        if out:
            piece = paragraph[a:b]
            _, spans = _citations(piece, ())
            if spans and not any(c.isalnum() for c in _without(piece, spans)):
                out[-1] = (out[-1][0], b)
                continue
            leading = _NUMERIC.match(piece)  # '"... 8.5 hours." [2] They also ...'
            if leading:
                out[-1] = (out[-1][0], a + leading.end())
                a += leading.end()
                while a < b and paragraph[a].isspace():
                    a += 1
        if b > a:
            out.append((a, b))
    return out


def extract_statements(text: str, *, references: Sequence[Reference] = ()) -> list[Statement]:
    """The checkable statements of ``text``: quoted passages (at least four words) and sentences
    with a citation marker, in the order they appear."""
    statements: list[Statement] = []
    offset = 0
    for paragraph in re.split(r"(\n\s*\n)", text):
        if not paragraph.strip() or paragraph.isspace():
            offset += len(paragraph)
            continue
        for a, b in _sentences(paragraph):
            sentence = paragraph[a:b]
            line = text.count("\n", 0, offset + a) + 1
            citations, spans = _citations(sentence, references)
            quotes = []
            for m in _QUOTE.finditer(sentence):
                inner = (m.group(1) or m.group(2) or "").strip()
                if len(inner.split()) >= MIN_QUOTE_WORDS:
                    quotes.append(" ".join(inner.split()).strip(" ,"))
            flat = " ".join(sentence.split())
            for quote in quotes:
                statements.append(Statement(text=quote, kind="quote", sentence=flat, citations=citations, line=line))
            if citations and not quotes:
                claim = _without(sentence, spans)
                if len(claim.split()) >= 3:
                    statements.append(Statement(text=claim, kind="claim", sentence=flat, citations=citations,
                                                line=line))
        offset += len(paragraph)
    return statements


# --------------------------------------------------------------------------- checking


@dataclass
class CheckRow:
    """One line of the report. ``check`` is the full :class:`rag_core.citations.verdicts.CitationCheck`;
    ``meaning`` and ``meaning_cues`` its meaning layer (:mod:`rag_core.citations.meaning`)."""

    statement: str
    kind: str
    verdict: str
    source: str | None
    page: int | None
    page_label: str | None
    similarity: float | None
    similarity_kind: str | None
    diff: str
    cited: str
    cited_sources: list[str]
    misattributed: bool
    message: str
    line: int | None = None
    check: object | None = field(default=None, repr=False)
    meaning: str = "unclear"
    meaning_cues: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "statement": self.statement, "kind": self.kind, "verdict": self.verdict, "source": self.source,
            "page": self.page, "page_label": self.page_label, "similarity": self.similarity,
            "similarity_kind": self.similarity_kind, "diff": self.diff, "cited": self.cited or None,
            "cited_sources": self.cited_sources, "misattributed": self.misattributed, "message": self.message,
            "line": self.line, "meaning": self.meaning, "meaning_cues": self.meaning_cues,
        }


def _document_infos(index, documents: Sequence[dict] | None) -> list[dict]:
    """Per document of the index: source, title, authors, year and its opening text."""
    records = {d.get("source"): d for d in (documents or [])}
    infos = []
    for doc in document_texts(index.chunks):
        record = records.get(doc.source, {})
        infos.append({"source": doc.source, "title": record.get("title"), "authors": record.get("authors"),
                      "year": record.get("year"), "first_page": doc.text[:2000]})
    return infos


def cited_documents(citations: Sequence[Citation], infos: Sequence[dict]) -> list[str]:
    """The collection documents the citations point to (the best match of each)."""
    sources: list[str] = []
    for citation in citations:
        if not citation.surnames:
            continue
        matches = match_documents(citation.surnames, citation.year, infos, title=citation.title)
        if matches and matches[0] not in sources:
            sources.append(matches[0])
    return sources


def check_statements(
    statements: Sequence[Statement | str],
    index,
    *,
    documents: Sequence[dict] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    top: int = 3,
    meaning: bool = True,
    cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL,
) -> list[CheckRow]:
    """Check each statement against ``index``; one :class:`CheckRow` each, in order.

    ``documents`` are the collection's document records (``Library.documents``), whose
    title/authors/year let a citation be matched to a document; without them the documents'
    opening text is used. ``progress(done, total, statement)`` is called before each check and
    once at the end. ``top`` is the number of close passages kept for a statement not found
    word for word.
    """
    items = [s if isinstance(s, Statement) else Statement(text=str(s), kind="claim", sentence=str(s))
             for s in statements]
    infos = _document_infos(index, documents) if any(s.citations for s in items) else []
    rows: list[CheckRow] = []
    for n, statement in enumerate(items):
        if progress is not None:
            progress(n, len(items), statement.text)
        cited = cited_documents(statement.citations, infos) if statement.citations else []
        try:
            check = verify_quote(statement.text, index, cited_sources=cited or None, n_closest=top,
                                 cross_encoder_model=cross_encoder_model, meaning=meaning)
        except RagCoreError as exc:  # an empty or oversized statement: report it, go on
            rows.append(CheckRow(statement.text, statement.kind, "not_found", None, None, None, None, None, "",
                                 statement.cited, cited, False, f"Not checked: {exc}", statement.line))
            continue
        best = check.best if check.verdict == "near_verbatim" else None
        rows.append(CheckRow(
            statement=statement.text, kind=statement.kind, verdict=check.verdict, source=check.source,
            page=check.page, page_label=check.page_label, similarity=check.similarity,
            similarity_kind=check.similarity_kind, diff=best["diff"] if best else "", cited=statement.cited,
            cited_sources=cited, misattributed=check.misattributed, message=check.message, line=statement.line,
            check=check, meaning=check.meaning, meaning_cues=check.meaning_cues,
        ))
    if progress is not None:
        progress(len(items), len(items), "")
    return rows
