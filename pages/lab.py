"""Relevance lab: the judged queries of a collection, every method's metrics over them with
confidence intervals, a paired test, snapshots and their differences, the optimiser, and
judgments in and out."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from pages.common import lab_ui
from pages.common.layout import PAGES, link, note, run_page, show_error, text_line
from pages.common.state import library, load_index, pick_collection, preferences
from rag_core.evaluation.methods import method_label
from rag_core.evaluation.metrics import JUDGED_METRICS, LOWER_BOUND_NOTE, METRIC_HELP, METRIC_LABELS
from rag_core.lab.judgments import load_judgments
from rag_core.lab.optimiser import optimise
from rag_core.lab.queryset import evaluate_collection
from rag_core.lab.snapshots import delete_snapshot, diff_snapshots, list_snapshots, load_snapshot, save_snapshot
from rag_core.lab.transfer import beir_files, beir_zip, import_judgments, judgments_csv
from rag_core.output.render import counted
from rag_core.retrieval.links import choice_problem
from rag_core.retrieval.search_spec import (
    SearchSpec,
    save_collection_spec,
    saved_collection_spec,
    settings_for_people,
)

OPTIMISER_KEY = "lab_optimiser"
IMPORT_KEY = "lab_import_report"
FLASH_KEY = "lab_flash"
COMPARE_QUERY_KEY = "cmp_query"
AUTORUN_KEY = "cmp_autorun"  # Compare searches this question as soon as it opens
TAB_PARAM = "tab"
TABS = ("Query set", "Snapshots", "Optimiser", "Import / export")
SCHEMES = {"loo": "leave one query out", "split": "held-out half (random split)"}


@st.cache_data(max_entries=8, show_spinner=False)
def _evaluate(root: str, name: str, index_token: str, judgments_token: str, spec: dict):
    # the tokens are part of the cache key only: a new version, new vectors or a new judgment re-run it
    from rag_core.collections.library import Library

    lib = Library(root)
    return evaluate_collection(lib, name, spec=SearchSpec.from_dict(spec), index=load_index(name))


def query_set_run(lib, name: str, spec: SearchSpec):
    judgments = load_judgments(lib, name)
    with st.spinner(f"Running every method on {len(judgments.queries())} judged queries…"):
        return _evaluate(str(lib.root), name, lib.index_token(name), judgments.token, spec.to_dict())


# ---------------------------------------------------------------- query set


def summary_frame(run) -> pd.DataFrame:
    records = []
    for method, row in run.summary().items():
        record = {"method": method_label(method)}
        for metric in JUDGED_METRICS:
            estimate = row[metric]
            record[METRIC_LABELS[metric]] = estimate.text()
        record["queries"] = row["ndcg@10"].n
        records.append(record)
    return pd.DataFrame(records)


def per_query_frame(run, metric: str) -> pd.DataFrame:
    records = []
    for qid, text in run.queries.items():
        grades = run.grades.get(qid, {})
        record = {"query": text, "judged": len(grades), "relevant": sum(1 for g in grades.values() if g >= 2)}
        for method in run.methods:
            record[method_label(method)] = run.per_query[method][qid][metric]
        records.append(record)
    return pd.DataFrame(records)


def difference_chart(run, a: str, b: str, metric: str):
    import altair as alt

    records = []
    for qid, text in run.queries.items():
        va, vb = run.per_query[a][qid][metric], run.per_query[b][qid][metric]
        if va is None or vb is None:
            continue
        diff = va - vb
        records.append({"query": text, "difference": diff, method_label(a): va, method_label(b): vb,
                        "better": method_label(a) if diff > 0 else (method_label(b) if diff < 0 else "tie")})
    frame = pd.DataFrame(records)
    if frame.empty:
        return None
    frame = frame.sort_values("difference", ascending=False)
    colours = alt.Scale(domain=[method_label(a), method_label(b), "tie"], range=["#1a7f37", "#d1495b", "#b8b8b8"])
    return alt.Chart(frame).mark_bar().encode(
        x=alt.X("query:N", sort=None, axis=alt.Axis(labels=False, title="judged queries, largest difference first")),
        y=alt.Y("difference:Q", title=f"{METRIC_LABELS[metric]}: {method_label(a)} − {method_label(b)}"),
        color=alt.Color("better:N", scale=colours, legend=alt.Legend(title="better")),
        tooltip=["query", method_label(a), method_label(b), alt.Tooltip("difference:Q", format="+.3f")],
    ).properties(height=260)


def query_set_tab(lib, name: str, run) -> None:
    text_line(f"{len(run.queries)} judged queries; {len(run.scored_queries)} have a passage graded 2 or 3 and are "
              f"scored. Hybrid settings: {run.spec.describe()}.", muted=True)
    if run.skipped:
        text_line("Not run:", "; ".join(f"{method_label(m)} ({why})" for m, why in run.skipped.items()),
                  bold_first=True, muted=True, sep=" ")
    st.markdown("**Means over the scored queries, with 95% bootstrap confidence intervals**")
    st.dataframe(summary_frame(run), hide_index=True, key="lab_summary", placeholder="–",
                 column_config={METRIC_LABELS[m]: st.column_config.TextColumn(help=METRIC_HELP[m])
                                for m in JUDGED_METRICS})
    st.caption(LOWER_BOUND_NOTE)

    metric = st.selectbox("Metric", list(JUDGED_METRICS), format_func=METRIC_LABELS.get, key="lab_metric")
    st.markdown(f"**Per query: {METRIC_LABELS[metric]}** (empty: no passage graded 2 or 3 yet)")
    st.caption(METRIC_HELP[metric])
    st.dataframe(per_query_frame(run, metric), hide_index=True, key="lab_per_query", placeholder="–",
                 column_config={method_label(m): st.column_config.NumberColumn(format="%.3f") for m in run.methods})

    if len(run.methods) >= 2:
        st.markdown("**Are two methods really different?**")
        c1, c2 = st.columns(2)
        labels = {m: method_label(m) for m in run.methods}
        default_a = "hybrid" if "hybrid" in run.methods else run.methods[-1]
        default_b = "tfidf" if "tfidf" in run.methods and default_a != "tfidf" else run.methods[0]
        a = c1.selectbox("Method A", run.methods, format_func=labels.get, key="lab_a",
                         index=run.methods.index(default_a))
        b = c2.selectbox("Method B", run.methods, format_func=labels.get, key="lab_b",
                         index=run.methods.index(default_b))
        if a == b:
            st.caption("Pick two different methods.")
        else:
            test = run.compare(a, b, metric)
            note("info", test.verdict())
            for caution in test.cautions():
                note("warning", caution)
            if test.n >= 2:
                text_line(f"Mean difference {test.difference.text()} over {test.n} queries; {labels[a]} better on "
                          f"{test.wins}, worse on {test.losses}, tied on {test.ties}. Paired randomisation test "
                          f"p = {test.p_randomisation:.4f}; paired t-test p = {test.p_ttest:.4f}.", muted=True)
                chart = difference_chart(run, a, b, metric)
                if chart is not None:
                    st.altair_chart(chart, width="stretch")

    st.markdown("**Judge more**")
    pick, go = st.columns([4, 1], vertical_alignment="bottom")
    query = pick.selectbox("Open a judged query on the Compare page (to judge its unjudged passages)",
                           list(run.queries.values()), key="lab_open_query")
    if go.button("Open in Compare", key="lab_open", icon=":material/compare_arrows:"):
        st.session_state[COMPARE_QUERY_KEY] = query
        st.session_state[AUTORUN_KEY] = query
        st.switch_page(PAGES["compare"])


# ---------------------------------------------------------------- snapshots


def snapshots_tab(lib, name: str, run) -> None:
    with st.form("snapshot_form", border=False):
        label_col, save_col = st.columns([4, 1], vertical_alignment="bottom")
        label = label_col.text_input("Snapshot name", key="snapshot_label",
                                     placeholder=f"e.g. {run.spec.describe()}")
        if save_col.form_submit_button("Save snapshot", type="primary", width="stretch"):
            sid = save_snapshot(lib, name, run, label=label or run.spec.describe())
            st.session_state[FLASH_KEY] = ("success", f"Saved snapshot {label or run.spec.describe()} ({sid}).")
            st.rerun()
    st.caption("A snapshot keeps the settings, every method's top 10 for each judged query and the metrics, so "
               "a later run can be compared with it even after the collection or the settings changed.")
    snapshots = list_snapshots(lib, name)
    if not snapshots:
        st.caption("No snapshot yet.")
        return
    records = [{"snapshot": s["label"], "saved": time.strftime("%Y-%m-%d %H:%M", time.localtime(s["saved_at"])),
                "queries": s["queries"],
                **{f"nDCG@10 {method_label(m)}": (s["summary"].get(m, {}).get("ndcg@10") or {}).get("mean")
                   for m in s["methods"]}, "id": s["id"]} for s in snapshots]
    st.dataframe(pd.DataFrame(records), hide_index=True, key="snapshot_list", placeholder="–",
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for r in records for c in r
                                if c.startswith("nDCG")})
    if len(snapshots) < 2:
        st.caption("Save a second snapshot (after changing the settings or judging more) to compare two.")
        return
    by_id = {s["id"]: s for s in snapshots}
    label_of = lambda sid: f"{by_id[sid]['label']} · {by_id[sid]['id']}"  # noqa: E731
    c1, c2, c3 = st.columns([2, 2, 1])
    first = c1.selectbox("Snapshot A (before)", list(by_id), format_func=label_of, key="snap_a", index=1)
    second = c2.selectbox("Snapshot B (after)", list(by_id), format_func=label_of, key="snap_b", index=0)
    a, b = load_snapshot(lib, name, first), load_snapshot(lib, name, second)
    methods = [m for m in b.get("methods", []) if m in a.get("methods", [])]
    if not methods:
        st.caption("The two snapshots share no method.")
        return
    default = methods.index("hybrid") if "hybrid" in methods else 0
    method = c3.selectbox("Method", methods, format_func=method_label, key="snap_method", index=default)
    diff = diff_snapshots(a, b, method=method)
    if diff.settings:
        text_line("Settings changed:", "; ".join(f"{k}: {va} → {vb}" for k, (va, vb) in diff.settings.items()),
                  bold_first=True, muted=True, sep=" ")
    else:
        text_line("Same settings in both snapshots.", muted=True)
    text_line(f"{counted(len(diff.gained), 'query')} gained nDCG@10, {counted(len(diff.lost), 'query')} lost it "
              f"({method_label(method)}).", bold_first=True)
    # the figures first (narrow), the long text last: every rank column in view, the text wraps
    left, right = st.columns([1, 1.3])
    with left:
        st.markdown("**Queries**")
        frame = pd.DataFrame([{"A": q["a"], "B": q["b"], "change": q["change"], "status": q["status"],
                               "query": q["query"]} for q in diff.queries])
        st.dataframe(frame, hide_index=True, key="snap_queries", placeholder="–", width="stretch",
                     column_config={"A": st.column_config.NumberColumn(format="%.3f", width=56),
                                    "B": st.column_config.NumberColumn(format="%.3f", width=56),
                                    "change": st.column_config.NumberColumn(format="%+.3f", width=64),
                                    "status": st.column_config.TextColumn(width=70),
                                    "query": st.column_config.TextColumn(width="large")})
    with right:
        st.markdown("**Passages that moved in the top 10**")
        moved = pd.DataFrame([{"A rank": m["rank_a"], "B rank": m["rank_b"], "move": m["movement"],
                               "grade": "–" if m["grade"] is None else str(m["grade"]),
                               "query": m["query"], "passage": f"{m['title'] or m['source']}, {m['page']}"}
                              for m in diff.moved])
        if moved.empty:
            st.caption("No passage moved.")
        else:
            st.dataframe(moved, hide_index=True, key="snap_moved", width="stretch", placeholder="–",
                         column_config={"A rank": st.column_config.NumberColumn(width=56),
                                        "B rank": st.column_config.NumberColumn(width=56),
                                        "move": st.column_config.TextColumn(width=56),
                                        "grade": st.column_config.TextColumn(width=46),
                                        "query": st.column_config.TextColumn(width="medium"),
                                        "passage": st.column_config.TextColumn(width="medium")})
    with st.expander("Delete a snapshot"):
        doomed = st.selectbox("Snapshot", list(by_id), format_func=label_of, key="snap_delete_pick")
        if st.button("Delete snapshot", key="snap_delete"):
            delete_snapshot(lib, name, doomed)
            st.session_state[FLASH_KEY] = ("success", f"Deleted snapshot {by_id[doomed]['label']}.")
            st.rerun()


# ---------------------------------------------------------------- optimiser


def optimiser_tab(lib, name: str) -> None:
    saved = saved_collection_spec(lib.settings(name))
    default = SearchSpec.for_collection(lib.settings(name))
    text_line("This collection searches with:", default.describe()
              + (" (saved " + time.strftime("%Y-%m-%d", time.localtime(saved.get("saved_at", 0))) + ")"
                 if saved else " (the package defaults)"), bold_first=True, sep=" ")
    st.caption("The optimiser tries every combination of fusion (min-max, z-score, RRF with k 10 or 60), dense "
               "weight (0 to 1), pool (10 to 100) and lexical lists (BM25 + TF-IDF or BM25) on this collection's "
               "judgments. So that it cannot just fit the queries it is scored on, the gain it reports is measured "
               "on queries the choice did not see.")
    with st.form("optimiser_form", border=False):
        c1, c2, c3 = st.columns([2, 1.5, 1], vertical_alignment="bottom")
        scheme = c1.radio("Held-out estimate", list(SCHEMES), format_func=SCHEMES.get, key="opt_scheme",
                          horizontal=True)
        metric = c2.selectbox("Optimise", ["ndcg@10", "mrr@10", "success@5", "p@5", "recall@10"],
                              format_func=METRIC_LABELS.get, key="opt_metric")
        go = c3.form_submit_button("Run the optimiser", type="primary", width="stretch")
    if go:
        index = load_index(name)
        progress = st.progress(0.0, text="Scoring the settings…")

        def tell(message: str) -> None:
            try:
                done, total = message.split(":")[0].removeprefix("query ").split("/")
                progress.progress(int(done) / int(total), text=message)
            except ValueError:
                pass

        result = optimise(index, lib.documents(name), load_judgments(lib, name), baseline=default, scheme=scheme,
                          metric=metric, progress=tell)
        progress.empty()
        st.session_state[OPTIMISER_KEY] = {"collection": name, "result": result}
    stored = st.session_state.get(OPTIMISER_KEY)
    if not stored or stored["collection"] != name:
        return
    result = stored["result"]
    label = METRIC_LABELS[result.metric]
    st.markdown(f"**Best of {result.n_settings} settings on {result.n_queries} queries:** {result.best.describe()}")
    text_line(f"{label} on every judged query: best {result.best_mean:.3f} vs current default "
              f"{result.baseline_mean:.3f} (optimistic: chosen on these queries).", muted=True)
    text_line(f"Held out ({SCHEMES[result.scheme]}): {result.held_out_mean:.3f} vs {result.held_out_baseline_mean:.3f}"
              f" — gain {result.gain.text()} (95% interval), paired randomisation p = "
              f"{result.test.p_randomisation if result.test.p_randomisation is not None else float('nan'):.3f}; "
              f"{result.agreement:.0%} of the held-out choices picked these same settings.", muted=True)
    positive = result.gain.low is not None and result.gain.low > 0
    note("success" if positive else "warning", result.advice())
    st.dataframe(pd.DataFrame([{**settings_for_people(row), "mean": row["mean"]} for row in result.top]),
                 hide_index=True, key="opt_top", placeholder="–",
                 column_config={"mean": st.column_config.NumberColumn(label, format="%.3f",
                                                                      help=METRIC_HELP.get(result.metric))})
    c1, c2 = st.columns(2)
    if c1.button("Make these settings the collection's default", key="opt_save", type="primary" if positive else
                 "secondary", disabled=result.best == default, icon=":material/save:"):
        save_collection_spec(lib, name, result.best, note=f"optimiser: {label} held-out gain {result.gain.text()}")
        lab_ui.forget_session_config(name)
        st.session_state[FLASH_KEY] = ("success", f"Every search of {name} (app and command line) now uses: "
                                                  f"{result.best.describe()}.")
        st.rerun()
    if saved and c2.button("Back to the package defaults", key="opt_reset", icon=":material/restart_alt:"):
        save_collection_spec(lib, name, None)
        lab_ui.forget_session_config(name)
        st.session_state[FLASH_KEY] = ("success", f"{name} searches with the package defaults again.")
        st.rerun()


# ---------------------------------------------------------------- in and out


def transfer_tab(lib, name: str) -> None:
    judgments = load_judgments(lib, name)
    index = load_index(name)
    documents = lib.documents(name)
    st.markdown("**Export**")
    if len(judgments):
        c1, c2 = st.columns(2)
        c1.download_button("Judgments as CSV (spreadsheet)", judgments_csv(judgments, index, documents),
                           file_name=f"{_file_stem(name)}-judgments.csv", mime="text/csv", key="export_csv",
                           icon=":material/download:", width="stretch")
        if index is not None:
            export = beir_files(judgments, index, documents)
            c2.download_button("BEIR folder as zip (qrels, queries.jsonl, corpus)", beir_zip(export),
                               file_name=f"{_file_stem(name)}-beir.zip", mime="application/zip", key="export_beir",
                               icon=":material/download:", width="stretch")
        st.caption("The CSV has one row per judgment (query, document, quote, grade, then the exact place and the "
                   "passage) and opens safely in a spreadsheet. The zip is the BEIR layout: `rag-core eval "
                   "FOLDER` evaluates it; qrels.txt is the TREC form.")
    else:
        st.caption("No judgments to export yet.")
    st.markdown("**Import**")
    st.caption("A CSV with the columns query, document (the file name), quote (a phrase copied from the passage; "
               "found even across ligatures, hyphenation and line breaks) and grade (0-3) — or a file this page "
               "exported. Judgments already here are kept; a row for the same passage replaces its grade.")
    with st.form("import_form", clear_on_submit=True, border=False):
        upload = st.file_uploader("CSV or BEIR zip", type=["csv", "zip"], key="import_file")
        submitted = st.form_submit_button("Import judgments")
    if submitted and upload is not None:
        try:
            report = import_judgments(lib, name, upload.getvalue(), kind="beir" if upload.name.lower().endswith(
                ".zip") else "csv")
        except Exception as exc:  # noqa: BLE001 - a bad file gets a message, nothing is lost
            show_error(exc)
        else:
            st.session_state[IMPORT_KEY] = report
            st.rerun()
    report = st.session_state.pop(IMPORT_KEY, None)
    if report is not None:
        note("success" if report.imported and not report.problems else "warning", report.summary())
        if report.problems or report.warnings:
            st.dataframe(pd.DataFrame([{"row": r, "problem": p} for r, p in report.problems]
                                      + [{"row": r, "problem": "note: " + w} for r, w in report.warnings]),
                         hide_index=True, key="import_problems")


def _file_stem(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in name)[:60] or "collection"


# ---------------------------------------------------------------- the page


def body() -> None:
    st.title(":material/science: Relevance lab", anchor=False)
    st.caption("Which method finds the right passages? Judge passages on the Compare page (or import judgments), "
               "then compare every method over all judged queries, keep snapshots, and let the optimiser tune "
               "hybrid search on your own judgments.")
    lib = library()
    flash = st.session_state.pop(FLASH_KEY, None)
    if flash:
        note(*flash)
    name = pick_collection("Collection", key="lab_collection")
    if name is None:
        return
    if load_index(name) is None:
        text_line(f"Collection “{name}” has no documents yet. Add PDFs on the Collections page.", muted=True)
        link(PAGES["collections"], "Add PDFs", ":material/library_books:")
        return
    spec = lab_ui.knob_panel(lib, name, prefix="lab", cross_encoder_model=preferences().cross_encoder_model)
    judgments = load_judgments(lib, name)
    # the open tab lives in the address (/lab?tab=Optimiser): kept across setting changes, reruns and
    # reloads; only the open tab is drawn (a switch re-runs the page; issue 21)
    asked_tab = choice_problem(TAB_PARAM, st.query_params.get(TAB_PARAM), TABS)
    if asked_tab:
        note("warning", f"The address's {asked_tab}: the first tab is shown.")
    tabs = st.tabs(list(TABS), key=TAB_PARAM, bind="query-params", on_change="rerun")
    if not len(judgments):
        for tab in tabs[:3]:
            with tab:
                note("info", "No judged queries yet. On the Compare page, ask a question and grade its passages "
                             "(0-3), or import a CSV of judgments under Import / export.")
                link(PAGES["compare"], "Go to Compare", ":material/compare_arrows:")
        with tabs[3]:
            transfer_tab(lib, name)
        return
    if tabs[0].open is not False:
        with tabs[0]:
            query_set_tab(lib, name, query_set_run(lib, name, spec))
    if tabs[1].open:
        with tabs[1]:
            snapshots_tab(lib, name, query_set_run(lib, name, spec))
    if tabs[2].open:
        with tabs[2]:
            optimiser_tab(lib, name)
    if tabs[3].open:
        with tabs[3]:
            transfer_tab(lib, name)


run_page("lab", body)
