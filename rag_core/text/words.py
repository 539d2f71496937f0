"""The words of a text, as a reader compares them: folded, compounds joined, spelling unified.

:func:`words` reads a text into :class:`Word` tokens with their offsets in the original
text. Characters are folded as for quote matching (:func:`rag_core.text.folding.fold_characters`:
case, ligatures, curly quotes, dashes); a hyphenated compound is one word ("task-specific",
"task-\\nspecific" and the PDF's "taskspecific" all read ``taskspecific``, its parts kept);
a number is its own token ("top-20" is "top" and "20", "21-million" is "21" and "million",
"7-18" is "7", "-", "18"), while digits written against letters are a name ("BM25",
"P100", "seq2seq"), and so are digits a hyphen joins to a capitalised name ("GPT-3", "Llama-2",
"ResNet-50", "Jurassic-1"; not "Top-5" or "Table-2"); British spellings read as American ones ("modelling" = "modeling",
"specialised" = "specialized", "colour" = "color"), so a spelling is never a change.

:func:`stem` is the Snowball English stem of a word's ``norm``; :data:`STOPWORDS` the
function words that carry no content of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from rag_core.text.folding import fold_characters

__all__ = ["NUMBER_WORDS", "STOPWORDS", "Word", "american", "is_content", "stem", "words"]


@dataclass(frozen=True)
class Word:
    """One token of a text: ``text`` as written, ``norm`` as compared, ``start``/``end`` its
    offsets in the original text, ``kind`` one of "word", "number", "symbol" (``% < > = ~ - /
    ±``) or "punct" (``. , ; : ! ? ( ) [ ]``); ``parts``: a hyphenated compound's parts."""

    text: str
    norm: str
    start: int
    end: int
    kind: str
    parts: tuple[str, ...] = field(default=())


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _wordset("""
a an the and or but nor so yet of in on at to for from by with as into onto upon over under about
than then that this these those there here which who whom whose what when where why how whether if
is are was were be been being am do does did done doing have has had having will would shall should
can could may might must it its it's they them their theirs we us our ours i me my you your he him
his she her hers one's itself themselves ourselves also such via per each other another both either
very just too quite rather really even still already again further furthermore moreover thus hence
therefore consequently however nevertheless nonetheless indeed namely respectively instance example
eg ie etc al et vs cf like including include includes included i.e e.g while whereas although though
because since unless until after before during within between among amongst across along around
through throughout toward towards up down out off only not no never all any some most many much
more less few fewer several same own its
""")

NUMBER_WORDS = _wordset("""
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
million billion trillion dozen half quarter third thirds quarters twice thrice
""")

# British spellings whose American form is not reached by the -ise/-yse/-lled rules below.
_BRITISH = {
    "centre": "center", "centres": "centers", "centred": "centered", "metre": "meter", "metres": "meters",
    "fibre": "fiber", "fibres": "fibers", "litre": "liter", "litres": "liters", "theatre": "theater",
    "calibre": "caliber", "spectre": "specter", "lustre": "luster", "meagre": "meager", "sombre": "somber",
    "manoeuvre": "maneuver", "catalogue": "catalog", "catalogues": "catalogs", "dialogue": "dialog",
    "dialogues": "dialogs", "analogue": "analog", "analogues": "analogs", "programme": "program",
    "programmes": "programs", "defence": "defense", "licence": "license", "offence": "offense",
    "pretence": "pretense", "grey": "gray", "aluminium": "aluminum", "towards": "toward", "whilst": "while",
    "amongst": "among", "learnt": "learned", "spelt": "spelled", "judgement": "judgment",
    "acknowledgement": "acknowledgment", "ageing": "aging", "enrol": "enroll", "fulfil": "fulfill",
    "skilful": "skillful", "wilful": "willful", "sceptical": "skeptical", "plough": "plow", "tyre": "tire",
    "worldwide": "worldwide", "foetus": "fetus", "diarrhoea": "diarrhea", "oestrogen": "estrogen",
    "haemoglobin": "hemoglobin", "anaemia": "anemia", "paediatric": "pediatric", "encyclopaedia": "encyclopedia",
    "artefact": "artifact", "artefacts": "artifacts", "cheque": "check", "storey": "story", "mould": "mold",
    "smoulder": "smolder", "draught": "draft", "gaol": "jail", "kerb": "curb", "pyjamas": "pajamas",
}
_OUR_STEMS = ("colour", "behaviour", "favour", "flavour", "harbour", "honour", "humour", "labour", "neighbour",
              "rumour", "vapour", "vigour", "rigour", "armour", "endeavour", "saviour", "odour", "tumour",
              "parlour", "splendour", "clamour", "candour", "ardour", "fervour", "valour")
_ISE = re.compile(r"(?<=[a-z]{2})is(e|es|ed|ing|ation|ations|ational|er|ers)$")
_YSE = re.compile(r"(?<=[a-z]{2})ys(e|es|ed|ing|er|ers)$")
_LLED = re.compile(r"(?<=[a-z]{3}[aeiu])ll(ed|ing|er|ers)$")


@lru_cache(maxsize=65536)
def american(word: str) -> str:
    """The American spelling of a lower-case word (itself when it has none): "modelling" ->
    "modeling", "specialised" -> "specialized", "colours" -> "colors". Applied to both texts
    compared, so a rule that also rewrites a word no one spells two ways does no harm."""
    if len(word) < 5 or not word.isalpha():
        return word
    if word in _BRITISH:
        return _BRITISH[word]
    for stem_ in _OUR_STEMS:
        if word.startswith(stem_):
            return stem_[:-2] + "r" + word[len(stem_):]
    word = _ISE.sub(r"iz\1", word)
    word = _YSE.sub(r"yz\1", word)
    return _LLED.sub(r"l\1", word) if len(word) >= 8 else word


@lru_cache(maxsize=65536)
def stem(norm: str) -> str:
    """The Snowball English stem of a word's ``norm`` ("improves", "improved" -> "improv")."""
    return _stemmer().stemWord(norm)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def is_content(word: Word) -> bool:
    """A word that carries content: not punctuation, a symbol or a function word."""
    return word.kind == "word" and word.norm not in STOPWORDS and len(word.norm) > 1


# --------------------------------------------------------------------------- reading

_PIECE = re.compile(r"[^\W_]+|[^\w\s]")
_DIGITS = re.compile(r"\d+")
_NUMBER_SUFFIX = re.compile(r"(\d+)(k|m|b|bn|x|st|nd|rd|th|s)")
_SYMBOLS = frozenset("%<>=~\u223c\u2248/\u00b1\u00d7+-")
_PUNCT = frozenset(".,;:!?()[]{}")
_HYPHENS = frozenset("-\u2010\u2011\u00ad\x02\ufffe")  # not the en and em dashes
_JOIN_BREAK = re.compile(r"-[ \t]*\n[ \t]*|\u00ad\s*")


def _is_number_piece(piece: str) -> bool:
    return piece.isdigit() or bool(_NUMBER_SUFFIX.fullmatch(piece))


def words(text: str) -> list[Word]:
    """The tokens of ``text`` (see the module docstring), each with its original offsets."""
    folded, origin = fold_characters(text)
    pieces = [(m.start(), m.end()) for m in _PIECE.finditer(folded)]
    out: list[Word] = []
    i = 0
    n = len(pieces)
    while i < n:
        a, b = pieces[i]
        piece = folded[a:b]
        if piece.isalnum() or piece.isalpha():
            # extend over joins: decimals, thousands, compounds, line-end hyphens, apostrophes
            end_piece = i
            kind = "number" if _is_number_piece(piece) else "word"
            parts = [piece]
            j = i + 1
            while j + 1 < n:
                sep_a, sep_b = pieces[j]
                nxt_a, nxt_b = pieces[j + 1]
                prev_end = pieces[end_piece][1]
                sep = folded[sep_a:sep_b]
                gap_before = folded[prev_end:sep_a]
                gap_after = folded[sep_b:nxt_a]
                nxt = folded[nxt_a:nxt_b]
                last = parts[-1]
                if not nxt.isalnum():
                    break
                if sep in ".," and not gap_before and not gap_after and last.isdigit() and nxt[:1].isdigit() \
                        and kind == "number" and (sep == "." or len(_DIGITS.match(nxt).group()) == 3):
                    parts[-1] = last + sep + nxt  # 8.5, 100,000, 8.1m
                elif sep == "." and not gap_before and not gap_after and kind == "word" and nxt.isdigit() \
                        and any(c.isdigit() for c in last):
                    parts[-1] = last + sep + nxt  # v1.1
                elif sep == "." and not gap_before and not gap_after and len(last) == 1 and len(nxt) == 1 \
                        and last.isalpha() and nxt.isalpha():
                    parts[-1] = last + nxt  # e.g -> eg, i.e -> ie
                elif sep in "-\u2010\u2011" and text[origin[sep_a]] in _HYPHENS and not gap_before and not gap_after \
                        and kind == "word" and len(parts) == 1 and last.isalpha() and nxt.isdigit() \
                        and _is_product_name(text[origin[a]:origin[prev_end - 1] + 1]):
                    parts[-1] = last + nxt  # GPT-3, Llama-2, ResNet-50, Jurassic-1: a name, not a number
                elif sep == "'" and not gap_before and not gap_after and last.isalpha() and nxt.isalpha():
                    parts[-1] = last + "'" + nxt  # don't, we've, mozilla's
                elif sep in "-\u00ad" and text[origin[sep_a]] in _HYPHENS and not gap_before and (
                        not gap_after or _JOIN_BREAK.fullmatch(folded[sep_a:nxt_a])) and kind == "word" \
                        and last.isalpha() and nxt.isalpha() and not (last in NUMBER_WORDS and nxt in NUMBER_WORDS):
                    parts.append(nxt)  # task-specific, worm-\nhole (twenty-one stays two numbers)
                else:
                    break
                end_piece = j + 1
                j += 2
            start, end = origin[a], origin[pieces[end_piece][1] - 1] + 1
            joined = "".join(parts)
            if kind == "word":
                joined = joined[:-2] if joined.endswith("'s") else joined
                out.extend(_split_glued(text[start:end], joined, start, end, parts))
            else:
                out.append(Word(text[start:end], joined, start, end, "number"))
            i = end_piece + 1
            continue
        start, end = origin[a], origin[b - 1] + 1
        if piece in _SYMBOLS:
            out.append(Word(text[start:end], "~" if piece in "\u223c\u2248" else piece, start, end, "symbol"))
        elif piece in _PUNCT:
            out.append(Word(text[start:end], piece, start, end, "punct"))
        # quote marks, apostrophes and other marks are not words
        i += 1
    return [_american(w) for w in _hyphens(text, out)]


# Capitalised words that a hyphen and a number follow as a count or a place, not as a name ("Top-5
# accuracy", "Table-2", "Stage-3"): their number stays a number.
_COUNTED = frozenset({
    "top", "rank", "step", "steps", "layer", "layers", "table", "figure", "fig", "stage", "phase", "type", "grade",
    "level", "class", "group", "day", "days", "week", "weeks", "month", "months", "year", "years", "round", "epoch",
    "section", "chapter", "page", "item", "set", "batch", "block", "order", "part", "tier", "trial", "wave", "dose",
    "cohort", "arm", "visit", "hour", "hours", "k", "n", "p", "r", "recall", "precision", "ndcg", "mrr", "hit", "hits",
    "success", "map", "f", "fold", "shot", "gram", "way", "bit", "bits", "row", "column", "line", "eq", "equation",
    "appendix", "lemma", "theorem", "model", "models", "experiment", "study", "sample", "run", "pass",
})


def _is_product_name(word: str) -> bool:
    """Whether a word that a hyphen and digits follow is a name with a number in it (GPT-3,
    Llama-2, ResNet-50, COVID-19): written with a capital, and not a word that counts ("Top-5")."""
    return any(c.isupper() for c in word) and word.lower() not in _COUNTED


def _hyphens(text: str, tokens: list[Word]) -> list[Word]:
    """A hyphen between two numbers is a range ("7-18", "9%-19%"); one with white space around
    it is a dash (a pause, like a comma); any other ("top-20", "21-million") joins nothing."""
    out = []
    for k, token in enumerate(tokens):
        if token.norm != "-" or token.kind != "symbol":
            out.append(token)
            continue
        before = tokens[k - 1] if k else None
        after = tokens[k + 1] if k + 1 < len(tokens) else None
        if before is not None and after is not None and after.kind == "number" and (
                before.kind == "number" or before.norm == "%") and token.text not in "\u2014\u2015":
            out.append(token)
        elif token.text in "\u2014\u2015" or (token.start > 0 and text[token.start - 1].isspace()) or (
                token.end < len(text) and text[token.end].isspace()):
            out.append(Word(token.text, "-", token.start, token.end, "punct"))
    return out


def _split_glued(original: str, joined: str, start: int, end: int, parts: list[str]) -> list[Word]:
    """A token of letters and digits: a number with a suffix ("100k", "2nd"), a number glued to
    a word only by a hyphen that was dropped ("top-20" arrives as parts), or a name ("bm25")."""
    if len(parts) == 1:
        if _NUMBER_SUFFIX.fullmatch(joined) or joined.replace(".", "", 1).isdigit():
            return [Word(original, joined, start, end, "number")]
        return [Word(original, joined, start, end, "word")]
    return [Word(original, joined, start, end, "word", tuple(parts))]


def _american(word: Word) -> Word:
    if word.kind != "word":
        return word
    norm = american(word.norm)
    if word.parts:
        parts = tuple(american(p) for p in word.parts)
        return Word(word.text, "".join(parts), word.start, word.end, word.kind, parts)
    return word if norm == word.norm else Word(word.text, norm, word.start, word.end, word.kind)
