"""LaTeX of a BibTeX field as plain text, fast for what .bib files hold, with pylatexenc for the rest.

A reference manager's field is mostly plain words, braces that protect capitals (``{B}ERT``) and
accents (``{\\"u}``, ``\\'e``, ``\\c{c}``, ``\\ss``). :func:`latex_to_text` reads those itself (the
table below) and hands a field to pylatexenc only when another macro or math is left, so a
50 MiB file is not spent in a LaTeX parser (issue 27: 98 % of a 125 s import). What a .bib
means literally is kept: a ``%`` is a percent sign (not a comment that cuts the title), ``&``
and ``#`` are themselves, ``\\href{url}{text}`` is its text, ``\\url{x}`` its address,
``\\textasciitilde``/``\\textasciicircum`` are ``~``/``^`` (what the writer,
:func:`bibtex_escape`, puts for them). A field pylatexenc cannot read (a macro without its
arguments, braces nested past Python's recursion) is read with its braces removed, and counted.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["bibtex_escape", "latex_to_text"]

_ACCENTS = {"`": "\u0300", "'": "\u0301", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
            ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
            "b": "\u0331", "d": "\u0323", "r": "\u030a", "t": "\u0361"}
_LETTERS = {"ss": "ß", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "aa": "å", "AA": "Å",
            "l": "ł", "L": "Ł", "i": "ı", "j": "ȷ", "textasciitilde": "\x03", "textasciicircum": "^",
            "textbackslash": "\x04", "textendash": "–", "textemdash": "—", "textquoteright": "’",
            "textquoteleft": "‘", "textunderscore": "_", "textbar": "|", "textless": "<", "textgreater": ">",
            "S": "§", "P": "¶", "copyright": "©", "dag": "†", "ddag": "‡", "pounds": "£"}
# Placeholders for what is literal after its escape is read (a brace, a tilde, a backslash), put back
# once the braces and ties of the LaTeX are gone.
_LITERAL = {"\x01": "{", "\x02": "}", "\x03": "~", "\x04": "\\", "\x05": "$"}
_PLACEHOLDER = re.compile("[\x01-\x05]")
_ESCAPED = {"&": "&", "%": "%", "$": "\x05", "#": "#", "_": "_", "{": "\x01", "}": "\x02", " ": " ", ",": " ",
            ";": " ", "!": "", "/": "", "-": ""}
# An accent on a letter, a dotless i/j or braced letter: \"u, \"{u}, {\"u}, \'{\i}, \c c, \v{s}
_ACCENT = re.compile(r"\{?\\([`'^\"~=.])\s*(?:\{\s*(\\[ij]\b|[A-Za-z])\s*\}|(\\[ij]\b|[A-Za-z]))\}?"
                     r"|\{?\\([uvHckbdrt])(?:\s*\{\s*(\\[ij]\b|[A-Za-z])\s*\}|\s+([A-Za-z]))\}?")
_LETTER = re.compile(r"\\(" + "|".join(sorted(_LETTERS, key=len, reverse=True)) + r")(?![A-Za-z])(?:\{\}|\s*)")
_ESCAPE = re.compile(r"\\([&%$#_{} ,;!/\-])")
# Font and case commands a title wraps words in: the words are kept, the command dropped.
_STYLE = re.compile(r"\\(?:emph|textit|textbf|textsc|textrm|texttt|textsf|textup|textnormal|mathrm|mathit|mathbf|"
                    r"mbox|text|em|it|bf|sc|rm|tt|sf|itshape|bfseries|scshape|upshape|relax|protect|NoCaseChange)"
                    r"(?![A-Za-z])\s*")
_BARE = re.compile(r"(?<!\\)([%&#])")
_DASHES = (("---", "—"), ("--", "–"), ("``", "“"), ("''", "”"))


def _accented(m: re.Match) -> str:
    accent = m.group(1) or m.group(4)
    letter = m.group(2) or m.group(3) or m.group(5) or m.group(6)
    base = {"\\i": "ı", "\\j": "ȷ"}.get(letter, letter)
    if base in ("ı", "ȷ"):
        base = {"ı": "i", "ȷ": "j"}[base]  # an accent on a dotless i is the accented i
    return unicodedata.normalize("NFC", base + _ACCENTS[accent])


def _simple(value: str) -> str | None:
    """The common LaTeX of a .bib field read by the table, or None when more is left."""
    text = _ACCENT.sub(_accented, value) if "\\" in value else value
    if "\\" in text:
        text = _LETTER.sub(lambda m: _LETTERS[m.group(1)], text)
        text = _ESCAPE.sub(lambda m: _ESCAPED[m.group(1)], text)
        text = _STYLE.sub("", text)
    if "\\" in text or "$" in text:
        return None
    for latex, shown in _DASHES:
        text = text.replace(latex, shown)
    text = text.replace("~", "\u00a0").replace("{", "").replace("}", "")
    for placeholder, literal in _LITERAL.items():
        text = text.replace(placeholder, literal)
    return text


@functools.lru_cache(maxsize=1)
def _pylatexenc():
    from pylatexenc import latex2text, latexwalker, macrospec

    walker_db = latexwalker.get_default_latex_context_db()
    walker_db.add_context_category("rag-core", prepend=True, macros=[
        macrospec.MacroSpec("href", "{{"), macrospec.MacroSpec("url", "{")])
    text_db = latex2text.get_default_latex_context_db()
    text_db.add_context_category("rag-core", prepend=True, macros=[
        latex2text.MacroTextSpec("href", simplify_repl="%(2)s"), latex2text.MacroTextSpec("url", simplify_repl="%(1)s"),
        latex2text.MacroTextSpec("textasciicircum", "^"), latex2text.MacroTextSpec("textasciitilde", "~")])
    return latexwalker, walker_db, latex2text.LatexNodes2Text(latex_context=text_db)


def _full(value: str) -> str:
    latexwalker, walker_db, to_text = _pylatexenc()
    walker = latexwalker.LatexWalker(_BARE.sub(r"\\\1", value), latex_context=walker_db, tolerant_parsing=True)
    nodes, _, _ = walker.get_latex_nodes()
    return to_text.nodelist_to_text(nodes)


def latex_to_text(value: str) -> tuple[str, bool]:
    """``(text, read)`` of a field's LaTeX: ``read`` is False when it could not be read as LaTeX and
    its braces and backslashes were only removed."""
    if not value:
        return "", True
    if _PLACEHOLDER.search(value):
        value = _PLACEHOLDER.sub("", value)  # the placeholders above (control characters: never text)
    if "\\" not in value and "$" not in value:
        return _simple(value) or "", True
    simple = _simple(value)
    if simple is not None:
        return simple, True
    try:
        return _full(value), True
    except (RecursionError, LookupError, ValueError, TypeError, AttributeError, IndexError):
        return re.sub(r"\\[A-Za-z]+\s*|[{}\\$]", "", value), False


# ----------------------------------------------------------------------------- writing

_SPECIALS = re.compile(r"[\\{}&%$#_~^]")
_WRITTEN = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
            "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def bibtex_escape(value: str) -> str:
    """Plain text as the LaTeX of a BibTeX field: every special character escaped (``\\ { } & %
    $ # _ ~ ^``), so that braces balance and :func:`latex_to_text` reads the same text back."""
    return _SPECIALS.sub(lambda m: _WRITTEN[m.group()], value)
