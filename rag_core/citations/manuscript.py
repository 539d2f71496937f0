"""A whole manuscript at once: its checkable statements, the batch check, and the report.

:func:`read_manuscript` reads pasted text or a draft (``.txt``, ``.md``, ``.tex``, ``.pdf``,
``.docx``: :mod:`rag_core.citations.drafts`) into plain text and its reference list
(:mod:`rag_core.citations.references`). :func:`extract_statements` finds what can be checked:
quoted passages and sentences that carry a citation marker (``[12]``, ``[3, 7]``,
``(Devlin et al., 2019)``, ``Devlin et al. (2019)``, ``\\cite{...}``:
:mod:`rag_core.citations.markers`), each with the references it cites.
:func:`check_statements` runs :func:`rag_core.citations.verdicts.verify_quote` on each, the
cited documents first, and returns one :class:`CheckRow` per statement; :func:`rows_to_csv`,
:func:`rows_to_json` and :func:`rows_to_html` (from :mod:`rag_core.citations.report`) export
the report.

Reading and finding statements take time linear in the length of the manuscript, whatever it
holds (a manuscript is a user's file: hostile ones took minutes to hours before), and at most
``MAX_MANUSCRIPT_STATEMENTS`` statements are found (a clear message past that, not hours of
checking).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.citations.drafts import (
    MANUSCRIPT_TYPES,
    ManuscriptError,
    draft_text,
    read_source,
)
from rag_core.citations.latex import bibliography_names, latex_to_text, records_to_references
from rag_core.citations.markers import (
    NUMERIC,
    TEX_CITE_COMMANDS,
    Citation,
    ReferenceIndex,
    find_citations,
    parse_citations,
    quoted_passages,
    without_markers,
)
from rag_core.citations.references import Reference, split_references
from rag_core.citations.report import evidence_passages, outcome, rows_to_csv, rows_to_html, rows_to_json
from rag_core.citations.resolution import Resolution, resolutions_text, resolve_citation
from rag_core.citations.verdicts import verify_quote
from rag_core.errors import RagCoreError
from rag_core.output.render import strip_escape_sequences
from rag_core.retrieval.exact import document_texts
from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL, MAX_MANUSCRIPT_STATEMENTS, MIN_CLAIM_WORDS, MIN_QUOTE_WORDS
from rag_core.text.sentences import split_sentences

__all__ = [
    "MANUSCRIPT_TYPES",
    "CheckRow",
    "Citation",
    "Manuscript",
    "ManuscriptError",
    "Reference",
    "Statement",
    "add_bib_references",
    "check_one_statement",
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

    @property
    def too_short(self) -> bool:
        """A cited claim of fewer than :data:`MIN_CLAIM_WORDS` words: reported, not checked."""
        return self.kind == "claim" and bool(self.citations) and len(_words(self.text)) < MIN_CLAIM_WORDS


def _words(text: str) -> list[str]:
    """The words of ``text`` that hold a letter or a digit (not a stray full stop)."""
    return [w for w in text.split() if any(ch.isalnum() for ch in w)]


@dataclass
class Manuscript:
    """A manuscript read: its ``text``, its ``body`` (the text before the reference list), its
    ``references``, and ``notes`` on anything read in an unusual way (shown to the user)."""

    name: str
    kind: str
    text: str
    references: list[Reference] = field(default_factory=list)
    body: str = ""  # the text before the reference list
    notes: list[str] = field(default_factory=list)

    def statements(self) -> list[Statement]:
        return extract_statements(self.body or self.text, references=self.references)


# --------------------------------------------------------------------------- reading


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
        text, references = latex_to_text(text)
        body = text
    else:
        body, references = split_references(text)
    return Manuscript(name=name, kind=kind, text=text, references=references, body=body)


def read_manuscript(source: str | Path | bytes, *, name: str | None = None,
                    bib: str | Path | tuple[str, bytes] | None = None) -> Manuscript:
    """Read a draft by its file type: ``.txt``/``.md`` (UTF-8), ``.tex``, ``.pdf``, ``.docx``.

    ``source`` is a path or the file's bytes (then ``name`` gives the file name and type).
    ``bib`` is a records file (``.bib``, CSL-JSON, RIS: a path, or ``(name, bytes)``) whose keys
    resolve ``\\cite{key}`` and pandoc's ``[@key]``; without it, a LaTeX draft read from a path uses
    the ``.bib`` files its ``\\bibliography{}`` or ``\\addbibresource{}`` name beside it.
    Raises :class:`ManuscriptError` with what to do for an unknown type, a file too large, a
    path that is not a regular file, or a file that cannot be read.
    """
    display, data = read_source(source, name)
    draft = draft_text(data, display)
    manuscript = manuscript_from_text(draft.text, name=display, kind=draft.kind)
    manuscript.notes.extend(draft.notes)
    bib_files = [bib] if bib is not None else []
    if bib is None and draft.kind == "latex" and isinstance(source, (str, Path)):
        raw = data.decode("utf-8", errors="replace")
        for bib_name in bibliography_names(raw):
            beside = _beside(Path(source), bib_name)
            if beside is None:
                manuscript.notes.append(f"{printable(bib_name)}, which the draft names, is outside the draft's folder: "
                                        "not read (a draft names its .bib beside it; give another file with --bib).")
            elif beside.is_file():
                bib_files.append(beside)
            else:
                manuscript.notes.append(f"{printable(bib_name)}, which the draft names, is not beside it: its \\cite "
                                        "keys are resolved by their look only (give the file with --bib).")
    for bib_file in bib_files:
        add_bib_references(manuscript, bib_file)
    if draft.field_records:  # first: a field code names the very work, a typed list only describes it
        manuscript.references[:0] = draft.field_records
    return manuscript


def _beside(draft: Path, name: str) -> Path | None:
    """The file ``name`` in the draft's folder (or below it), or None when it would be elsewhere:
    an absolute path, ``..``, or a link that leads out of the folder (a draft is a user's file;
    what it names is read only where the draft itself is)."""
    relative = Path(name)
    if relative.is_absolute() or ".." in relative.parts or name.startswith("~"):
        return None
    folder = draft.parent
    path = folder / relative
    try:
        if not path.resolve().is_relative_to(folder.resolve()):
            return None
    except (OSError, RuntimeError):
        return None
    return path


def add_bib_references(manuscript: Manuscript, bib) -> None:
    """The entries of a records file added to the manuscript's reference list, by key."""
    from rag_core.errors import InputFileError
    from rag_core.records.reading import parse_records, read_records

    try:
        found = parse_records(bib[1], bib[0]) if isinstance(bib, tuple) else read_records(bib)
    except InputFileError as exc:
        raise ManuscriptError(str(exc)) from None
    manuscript.references.extend(records_to_references(found.records, found.name))
    manuscript.notes.extend(found.notes)


# --------------------------------------------------------------------------- statements

_CLOSERS = "\"'\u201d\u2019)]"
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def _sentences(paragraph: str):
    """The sentences of a manuscript paragraph, one at a time: a quote ending inside its quote
    marks (``"... 8.5 hours."``) keeps its closing mark, and a citation marker after its full stop
    (``"...hours." [2]``, ``"...hours." (Karpukhin et al., 2020).``) stays with the sentence it
    cites (so a sentence is given once the next one is known), unless the marker is the next
    sentence's subject (``[3] propose ...``: a lower-case word follows it, or the sentence before
    has a marker of its own)."""
    pending: tuple[int, int] | None = None
    for a, b in _sentence_spans(paragraph):
        while b < len(paragraph) and paragraph[b] in _CLOSERS:  # the splitter leaves them out
            b += 1
        if pending is not None:
            piece = paragraph[a:b]
            _, spans = find_citations(piece)
            if spans and not any(c.isalnum() for c in without_markers(piece, spans)):
                pending = (pending[0], b)
                continue
            leading = NUMERIC.match(piece) if piece.startswith("[") else None  # '"... hours." [2] They also'
            if leading and not _marker_is_subject(paragraph, pending, a + leading.end(), b):
                pending = (pending[0], a + leading.end())
                a += leading.end()
                while a < b and paragraph[a].isspace():
                    a += 1
        if b > a:
            if pending is not None:
                yield pending
            pending = (a, b)
    if pending is not None:
        yield pending


def _marker_is_subject(paragraph: str, previous: tuple[int, int], after: int, end: int) -> bool:
    """Whether a marker that starts a sentence belongs to it ("[3] propose a network ..."): a
    lower-case word follows the marker, or the sentence before it cites on its own."""
    rest = paragraph[after:end].lstrip()
    if rest[:1].islower():
        return True
    return bool(find_citations(paragraph[previous[0]:previous[1]])[1])


# A sentence that starts with its LaTeX or pandoc citation ("... text. \citet{x} propose ...",
# "... text. [@x] show ..."): the splitter breaks only before a capital, a digit or a bracket.
_CITATION_STARTS = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+(?=\\(?:" + TEX_CITE_COMMANDS + r")\b|\[@)")
# A sentence never ends inside brackets ("(see Devlin et al., 2019, pp. 3-4)", "[@key, chap. 3]")
# that close within this many characters of their opening.
_MAX_BRACKETED = 400
_BRACKET = re.compile(r"[()\[\]]")


def _sentence_spans(paragraph: str) -> list[tuple[int, int]]:
    """The splitter's sentences of a paragraph, with two rules of manuscripts: a break before a
    sentence that starts with a ``\\cite`` or ``[@key]``, and none inside a citation's brackets
    (a locator such as ``pp. 1-2`` or ``chap. 3`` ends no sentence). Linear: each character is
    read once for its brackets."""
    cites = "\\" in paragraph or "[@" in paragraph  # what a citation start needs (most paragraphs: neither)
    spans: list[tuple[int, int]] = []
    for a, b in split_sentences(paragraph):
        cut = a
        if cites:
            for m in _CITATION_STARTS.finditer(paragraph, a, b):
                stop = m.start() + len(m.group().rstrip())
                spans.append((cut, stop))
                cut = m.end()
        spans.append((cut, b))
    if _BRACKET.search(paragraph) is None:
        return spans  # no brackets: nothing to keep together
    merged: list[tuple[int, int]] = []
    opened: list[int] = []  # where the brackets still open in the sentence so far were opened
    read_to = 0
    for a, b in spans:
        if merged and opened and a - opened[0] <= _MAX_BRACKETED:
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
            opened = []
        for m in _BRACKET.finditer(paragraph, max(a, read_to), b):
            if m.group() in "([":
                opened.append(m.start())
            elif opened:
                opened.pop()
        read_to = b
    return merged


def _paragraphs(text: str):
    """``(offset, paragraph)`` of each paragraph of ``text`` (split at blank lines), one at a time."""
    pos = 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        yield pos, text[pos:m.start()]
        pos = m.end()
    yield pos, text[pos:]


def extract_statements(text: str, *, references: Sequence[Reference] | ReferenceIndex = (),
                       limit: int = MAX_MANUSCRIPT_STATEMENTS) -> list[Statement]:
    """The checkable statements of ``text``: quoted passages (at least four words) and sentences
    with a citation marker, in the order they appear. :class:`ManuscriptError` when there are
    more than ``limit``."""
    index = references if isinstance(references, ReferenceIndex) else ReferenceIndex(references)
    statements: list[Statement] = []
    line, counted = 1, 0  # line numbers counted as the text is read, never from its start again
    for offset, paragraph in _paragraphs(text):
        if not paragraph.strip():
            continue
        for a, b in _sentences(paragraph):
            line += text.count("\n", counted, offset + a)
            counted = offset + a
            sentence = paragraph[a:b]
            citations, spans = find_citations(sentence, index)
            quotes = []
            for passage in quoted_passages(sentence):
                inner = passage.strip()
                if len(inner.split()) >= MIN_QUOTE_WORDS:
                    quotes.append(" ".join(inner.split()).strip(" ,"))
            flat = " ".join(sentence.split())
            for quote in quotes:
                statements.append(Statement(text=quote, kind="quote", sentence=flat, citations=citations, line=line))
            if citations and not quotes:
                claim = without_markers(sentence, spans)
                if _words(claim):  # a short one is kept too: reported "too short to check", never dropped
                    statements.append(Statement(text=claim, kind="claim", sentence=flat, citations=citations,
                                                line=line))
            if len(statements) > limit:
                raise ManuscriptError(f"The manuscript has more than {limit:,} checkable statements (quoted "
                                      "passages and sentences that cite); check it in parts.")
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
    # per citation marker, the document it was resolved to and why (rag_core.citations.resolution)
    resolutions: list[dict] = field(default_factory=list)
    # every work the statement cites is absent from the collection: that is its outcome (the
    # passages found elsewhere are for reference, its meaning unclear)
    not_in_collection: bool = False
    # the passages behind the verdict (or, when nothing backs it, shown for reference), with
    # document and page: rag_core.citations.report.evidence_passages
    evidence: list[dict] = field(default_factory=list)
    # not checked at all (too long, empty, or past the check's time budget): ``message`` says why
    not_checked: bool = False
    # what the sentences that bear on it say (rag_core.citations.stance): supports, contradicts, nei
    stance: str = "nei"
    stance_score: float | None = None
    stance_model: str = "rules"
    evidence_sentences: list[dict] = field(default_factory=list)

    @property
    def resolution(self) -> str:
        """ "(Lewis et al., 2020) → matched to rag.pdf (first author Lewis + year 2020)", one per marker."""
        return resolutions_text(self.resolutions)

    def to_dict(self) -> dict:
        return {
            "statement": self.statement, "kind": self.kind, "verdict": self.verdict, "source": self.source,
            "page": self.page, "page_label": self.page_label, "similarity": self.similarity,
            "similarity_kind": self.similarity_kind, "diff": self.diff, "cited": self.cited or None,
            "cited_sources": self.cited_sources, "misattributed": self.misattributed, "message": self.message,
            "line": self.line, "meaning": self.meaning, "meaning_cues": self.meaning_cues,
            "resolution": self.resolution, "resolutions": self.resolutions,
            "not_in_collection": self.not_in_collection, "outcome": outcome(self), "evidence": self.evidence,
            "not_checked": self.not_checked,
            "stance": self.stance, "stance_score": self.stance_score, "stance_model": self.stance_model,
            "evidence_sentences": self.evidence_sentences,
        }


def _document_infos(index, documents: Sequence[dict] | None) -> list[dict]:
    """Per document of the index: source, title, authors, year and its opening text."""
    records = {d.get("source"): d for d in (documents or [])}
    infos = []
    for doc in document_texts(index.chunks):
        record = records.get(doc.source, {})
        infos.append({"source": doc.source, "title": record.get("title"), "authors": record.get("authors"),
                      "year": record.get("year"), "doi": record.get("doi"), "arxiv_id": record.get("arxiv_id"),
                      "first_page": doc.text[:2000]})
    return infos


def cited_documents(citations: Sequence[Citation], infos: Sequence[dict]) -> list[str]:
    """The collection documents the citations point to (the one each is matched to, or every
    candidate of an ambiguous one)."""
    return _cited_sources([resolve_citation(c, infos) for c in citations])


def _cited_sources(resolutions: Sequence[Resolution]) -> list[str]:
    sources: list[str] = []
    for resolution in resolutions:
        for source in resolution.candidates if resolution.status in ("matched", "ambiguous") else ():
            if source not in sources:
                sources.append(source)
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
    seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    back_matter: bool = True,
) -> list[CheckRow]:
    """Check each statement against ``index``; one :class:`CheckRow` each, in order.

    ``documents`` are the collection's document records (``Library.documents``), whose
    title/authors/year let a citation be matched to a document; without them the documents'
    opening text is used. ``progress(done, total, statement)`` is called before each check and
    once at the end. ``top`` is the number of close passages kept for a statement not found
    word for word. ``seconds``: the time budget (by ``clock``); the statements not begun inside
    it are rows ``not_checked`` whose message says so. ``back_matter=False``: nothing is looked
    for in reference lists and other back matter.
    """
    items = [s if isinstance(s, Statement) else Statement(text=str(s), kind="claim", sentence=str(s))
             for s in statements]
    infos = _document_infos(index, documents) if any(s.citations for s in items) else []
    rows: list[CheckRow] = []
    deadline = None if seconds is None else clock() + seconds
    for n, statement in enumerate(items):
        if progress is not None:
            progress(n, len(items), statement.text)
        if deadline is not None and clock() >= deadline:
            checked = sum(not r.not_checked for r in rows)
            rows.append(_not_checked(statement, f"Not checked: the check's time budget ({seconds:g} s) ran out "
                                                f"after {checked:,} of {len(items):,} statements; check fewer at once "
                                                "or give it more time."))
            continue
        if statement.too_short:
            rows.append(_too_short(statement, infos))
            continue
        rows.append(_check_one(statement, index, infos, top=top, meaning=meaning,
                               cross_encoder_model=cross_encoder_model, back_matter=back_matter))
    if progress is not None:
        progress(len(items), len(items), "")
    return rows


NOT_IN_COLLECTION_NOTE = ("The cited work is not in the collection, so the statement cannot be checked against it "
                          "(add its PDF to check it).")
NOT_IN_COLLECTION_MEANING = ("There is nothing to compare the statement with: the passages found are of other works, "
                             "for reference only, not the answer.")


def check_one_statement(
    text: str,
    index,
    *,
    documents: Sequence[dict] | None = None,
    sources: Sequence[str] | None = None,
    references: Sequence[Reference] = (),
    context: int = 300,
    top: int = 5,
    meaning: bool = True,
    cross_encoder_model: str = DEFAULT_CROSS_ENCODER_MODEL,
    back_matter: bool = True,
) -> CheckRow:
    """One statement as typed or pasted (the Verify page's), read like a manuscript's: its citation
    markers (``(Devlin et al., 2019)``, ``[3]`` through ``references``, ``\\cite{key}``) are
    resolved to the documents they mean and checked first, and left out of the words compared
    (nor is "et al." or a year matched); a quoted passage in it is the quote checked. Without a
    marker it is checked as it stands. ``sources`` limits the search to those documents;
    ``back_matter=False`` leaves reference lists and other back matter out."""
    index_of_references = ReferenceIndex(references)
    citations, spans = find_citations(text, index_of_references)
    if citations:
        claim = without_markers(text, spans)
        quotes = [" ".join(q.split()).strip(" ,") for q in quoted_passages(claim)
                  if len(q.strip().split()) >= MIN_QUOTE_WORDS]
        statement = Statement(text=quotes[0] if quotes else claim, kind="quote" if quotes else "claim",
                              sentence=" ".join(text.split()), citations=citations)
    else:
        statement = Statement(text=text, kind="claim", sentence=text)
    infos = _document_infos(index, documents) if citations else []
    return _check_one(statement, index, infos, top=top, meaning=meaning, cross_encoder_model=cross_encoder_model,
                      sources=list(sources) if sources else None, context=context, back_matter=back_matter)


def cited_work_absent(resolutions: Sequence[Resolution | dict]) -> bool:
    """Whether a statement cites, and every work it cites is not in the collection."""
    statuses = [r.status if isinstance(r, Resolution) else r.get("status") for r in resolutions]
    return bool(statuses) and all(s == "not_in_collection" for s in statuses)


def _not_checked(statement: Statement, message: str, *, cited: Sequence[str] = (), resolutions: Sequence[dict] = (),
                 absent: bool = False) -> CheckRow:
    """A row for a statement left unchecked: verdict not_found (nothing was found), not_checked, the reason."""
    return CheckRow(statement.text, statement.kind, "not_found", None, None, None, None, None, "",
                    statement.cited, list(cited), False, message, statement.line, resolutions=list(resolutions),
                    not_in_collection=absent, not_checked=True)


def _too_short(statement: Statement, infos: Sequence[dict]) -> CheckRow:
    """A cited claim too short to check: not_checked, its citations still resolved, the reason said."""
    resolutions = [resolve_citation(c, infos) for c in statement.citations]
    words = len(_words(statement.text))
    return _not_checked(statement, f"Not checked: this cited claim is too short to check ({words} "
                                   f"word{'s' if words != 1 else ''}; a claim needs at least {MIN_CLAIM_WORDS}).",
                        cited=_cited_sources(resolutions), resolutions=[r.to_dict() for r in resolutions],
                        absent=cited_work_absent(resolutions))


def _check_one(statement: Statement, index, infos: Sequence[dict], *, top: int, meaning: bool,
               cross_encoder_model: str, sources=None, context: int = 300, back_matter: bool = True) -> CheckRow:
    """One statement checked: its citations resolved, the cited documents first; a statement whose
    cited works are all absent has that as its outcome (its meaning unclear, the passages found
    elsewhere kept for reference only)."""
    resolutions = [resolve_citation(c, infos) for c in statement.citations]
    cited = _cited_sources(resolutions)
    resolved = [r.to_dict() for r in resolutions]
    absent = cited_work_absent(resolutions)
    try:
        check = verify_quote(statement.text, index, sources=sources, cited_sources=cited or None, n_closest=top,
                             context=context, cross_encoder_model=cross_encoder_model, meaning=meaning,
                             back_matter=back_matter, read_not_found=not absent)
    except RagCoreError as exc:  # an empty or oversized statement: report it, go on
        return _not_checked(statement, f"Not checked: {exc}", cited=cited, resolutions=resolved, absent=absent)
    if absent:
        check.message = f"{NOT_IN_COLLECTION_NOTE} {check.message}"
        check.meaning, check.meaning_cues, check.meaning_note = "unclear", [], NOT_IN_COLLECTION_MEANING
        check.meaning_sentence = None
        check.stance, check.stance_score, check.stance_model = "nei", None, "rules"
        check.stance_note = "The cited work is not in the collection: nothing to weigh."
    best = check.best if check.verdict == "near_verbatim" else None
    checked = check.to_dict()
    return CheckRow(
        statement=statement.text, kind=statement.kind, verdict=check.verdict, source=check.source,
        page=check.page, page_label=check.page_label, similarity=check.similarity,
        similarity_kind=check.similarity_kind, diff=best["diff"] if best else "", cited=statement.cited,
        cited_sources=cited, misattributed=check.misattributed, message=check.message, line=statement.line,
        check=check, meaning=check.meaning, meaning_cues=check.meaning_cues, resolutions=resolved,
        not_in_collection=absent, evidence=evidence_passages(checked, for_reference=absent),
        stance=check.stance, stance_score=check.stance_score, stance_model=check.stance_model,
        evidence_sentences=[] if absent else list(check.evidence_sentences),
    )
