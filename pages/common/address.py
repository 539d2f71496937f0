"""Compare's state in the address: ``/compare?collection=NAME&q=QUESTION&...`` read once per address
into the form and the knobs (and searched at once), and written back after every change, so a reload,
a bookmark or a sent link opens the same comparison. What the parameters mean and how they are
checked: :mod:`rag_core.retrieval.links`."""

from __future__ import annotations

import streamlit as st

from pages.common import lab_ui
from pages.common.state import address_is_new, preferences, remember_address
from rag_core.retrieval.links import (
    ALL_DOCUMENTS,
    DEFAULT_EXACT_MODE,
    DEFAULT_TOP,
    ComparisonLink,
    comparison_from_params,
    comparison_params,
    page_address,
    shown_value,
)
from rag_core.retrieval.search_spec import SearchSpec

RESULT_KEY = "cmp_result"  # Compare's last comparison (its request and settings)
LINK_PROBLEMS_KEY = "cmp_link_problems"  # what a link asked for that could not be done
AUTORUN_KEY = "cmp_autorun"  # a link or the Relevance lab page: search this question at once


def read_address() -> ComparisonLink | None:
    """The comparison the address asks for, once per address (a link opened, a reload, an edit)."""
    params = st.query_params.to_dict()
    if set(params) <= {"collection"} or not address_is_new("compare", params):
        return None
    remember_address("compare", params)
    return comparison_from_params(params)


def apply_address(lib, name: str, docs: list[dict], asked: ComparisonLink) -> None:
    """Put what the address asks for into the form and the knobs, and search it at once."""
    problems = list(asked.problems)
    if asked.collection and asked.collection != name:
        return  # pick_collection said that it is missing; nothing of it applies to another collection
    if asked.query is not None:
        st.session_state["cmp_query"] = asked.query
        st.session_state[AUTORUN_KEY] = asked.query
    sources = [d["source"] for d in docs]
    if asked.source is not None:
        if asked.source in sources:
            st.session_state["cmp_source"] = asked.source
        else:
            problems.append(f"the collection has no document “{shown_value(asked.source, 80, quoted=False)}”: "
                            "searching all documents")
            st.session_state["cmp_source"] = ALL_DOCUMENTS
    else:
        st.session_state["cmp_source"] = ALL_DOCUMENTS
    st.session_state["cmp_top"] = asked.top or DEFAULT_TOP
    st.session_state["cmp_mode"] = asked.exact_mode or DEFAULT_EXACT_MODE
    st.session_state["cmp_phrase"] = asked.phrase or ""
    if asked.spec:
        model = preferences().cross_encoder_model
        spec = lab_ui.current_spec(lib, name, model).with_changes(**asked.spec)
        lab_ui.remember_spec(lib, name, spec, prefix="cmp")
        if asked.spec.get("reranker") == "cross_encoder" and not lab_ui.has_cross_encoder(model):
            problems.append("the link asks for the cross-encoder, which cannot be loaded here: the hybrid list "
                            "is ordered by fusion instead (see Settings)")
    if problems:
        st.session_state[LINK_PROBLEMS_KEY] = problems


def write_address(name: str) -> str:
    """Keep the address in step with what is shown; returns the full link to it."""
    stored = st.session_state.get(RESULT_KEY)
    if stored and stored["request"]["collection"] == name:
        r = stored["request"]
        params = comparison_params(name, r["query"], source=r["source"], top=r["top"], exact_mode=r["mode"],
                                   phrase=r["phrase"], spec=SearchSpec.from_dict(stored["config"], strict=False))
    else:
        params = {"collection": name}
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    remember_address("compare", params)
    return page_address(st.context.url, "/compare", params)
