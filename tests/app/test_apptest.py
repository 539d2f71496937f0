"""The Streamlit app through streamlit.testing.v1.AppTest: every page, the main interactions.

A collection of two real PDFs is built once per session (tests/app/conftest.py); each test points
``RAG_CORE_DATA_DIR`` at the data folder it needs before the app runs.
"""

from __future__ import annotations

import ast
import html
import json
import re
import tomllib

import pytest

from tests.app.support import (
    COLLECTION,
    HOSTILE_QUOTE,
    HOSTILE_WORDS,
    hostile_payloads,
    make_hostile_pdf,
    small_pdfs,
)
from tests.support import REPO

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest

TIMEOUT = 120
PAGES = ("pages/compare.py", "pages/verify.py", "pages/lab.py", "pages/collections.py", "pages/settings.py")
TITLES = {"pages/compare.py": "Compare searches", "pages/verify.py": "Verify a quote or claim",
          "pages/lab.py": "Relevance lab",
          "pages/collections.py": "Collections", "pages/settings.py": "Settings & about"}
BEACON = "127.0.0.1:9"


def start(data_dir, monkeypatch, script: str = "app.py", view: str = "stacked") -> AppTest:
    """Run ``script`` (app.py, or one page file: AppTest drives widgets reliably only on the
    script it started with, so interactions start the page itself)."""
    monkeypatch.setenv("RAG_CORE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = AppTest.from_file(str(REPO / script), default_timeout=TIMEOUT)
    if script.endswith("compare.py"):
        at.session_state["cmp_view"] = view  # "stacked": the lists as tables (side by side they are cards)
    at.run()
    assert_clean(at)
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def html_text(at: AppTest) -> list[str]:
    """What the ``st.html`` elements show, tags removed and entities decoded (styles left out)."""
    return [html.unescape(re.sub(r"<[^>]+>", "", h.value)) for h in at.html if not h.value.startswith("<style")]


def markdown_elements(at: AppTest) -> list[str]:
    """Every text the app hands to an element that renders markdown."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [t.value for t in at.title]
    parts += [s.value for s in at.subheader] + [h.value for h in at.header]
    for kind in ("info", "success", "warning", "error"):
        parts += [e.value for e in getattr(at, kind)]
    parts += [getattr(w, "label", "") for w in (*at.button, *at.selectbox, *at.text_input)]
    return [str(p) for p in parts]


def texts(at: AppTest) -> str:
    return "\n".join(markdown_elements(at) + html_text(at))


def notes(at: AppTest, kind: str) -> list[str]:
    """The literal message boxes (``layout.note``) of one kind."""
    return [html.unescape(re.sub(r"<[^>]+>", "", h.value)).strip() for h in at.html
            if h.value.startswith(f'<div class="rc-note rc-note-{kind}"')]


def passages(at: AppTest) -> list[str]:
    """Every passage box shown (whole passages and short cards)."""
    return [h.value for h in at.html if 'class="rc-passage' in h.value]


def whole_passages(at: AppTest) -> list[str]:
    """The whole passages shown (the passage dialog's), not the short cards of the fast judging pass."""
    return [h.value for h in at.html if 'class="rc-passage' in h.value and "rc-short" not in h.value]


def go(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert_clean(at)
    return at


def tables(at: AppTest) -> dict:
    return {df.key.split("_")[1]: df.value for df in at.dataframe if (df.key or "").startswith("table_")}


@pytest.fixture()
def empty_dir(tmp_path):
    return tmp_path / "empty-data"


@pytest.fixture()
def unembedded_dir(tmp_path):
    """A data folder with one collection of one PDF, TF-IDF only (fast to build)."""
    from rag_core.collections.library import Library

    root = tmp_path / "data"
    report = Library(root).add_pdfs("scratch", [small_pdfs()[1]], compute_embeddings=False)
    assert report.files[0].ok
    return root


@pytest.fixture()
def hostile_dir(tmp_path):
    """A TF-IDF-only collection holding a PDF with markdown and HTML in its text, labels and name."""
    from rag_core.collections.library import Library

    pdf = make_hostile_pdf(tmp_path, BEACON)
    root = tmp_path / "data"
    report = Library(root).add_pdfs("hostile", [(pdf.name, pdf.read_bytes()), small_pdfs()[1]],
                                    compute_embeddings=False)
    assert [f.status for f in report.files] == ["ok", "ok"], report.to_dict()
    return root


# ------------------------------------------------------------------ every page renders


def test_the_entry_page_opens_compare(empty_dir, monkeypatch):
    at = start(empty_dir, monkeypatch)
    assert [t.value for t in at.title] == [":material/compare_arrows: Compare searches"]


def test_every_page_renders_with_no_collection(empty_dir, monkeypatch):
    at = start(empty_dir, monkeypatch)
    for page in PAGES:
        go(at, page)
        assert not at.error, [e.value for e in at.error]
        assert at.title[0].value.endswith(TITLES[page])
        assert "Literature grounding" in html_text(at), f"{page} has no navigation bar"
    go(at, "pages/compare.py")
    assert "no collection yet" in texts(at).lower()
    go(at, "pages/verify.py")
    assert "no collection yet" in texts(at).lower()


def test_every_page_renders_with_a_collection(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch)
    for page in PAGES:
        go(at, page)
        assert not at.error and not notes(at, "error"), (page, texts(at))
        assert at.title[0].value.endswith(TITLES[page])


def test_each_page_file_runs_on_its_own(built_data_dir, monkeypatch):
    monkeypatch.setenv("RAG_CORE_DATA_DIR", str(built_data_dir))
    for page in PAGES:
        at = AppTest.from_file(str(REPO / page), default_timeout=TIMEOUT).run()
        assert_clean(at)
        assert not at.error and not notes(at, "error"), (page, texts(at))
        assert at.title[0].value.endswith(TITLES[page]), page
        if page != "pages/settings.py":
            assert "two papers" in [s.value for s in at.selectbox], f"{page} does not offer the collection"


def test_the_app_listens_on_this_computer_only_and_uses_the_native_pages_folder():
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["address"] == "127.0.0.1"
    assert config["client"]["showSidebarNavigation"] is False  # the pages draw the top navigation
    assert config["client"]["disableDataExport"] is True  # tables export no raw CSV (formulas)
    for path in [REPO / "app.py", *sorted((REPO / "pages").rglob("*.py"))]:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        used = {f"{node.value.id}.{node.attr}" for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)}
        used |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        assert not used & {"sys.path", "st.navigation", "PagesManager"}, path
        assert "uses_pages_directory" not in {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}, path
        assert "noqa: E402" not in source, path


# ------------------------------------------------------------------ collections


def test_create_collection_through_the_form(empty_dir, monkeypatch):
    from rag_core.collections.library import Library

    at = start(empty_dir, monkeypatch, "pages/collections.py")
    at.text_input(key="new_collection_name").input("my papers")
    at.button(key="FormSubmitter:create_collection-Create collection").click().run()
    assert_clean(at)
    assert Library(empty_dir).names() == ["my papers"]
    assert notes(at, "success") == ["✓ Created collection “my papers”. Now add PDFs to it."]
    assert at.get("file_uploader"), "the upload box is shown for the new collection"
    # a bad name is refused with a message, not a traceback
    at.text_input(key="new_collection_name").input("../escape")
    at.button(key="FormSubmitter:create_collection-Create collection").click().run()
    assert_clean(at)
    assert notes(at, "error") and "not allowed" in notes(at, "error")[0]
    assert Library(empty_dir).names() == ["my papers"]


def test_remove_asks_first_and_can_be_undone(tmp_path, monkeypatch):
    from rag_core.collections.library import Library

    root = tmp_path / "data"
    lib = Library(root)
    assert all(f.ok for f in lib.add_pdfs("scratch", small_pdfs(), compute_embeddings=False).files)
    first, second = (p.name for p in small_pdfs())
    at = start(root, monkeypatch, "pages/collections.py")
    docs = next(df.value for df in at.dataframe if "document" in df.value.columns)
    assert list(docs["document"]) == [first, second]
    assert int(docs["pages"][1]) == 13 and int(docs["passages"][1]) > 0

    at.selectbox(key="remove_doc_pick").set_value(second)
    at.button(key="remove_doc").click().run()
    assert_clean(at)
    assert [d["source"] for d in lib.documents("scratch")] == [first, second], "nothing is removed before yes"
    assert any(f"Remove “{second}” from “scratch”?" in n for n in notes(at, "warning"))
    at.button(key="remove_doc_cancel").click().run()
    assert_clean(at)
    assert "remove_doc_confirm" not in [b.key for b in at.button]
    assert len(lib.documents("scratch")) == 2

    at.selectbox(key="remove_doc_pick").set_value(second)
    at.button(key="remove_doc").click().run()
    at.button(key="remove_doc_confirm").click().run()
    assert_clean(at)
    assert [d["source"] for d in lib.documents("scratch")] == [first]
    assert any(f"Removed “{second}”" in n for n in notes(at, "success"))

    at.button(key="undo_remove").click().run()
    assert_clean(at)
    assert [d["source"] for d in lib.documents("scratch")] == [first, second], "undo puts the PDF back"
    assert lib.pdf_path("scratch", second) is not None
    assert any(f"Put “{second}” back" in n for n in notes(at, "success"))
    assert "undo_remove" not in [b.key for b in at.button]


def test_rename_then_delete_clears_the_confirmation_box(unembedded_dir, monkeypatch):
    from rag_core.collections.library import Library

    lib = Library(unembedded_dir)
    lib.create("other")
    at = start(unembedded_dir, monkeypatch, "pages/collections.py")
    at.selectbox(key="manage_collection").set_value("scratch").run()
    at.text_input(key="rename_to").input("renamed")
    at.button(key="FormSubmitter:rename_form-Rename").click().run()
    assert_clean(at)
    assert lib.names() == ["other", "renamed"]
    assert at.selectbox(key="manage_collection").value == "renamed"

    delete = at.button(key="delete_collection")
    assert delete.disabled, "deleting needs the name typed first"
    at.text_input(key="delete_confirm_0").input("renamed").run()
    at.button(key="delete_collection").click().run()
    assert_clean(at)
    assert lib.names() == ["other"]
    assert notes(at, "success") == ["✓ Deleted collection “renamed”."]
    box = [t for t in at.text_input if (t.key or "").startswith("delete_confirm")]
    assert [t.value for t in box] == [""], "the confirmation box starts empty for the next collection"
    assert at.button(key="delete_collection").disabled


def damage(collection) -> None:
    """Garble the live version's record (a missing CURRENT alone is recovered, not damage)."""
    version = (collection / "CURRENT").read_text(encoding="utf-8").strip()
    (collection / "versions" / version / "version.json").write_text("{garbage", encoding="utf-8")


def test_a_damaged_collection_is_listed_with_its_error_and_can_be_deleted(unembedded_dir, monkeypatch):
    from rag_core.collections.library import Library

    Library(unembedded_dir).create("healthy")
    damage(unembedded_dir / "collections" / "scratch")
    at = start(unembedded_dir, monkeypatch, "pages/collections.py")
    table = next(df.value for df in at.dataframe if "collection" in df.value.columns)
    assert dict(zip(table["collection"], table["state"], strict=True)) == {"healthy": "ok", "scratch": "damaged"}
    assert any("“scratch” cannot be read." in n and "damaged" in n for n in notes(at, "error"))
    at.button(key="open_damaged_scratch").click().run()
    assert_clean(at)
    assert at.selectbox(key="manage_collection").value == "scratch"
    at.text_input(key="delete_confirm_0").input("scratch").run()
    at.button(key="delete_collection").click().run()
    assert_clean(at)
    assert Library(unembedded_dir).names() == ["healthy"]


def test_a_damaged_collection_gives_an_error_message_not_a_traceback(unembedded_dir, monkeypatch):
    damage(unembedded_dir / "collections" / "scratch")
    for page in ("pages/compare.py", "pages/verify.py", "pages/collections.py"):
        at = start(unembedded_dir, monkeypatch, page)
        assert any("damaged" in n for n in notes(at, "error")), (page, texts(at))


# ------------------------------------------------------------------ compare


def run_compare(at: AppTest, query: str, **widgets) -> AppTest:
    at.text_input(key="cmp_query").input(query)
    for key, value in widgets.items():
        widget = at.text_input(key=key) if key == "cmp_phrase" else at.selectbox(key=key)
        widget.set_value(value) if key != "cmp_phrase" else widget.input(value)
    at.button(key="FormSubmitter:compare_form-Compare").click().run()
    assert_clean(at)
    return at


def open_passage(at: AppTest, label_start: str) -> AppTest:
    picker = at.selectbox(key="cmp_passage")
    picker.set_value(next(o for o in picker.options if o.startswith(label_start)))
    at.button(key="cmp_open").click().run()
    assert_clean(at)
    return at


def test_compare_shows_three_tables_with_titles_passages_scores_and_cosines(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/compare.py")
    run_compare(at, "masked language model")
    assert not notes(at, "error"), texts(at)
    found = tables(at)
    assert set(found) == {"tfidf", "hybrid", "exact"}
    # rank, grade, score and cosine first (in view in a narrow window), then the passage
    assert list(found["tfidf"].columns) == ["#", "grade", "score = cosine", "passage", "→ hybrid"]
    assert list(found["hybrid"].columns) == ["#", "grade", "score", "cosine", "passage", "dense", "vs TF-IDF",
                                             "first stage"]
    assert list(found["exact"].columns) == ["#", "grade", "cosine", "passage", "in lists"]
    for kind in ("tfidf", "hybrid", "exact"):
        frame = found[kind]
        assert list(frame["#"]) == list(range(1, len(frame) + 1))
        # each cell starts with a short chip (first author, year, page), then the passage; BERT's
        # year is its arXiv identifier's (1810.04805), as its record says since issue 18
        assert frame["passage"].str.match(r"^(Devlin 2018|Karpukhin 2020) · pp?\. [\d–]+( \(printed \d+\))?"
                                          r"( · overlaps #\d+(, #\d+)*)? — ").all(), frame["passage"]
    assert len(found["tfidf"]) == len(found["hybrid"]) == 10
    assert found["tfidf"]["passage"].str.contains("⟦masked⟧").any(), "the question's words are marked"
    assert found["exact"]["passage"].str.contains("⟦masked language model⟧").all(), "the match, in its context"
    assert (found["tfidf"]["score = cosine"] > 0).all()
    assert found["hybrid"]["vs TF-IDF"].str.match(r"^[▲▼★=]").all(), "every hybrid row has a marker against TF-IDF"
    assert found["hybrid"]["first stage"].str.match(r"^tfidf (\d+|–)\nbm25 (\d+|–)\ndense (\d+|–)$").all()
    assert (found["hybrid"]["grade"] == "–").all(), "nothing is judged yet"
    assert found["exact"]["in lists"].str.match(r"^TF-IDF (\d+|–)\nhybrid (\d+|–)$").all()
    assert re.search(r"Where the question occurs \(folded\): \d+ places? in \d+ documents?", texts(at))
    assert "Hybrid reranker:" in texts(at)
    # a passage opens whole in a dialog, the query's words marked, with the page image
    open_passage(at, "Hybrid #2")
    assert whole_passages(at) and '<mark class="rc-term">' in whole_passages(at)[0]
    assert at.get("image"), "the PDF page image is shown"
    # a passage from the exact list gets the match itself marked
    open_passage(at, "Exact #1")
    assert '<mark class="rc-hit">' in whole_passages(at)[0]
    assert len(at.get("download_button")) == 2, "results download as CSV and as JSON"


def cards(at: AppTest) -> dict[str, list[dict]]:
    """The lists drawn as cards (side by side, or against a baseline): key -> the cards' data."""
    return {el.key.split("_")[1]: json.loads(el.proto.json)["cards"] for el in at.get("bidi_component")
            if (el.key or "").startswith("table_")}


def test_compare_side_by_side_draws_cards_with_the_figures_first_and_where_the_other_lists_put_them(
        built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/compare.py", view="side")
    run_compare(at, "masked language model")
    assert not tables(at), "side by side, the lists are cards"
    found = cards(at)
    assert set(found) == {"tfidf", "hybrid", "exact"}
    names = {kind: [[f[0] for f in card["figures"]] for card in rows] for kind, rows in found.items()}
    assert all(n == ["grade", "score = cosine"] for n in names["tfidf"]), "one TF-IDF figure: score = cosine"
    assert all(n == ["grade", "score", "cosine"] for n in names["hybrid"] + names["exact"])
    assert [c["rank"] for c in found["hybrid"]] == list(range(1, 11))
    for card in found["tfidf"]:
        assert re.match(r"^(→ hybrid #\d+|✕ not in hybrid)$", card["move"]), card["move"]
    for card in found["hybrid"]:
        assert re.match(r"^vs TF-IDF [▲▼★=]", card["move"]), card["move"]
        assert any(d.startswith("first stage: tfidf ") for d in card["details"]), card["details"]
    for card in found["exact"]:
        assert re.match(r"^TF-IDF #[\d–]+ · hybrid #[\d–]+$", card["details"][0]), card["details"]
        assert "⟦masked language model⟧" in card["text"]
    assert all(re.match(r"^(Devlin 2018|Karpukhin 2020) · pp?\. ", c["chip"]) for c in found["tfidf"])
    score = next(f[2] for f in found["hybrid"][0]["figures"] if f[0] == "score")
    assert "Score from 0 to 2" in score, "the fused score's range is said where the score is shown"
    assert "Score from 0 to 2" in texts(at)


def test_compare_against_a_baseline_shows_every_change_against_it(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/compare.py", view="baseline")
    run_compare(at, "masked language model")
    found = cards(at)
    assert set(found) == {"baseline", "hybrid"}, "the baseline's list beside the list now"
    assert all(c["move"] == "= same vs baseline" for c in found["hybrid"]), "now = the package default"
    assert "RBO 1.00" in texts(at) and "the package default" in texts(at)
    weight = f"cmp_dense_weight_{COLLECTION}"
    for value in (0.55, 0.6, 0.65, 0.7, 0.75, 0.8):  # a slider's arrow keys: one step at a time
        at.slider(key=weight).set_value(value).run()
        assert_clean(at)
    assert "Dense weight α 0.5 → 0.8" in texts(at), "against the baseline, not the step before"
    found = cards(at)
    assert any(not c["move"].startswith("=") for c in found["hybrid"]), [c["move"] for c in found["hybrid"]]
    assert "RBO 1.00" not in texts(at)
    at.button(key="baseline_pin").click().run()
    assert "RBO 1.00" in texts(at) and "pinned at" in texts(at)
    at.slider(key=weight).set_value(0.2).run()
    assert "Dense weight α 0.8 → 0.2" in texts(at)
    at.button(key="baseline_reset").click().run()
    assert "the package default" in texts(at) and "Dense weight α 0.5 → 0.2" in texts(at)


def test_compare_restricted_to_one_document_and_bad_regex(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/compare.py")
    dpr = small_pdfs()[1].name
    run_compare(at, "dense passage retrieval", cmp_source=dpr, cmp_mode="regex", cmp_phrase="(unclosed")
    found = tables(at)
    assert set(found) == {"tfidf", "hybrid"}, "the exact list fails alone, the others stand"
    for kind in ("tfidf", "hybrid"):
        # every row is the DPR paper's (shown by its short title: first author, year, title)
        assert found[kind]["passage"].str.startswith("Karpukhin 2020 · p").all(), dpr
    errors = notes(at, "error")
    assert len(errors) == 1 and "regex" in errors[0].lower(), "the regular expression's problem is shown"
    assert "does not occur" not in texts(at), "no contradictory 'does not occur' box next to the error"


def test_compare_nonsense_says_nothing_matched(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/compare.py")
    run_compare(at, "qwertyuiop zxcvbnm")
    found = tables(at)
    assert "tfidf" not in found and "exact" not in found, "no rows scored 0"
    assert "The question does not occur anywhere as typed (folded)" in texts(at), "the empty exact list: one line"
    assert "No passage shares a word with the question." in " ".join(notes(at, "info"))
    assert any("Nothing in the collection matches the question word for word" in n for n in notes(at, "warning"))
    if "hybrid" in found:  # the embedding list still offers something: said to be close in meaning only
        assert found["hybrid"]["first stage"].str.match(r"^tfidf –\nbm25 –\ndense \d+$").all()
        assert any("only close in meaning" in n for n in notes(at, "warning"))


def test_compare_empty_question_asks_for_one(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/compare.py")
    run_compare(at, "   ")
    assert at.warning and "Type a question" in at.warning[0].value
    assert not tables(at)


def test_tfidf_only_collection_still_compares(unembedded_dir, monkeypatch):
    at = start(unembedded_dir, monkeypatch, "pages/compare.py")
    run_compare(at, "passage retrieval")
    assert not notes(at, "error"), texts(at)
    assert len(tables(at)["hybrid"]) == 10


# ------------------------------------------------------------------ nothing in a document acts


def test_markdown_and_html_from_a_pdf_show_literally(hostile_dir, monkeypatch):
    payload = hostile_payloads(BEACON)
    at = start(hostile_dir, monkeypatch, "pages/compare.py")
    run_compare(at, HOSTILE_WORDS, cmp_mode="literal", cmp_phrase="quokka")
    found = tables(at)
    cells = found["tfidf"]["passage"]
    assert cells.str.contains(f"(printed {payload['label']}", regex=False).any(), "the label is a plain table cell"
    open_passage(at, "TF-IDF #1")
    shown = "\n".join(html_text(at))
    for text in (payload["file"], payload["label"], payload["text_image"], payload["text_html"], "**bold claim**"):
        assert text in shown, text
    assert "&lt;img src=http://127.0.0.1:9/text-html&gt;" in whole_passages(at)[0]
    for element in at.html:  # only our own tags: no image, link or bold from the document
        # (our own bold lead-ins may hold a document's title as escaped text; markdown from the
        # document would have turned its **bold claim** into a tag, and its links into <a>/<img>)
        assert not re.search(r"<(strong|b|em)\b[^>]*>[^<]*bold claim", element.value)
        assert not re.search(r"<(img|a)\b[^>]*>[^<]*(quokka|127\.0\.0\.1)", element.value)
        assert "<img" not in element.value and "<a " not in element.value
    for element in markdown_elements(at):  # nothing from the document reaches a markdown renderer
        assert BEACON not in element and "**bold" not in element, element

    at = start(hostile_dir, monkeypatch, "pages/verify.py")
    at.text_area(key="verify_quote").input(HOSTILE_QUOTE)
    at.button(key="FormSubmitter:verify_form-Check").click().run()
    assert_clean(at)
    assert any(payload["file"] in n for n in notes(at, "success")), texts(at)
    assert payload["label"] in "\n".join(html_text(at))
    for element in markdown_elements(at):
        assert BEACON not in element, element

    at = start(hostile_dir, monkeypatch, "pages/collections.py")
    for element in markdown_elements(at):
        assert BEACON not in element, element


# ------------------------------------------------------------------ verify: tests/app/test_verify_page.py


# ------------------------------------------------------------------ settings


def test_settings_shows_models_data_folder_and_saves_preferences(empty_dir, monkeypatch, tmp_path):
    from rag_core.collections.preferences import load_preferences

    at = start(empty_dir, monkeypatch, "pages/settings.py")
    page = texts(at)
    assert str(empty_dir) in page
    assert "all-MiniLM-L6-v2" in page and "Device" in page
    assert "cross-encoder" in page.lower()
    # the Models section keeps its place at the top but is filled last, a line saying so meanwhile: the
    # rest of the page is drawn before the models are looked for (the line is gone once they are)
    order = [getattr(b, "key", None) or getattr(b, "value", None) for b in at.main.children.values()]
    assert "models_section" in order and order.index("models_section") < order.index("Data folder"), order
    assert "Looking for the models" not in page
    source = (REPO / "pages" / "settings.py").read_text()
    assert source.index("ocr_section(prefs)") < source.index('model_lines("Embedding model'), \
        "the models are looked for after the other sections are drawn"

    at.number_input(key="chunk_size").set_value(800)
    at.number_input(key="chunk_overlap").set_value(100)
    at.button(key="FormSubmitter:chunking_form-Save passage settings").click().run()
    assert_clean(at)
    prefs = load_preferences(empty_dir)
    assert (prefs.chunk_size, prefs.overlap) == (800, 100)
    saved = json.loads((empty_dir / "preferences.json").read_text())
    assert saved["chunk_size"] == 800

    missing = tmp_path / "no-such-model"
    at.text_input(key="ce_name").input(str(missing))
    at.button(key="FormSubmitter:cross_encoder_form-Save and check").click().run()
    assert_clean(at)
    assert load_preferences(empty_dir).cross_encoder_model == str(missing)
    assert not notes(at, "success"), "a cross-encoder that cannot be loaded is not a success"
    assert any("cannot be loaded" in n for n in notes(at, "warning"))

    # new collections take the saved chunking
    at = start(empty_dir, monkeypatch, "pages/collections.py")
    assert "800 characters with 100" in texts(at)


def test_settings_with_a_local_cross_encoder(empty_dir, monkeypatch, tmp_path):
    from rag_core.collections.preferences import load_preferences
    from rag_core.settings import DEFAULT_CROSS_ENCODER_MODEL

    testing = pytest.importorskip("rag_core.testing")
    folder = testing.make_tiny_cross_encoder(tmp_path / "tiny-ce")
    at = start(empty_dir, monkeypatch, "pages/settings.py")
    at.text_input(key="ce_name").input(str(folder))
    at.button(key="FormSubmitter:cross_encoder_form-Save and check").click().run()
    assert_clean(at)
    assert any("reorders its pool with the cross-encoder" in n for n in notes(at, "success"))
    assert load_preferences(empty_dir).cross_encoder_model == str(folder)
    at.button(key=f"FormSubmitter:cross_encoder_form-Back to the default ({DEFAULT_CROSS_ENCODER_MODEL})"
              ).click().run()
    assert_clean(at)
    assert load_preferences(empty_dir).cross_encoder_model == DEFAULT_CROSS_ENCODER_MODEL
    assert not any("reorders its pool" in n for n in notes(at, "success"))
    assert texts(at).count(DEFAULT_CROSS_ENCODER_MODEL) >= 2, "the page names the default model it now uses"


def test_the_pages_import_no_heavy_library():
    """A page's first run imports what it draws; scikit-learn (~0.9 s with scipy.stats) and torch
    load in the background warm-up, so the first page is usable sooner after a start."""
    import subprocess
    import sys

    script = ("import sys, pages.common.lab_ui, pages.common.state, pages.common.layout\n"
              "import rag_core.retrieval.comparison, rag_core.output.export, rag_core.evaluation.methods\n"
              "import rag_core.citations.view\n"
              "print(sorted(m for m in ('torch', 'sklearn', 'scipy.stats', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_compare_and_verify_leave_reference_lists_out_until_the_switch(built_data_dir, monkeypatch):
    """Issue 28: bibliographies answered questions. Compare's lists hold no back matter by default; the
    switch re-runs them with it, each such passage's title chip saying "reference list"; Verify has the
    same switch, off."""
    at = start(built_data_dir, monkeypatch, "pages/compare.py")
    question = "In Proceedings of the Association for Computational Linguistics"
    run_compare(at, question)
    assert at.toggle(key="cmp_back_matter").value is False
    result = at.session_state["cmp_result"]
    rows = [r for kind in ("tfidf", "hybrid", "exact") for r in result["comparison"][kind]]
    assert rows and not any(r.get("back_matter") for r in rows)
    at.toggle(key="cmp_back_matter").set_value(True).run()
    assert_clean(at)
    result = at.session_state["cmp_result"]
    assert result["request"]["back_matter"] is True
    marked = [r for r in result["comparison"]["hybrid"] if r.get("back_matter") == "references"]
    assert marked, [r["source"] for r in result["comparison"]["hybrid"]]
    assert any("reference list" in cell for cell in tables(at)["hybrid"]["passage"])

    verify = start(built_data_dir, monkeypatch, "pages/verify.py")
    assert verify.toggle(key="verify_back_matter").value is False
