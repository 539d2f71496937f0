"""The Streamlit app through streamlit.testing.v1.AppTest: every page, the main interactions.

A collection of two real PDFs is built once per session (tests/app/conftest.py); each test points
``RAG_CORE_DATA_DIR`` at the data folder it needs before the app runs.
"""

from __future__ import annotations

import json

import pytest

from .conftest import REPO, small_pdfs

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest

TIMEOUT = 120
PAGES = ("pages/compare.py", "pages/verify.py", "pages/collections.py", "pages/settings.py")


def start(data_dir, monkeypatch, script: str = "app.py") -> AppTest:
    """Run ``script`` (app.py, or one page file: AppTest drives widgets reliably only on the
    script it started with, so interactions start the page itself)."""
    monkeypatch.setenv("RAG_CORE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = AppTest.from_file(str(REPO / script), default_timeout=TIMEOUT)
    at.run()
    assert_clean(at)
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    for kind in ("info", "success", "warning", "error"):
        parts += [e.value for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


def go(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert_clean(at)
    return at


@pytest.fixture()
def empty_dir(tmp_path):
    return tmp_path / "empty-data"


@pytest.fixture()
def unembedded_dir(tmp_path):
    """A data folder with one collection of one PDF, TF-IDF only (fast to build)."""
    from rag_core.library import Library

    root = tmp_path / "data"
    report = Library(root).add_pdfs("scratch", [small_pdfs()[1]], compute_embeddings=False)
    assert report.files[0].ok
    return root


# ------------------------------------------------------------------ every page renders


def test_every_page_renders_with_no_collection(empty_dir, monkeypatch):
    at = start(empty_dir, monkeypatch)
    for page in PAGES:
        go(at, page)
        assert not at.error, [e.value for e in at.error]
        assert at.title, f"{page} has no title"
    go(at, "pages/compare.py")
    assert "no collection yet" in texts(at).lower()
    go(at, "pages/verify.py")
    assert "no collection yet" in texts(at).lower()


def test_every_page_renders_with_a_collection(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch)
    for page in PAGES:
        go(at, page)
        assert not at.error, [e.value for e in at.error]


def test_each_page_file_runs_on_its_own(built_data_dir, monkeypatch):
    monkeypatch.setenv("RAG_CORE_DATA_DIR", str(built_data_dir))
    for page in PAGES:
        at = AppTest.from_file(str(REPO / page), default_timeout=TIMEOUT).run()
        assert_clean(at)
        assert not at.error, (page, [e.value for e in at.error])


# ------------------------------------------------------------------ collections


def test_create_collection_through_the_form(empty_dir, monkeypatch):
    from rag_core.library import Library

    at = start(empty_dir, monkeypatch, "pages/collections.py")
    at.text_input(key="new_collection_name").input("my papers")
    at.button(key="FormSubmitter:create_collection-Create collection").click().run()
    assert_clean(at)
    assert Library(empty_dir).names() == ["my papers"]
    assert "Created collection “my papers”" in texts(at)
    assert at.get("file_uploader"), "the upload box is shown for the new collection"
    # a bad name is refused with a message, not a traceback
    at.text_input(key="new_collection_name").input("../escape")
    at.button(key="FormSubmitter:create_collection-Create collection").click().run()
    assert_clean(at)
    assert at.error and "not allowed" in at.error[0].value
    assert Library(empty_dir).names() == ["my papers"]


def test_collection_lists_documents_then_remove_rename_delete(unembedded_dir, monkeypatch):
    from rag_core.library import Library

    lib = Library(unembedded_dir)
    at = start(unembedded_dir, monkeypatch, "pages/collections.py")
    docs = next(df.value for df in at.dataframe if "document" in df.value.columns)
    assert list(docs["document"]) == [small_pdfs()[1].name]
    assert int(docs["pages"][0]) == 13 and int(docs["passages"][0]) > 0

    at.button(key="remove_doc").click().run()
    assert_clean(at)
    assert lib.documents("scratch") == []
    assert "Removed" in texts(at)

    at.text_input(key="rename_to").input("renamed")
    at.button(key="FormSubmitter:rename_form-Rename").click().run()
    assert_clean(at)
    assert lib.names() == ["renamed"]

    delete = at.button(key="delete_collection")
    assert delete.disabled, "deleting needs the name typed first"
    at.text_input(key="delete_confirm").input("renamed").run()
    at.button(key="delete_collection").click().run()
    assert_clean(at)
    assert lib.names() == []
    assert "Deleted collection" in texts(at)


# ------------------------------------------------------------------ compare


def run_compare(at: AppTest, query: str, **widgets) -> AppTest:
    at.text_input(key="cmp_query").input(query)
    for key, value in widgets.items():
        widget = at.text_input(key=key) if key == "cmp_phrase" else at.selectbox(key=key)
        widget.set_value(value) if key != "cmp_phrase" else widget.input(value)
    at.button(key="FormSubmitter:compare_form-Compare").click().run()
    assert_clean(at)
    return at


def test_compare_shows_three_tables_with_scores_and_cosines(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/compare.py")
    run_compare(at, "masked language model")
    assert not at.error, [e.value for e in at.error]
    tables = {df.key.split("_")[1]: df.value for df in at.dataframe if (df.key or "").startswith("table_")}
    assert set(tables) == {"tfidf", "hybrid", "exact"}
    for kind in ("tfidf", "hybrid"):
        frame = tables[kind]
        for column in ("rank", "source", "page", "score", "score type", "cosine"):
            assert column in frame.columns, (kind, list(frame.columns))
        assert len(frame) == 10
        assert list(frame["rank"]) == list(range(1, 11))
    assert {"dense cosine", "found by"} <= set(tables["hybrid"].columns)
    assert set(tables["tfidf"]["score type"]) == {"cosine"}
    assert tables["hybrid"][""].str.match(r"^[▲▼★=]").all(), "every hybrid row has a marker against TF-IDF"
    assert {"rank", "source", "page", "match"} <= set(tables["exact"].columns)
    assert len(tables["exact"]) >= 1
    assert "Hybrid reranker:" in texts(at)
    # the passage view: whole passage with the query's words marked, and the page image
    passages = [m.value for m in at.markdown if 'class="rc-passage"' in m.value]
    assert passages and '<mark class="rc-term">' in passages[0]
    assert at.get("image"), "the PDF page image is shown"
    # another passage, from the exact list, gets the match itself marked
    picker = at.selectbox(key="cmp_passage")
    exact_option = next(o for o in picker.options if o.startswith("Exact #1"))
    picker.set_value(exact_option).run()
    assert_clean(at)
    passages = [m.value for m in at.markdown if 'class="rc-passage"' in m.value]
    assert '<mark class="rc-hit">' in passages[0]
    assert at.get("download_button"), "results download as CSV"


def test_compare_restricted_to_one_document_and_bad_regex(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/compare.py")
    dpr = small_pdfs()[1].name
    run_compare(at, "dense passage retrieval", cmp_source=dpr, cmp_mode="regex", cmp_phrase="(unclosed")
    tables = {df.key.split("_")[1]: df.value for df in at.dataframe if (df.key or "").startswith("table_")}
    assert set(tables) == {"tfidf", "hybrid"}, "the exact list fails alone, the others stand"
    assert set(tables["tfidf"]["source"]) == {dpr} and set(tables["hybrid"]["source"]) == {dpr}
    assert at.warning, "the regular expression's problem is shown"


def test_compare_empty_question_asks_for_one(built_data_dir, monkeypatch):
    at = start(built_data_dir, monkeypatch, "pages/compare.py")
    run_compare(at, "   ")
    assert at.warning and "Type a question" in at.warning[0].value
    assert not [df for df in at.dataframe if (df.key or "").startswith("table_")]


def test_a_damaged_collection_gives_an_error_message_not_a_traceback(unembedded_dir, monkeypatch):
    (unembedded_dir / "collections" / "scratch" / "CURRENT").write_text("garbage", encoding="utf-8")
    for page in ("pages/compare.py", "pages/verify.py", "pages/collections.py"):
        at = start(unembedded_dir, monkeypatch, page)
        assert at.error and "damaged" in at.error[0].value, page


def test_tfidf_only_collection_still_compares(unembedded_dir, monkeypatch):
    at = start(unembedded_dir, monkeypatch, "pages/compare.py")
    run_compare(at, "passage retrieval")
    assert not at.error, [e.value for e in at.error]
    assert [df for df in at.dataframe if df.key == "table_hybrid_1"]


# ------------------------------------------------------------------ verify


def test_verify_finds_a_real_sentence(built_data_dir, monkeypatch, real_quote):
    at = start(built_data_dir, monkeypatch, "pages/verify.py")
    at.text_area(key="verify_quote").input(real_quote)
    at.button(key="FormSubmitter:verify_form-Check").click().run()
    assert_clean(at)
    assert at.success and "Found word for word" in at.success[0].value
    assert small_pdfs()[0].name in at.success[0].value
    boxes = [m.value for m in at.markdown if 'class="rc-passage"' in m.value]
    assert boxes and '<mark class="rc-hit">' in boxes[0]


def test_verify_not_found_shows_closest_passages(built_data_dir, monkeypatch, real_quote):
    at = start(built_data_dir, monkeypatch, "pages/verify.py")
    at.text_area(key="verify_quote").input(real_quote)
    at.selectbox(key="verify_source").set_value(small_pdfs()[1].name)  # the quote is in the other paper
    at.button(key="FormSubmitter:verify_form-Check").click().run()
    assert_clean(at)
    assert at.warning and "Not found word for word" in at.warning[0].value
    assert "Closest passages by meaning" in texts(at)
    assert len([m for m in at.markdown if 'class="rc-passage"' in m.value]) >= 1


def test_verify_folds_ligatures_and_quotes(built_data_dir, monkeypatch, real_quote):
    at = start(built_data_dir, monkeypatch, "pages/verify.py")
    words = real_quote.split(" ")
    at.text_area(key="verify_quote").input("  ".join(words))  # doubled spaces: only found after folding
    at.button(key="FormSubmitter:verify_form-Check").click().run()
    assert_clean(at)
    assert at.success and "after folding" in at.success[0].value


# ------------------------------------------------------------------ settings


def test_settings_shows_models_data_folder_and_saves_preferences(empty_dir, monkeypatch, tmp_path):
    from rag_core.preferences import load_preferences

    at = start(empty_dir, monkeypatch, "pages/settings.py")
    page = texts(at)
    assert str(empty_dir) in page
    assert "all-MiniLM-L6-v2" in page and "Device" in page
    assert "cross-encoder" in page.lower()

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
    assert "cannot be loaded" in texts(at)

    # new collections take the saved chunking
    at = start(empty_dir, monkeypatch, "pages/collections.py")
    assert "800 characters with 100" in texts(at)


def test_settings_with_a_local_cross_encoder(empty_dir, monkeypatch, tmp_path):
    testing = pytest.importorskip("rag_core.testing")
    folder = testing.make_tiny_cross_encoder(tmp_path / "tiny-ce")
    at = start(empty_dir, monkeypatch, "pages/settings.py")
    at.text_input(key="ce_name").input(str(folder))
    at.button(key="FormSubmitter:cross_encoder_form-Save and check").click().run()
    assert_clean(at)
    assert at.success and any("reorders its pool with the cross-encoder" in s.value for s in at.success)
    at.button(key=f"FormSubmitter:cross_encoder_form-Back to the default "
                  f"({'cross-encoder/ms-marco-MiniLM-L-6-v2'})").click().run()
    assert_clean(at)


# ------------------------------------------------------------------ HTML safety


def test_highlighting_escapes_html():
    from pages._ui import highlight_html

    out = highlight_html('a <script>alert("x")</script> masked model & more', "masked <b>model</b>",
                         spans=[(0, 1)])
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert '<mark class="rc-term">masked</mark>' in out and '<mark class="rc-term">model</mark>' in out
    assert '<mark class="rc-hit">a</mark>' in out
    assert "&amp; more" in out
    assert "<b>" not in out
