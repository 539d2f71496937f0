"""The relevance lab's pieces shared by Compare and the Relevance lab page: the hybrid-search
knobs, grades, the per-method metrics table, the slope chart and the overlap tables.

Every figure comes from :mod:`rag_core.lab` and :mod:`rag_core.evaluation` (methods, metrics);
the knobs are the fields of a :class:`~rag_core.retrieval.search_spec.SearchSpec`. This module
only lays them out.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from pages.common.layout import note, text_line
from rag_core.evaluation.methods import METHODS, method_label
from rag_core.evaluation.metrics import JUDGED_METRICS, METRIC_HELP, METRIC_LABELS, query_metrics
from rag_core.lab.judgments import GRADE_SHORT, Grade, Judgments, Passages, load_judgments, passages_of
from rag_core.lab.statistics import overlap_at_k, rank_biased_overlap
from rag_core.retrieval.ranking import cross_encoder_status
from rag_core.retrieval.search_spec import (
    FIELD_LABELS,
    FUSION_LABELS,
    LEXICAL_LABELS,
    SearchSpec,
    saved_collection_spec,
)

GRADE_HELP = ("Your judgment of the passage for this question: 0 not relevant, 1 related, 2 relevant, 3 exactly "
              "what was asked; ≈ mapped from an earlier chunking; – not judged yet (judge below)")
CE_ASKED_KEY = "ce_asked"  # the cross-encoder was picked while unavailable: open the offer
CONFIG_KEY = "lab_config"  # plain session state: collection -> knob values (survives page switches)
KNOBS = ("reranker", "mmr_lambda", "fusion", "rrf_k", "dense_weight", "pool", "lexical")
GRADE_COLOURS = {"3 exact": "#1a7f37", "2 relevant": "#4c9be8", "1 related": "#f2b53a", "0 not relevant": "#d1495b",
                 "unjudged": "#b8b8b8"}
RERANKER_WORDS = {"cross_encoder": "cross-encoder", "mmr": "MMR (diversity)", "none": "none (fusion only)"}
NUM = st.column_config.NumberColumn
TEXT = st.column_config.TextColumn


# ---------------------------------------------------------------- knobs


def has_cross_encoder(model: str | None) -> bool:
    return bool(model) and cross_encoder_status(model).reranker is not None


def _reranker_options(ce_available: bool) -> list[str]:
    """Every reranker; without a cross-encoder it comes last and cannot be chosen (it says why)."""
    return ["cross_encoder", "mmr", "none"] if ce_available else ["none", "mmr", "cross_encoder"]


def _reranker_words(ce_available: bool):
    def words(option: str) -> str:
        if option == "cross_encoder" and not ce_available:
            return "cross-encoder — unavailable (see below)"
        return RERANKER_WORDS[option]
    return words


def package_default(cross_encoder_model: str | None) -> SearchSpec:
    """The package's default search with the app's cross-encoder, its reranker one that can run here."""
    ce_available = has_cross_encoder(cross_encoder_model)
    return SearchSpec().with_changes(cross_encoder_model=cross_encoder_model or None,
                                     reranker=_reranker_options(ce_available)[0])


def current_spec(lib, name: str, cross_encoder_model: str | None) -> SearchSpec:
    """The knobs' search for ``name``: what this tab set, else the collection's saved default, with
    the cross-encoder of the app's settings."""
    stored = st.session_state.get(CONFIG_KEY, {}).get(name)
    spec = SearchSpec.from_dict(stored, strict=False) if stored else SearchSpec.for_collection(lib.settings(name))
    ce_available = has_cross_encoder(cross_encoder_model)
    options = _reranker_options(ce_available)
    spec = spec.with_changes(cross_encoder_model=cross_encoder_model or None)
    if spec.reranker not in options or (spec.reranker == "cross_encoder" and not ce_available):
        spec = spec.with_changes(reranker=options[0])
    return spec


def knobs_changed(before: dict, spec: SearchSpec) -> bool:
    """Whether a knob moved since ``before`` (a spec's dict); the cross-encoder is the app's setting."""
    return any(before.get(knob) != getattr(spec, knob) for knob in KNOBS)


def _remember(name: str, spec: SearchSpec) -> None:
    st.session_state.setdefault(CONFIG_KEY, {})[name] = spec.to_dict()


def remember_spec(lib, name: str, spec: SearchSpec, *, prefix: str) -> None:
    """Make ``spec`` the knobs' search for ``name`` (a link opened): the knobs show it on this run."""
    _remember(name, spec)
    for knob in KNOBS:
        st.session_state.pop(f"{prefix}_{knob}_{name}", None)


def knob_panel(lib, name: str, *, prefix: str, cross_encoder_model: str | None) -> SearchSpec:
    """The hybrid-search knobs; returns the search they show (with ``cross_encoder_model``, the app's).
    A change is kept for the tab and re-runs what depends on it."""
    ce_available = has_cross_encoder(cross_encoder_model)
    spec = current_spec(lib, name, cross_encoder_model)
    keys = {k: f"{prefix}_{k}_{name}" for k in KNOBS}
    for knob, key in keys.items():
        if key not in st.session_state:
            st.session_state[key] = getattr(spec, knob)

    def changed() -> None:
        if st.session_state[keys["reranker"]] == "cross_encoder" and not ce_available:  # listed, not choosable
            st.session_state[keys["reranker"]] = spec.reranker
            st.session_state[CE_ASKED_KEY] = True
        values = {k: st.session_state[key] for k, key in keys.items()}
        values["dense_weight"] = float(values["dense_weight"])
        values["mmr_lambda"] = float(values["mmr_lambda"])
        values["pool"], values["rrf_k"] = int(values["pool"]), int(values["rrf_k"])
        _remember(name, SearchSpec.from_dict(values, strict=False))

    def reset() -> None:
        default = SearchSpec.for_collection(lib.settings(name))
        options = _reranker_options(ce_available)
        default = default.with_changes(reranker=options[0])
        _remember(name, default)
        for knob, key in keys.items():
            st.session_state[key] = getattr(default, knob)

    saved = saved_collection_spec(lib.settings(name))
    with st.container(border=True):
        head, button = st.columns([5, 1.3], vertical_alignment="center")
        head.markdown("**Hybrid search settings** — a change re-runs the hybrid list and shows how each row moved")
        button.button("Collection default" if saved else "Package default", key=f"{prefix}_reset_{name}",
                      on_click=reset, icon=":material/restart_alt:", width="stretch",
                      help="Back to the settings this collection searches with by default"
                           + (" (saved from the optimiser)" if saved else ""))
        c, label = st.columns([1.5, 1, 1.4, 0.8, 1.3, 0.9, 1.3]), FIELD_LABELS
        c[0].selectbox(label["reranker"], _reranker_options(ce_available),
                       format_func=_reranker_words(ce_available),
                       key=keys["reranker"], on_change=changed,
                       help="Cross-encoder: re-reads the pool (only when one can be loaded, see Settings). "
                            "MMR: after fusion, maximal marginal relevance trades relevance for variety. "
                            "None: the fused order.")
        c[1].slider(label["mmr_lambda"], 0.0, 1.0, step=0.05, key=keys["mmr_lambda"], on_change=changed,
                    disabled=st.session_state[keys["reranker"]] != "mmr",
                    help="Higher favours relevance, lower favours passages unlike those above them")
        c[2].selectbox(label["fusion"], list(FUSION_LABELS), format_func=FUSION_LABELS.get, key=keys["fusion"],
                       on_change=changed, help="How the first-stage lists are merged when no cross-encoder "
                                               "reorders the pool")
        c[3].number_input(label["rrf_k"], min_value=1, max_value=10_000, step=10, key=keys["rrf_k"], on_change=changed,
                          disabled=st.session_state[keys["fusion"]] != "rrf",
                          help="Reciprocal rank fusion: each list adds weight / (k + rank). Used only when the "
                               "fusion is reciprocal rank fusion (greyed out otherwise: it changes nothing then)")
        c[4].slider(label["dense_weight"], 0.0, 1.0, step=0.05, key=keys["dense_weight"], on_change=changed,
                    help="The embedding list's share of the fused score; the lexical list gets 1 − α "
                         "(0.5: equal)")
        c[5].number_input(label["pool"], min_value=1, max_value=1000, step=10, key=keys["pool"], on_change=changed,
                          help="Candidates taken from each first-stage list before fusing or re-reading")
        c[6].selectbox(label["lexical"], list(LEXICAL_LABELS), format_func=LEXICAL_LABELS.get,
                       key=keys["lexical"], on_change=changed,
                       help="Which lexical rankings feed the pool (and the lexical side of the fusion)")
        chosen = st.session_state[keys["reranker"]]
        with st.container(key=f"{prefix}_reranker_words"):
            text_line("Reranker:", reranker_does(chosen, st.session_state[keys["mmr_lambda"]]), bold_first=True,
                      muted=True, sep=" ")
            if st.session_state.get(CE_ASKED_KEY):
                status = cross_encoder_status(cross_encoder_model) if cross_encoder_model else None
                reason = (status.reason or status.detail) if status else "no cross-encoder is set (Settings)"
                note("warning", f"The cross-encoder cannot be chosen here: {str(reason).rstrip('.')}. The reranker "
                                f"stays “{RERANKER_WORDS[chosen]}”; to use one, give a local cross-encoder folder "
                                "below.", lead="Not available.")
        if not ce_available:
            cross_encoder_offer(cross_encoder_model, prefix)
    return current_spec(lib, name, cross_encoder_model)


def reranker_does(reranker: str, mmr_lambda: float) -> str:
    """What the chosen reranker will do to the pool, in one line."""
    if reranker == "cross_encoder":
        return "the cross-encoder re-reads every passage of the pool with the question and orders it by its score."
    if reranker == "mmr":
        return (f"after fusion, maximal marginal relevance (λ {float(mmr_lambda):.2f}) reorders the pool, trading "
                "relevance for passages unlike those above them.")
    return "none: the pool is ordered by the fused score of the first-stage lists (nothing re-reads it)."


def cross_encoder_offer(model: str | None, prefix: str) -> None:
    """Why the cross-encoder cannot be chosen, and a field for a local model folder that makes it one."""
    from pages.common.state import data_dir
    from rag_core.collections.preferences import update_preferences
    from rag_core.retrieval.ranking import forget_rerankers

    asked = st.session_state.pop(CE_ASKED_KEY, False)
    reason = cross_encoder_status(model).detail if model else "No cross-encoder is set (Settings)."
    with st.expander("Cross-encoder: unavailable here — why, and how to add one", expanded=asked,
                     key=f"{prefix}_ce_offer"):
        text_line(reason, muted=True)
        with st.form(f"{prefix}_ce_form", border=False):
            folder, go = st.columns([5, 1], vertical_alignment="bottom")
            path = folder.text_input("Local cross-encoder folder", key=f"{prefix}_ce_folder",
                                     placeholder="/path/to/ms-marco-MiniLM-L-6-v2 (a folder with a config.json)",
                                     help="A sentence-transformers cross-encoder saved on this machine; it becomes "
                                          "the app's cross-encoder (as on the Settings page)")
            use = go.form_submit_button("Use it", width="stretch")
        if use:
            chosen = Path((path or "").strip()).expanduser()
            if not (path or "").strip() or not (chosen / "config.json").is_file():
                note("warning", f"“{path}” is not a folder holding a model (no config.json there).")
            else:
                update_preferences(data_dir(), cross_encoder_model=str(chosen))
                forget_rerankers()
                st.rerun()


# ---------------------------------------------------------------- grades


def grade_text(grade: Grade | None) -> str:
    """ "3", "≈2" (mapped from an earlier chunking) or "–" (not judged)."""
    return "–" if grade is None else grade.label


def grade_category(grade: Grade | None) -> str:
    return "unjudged" if grade is None else GRADE_SHORT[grade.grade]


def judgments_and_grades(lib, name: str, index, query: str,
                         passages: Passages | None = None) -> tuple[Judgments, Passages, dict[int, Grade]]:
    """The collection's judgments, the index's passages (``passages``: already keyed), and chunk
    index -> grade for ``query``."""
    judgments = load_judgments(lib, name)
    if passages is None:
        passages = passages_of(index, lib.documents(name))
    return judgments, passages, judgments.grades(query, passages)


# ---------------------------------------------------------------- metrics


def metrics_frame(lists: dict[str, list[dict]], grades: dict[int, Grade],
                  previous: dict[str, list[dict]] | None = None) -> pd.DataFrame:
    """One row per method: its metrics for this question (and nDCG@10 under the settings before)."""
    by_chunk = {i: g.grade for i, g in grades.items()}
    records = []
    for method in METHODS:
        if method not in lists:
            continue
        ranking = [r["chunk_index"] for r in lists[method]]
        values = query_metrics(ranking, by_chunk)
        record = {"method": method_label(method)}
        record.update({METRIC_LABELS[m]: values[m] for m in JUDGED_METRICS})
        if previous is not None:
            before = previous.get(method)
            if before is not None:
                old = query_metrics([r["chunk_index"] for r in before], by_chunk)["ndcg@10"]
                new = values["ndcg@10"]
                record["nDCG@10 before"] = old
                record["change"] = None if old is None or new is None else new - old
            else:
                record["nDCG@10 before"] = record["change"] = None
        records.append(record)
    return pd.DataFrame(records)


METRIC_COLUMNS = {
    "method": TEXT(width=110),
    **{METRIC_LABELS[m]: NUM(format="%.3f", width=86, help=METRIC_HELP[m]) for m in JUDGED_METRICS},
    "nDCG@10 before": NUM(format="%.3f", width=110, help="nDCG@10 of this method's list under the settings "
                                                         "before the last change (same judgments)"),
    "change": NUM(format="%+.3f", width=70, help="nDCG@10 now minus before"),
}


# ---------------------------------------------------------------- the slope chart


def slope_frame(view, grades: dict[int, Grade], top: int, labels: dict[int, str],
                named: set[int] | frozenset = frozenset()) -> pd.DataFrame:
    """Two points per passage of a :class:`~rag_core.retrieval.comparison.StageView`: its rank before
    and after the stage (``top`` + 1 when outside the top ``top``), for the passages in either top
    ``top``; ``named``: the passages whose label is written on the chart (the top movers)."""
    records = []
    for row in view.rows:
        before, after = row["before"], row["after"]
        if before > top and after > top:
            continue
        grade = grades.get(row["chunk_index"])
        label = labels.get(row["chunk_index"], str(row["chunk_index"]))
        move = f"{before}→{after}" if before <= top and after <= top else (
            f"{before}→ out" if after > top else f"in → {after}")
        common = {"passage": label, "grade": grade_category(grade), "move": move, "rank before": before,
                  "rank after": after, "chunk": row["chunk_index"]}
        ranks = {k: v for k, v in (row.get("first_stage_ranks") or {}).items() if v}
        if ranks:
            common["first-stage ranks"] = " · ".join(f"{k} #{v}" for k, v in ranks.items())
        name = row["chunk_index"] in named
        # a mover is named at its end inside the top: after the stage, or before it when it fell out
        records.append({**common, "stage": view.before_label, "rank": min(before, top + 1),
                        "name": f"{label} {move}" if name and after > top else ""})
        records.append({**common, "stage": view.after_label, "rank": min(after, top + 1),
                        "name": f"{label} {move}" if name and after <= top else ""})
    return pd.DataFrame(records)


def slope_chart(frame: pd.DataFrame, top: int, view):
    """Lines from each passage's rank before the stage to its rank after; the top movers named."""
    import altair as alt

    order = [view.before_label, view.after_label]
    colour = alt.Color("grade:N", scale=alt.Scale(domain=list(GRADE_COLOURS), range=list(GRADE_COLOURS.values())),
                       legend=alt.Legend(title="judged", orient="bottom"))
    x = alt.X("stage:N", sort=order, scale=alt.Scale(domain=order, padding=1.1),
              axis=alt.Axis(title=None, labelAngle=0, labelFontSize=12, labelLimit=420, orient="top"))
    y = alt.Y("rank:Q", scale=alt.Scale(domain=[top + 1.5, 0.5]),
              axis=alt.Axis(title=f"rank ({top + 1} = below the top {top})", tickMinStep=1))
    tooltip = [c for c in ("passage", "grade", "move", "first-stage ranks") if c in frame.columns]
    base = alt.Chart(frame)
    lines = base.mark_line(strokeWidth=2, opacity=0.7).encode(x=x, y=y, detail="chunk:N", color=colour,
                                                                 tooltip=tooltip)
    points = base.mark_circle(size=70, opacity=0.95).encode(x=x, y=y, color=colour, tooltip=tooltip)
    after = base.transform_filter((alt.datum.name != "") & (alt.datum.stage == view.after_label))
    before = base.transform_filter((alt.datum.name != "") & (alt.datum.stage == view.before_label))
    right = after.mark_text(align="left", dx=9, fontSize=12, fontWeight="bold").encode(x=x, y=y, text="name:N")
    left = before.mark_text(align="right", dx=-9, fontSize=12, fontWeight="bold").encode(x=x, y=y, text="name:N")
    return (lines + points + right + left).properties(height=max(280, 26 * (top + 2)))


# ---------------------------------------------------------------- without judgments


def overlap_frames(lists: dict[str, list], k: int = 10) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Overlap@k and rank-biased overlap between every two lists (lists: name -> passage ids)."""
    names = list(lists)
    overlap = pd.DataFrame(index=names, columns=names, dtype=float)
    rbo = pd.DataFrame(index=names, columns=names, dtype=float)
    for a in names:
        for b in names:
            overlap.loc[a, b] = overlap_at_k(lists[a], lists[b], k)
            rbo.loc[a, b] = rank_biased_overlap(lists[a][:k], lists[b][:k])
    return overlap, rbo


def forget_session_config(name: str) -> None:
    """Drop this tab's knob settings for ``name`` (after the collection's default changed)."""
    st.session_state.get(CONFIG_KEY, {}).pop(name, None)
    for key in [k for k in st.session_state if isinstance(k, str) and k.endswith(f"_{name}")
                and any(k.startswith(f"{p}_{knob}_") for p in ("cmp", "lab") for knob in KNOBS)]:
        del st.session_state[key]
