"""A comparison as the query parameters of an address, and back.

``/compare?collection=papers&q=what+limits+dense+retrieval&fusion=rrf&rrf_k=60`` opens the
app's Compare page with that comparison drawn, so it can be bookmarked or sent. Every value
that decides the three lists has a short, readable parameter: the collection, the question,
the documents filter, top-k, the exact search's mode and phrase, and every hybrid setting of
a :class:`~rag_core.retrieval.search_spec.SearchSpec` (reranker, MMR λ, fusion, RRF k, dense
weight α, pool, lexical lists: all of them, so that a link gives the same list after the
collection's default search changed); a value that is out of range or unknown is named in
``problems`` and ignored, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit, urlunsplit

from rag_core.retrieval.fusion import FUSIONS
from rag_core.retrieval.search_spec import LEXICAL_POOLS, SearchSpec
from rag_core.settings import MAX_QUERY_CHARS

# parameter -> SearchSpec field, in the order a link shows them
SPEC_PARAMS = {"reranker": "reranker", "mmr": "mmr_lambda", "fusion": "fusion", "rrf_k": "rrf_k",
               "alpha": "dense_weight", "pool": "pool", "lexical": "lexical"}
LINK_RERANKERS = ("cross_encoder", "mmr", "none")
EXACT_MODES = ("normalized", "literal", "regex")
DEFAULT_TOP = 10
DEFAULT_EXACT_MODE = "normalized"
ALL_DOCUMENTS = "All documents"
MAX_TOP = 100
SHOWN_VALUE_CHARS = 40  # an address's bad value is named in a message cut to this many characters


@dataclass
class ComparisonLink:
    """What a Compare address asks for; None: the address does not say (keep what is shown)."""

    collection: str | None = None
    query: str | None = None
    source: str | None = None  # one document's file name; None: all documents
    top: int | None = None
    exact_mode: str | None = None
    phrase: str | None = None
    spec: dict = field(default_factory=dict)  # SearchSpec fields the address sets
    problems: list[str] = field(default_factory=list)


def _text(value) -> str:
    return ("" if value is None else str(value)).strip()


def _float_text(value: float) -> str:
    return f"{float(value):.4f}".rstrip("0").rstrip(".") or "0"


def comparison_params(collection: str, query: str | None = None, *, source: str | None = None,
                      top: int = DEFAULT_TOP, exact_mode: str = DEFAULT_EXACT_MODE, phrase: str | None = None,
                      spec: SearchSpec | None = None) -> dict[str, str]:
    """The query parameters of a comparison, in a stable order: top-k and the exact mode only when
    they differ from the page's defaults, every hybrid setting of ``spec`` (λ with MMR, k with RRF)."""
    params = {"collection": collection}
    if _text(query):
        params["q"] = query
    if source and source != ALL_DOCUMENTS:
        params["doc"] = source
    if int(top) != DEFAULT_TOP:
        params["top"] = str(int(top))
    if exact_mode and exact_mode != DEFAULT_EXACT_MODE:
        params["exact"] = exact_mode
    if _text(phrase):
        params["phrase"] = phrase
    if spec is not None:  # every hybrid setting, so that the link gives the same list whatever the default
        for param, name in SPEC_PARAMS.items():
            value = getattr(spec, name)
            if (name == "mmr_lambda" and spec.reranker != "mmr") or (name == "rrf_k" and spec.fusion != "rrf") \
                    or (name == "reranker" and value == "auto"):
                continue
            params[param] = _float_text(value) if isinstance(value, float) else str(value)
    return params


def shown_value(value, limit: int = SHOWN_VALUE_CHARS, *, quoted: bool = True) -> str:
    """An address's value as a message names it: cut to ``limit`` characters (a 5,000-digit
    ``top=`` is not echoed whole), with its length when cut; ``quoted``: as Python quotes it."""
    text = _text(value)
    cut = text if len(text) <= limit else text[:limit]
    named = repr(cut) if quoted else cut
    return named if cut == text else f"{named}… ({len(text):,} characters)"


def choice_problem(key: str, value, allowed) -> str | None:
    """What to say of ``key=value`` when the value is given and not one of ``allowed`` (None: nothing)."""
    text = _text(value)
    if not text or text in allowed:
        return None
    return f"{key}={shown_value(text)} is not one of {', '.join(allowed)}; it was not understood and was ignored"


def _number(params: Mapping, key: str, kind, low: float, high: float, problems: list[str]):
    raw = _text(params.get(key))
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        problems.append(f"{key}={shown_value(raw)} is not a {'whole ' if kind is int else ''}number; it was ignored")
        return None
    if not low <= value <= high:
        problems.append(f"{key}={shown_value(raw, quoted=False)} is outside {low:g}–{high:g}; it was ignored")
        return None
    return value


def _choice(params: Mapping, key: str, allowed, problems: list[str]) -> str | None:
    """The value of ``key`` when it is one of ``allowed``; otherwise None (a bad one named in ``problems``)."""
    problem = choice_problem(key, params.get(key), allowed)
    if problem:
        problems.append(problem)
        return None
    return _text(params.get(key)) or None


def comparison_from_params(params: Mapping[str, str]) -> ComparisonLink:
    """Read a Compare address's parameters: every value checked, the bad ones named in ``problems``."""
    problems: list[str] = []
    link = ComparisonLink(problems=problems)
    link.collection = _text(params.get("collection")) or None
    query = params.get("q")
    if query is not None and _text(query):
        link.query = str(query)[:MAX_QUERY_CHARS]
        if len(str(query)) > MAX_QUERY_CHARS:
            problems.append(f"the question was cut to {MAX_QUERY_CHARS:,} characters")
    link.source = _text(params.get("doc")) or None
    link.top = _number(params, "top", int, 1, MAX_TOP, problems)
    mode = _choice(params, "exact", EXACT_MODES, problems)
    if mode:
        link.exact_mode = mode
    link.phrase = _text(params.get("phrase")) or None
    spec: dict = {}
    for key, allowed in (("reranker", LINK_RERANKERS), ("fusion", FUSIONS), ("lexical", LEXICAL_POOLS)):
        value = _choice(params, key, allowed, problems)
        if value:
            spec[key] = value
    for param, name, kind, low, high in (("mmr", "mmr_lambda", float, 0.0, 1.0), ("alpha", "dense_weight", float,
                                                                                  0.0, 1.0),
                                         ("rrf_k", "rrf_k", int, 1, 10_000), ("pool", "pool", int, 1, 1000)):
        value = _number(params, param, kind, low, high, problems)
        if value is not None:
            spec[name] = value
    link.spec = spec
    return link


def page_address(url: str | None, path: str, params: Mapping[str, str]) -> str:
    """The full address of ``path`` (``/compare``) with ``params`` on the server of ``url`` (the
    address the page was opened at); a relative one when ``url`` is unknown."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    if not url:
        return f"{path}?{query}" if query else path
    parts = urlsplit(url)
    base = parts.path.rsplit("/", 1)[0] if parts.path.count("/") > 1 else ""  # an app served under a prefix
    return urlunsplit((parts.scheme, parts.netloc, base + path, query, ""))
