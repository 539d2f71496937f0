"""Verify: is a quote or a cited claim in the collection — word for word, nearly, only in meaning, or not at all?

One statement at a time, or every quote and cited claim of a manuscript at once: the statements
found are listed for the user to fix, delete or add to; the batch runs with a progress bar; the
report is sortable, a row shows its evidence marked on the PDF page, and it downloads as CSV,
JSON and a self-contained HTML report. Every computation is a rag_core call; every piece of
document or manuscript text is shown literally (pages.common.layout).
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from pages.common.back_matter import back_matter_switch, back_matter_word
from pages.common.layout import PAGES, link, note, passage_box, run_page, text_line
from pages.common.state import (
    address_is_new,
    document_titles,
    library,
    marked_page_images,
    pick_collection,
    preferences,
    remember_address,
    searchable_index,
    title_of,
)
from rag_core.check_worker import CheckWorkerError, check_in_worker, check_one_in_worker
from rag_core.citations.manuscript import (
    MANUSCRIPT_TYPES,
    NOT_IN_COLLECTION_MEANING,
    ManuscriptError,
    add_bib_references,
    check_one_statement,
    manuscript_from_text,
    read_manuscript,
    rows_to_csv,
    rows_to_html,
    rows_to_json,
)
from rag_core.citations.report import OUTCOME_LABELS, OUTCOMES, by_severity
from rag_core.citations.view import (
    VERDICT_MEANINGS,
    cues_html,
    evidence_target,
    folding_text,
    match_spans,
    meaning_lead,
    outcome_counts,
    pasted_kind,
    place_page,
    references_summary,
    report_file_stem,
    report_records,
    report_row_height,
    sentence_window,
    stance_line,
    stance_rows,
    stance_where,
    statement_option,
    statement_records,
    statements_from_records,
    verdict_summary,
    where_text,
    word_diff_html,
)
from rag_core.errors import RagCoreError
from rag_core.output.render import literal_html, page_label, seconds_text
from rag_core.retrieval.links import choice_problem
from rag_core.settings import MAX_QUERY_CHARS, VERIFY_IN_PROCESS_MAX_CHARS

MODES = {"statement": "One statement", "manuscript": "A whole manuscript"}
MODE_KEY = "verify_mode"
RESULT_KEY = "verify_result"  # the last single check
MANUSCRIPT_KEY = "verify_manuscript"  # the statements found in the last manuscript read
REPORT_KEY = "verify_report"  # the last batch check
PICK_KEY = "verify_report_pick"  # the report row whose evidence is shown
KEPT_KEY = "verify_kept_draft"  # the draft and bibliography read last: (name, bytes) each, or the pasted text
RECHECK_KEY = "verify_recheck"  # "Re-check with the current records" was pressed
BACK_MATTER_KEY = "verify_back_matter"  # the switch: reference lists and other back matter searched too
# widgets whose values outlive a visit to another page
KEPT_WIDGETS = ("verify_mode", "ms_text", BACK_MATTER_KEY)
# /verify?collection=NAME&statement=TEXT&doc=FILE (the collection is pick_collection's)
ADDRESS_PARAMS = ("statement", "doc")
ADDRESS_MODES = ("statement", "manuscript")  # /verify?mode=manuscript; "statement" is the default
ADDRESS_NOTE_KEY = "verify_address_note"
AUTORUN_KEY = "verify_autorun"  # a link named a statement: check it at once
CONTEXT = 300
NOTE_KINDS = {"verbatim": "success", "near_verbatim": "warning", "related": "info", "not_found": "warning"}
EDITOR_ROW_HEIGHT = 80  # three lines of a statement
NUM = st.column_config.NumberColumn
TEXT = st.column_config.TextColumn
EDITOR_COLUMNS = {
    "id": None,  # which extracted statement a row started as (hidden)
    "statement": TEXT("statement", width=620, required=True,
                      help="The quote or claim as it will be checked. Edit it, or add a row for one the list missed."),
    "kind": st.column_config.SelectboxColumn("kind", options=["quote", "claim"], default="claim", width=80,
                                             required=True, help="quote: a quoted passage; claim: a sentence "
                                                                 "that cites a reference"),
    "cited": TEXT("cited", width=190, help="The citation markers, e.g. [3] or (Devlin et al., 2019): the documents "
                                           "they point to are checked first. Leave empty for none."),
    "reference": TEXT("reference", width=330, disabled=True,
                      help="The entry of the manuscript's reference list the markers pointed to when it was read"),
    "line": NUM("line", width=56, disabled=True, help="Line of the manuscript"),
}
REPORT_COLUMNS = {  # the widths fit all thirteen columns in a window 1,600 pixels wide
    "#": NUM(width=40, help="Order in the manuscript"),
    "statement": TEXT(width=210),
    "verdict": TEXT(width=124, help="verbatim: word for word · near_verbatim: a few words differ · related: close "
                                   "in meaning, not confirmed: read the passage · not_found: neither"),
    "meaning": TEXT(width=72, help="changed: a negation, number, direction or quantifier of the source says "
                                   "otherwise · same: no conflict found · unclear: the rules cannot tell"),
    "meaning cues": TEXT(width=130, help="What conflicts: the statement's words · the source's words"),
    "document": TEXT(width=140, help="Where the evidence is (short title, else the file name)"),
    "page": NUM(width=50, help="Physical page of the PDF (1 = the first page of the file)"),
    "printed page": TEXT(width=70, help="The page number printed on that page, when the PDF defines one"),
    "similarity": NUM(format="%.2f", width=76, help="verbatim 1.00; near_verbatim: the share of words in common, "
                                                    "in order; related/not_found: how close in meaning the best "
                                                    "sentence is"),
    "stance": TEXT(width=90, help="What the sentence that decides says of the statement (its confidence): "
                                  "supports · contradicts · empty: does not say"),
    "changed words": TEXT(width=100, help="near_verbatim: the document's words → the statement's"),
    "cited": TEXT(width=90, help="The statement's citation markers"),
    "cited \u2192 matched to": TEXT(width=200, help="The document each citation was matched to and why (first "
                                               "author + year, DOI, key, field code), ambiguous (the candidates) "
                                               "or not in collection"),
    "misattributed": TEXT(width=100, help="Found, but in a different document than the one cited"),
}


# ---------------------------------------------------------------- evidence on the PDF page


def show_evidence(lib, name: str, rows: list[dict], titles: dict, *, key: str) -> None:
    """The PDF page(s) of one of ``rows`` (a pick when there are several), the passage marked."""
    if not rows:
        return
    if len(rows) > 1:
        labels = [f"#{n} — {title_of(row, titles)}, {place_page(row)}" for n, row in enumerate(rows, start=1)]
        choice = st.selectbox("Show on the PDF page", labels, key=f"{key}_pick")  # options are plain text
        row = rows[labels.index(choice)]
    else:
        row = rows[0]
    whole = st.toggle("Whole page", key=f"{key}_whole", help="Off: the page zoomed to the passage")
    path = lib.pdf_path(name, row.get("doc_id") or row.get("source"))
    if path is None:
        text_line("The original PDF is not stored in this collection, so no page image can be shown.", muted=True)
        return
    doc = row.get("doc_id") or row.get("source")
    try:
        with st.spinner("Marking the passage on its page…"):
            pages = marked_page_images(str(path), path.stat().st_mtime, evidence_target(row), whole, name, doc,
                                       lib.version(name))
    except (RagCoreError, OSError) as exc:
        text_line(f"The page image cannot be drawn: {exc}", muted=True)
        return
    if not pages:
        text_line("No page is known for this passage.", muted=True)
        return
    if len(pages) > 1:
        text_line(f"The passage runs over {len(pages)} pages: each is shown.", muted=True)
    for page in pages:
        # PNG as rendered (st.image would re-encode it as JPEG, blurring the text and the mark);
        # image captions read markdown: the label goes below, literally
        st.image(page["png"], width="stretch", output_format="PNG")
        text_line(page["caption"], muted=True)


# ---------------------------------------------------------------- one check, shown


def show_check(lib, name: str, check: dict, titles: dict, *, key: str, absent: bool = False) -> None:
    """A check's verdict, what it means, and its evidence; for a statement whose cited work is not
    in the collection (``absent``), that outcome, and what was found elsewhere for reference only."""
    verdict = check["verdict"]
    if absent:
        with st.container(key=f"{key}_not_in_collection"):
            note("warning", check["message"], lead="not in collection —")
            note("info", NOT_IN_COLLECTION_MEANING, lead="Meaning unclear —")
        show_for_reference(lib, name, check, titles, key=key)
        return
    note(NOTE_KINDS.get(verdict, "info"), check["message"], lead=f"{verdict} —")
    text_line(VERDICT_MEANINGS.get(verdict, ""), muted=True)
    show_meaning(check, titles, key=key)
    if verdict == "verbatim" and check.get("hits"):
        show_places(lib, name, check, titles, key=key)
    elif verdict == "near_verbatim" and check.get("best"):
        show_alignment(lib, name, check, titles, key=key)
    else:
        show_closest(lib, name, check, titles, key=key)


def show_for_reference(lib, name: str, check: dict, titles: dict, *, key: str) -> None:
    """What was found outside the cited work (its places, its closest wording or passages), under
    a heading that says it is for reference, not the answer."""
    st.subheader("For reference: the closest passages elsewhere (not the cited work)", anchor=False)
    text_line("The cited work is not in this collection, so these passages cannot confirm or contradict the "
              "statement: read them only to find where else the subject comes up.", muted=True)
    if check.get("verdict") == "verbatim" and check.get("hits"):
        show_places(lib, name, check, titles, key=f"{key}_ref", heading=False)
    elif check.get("verdict") == "near_verbatim" and check.get("best"):
        show_alignment(lib, name, check, titles, key=f"{key}_ref", heading=False)
    else:
        show_closest(lib, name, check, titles, key=f"{key}_ref", heading=False)


def show_meaning(check: dict, titles: dict, *, key: str) -> None:
    """Whether the source says what the statement says: the meaning, why, and the cues side by side."""
    if check.get("verdict") == "verbatim":
        text_line("Meaning: the same, word for word.", muted=True)
        return
    lead, kind = meaning_lead(check)
    with st.container(key=f"{key}_meaning"):
        note(kind, check.get("meaning_note") or "", lead=f"{lead} —")
        if check.get("meaning_cues"):
            st.html(cues_html(check["meaning_cues"]))
        sentence = check.get("meaning_sentence")
        if sentence and sentence.get("sentence"):
            where = where_text({"source": sentence.get("source"), "page": sentence.get("page"),
                                "page_label": sentence.get("page_label")}, title_of(sentence, titles))
            text_line("Compared with:", sentence["sentence"], bold_first=True, muted=True, sep=" ")
            text_line(where, f"{round(100 * (sentence.get('aligned') or 0))}% of the statement's words and "
                             "figures align with it", muted=True)
        show_stance(check, titles, key=key)


def show_stance(check: dict, titles: dict, *, key: str) -> None:
    """What the sentences that bear on the statement say: supports, contradicts, does not say,
    with the confidence, the model and the deciding sentence (plain text)."""
    shown = stance_line(check)
    if shown is None:
        return
    line, sentence = shown
    with st.container(key=f"{key}_stance"):
        text_line(line, bold_first=True)
        if sentence:
            text_line("Deciding sentence:", sentence, bold_first=True, muted=True, sep=" ")
            where = stance_where(check, titles)
            if where:
                text_line(where, muted=True)


def show_places(lib, name: str, check: dict, titles: dict, *, key: str, heading: bool = True) -> None:
    hits = check["hits"]
    count = f"{len(hits)} place{'s' if len(hits) != 1 else ''}" + (" or more" if hits[-1].get("truncated") else "")
    if heading:
        st.subheader(f"Where it occurs ({count})", anchor=False)
    text_line(folding_text(check), muted=True)
    left, right = st.columns([3, 2], gap="large")
    with left:
        for n, hit in enumerate(hits, start=1):
            with st.container(border=True):
                text_line(f"#{n}", title_of(hit, titles), page_label(hit), bold_first=True)
                passage_box(hit["snippet"], "", match_spans(hit, context=CONTEXT))
    with right:
        show_evidence(lib, name, hits, titles, key=f"{key}_places")


def show_alignment(lib, name: str, check: dict, titles: dict, *, key: str, heading: bool = True) -> None:
    best = check["best"]
    if heading:
        st.subheader("The closest wording", anchor=False)
    text_line("Changed words:", best.get("diff") or "", bold_first=True, sep=" ")
    text_line(f"Similarity {best['similarity']:.2f}", where_text(best, title_of(best, titles)), bold_first=True)
    text_line(check.get("score_note") or "", muted=True)
    left, right = st.columns([3, 2], gap="large")
    with left:
        text_line("Word by word: struck out, the document's words; underlined, the statement's.", muted=True)
        st.html(f'<div class="rc-passage rc-short" data-testid="rc-word-diff">'
                f'{word_diff_html(best.get("match") or "", check["quote"])}</div>')
        text_line("The passage in the document:", muted=True)
        passage_box(best["snippet"], "", match_spans(best, context=CONTEXT), short=True)
    with right:
        show_evidence(lib, name, [best], titles, key=f"{key}_best")


def show_closest(lib, name: str, check: dict, titles: dict, *, key: str, heading: bool = True) -> None:
    rows = stance_rows(check)  # the deciding sentence's passage first, that sentence marked
    if not rows:
        text_line("No passage of the collection shares enough with the statement to show.", muted=True)
        return
    related = check["verdict"] == "related"
    if heading:
        st.subheader("Passages close in meaning" if related else "The closest passages (none close enough)",
                     anchor=False)
    text_line(check.get("score_note") or "", muted=True)
    if check.get("reranker_detail"):
        text_line("Passages found by:", check["reranker_detail"], bold_first=True, muted=True, sep=" ")
    left, right = st.columns([3, 2], gap="large")
    with left:
        for row in rows:
            with st.container(border=True):
                where = place_page(row) + (f" · {back_matter_word(row)}" if back_matter_word(row) else "")
                text_line(f"#{row['rank']}", title_of(row, titles), where, bold_first=True)
                if row.get("sentence_score") is not None:
                    text_line(f"Best sentence (marked): {row.get('sentence_score_kind') or 'score'} "
                              f"{row['sentence_score']:.2f}", muted=True)
                text, spans = sentence_window(row)
                passage_box(text, check["quote"], spans, short=True)
    with right:
        show_evidence(lib, name, rows, titles, key=f"{key}_closest")


# ---------------------------------------------------------------- one statement


def read_address(docs: list[dict]) -> None:
    """``/verify?collection=NAME&statement=TEXT`` (and ``doc=FILE``) fills the form and checks it, once
    per address."""
    params = {k: st.query_params.get(k) for k in ADDRESS_PARAMS if st.query_params.get(k)}
    if "statement" not in params or not address_is_new("verify", params):
        return
    remember_address("verify", params)
    statement = params["statement"]
    if len(statement) > MAX_QUERY_CHARS:  # the form holds as much: the rest is said, not silently dropped
        st.session_state[ADDRESS_NOTE_KEY] = (f"The address's statement is {len(statement):,} characters long; "
                                              f"only its first {MAX_QUERY_CHARS:,} are checked.")
    st.session_state["verify_quote"] = statement[:MAX_QUERY_CHARS]
    sources = [d["source"] for d in docs]
    if params.get("doc") in sources:
        st.session_state["verify_source"] = params["doc"]
    elif params.get("doc"):
        missing = f"The collection has no document “{params['doc']}”: looking in all."
        st.session_state[ADDRESS_NOTE_KEY] = " ".join(filter(None, (st.session_state.get(ADDRESS_NOTE_KEY), missing)))
    st.session_state[AUTORUN_KEY] = True


def write_address(quote: str, source: str) -> None:
    params = {"statement": quote}
    if source != "All documents":
        params["doc"] = source
    for key in ("statement", "doc"):
        if key in params and st.query_params.get(key) != params[key]:
            st.query_params[key] = params[key]
        elif key not in params and key in st.query_params:
            del st.query_params[key]
    remember_address("verify", params)


@st.fragment
def one_statement(lib, name: str, docs: list[dict]) -> None:
    """One statement's form and check: a fragment, so checking a statement, picking its evidence
    or zooming its page re-runs this part of the page only (issue 21)."""
    read_address(docs)
    message = st.session_state.pop(ADDRESS_NOTE_KEY, None)
    if message:
        note("warning", message)
    sources = ["All documents"] + [d["source"] for d in docs]
    if st.session_state.get("verify_source") not in (None, *sources):
        st.session_state["verify_source"] = "All documents"
    with st.form("verify_form", border=False):
        quote = st.text_area("Quote or claim", key="verify_quote", height=110, max_chars=MAX_QUERY_CHARS,
                             placeholder="e.g. BERT is designed to pre-train deep bidirectional representations")
        source = st.selectbox("Look in", sources, key="verify_source")
        submitted = st.form_submit_button("Check", type="primary")
    submitted = st.session_state.pop(AUTORUN_KEY, False) or submitted
    if submitted:
        if not (quote or "").strip():
            st.warning("Paste a quote or type a claim first.")
            return
        index = searchable_index(name)
        if index is None:
            return
        # its citation resolved like a manuscript's, left out of the words compared; a long statement in a
        # child process under a time budget (rag_core.check_worker), so it never holds the server (issue 27)
        sources = None if source == "All documents" else [source]
        back_matter = bool(st.session_state.get(BACK_MATTER_KEY))
        with st.spinner("Checking…"):
            if len(quote) <= VERIFY_IN_PROCESS_MAX_CHARS:
                checked = check_one_statement(quote, index, documents=docs, sources=sources, context=CONTEXT,
                                              cross_encoder_model=preferences().cross_encoder_model,
                                              back_matter=back_matter)
                version = lib.version(name)
                row, check = checked.to_dict(), checked.check.to_dict() if checked.check is not None else None
            else:
                try:
                    row, check, version = check_one_in_worker(
                        lib.root, name, quote, sources=sources, context=CONTEXT,
                        cross_encoder_model=preferences().cross_encoder_model, back_matter=back_matter)
                except CheckWorkerError as exc:
                    note("error", str(exc))
                    return
        st.session_state[RESULT_KEY] = {"collection": name, "version": version, "check": check, "row": row,
                                        "quote": quote, "source": source}
    result = st.session_state.get(RESULT_KEY)
    if not result or result["collection"] != name:
        return
    write_address(result.get("quote") or result["check"].get("quote") or "", result.get("source") or "All documents")
    if lib.version(name) != result["version"]:
        st.warning("The collection changed since this check: press Check again.")
    row, titles = result.get("row") or {}, document_titles(lib, name)
    show_citations(row, titles)
    if result["check"] is None:
        note("warning", row.get("message") or "Not checked.")
        return
    show_check(lib, name, result["check"], titles, key="one", absent=bool(row.get("not_in_collection")))


def show_citations(row: dict, titles: dict) -> None:
    """What the statement cites and what each citation was matched to (the manuscript's lines)."""
    if not row.get("cited"):
        return
    with st.container(key="one_citations"):
        looked = ", ".join(titles.get(s, s) for s in row.get("cited_sources") or [])
        tail = f"(checked first: {looked})" if looked else "(no document of the collection matches it)"
        text_line("Cites:", row["cited"], tail, bold_first=True, sep=" ")
        for resolution in row.get("resolutions") or []:
            text_line("Cited", resolution.get("text") or "", bold_first=True, sep=" ")
        typed = " ".join(str(st.session_state.get("verify_quote") or "").split())
        if row.get("statement") and row["statement"] != typed:
            text_line("Checked without its citation:", row["statement"], bold_first=True, muted=True, sep=" ")


# ---------------------------------------------------------------- a whole manuscript


def read_draft(text: str, upload, bib=None) -> bool:
    """Read the uploaded draft (or else the pasted text, or else the draft kept from before), with
    its bibliography file when one is given (or kept), and keep its statements for the list. The
    files read are kept in the session (KEPT_KEY): moving to another page and back loses nothing."""
    kept = st.session_state.get(KEPT_KEY) or {}
    records = (bib.name, bib.getvalue()) if bib is not None else kept.get("bib")
    draft = (upload.name, upload.getvalue()) if upload is not None else None
    if draft is None and not (text or "").strip():
        draft = kept.get("draft")
    try:  # linear in the draft's length, a PDF read by the budgeted worker (rag_core.citations.drafts)
        if draft is not None:
            manuscript = read_manuscript(draft[1], name=draft[0], bib=records)
        elif (text or "").strip():
            manuscript = manuscript_from_text(text, name="pasted text", kind=pasted_kind(text))
            if records is not None:
                add_bib_references(manuscript, records)
        else:
            st.warning("Paste a manuscript or upload a draft first.")
            return False
        statements = manuscript.statements()
    except ManuscriptError as exc:
        note("error", str(exc))
        return False
    previous = st.session_state.get(MANUSCRIPT_KEY) or {}
    st.session_state[MANUSCRIPT_KEY] = {
        "name": manuscript.name, "statements": statements, "references": manuscript.references,
        "editor": previous.get("editor", 0) + 1, "from_file": draft is not None, "notes": manuscript.notes,
    }
    st.session_state[KEPT_KEY] = {"draft": draft, "bib": records, "text": "" if draft is not None else text}
    st.session_state.pop(REPORT_KEY, None)
    return True


def kept_files() -> None:
    """The draft and bibliography kept from before (the upload boxes are empty after another page):
    said by name, with a one-click re-check against the records as they are now, or forgotten."""
    kept = st.session_state.get(KEPT_KEY) or {}
    names = [item[0] for item in (kept.get("draft"), kept.get("bib")) if item]
    if not names and not (kept.get("text") or "").strip():
        return
    with st.container(key="ms_kept", horizontal=True, vertical_alignment="center", gap="small"):
        if names:  # (pasted text stays in its box)
            st.html(f'<div class="rc-line" data-testid="rc-kept-draft">Kept from before: '
                    f'{literal_html(" and ".join(names))} (used when the boxes above are empty).</div>',
                    width="content")
        if st.button("Re-check with the current records", key="ms_recheck", icon=":material/refresh:",
                     help="Reads the kept draft and bibliography again and checks every statement against the "
                          "collection and its records as they are now (a corrected record counts)."):
            st.session_state[RECHECK_KEY] = True
        if names and st.button("Forget them", key="ms_forget", type="tertiary"):
            st.session_state.pop(KEPT_KEY, None)
            st.rerun()


def edit_statements(manuscript: dict) -> list:
    """The statements found, in an editable list; returns them as edited."""
    statements = manuscript["statements"]
    quotes = sum(1 for s in statements if s.kind == "quote")
    text_line(f"{len(statements)} checkable statement{'s' if len(statements) != 1 else ''} in {manuscript['name']}: "
              f"{quotes} quoted passage{'s' if quotes != 1 else ''} and {len(statements) - quotes} sentence"
              f"{'s' if len(statements) - quotes != 1 else ''} with a citation marker; "
              f"{references_summary(manuscript['references'], statements)}.", heading=True)
    for text in manuscript.get("notes") or []:
        text_line(text, muted=True)
    if manuscript.get("from_file") and (st.session_state.get("ms_text") or "").strip():
        text_line("The uploaded file was read, not the pasted text (remove the file to check the text).", muted=True)
    text_line("Fix, delete or add statements (a row's cited markers, such as [3] or (Devlin et al., 2019), say "
              "which documents are checked first), then run the check.", muted=True)
    frame = pd.DataFrame(statement_records(statements),
                         columns=["id", "statement", "kind", "cited", "reference", "line"])
    frame = frame.astype({"id": "Int64", "line": "Int64", "statement": "string", "kind": "string",
                          "cited": "string", "reference": "string"})
    edited = st.data_editor(frame, key=f"ms_editor_{manuscript['editor']}", num_rows="dynamic", hide_index=True,
                            column_config=EDITOR_COLUMNS, width="stretch", row_height=EDITOR_ROW_HEIGHT,
                            height=min(40 + EDITOR_ROW_HEIGHT * (len(statements) + 1), 40 + EDITOR_ROW_HEIGHT * 8))
    records = edited.astype(object).where(edited.notna(), None).to_dict("records")
    return statements_from_records(records, originals=statements, references=manuscript["references"])


def run_batch(lib, name: str, docs: list[dict], manuscript: dict, statements: list) -> None:
    """Check the statements in a child process (rag_core.check_worker): a long check holds no lock
    that other people's searches need, and it stops at its time and memory budget."""
    if searchable_index(name) is None:
        return
    total = len(statements)
    bar = st.progress(0.0, text=f"Checking statement 1 of {total}…")

    def progress(done: int, total: int) -> None:
        if done < total:  # (the text is ours: a progress bar's text reads markdown)
            bar.progress(done / total, text=f"Checking statement {done + 1} of {total}…")

    started = time.monotonic()
    try:
        rows, checks, version = check_in_worker(lib.root, name, statements, progress=progress,
                                                cross_encoder_model=preferences().cross_encoder_model,
                                                back_matter=bool(st.session_state.get(BACK_MATTER_KEY)))
    except CheckWorkerError as exc:
        bar.empty()
        note("error", str(exc))
        return
    bar.empty()
    previous = st.session_state.get(REPORT_KEY) or {}
    st.session_state[REPORT_KEY] = {
        "collection": name, "version": version, "manuscript": manuscript["name"], "rows": rows, "checks": checks,
        "seconds": time.monotonic() - started, "run": previous.get("run", 0) + 1,
    }
    st.session_state.pop(PICK_KEY, None)


def show_report(lib, name: str) -> None:
    report = st.session_state.get(REPORT_KEY)
    if not report or report["collection"] != name:
        return
    rows, titles = report["rows"], document_titles(lib, name)
    st.subheader("Report", anchor=False)
    text_line(f"{verdict_summary(rows)} — {report['manuscript']} against {name}, "
              f"checked in {seconds_text(report['seconds'])}.")
    if lib.version(name) != report["version"]:
        st.warning("The collection changed since this report: run the check again.")
    stem = report_file_stem(report["manuscript"])
    with st.container(horizontal=True, gap="small"):
        st.download_button("Download CSV", rows_to_csv(rows), file_name=f"{stem}.csv", mime="text/csv",
                           key="ms_csv", icon=":material/download:", on_click="ignore")
        st.download_button("Download JSON", rows_to_json(rows).encode("utf-8"), file_name=f"{stem}.json",
                           mime="application/json", key="ms_json", icon=":material/download:", on_click="ignore")
        st.download_button("Download HTML report",
                           rows_to_html(rows, title=f"Citation check: {report['manuscript']} against {name}"),
                           file_name=f"{stem}.html", mime="text/html", key="ms_html", icon=":material/download:",
                           on_click="ignore")
    counts = outcome_counts(rows)
    shown_verdicts = st.pills("Verdicts shown", OUTCOMES, selection_mode="multi", default=list(OUTCOMES),
                              format_func=lambda v: f"{OUTCOME_LABELS.get(v, v)} ({counts[v]})",
                              key=f"ms_filter_{report['run']}")
    records = [r for r in report_records(rows, titles) if r["verdict"] in (shown_verdicts or [])]
    options = [statement_option(n, row) for n, row in enumerate(rows, start=1)]
    if records:
        table_key = f"ms_report_{report['run']}_{'-'.join(shown_verdicts)}"

        def picked() -> None:
            selected = st.session_state[table_key].selection.rows
            if selected:
                st.session_state[PICK_KEY] = options[records[selected[0]]["#"] - 1]

        frame = pd.DataFrame(records).astype({"page": "Int64", "similarity": "Float64"})
        row_height = report_row_height(records)  # every row read whole: the longest cell sets it
        st.dataframe(frame, hide_index=True, width="stretch", column_config=REPORT_COLUMNS,
                     key=table_key, on_select=picked, selection_mode="single-row", row_height=row_height,
                     height=min(40 + row_height * len(records), 40 + row_height * 8), placeholder="")
        text_line("Most severe first: meaning changed, not found, misattributed, related (close in meaning, not "
                  "confirmed), near verbatim, verbatim; # is the statement's place in the manuscript. Click a "
                  "column's name to sort; click a row (or pick it below) to see its evidence.", muted=True)
    else:
        text_line("No statement has the verdicts chosen.", muted=True)
    if st.session_state.get(PICK_KEY) not in options:  # the most severe statement first
        st.session_state[PICK_KEY] = options[by_severity(rows)[0]]
    choice = st.selectbox("Evidence of statement", options, key=PICK_KEY)  # options are plain text
    i = options.index(choice)
    show_row(lib, name, rows[i], report["checks"][i], i + 1, titles)


def show_row(lib, name: str, row: dict, check: dict | None, n: int, titles: dict) -> None:
    with st.container(border=True, key=f"ms_evidence_{n}"):
        text_line(f"Statement #{n}", f"line {row['line']}" if row.get("line") else None, row.get("kind"),
                  bold_first=True, heading=True)
        st.html(f'<div class="rc-note rc-note-info">{literal_html(row["statement"])}</div>')
        if row.get("cited"):
            looked = ", ".join(titles.get(s, s) for s in row.get("cited_sources") or [])
            tail = f"(checked first: {looked})" if looked else "(no document of the collection matches it)"
            text_line("Cites:", row["cited"], tail, bold_first=True, sep=" ")
        for resolution in row.get("resolutions") or []:
            text_line("Cited", resolution.get("text") or "", bold_first=True, sep=" ")
        if row.get("misattributed"):
            found_in = title_of(row, titles)
            note("warning", f"Found, but in a different document than the one cited: it is in {found_in}.",
                 lead="Misattributed:")
        if check is None:
            note("warning", row.get("message") or "Not checked.")
            return
        show_check(lib, name, check, titles, key=f"row{n}", absent=bool(row.get("not_in_collection")))


def whole_manuscript(lib, name: str, docs: list[dict]) -> None:
    with st.form("ms_form", border=False):
        text = st.text_area("Manuscript text", key="ms_text", height=200, max_chars=2_000_000,
                            placeholder="Paste a draft: its quoted passages and its sentences that cite a reference "
                                        "([12], (Devlin et al., 2019), Devlin et al. (2019), \\cite{...}) are "
                                        "found, with its reference list when it has one.")
        upload = st.file_uploader("…or upload a draft", type=[t.lstrip(".") for t in MANUSCRIPT_TYPES], key="ms_file",
                                  help="A .txt, .md, .tex, .pdf or .docx file; it is read instead of the pasted text.")
        bib = st.file_uploader("…and its bibliography (optional)", type=["bib", "json", "ris"], key="ms_bib",
                               help="A .bib, CSL-JSON .json or .ris file whose keys resolve \\cite{key} and "
                                    "pandoc's [@key] (a Word draft's Zotero or Mendeley citations need none).")
        found = st.form_submit_button("Find the statements", type="primary")
    kept_files()
    recheck = st.session_state.pop(RECHECK_KEY, False)
    if found or recheck:
        kept = st.session_state.get(KEPT_KEY) or {}
        read = read_draft(kept.get("text") or "" if recheck else text, None if recheck else upload,
                          None if recheck else bib)
        recheck = recheck and read
    manuscript = st.session_state.get(MANUSCRIPT_KEY)
    if manuscript is None:
        text_line("Paste a manuscript or upload a draft and press Find the statements: you can then review the "
                  "list before the check runs.", muted=True)
        return
    statements = edit_statements(manuscript)
    count = len(statements)
    if st.button(f"Check {count} statement{'s' if count != 1 else ''}", type="primary", key="ms_run",
                 disabled=not count, icon=":material/fact_check:") or (recheck and count):
        run_batch(lib, name, docs, manuscript, statements)
    show_report(lib, name)


# ---------------------------------------------------------------- the page


def keep_widgets() -> None:
    """Streamlit forgets a widget's value on a page not shown: the mode and the pasted manuscript
    are copied to keys of their own each run and put back when the page comes back."""
    for key in KEPT_WIDGETS:
        shadow = f"_kept_{key}"
        if key in st.session_state:
            st.session_state[shadow] = st.session_state[key]
        elif shadow in st.session_state and not (key == MODE_KEY and (st.query_params.get("mode")
                                                                      or st.query_params.get("statement"))):
            st.session_state[key] = st.session_state[shadow]


def remember_mode() -> None:
    """The mode goes into the address (``/verify?mode=manuscript``), so a link or a reload keeps it."""
    if st.session_state.get(MODE_KEY) == "manuscript":
        st.query_params["mode"] = "manuscript"
        for key in ("statement", "doc"):
            st.query_params.pop(key, None)
    else:
        st.query_params.pop("mode", None)


def body() -> None:
    st.title(":material/fact_check: Verify a quote or claim", anchor=False)
    st.caption("Is it in the collection word for word (verbatim, after folding ligatures, line-end hyphens, "
               "spacing and quote marks), with a few words changed (near_verbatim), only close in meaning "
               "(related), or not at all (not_found)? Check one statement, or every quote and cited claim of a "
               "manuscript at once.")
    keep_widgets()
    asked_mode = choice_problem("mode", st.query_params.get("mode"), ADDRESS_MODES)
    if asked_mode:
        note("warning", f"The address's {asked_mode}: one statement is checked.")
    if MODE_KEY not in st.session_state:
        st.session_state[MODE_KEY] = "manuscript" if st.query_params.get("mode") == "manuscript" else "statement"
    lib = library()
    top = st.columns([2, 3, 1.5], vertical_alignment="bottom")
    with top[0]:
        name = pick_collection("Collection", key="verify_collection")
    if name is None:
        return
    mode = top[1].segmented_control("Check", list(MODES), format_func=MODES.get, required=True, key=MODE_KEY,
                                    on_change=remember_mode)
    with top[2]:
        back_matter_switch(BACK_MATTER_KEY)
    docs = lib.documents(name)
    if not docs:
        text_line(f"Collection “{name}” has no documents yet. Add PDFs on the Collections page.", muted=True)
        link(PAGES["collections"], "Add PDFs", ":material/library_books:")
        return
    if mode == "manuscript":
        whole_manuscript(lib, name, docs)
    else:
        one_statement(lib, name, docs)


run_page("verify", body)
