"""The Verify page through AppTest: one statement (each verdict, its evidence on the PDF page) and a
whole manuscript (statements found, edited, checked in a batch, reported, exported), with the same
verdicts as ``rag-core check``.

Runs against the session's collection of two real PDFs (tests/app/conftest.py).
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from rag_core.cli import main
from rag_core.settings import RELATED_MIN_MEANING
from tests.app.manuscript import BERT, DPR, REFERENCES
from tests.app.support import COLLECTION, small_pdfs
from tests.app.test_apptest import assert_clean, html_text, markdown_elements, notes, passages, start
from tests.support import REPO

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest

PAGE = "pages/verify.py"
CHECK = "FormSubmitter:verify_form-Check"
FIND = "FormSubmitter:ms_form-Find the statements"
BEACON = "127.0.0.1:9"

# Seven statements over the two papers, one of each kind, in a paragraph and a reference list.
SMALL = (
    'Karpukhin et al. (2020) report that "our dense retriever outperforms a strong Lucene-BM25 system greatly by '
    '9%-19% absolute in terms of top-20 passage retrieval accuracy". They add that "building the FAISS index on '
    '21-million vectors on a single server takes 2.5 hours" [2]. BERT can be adapted to many tasks such as question '
    'answering and inference by adding only one output layer, with no large task-specific changes to the '
    'architecture [1]. Quantum gravity was solved by a committee of cats in 1850 [1]. Devlin et al. (2019) argue '
    'that "the dense, latent semantic encoding is complementary to sparse representations by design". "This '
    'creates B training instances in each batch, where there are B-1 negative passages for each question."\n\n'
    f'=HYPERLINK("http://{BEACON}/x") says the **markdown** <img src=http://{BEACON}/y> claim [2].\n\n' + REFERENCES
)
SMALL_VERDICTS = ["verbatim", "near_verbatim", "related", "not_found", "verbatim", "verbatim", "not_found"]


@pytest.fixture()
def downloads(monkeypatch):
    """The bytes of every download button the page makes, by file name."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    files: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def recording(self, path_or_data, mimetype, kind, filename=None):
        if filename:
            files[filename] = path_or_data if isinstance(path_or_data, bytes) else str(path_or_data).encode()
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", recording)
    return files


def check_one(at: AppTest, statement: str, source: str | None = None) -> AppTest:
    at.text_area(key="verify_quote").input(statement)
    if source:
        at.selectbox(key="verify_source").set_value(source)
    at.button(key=CHECK).click().run()
    assert_clean(at)
    return at


def shown(at: AppTest) -> str:
    return "\n".join(html_text(at))


def manuscript_mode(at: AppTest) -> AppTest:
    at.segmented_control(key="verify_mode").set_value("manuscript").run()
    assert_clean(at)
    return at


def find_statements(at: AppTest, text: str) -> AppTest:
    at.text_area(key="ms_text").input(text)
    at.button(key=FIND).click().run()
    assert_clean(at)
    return at


def run_check(at: AppTest) -> AppTest:
    at.button(key="ms_run").click().run()
    assert_clean(at)
    return at


def report(at: AppTest):
    [table] = [df for df in at.dataframe if (df.key or "").startswith("ms_report_")]
    return table.value


# ------------------------------------------------------------------ one statement


def test_verbatim_names_the_folding_every_place_and_marks_the_page(built_data_dir, monkeypatch, real_quote):
    at = start(built_data_dir, monkeypatch, PAGE)
    assert at.segmented_control(key="verify_mode").value == "statement"
    check_one(at, real_quote)
    [found] = notes(at, "success")
    assert found.startswith("✓ verbatim — Found word for word") and small_pdfs()[0].name in found
    assert "Word for word: the statement occurs in the document" in shown(at)
    assert "No folding was needed" in shown(at) and "Where it occurs (1 place)" in [s.value for s in at.subheader]
    assert passages(at) and '<mark class="rc-hit">' in passages(at)[0]
    assert len(at.image) == 1 and "passage marked" in shown(at)

    check_one(at, "  ".join(real_quote.upper().split(" ")))  # doubled spaces, upper case: found after folding
    assert any("after folding" in n for n in notes(at, "success"))
    assert re.search(r"Found after folding [^:]*letter case", shown(at))


def test_a_long_check_never_runs_in_the_servers_process(built_data_dir, monkeypatch, real_quote):
    """Issue 27 row 20: a long check in the server's process froze every other person's page; a statement
    over VERIFY_IN_PROCESS_MAX_CHARS runs in a child (rag_core.check_worker), so an in-process check here
    would fail the test."""
    import rag_core.citations.manuscript as manuscript
    from rag_core.settings import VERIFY_IN_PROCESS_MAX_CHARS

    def in_the_server(*args, **kwargs):
        raise AssertionError("the statement was checked in the server's process")

    monkeypatch.setattr(manuscript, "check_one_statement", in_the_server)
    at = start(built_data_dir, monkeypatch, PAGE)
    statement = " ".join([real_quote] * (VERIFY_IN_PROCESS_MAX_CHARS // len(real_quote) + 2))
    assert len(statement) > VERIFY_IN_PROCESS_MAX_CHARS
    check_one(at, statement)
    assert not at.exception and not notes(at, "error"), notes(at, "error")
    assert re.search(r"(verbatim|near_verbatim|related|not_found) —", shown(at) + " ".join(
        notes(at, "success") + notes(at, "warning") + notes(at, "info")))


def test_a_short_check_runs_in_the_servers_process(built_data_dir, monkeypatch, real_quote):
    """A statement of at most VERIFY_IN_PROCESS_MAX_CHARS is checked at once, without a worker process
    (a fresh one loads the models again: about a second more)."""
    import rag_core.check_worker as check_worker

    def in_a_worker(*args, **kwargs):
        raise AssertionError("a short statement was sent to a worker process")

    monkeypatch.setattr(check_worker, "check_one_in_worker", in_a_worker)
    at = start(built_data_dir, monkeypatch, PAGE)
    check_one(at, real_quote)
    assert notes(at, "success")[0].startswith("✓ verbatim")


def test_a_check_past_its_time_budget_is_a_message(built_data_dir, monkeypatch, tmp_path):
    """A worker that waits until it is stopped (any machine): the page says the budget ran out."""
    from functools import partial

    import rag_core.check_worker as check_worker
    from rag_core.settings import CHECK_HOLD_ENV

    monkeypatch.setenv(CHECK_HOLD_ENV, str(tmp_path / "worker.pid"))
    monkeypatch.setattr(check_worker, "check_one_in_worker", partial(check_worker.check_one_in_worker, seconds=0.5))
    at = start(built_data_dir, monkeypatch, PAGE)
    check_one(at, "dense retrieval " * 600)
    assert any("took longer than its budget" in n for n in notes(at, "error")), notes(at, "error")


def test_a_quote_across_a_page_break_shows_both_pages(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, PAGE)
    check_one(at, "This creates B training instances in each batch, where there are B-1 negative passages for each "
                  "question.")
    assert notes(at, "success")[0].startswith("✓ verbatim")
    assert "pp. 3–4" in shown(at)
    assert len(at.image) == 2, "both pages of the passage are shown"
    assert "The passage runs over 2 pages: each is shown." in shown(at)
    assert re.search(r"Page 3: passage marked.*Page 4: passage marked", shown(at), re.DOTALL)


def test_near_verbatim_shows_the_changed_words(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, PAGE)
    check_one(at, "However, building the FAISS index on 21-million vectors on a single server takes 2.5 hours.")
    [near] = notes(at, "warning")
    assert near.startswith("⚠ near_verbatim — Not found word for word") and "8.5 → 2.5" in near
    assert "Changed words: 8.5 → 2.5" in shown(at)
    assert notes(at, "error") == ["✕ Meaning changed — The changed words turn the statement around: a number."]
    assert re.search(r"Similarity 0\.9\d · Karpukhin et al\. 2020 · .*, p\. 7", shown(at))
    [diff] = [h.value for h in at.html if 'data-testid="rc-word-diff"' in h.value]
    assert '<del class="rc-del">8.5</del> <ins class="rc-ins">2.5</ins>' in diff
    assert "the document's words" in shown(at) and len(at.image) == 1


def test_a_changed_meaning_is_shown_side_by_side(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, PAGE)
    check_one(at, "We find that adding a single BM25 negative passage does not improve the result substantially "
                  "while adding two does not help further.")
    assert notes(at, "warning")[0].startswith("⚠ near_verbatim")
    [changed] = notes(at, "error")
    assert changed.startswith("✕ Meaning changed — The changed words turn the statement around: a negation")
    [cues] = [h.value for h in at.html if 'data-testid="rc-meaning-cues"' in h.value]
    assert "<th>negation</th>" in cues and "claim: <em>does not improve</em>" in cues
    assert "source: <em>improves</em>" in cues
    # a paraphrase that says the opposite: related, and the meaning changed on the sentence it aligns with
    check_one(at, "DPR was worse than BM25 on every dataset except SQuAD.")
    [related] = notes(at, "info")
    assert related.startswith("related — ")
    assert "Close in meaning, not confirmed: read the passage." in shown(at)
    [changed] = notes(at, "error")
    # the stance's sentence may come first ("The evidence sentence contradicts the statement (model, 0.65).")
    assert changed.startswith("✕ Meaning changed — ")
    assert "The closest sentence says otherwise: a direction conflicts." in changed
    [cues] = [h.value for h in at.html if 'data-testid="rc-meaning-cues"' in h.value]
    assert "claim: <em>worse</em>" in cues and "source: <em>better</em>" in cues
    assert "Compared with: With the exception of SQuAD, DPR performs consistently better than BM25" in shown(at)


def test_related_marks_the_best_sentence_and_says_what_the_score_means(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, PAGE)
    check_one(at, "Indexing twenty-one million passage vectors with FAISS took about eight and a half hours on one "
                  "server.")
    related, meaning = notes(at, "info")
    assert related.startswith("related — Not found word for word") and "read them to judge" in related
    # a faithful paraphrase: never "changed"; the stance reader is not sure enough of it to say "same" (it reads
    # numbers in words poorly), the rules alone say they found no conflict, which is not a confirmation
    if meaning.startswith("No conflict found — "):
        assert "not confirmation" in meaning and "No negation, number, direction or quantifier" in meaning
    else:
        assert meaning.startswith("Meaning unclear — ") and "minilm-stance-reader" in meaning
    assert "Passages close in meaning" in [s.value for s in at.subheader]
    assert f"{RELATED_MIN_MEANING:.2f} or more counts as related" in shown(at) and "read it and judge" in shown(at)
    assert re.search(r"Best sentence \(marked\): meaning 0\.\d\d", shown(at))
    assert all('<mark class="rc-hit">' in p for p in passages(at))
    assert at.image, "the best passage's page is shown with its sentence marked"


def test_not_found_still_shows_the_closest_passages(built_data_dir, monkeypatch, real_quote):
    at = start(built_data_dir, monkeypatch, PAGE)
    check_one(at, "Marathon runners who drink coffee before a race finish twelve minutes faster on average.")
    assert notes(at, "warning")[0].startswith("⚠ not_found — Not found word for word")
    assert "The closest passages (none close enough)" in [s.value for s in at.subheader]
    assert passages(at)
    check_one(at, real_quote, source=small_pdfs()[1].name)  # a real sentence of one paper, looked for in the other
    assert "in the chosen document" in "\n".join(notes(at, "warning") + notes(at, "info"))


def test_an_empty_statement_asks_for_one(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, PAGE)
    check_one(at, "   ")
    assert [w.value for w in at.warning] == ["Paste a quote or type a claim first."]


# ------------------------------------------------------------------ a whole manuscript


def test_a_manuscript_checked_reported_and_exported(built_data_dir, monkeypatch, downloads):
    at = manuscript_mode(start(built_data_dir, monkeypatch, PAGE))
    assert "Paste a manuscript or upload a draft" in shown(at)
    find_statements(at, SMALL)
    [editor] = at.data_editor
    assert editor.editing_mode == "dynamic" and len(editor.value) == 7
    assert list(editor.value["cited"])[:2] == ["Karpukhin et al. (2020)", "[2]"]
    assert editor.value["reference"][1].startswith("V. Karpukhin")
    assert "7 checkable statements in pasted text: 4 quoted passages and 3 sentences with a citation marker" in \
        shown(at)
    assert at.button(key="ms_run").label == "Check 7 statements"
    run_check(at)
    table = report(at)
    assert list(table.columns) == ["#", "statement", "verdict", "meaning", "meaning cues", "document", "page",
                                   "printed page", "similarity", "stance", "changed words", "cited",
                                   "cited \u2192 matched to", "misattributed"]
    # most severe first: the changed number, the two not found, the misattributed quote, related, verbatim
    assert list(table["#"]) == [2, 4, 7, 5, 3, 1, 6]
    table = table.set_index("#").sort_index()  # back in the manuscript's order
    assert list(table["verdict"]) == SMALL_VERDICTS
    # #3 (related, a faithful paraphrase of BERT's abstract): the shipped stance reader's support (about 0.7)
    # is under the card's threshold (0.75, chosen so that few contradictions are called "same"): unclear,
    # never changed; #4 and #7 (found nowhere) stay unclear: a made-up claim is never called "same"
    assert list(table["meaning"]) == ["same", "changed", "unclear", "unclear", "same", "same", "unclear"]
    assert table["stance"][3] == "", "the report table leaves a stance that does not say blank"
    assert table["meaning cues"][2] == "number: claim “2.5 hours” · source “8.5 hours”"
    assert list(table["page"][:2]) == [1, 7] and table["changed words"][2] == "8.5 → 2.5"
    assert table["misattributed"][5] == "found, but in a different document than the one cited"
    assert (table["misattributed"].str.len() > 0).sum() == 1
    assert table["document"][4] == "", "a not_found row names no document"
    assert "7 statements: 3 verbatim · 1 near_verbatim · 1 related · 2 not_found · 0 not in collection · " \
           "1 misattributed · 1 meaning changed" in shown(at)
    # the evidence shown first is the most severe statement's: the changed number, side by side
    assert at.selectbox(key="verify_report_pick").value.startswith("#2 · near_verbatim · meaning changed")
    [cues] = [h.value for h in at.html if 'data-testid="rc-meaning-cues"' in h.value]
    assert "claim: <em>2.5 hours</em>" in cues and "source: <em>8.5 hours</em>" in cues

    # the evidence of a row: the misattributed quote, flagged, its passage marked on the page
    at.selectbox(key="verify_report_pick").set_value(at.selectbox(key="verify_report_pick").options[4]).run()
    assert_clean(at)
    assert any(n.startswith("⚠ Misattributed: Found, but in a different document than the one cited")
               for n in notes(at, "warning"))
    assert "Cites: Devlin et al. (2019) (checked first: Devlin et al." in shown(at)
    assert len(at.image) == 1 and "Page 1: passage marked" in shown(at)

    # the downloads: the engine's CSV (BOM, formulas neutralised), JSON and HTML report
    stem = "citation-check-pasted-text"
    assert {f"{stem}.csv", f"{stem}.json", f"{stem}.html"} <= set(downloads)
    data = downloads[f"{stem}.csv"]
    assert data.startswith(b"\xef\xbb\xbf")
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
    assert [r["verdict"] for r in rows] == SMALL_VERDICTS
    assert rows[1]["meaning"] == "changed" and rows[1]["meaning_cues"].startswith("number: claim")
    assert rows[6]["statement"].startswith("'=HYPERLINK(")
    exported = json.loads(downloads[f"{stem}.json"])
    assert [r["verdict"] for r in exported] == SMALL_VERDICTS
    assert exported[1]["meaning_cues"][0]["kind"] == "number"
    report_html = downloads[f"{stem}.html"].decode("utf-8")
    assert "Meaning changed" in report_html and report_html.index("2.5 hours") < report_html.index("Lucene-BM25")
    assert "<script" not in report_html and f"<img src=http://{BEACON}" not in report_html
    assert f"&lt;img src=http://{BEACON}/y&gt;" in report_html

    # nothing from the manuscript reaches a markdown renderer
    for element in markdown_elements(at):
        assert BEACON not in element and "**markdown**" not in element, element


def test_the_page_and_the_command_line_give_the_same_verdicts(built_data_dir, monkeypatch, tmp_path, capsys):
    draft = tmp_path / "draft.txt"
    draft.write_text(SMALL, encoding="utf-8")
    assert main(["--data-dir", str(built_data_dir), "check", COLLECTION, str(draft), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)

    at = manuscript_mode(start(built_data_dir, monkeypatch, PAGE))
    at.file_uploader(key="ms_file").set_value(("draft.txt", SMALL.encode("utf-8"), "text/plain"))
    at.button(key=FIND).click().run()
    assert_clean(at)
    assert "7 checkable statements in draft.txt" in shown(at)
    run_check(at)
    table = report(at).set_index("#").sort_index()
    assert [row["verdict"] for row in cli] == list(table["verdict"]) == SMALL_VERDICTS
    assert [row["meaning"] for row in cli] == list(table["meaning"])
    assert [bool(row["misattributed"]) for row in cli] == list(table["misattributed"].str.len() > 0)
    found = [row for row in cli if row["verdict"] != "not_found"]
    assert [row["page"] for row in found] == list(table["page"][table["verdict"] != "not_found"])
    assert [row["source"] for row in cli[:2]] == [DPR, DPR] and cli[2]["source"] == BERT


def test_edits_to_the_list_are_what_gets_checked(built_data_dir, monkeypatch):
    at = manuscript_mode(start(built_data_dir, monkeypatch, PAGE))
    find_statements(at, SMALL)
    editor_key = at.data_editor[0].key
    at.session_state[editor_key] = {
        "edited_rows": {1: {"statement": "However, building the FAISS index on 21-million vectors on a single server "
                                         "takes 8.5 hours."}},  # the misquote corrected
        "added_rows": [{"statement": "BERT is conceptually simple and empirically powerful.", "kind": "claim",
                        "cited": "(Karpukhin et al., 2020)"}],
        "deleted_rows": [2, 3, 6],
    }
    at.run()
    assert_clean(at)
    assert at.button(key="ms_run").label == "Check 5 statements"
    run_check(at)
    table = report(at).set_index("#").sort_index().reset_index()
    assert list(table["verdict"]) == ["verbatim"] * 5
    assert table["statement"][4] == "BERT is conceptually simple and empirically powerful."
    assert table["cited"][4] == "(Karpukhin et al., 2020)" and table["misattributed"][4] != ""


def test_uploads_of_each_kind_and_an_unreadable_one(built_data_dir, monkeypatch, tmp_path):
    import docx

    at = manuscript_mode(start(built_data_dir, monkeypatch, PAGE))
    document = docx.Document()
    for paragraph in SMALL.split("\n\n"):
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    hostile_name = f"![f](https:{BEACON}) draft.docx"
    at.file_uploader(key="ms_file").set_value((hostile_name, buffer.getvalue(), "application/octet-stream"))
    at.button(key=FIND).click().run()
    assert_clean(at)
    assert f"7 checkable statements in {hostile_name}" in shown(at)
    for element in markdown_elements(at):
        assert BEACON not in element, element

    latex = ("\\begin{document} Karpukhin et al. write that ``our dense retriever outperforms a strong Lucene-BM25 "
             "system greatly'' \\cite{karpukhin2020}. \\end{document}")
    at.file_uploader(key="ms_file").set_value(None)
    find_statements(at, latex)  # pasted LaTeX is read as LaTeX
    assert list(at.data_editor[0].value["cited"]) == ["\\cite{karpukhin2020}"]

    at.file_uploader(key="ms_file").set_value(("draft.txt", b"\x00\x01binary", "text/plain"))
    at.button(key=FIND).click().run()
    assert_clean(at)
    assert any("is not a text file" in n for n in notes(at, "error"))


def test_a_manuscript_without_statements_can_still_be_given_some(built_data_dir, monkeypatch):
    at = manuscript_mode(start(built_data_dir, monkeypatch, PAGE))
    find_statements(at, "A draft with no quotes and no citation markers at all.")
    assert "0 checkable statements in pasted text" in shown(at)
    assert at.button(key="ms_run").disabled
    at.session_state[at.data_editor[0].key] = {"edited_rows": {}, "deleted_rows": [],
                                               "added_rows": [{"statement": "BERT is conceptually simple and "
                                                                            "empirically powerful."}]}
    at.run()
    assert at.button(key="ms_run").label == "Check 1 statement" and not at.button(key="ms_run").disabled
    run_check(at)
    assert list(report(at)["verdict"]) == ["verbatim"]


def test_the_address_opens_the_manuscript_mode(built_data_dir, monkeypatch):
    monkeypatch.setenv("RAG_CORE_DATA_DIR", str(built_data_dir))
    at = AppTest.from_file(str(REPO / PAGE), default_timeout=120)
    at.query_params["mode"] = "manuscript"
    at.run()
    assert_clean(at)
    assert at.segmented_control(key="verify_mode").value == "manuscript"
    assert at.text_area(key="ms_text")
    at.segmented_control(key="verify_mode").set_value("statement").run()
    assert "mode" not in at.query_params


def test_a_related_check_says_what_its_deciding_sentence_says(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, PAGE)
    check_one(at, "DPR was worse than BM25 on every dataset except SQuAD.")
    text = shown(at)
    found = re.search(r"Evidence (supports|contradicts|does not say) \((confidence 0\.\d\d, )?model [\w.-]+\)", text)
    assert found, "the stance is said in words, with its confidence and model"
    assert "Deciding sentence: " in text
    assert re.search(r"Deciding sentence: [^<*]*\S", text)
    assert at.image, "the deciding sentence's page is shown, the sentence marked"
