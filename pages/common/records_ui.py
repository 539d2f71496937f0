"""The Collections page's bibliographic records: edit title, authors, year and DOI in place, see
where each field came from, import a .bib / CSL-JSON / RIS file, export the records.

Every computation is in :mod:`rag_core.collections.metadata` (the rows, what changed, the import);
this module only lays the widgets out. The table's cells are plain text (never markdown).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.common.layout import note, text_line
from rag_core.collections.metadata import changed_fields, record_rows
from rag_core.errors import RagCoreError

IMPORT_REPORT_KEY = "records_import_report"
SAVED_KEY = "records_saved"  # the confirmation of the last save, shown under the Save button


def saved_text(changes: dict[str, dict]) -> str:
    """ "the record of X (year, DOI); of Y (title)": what a save kept."""
    parts = [f"{source} ({', '.join('DOI' if k == 'doi' else k for k in fields)})"
             for source, fields in changes.items()]
    return (f"the corrected record{'s' if len(parts) > 1 else ''} of " + "; ".join(parts) +
            ". It is kept with the collection and survives re-adding the same file.")


def records_section(lib, name: str) -> None:
    docs = lib.documents(name)
    if not docs:
        return
    st.subheader("Bibliographic records", anchor=False)
    st.caption("Title, authors, year and DOI of each document, as read from the PDF, imported from a reference "
               "manager, or corrected here. A citation check matches citations to documents by these records "
               "(first author and year, DOI, arXiv id). Edit a cell and save: the change is kept with the "
               "collection and survives re-adding the same file. Authors are separated by semicolons.")
    rows = record_rows(docs)
    edited = st.data_editor(
        pd.DataFrame(rows), hide_index=True, width="stretch", key=f"records_editor_{name}", num_rows="fixed",
        disabled=["document", "from"],
        column_config={
            "document": st.column_config.TextColumn("document", width="medium"),
            "title": st.column_config.TextColumn("title", width="large"),
            "authors": st.column_config.TextColumn("authors", width="large", help="Separated by semicolons"),
            "year": st.column_config.TextColumn("year", width="small"),
            "doi": st.column_config.TextColumn("DOI", width="medium"),
            "from": st.column_config.TextColumn("where each field came from", width="medium",
                                                help="PDF, arXiv id, import or edited"),
        })
    changes = changed_fields(rows, edited.to_dict("records"))
    if changes:
        st.session_state.pop(SAVED_KEY, None)  # a new edit: the last confirmation is stale
    if st.button(f"Save {len(changes)} corrected record{'s' if len(changes) != 1 else ''}" if changes
                 else "Save corrections", key="save_records", type="primary", disabled=not changes,
                 icon=":material/save:"):
        try:
            for source, fields in changes.items():
                lib.set_record(name, source, **fields)
        except (RagCoreError, ValueError) as exc:
            note("error", str(exc), lead="Not saved:")
        else:
            st.session_state[SAVED_KEY] = {"name": name, "text": saved_text(changes)}
            st.session_state.pop(f"records_editor_{name}", None)
            st.rerun()
    saved = st.session_state.get(SAVED_KEY)
    if saved and saved.get("name") == name:  # said where the button is, not at the top of the page
        with st.container(key="records_saved"):
            note("success", saved["text"], lead="Saved:")
    import_section(lib, name)
    left, right = st.columns(2)
    left.download_button("Export as BibTeX (.bib)", lib.export_records(name, "refs.bib"), file_name=f"{name}.bib",
                         mime="application/x-bibtex", key="export_bib", icon=":material/download:")
    right.download_button("Export as CSL-JSON (.json)", lib.export_records(name, "refs.json"),
                          file_name=f"{name}.json", mime="application/json", key="export_csl",
                          icon=":material/download:")


def import_section(lib, name: str) -> None:
    upload = st.file_uploader("Import records from a reference manager (.bib, CSL-JSON .json, .ris)",
                              type=["bib", "json", "ris"], key="records_upload",
                              help="Zotero, Mendeley, Better BibTeX, EndNote exports. Each record is matched to a "
                                   "document by DOI, then arXiv id, then title. A Zotero data folder is imported "
                                   "with `rag-core meta import`.")
    if st.button("Import records", key="import_records", disabled=upload is None, icon=":material/upload_file:"):
        try:
            report = lib.import_records(name, (upload.name, upload.getvalue()))
        except (RagCoreError, ValueError) as exc:
            note("error", str(exc), lead="Not imported:")
            return
        st.session_state[IMPORT_REPORT_KEY] = {
            "name": name, "source": report.source, "kind": report.kind, "records": report.records,
            "matched": report.matched, "unmatched_records": report.unmatched_records,
            "unmatched_documents": report.unmatched_documents, "ambiguous": report.ambiguous, "notes": report.notes}
        st.session_state.pop(f"records_editor_{name}", None)
        st.rerun()
    report = st.session_state.get(IMPORT_REPORT_KEY)
    if report and report["name"] == name:
        note("success", f"{report['records']} {report['kind']} record(s) from {report['source']}: "
                        f"{len(report['matched'])} matched a document.", lead="Imported:")
        for text in report["notes"]:
            note("info", text)
        if report["matched"]:
            st.dataframe(pd.DataFrame([{"document": s, "record": label, "matched by": how}
                                       for s, label, how in report["matched"]]),
                         hide_index=True, width="stretch", key="import_matched")
        for label, fits in report["ambiguous"]:
            text_line("Fits several documents (nothing changed):", label, ", ".join(fits), bold_first=True)
        if report["unmatched_records"]:
            text_line(f"{len(report['unmatched_records'])} record(s) match no document:",
                      "; ".join(report["unmatched_records"][:20]), bold_first=True, sep=" ")
        if report["unmatched_documents"]:
            text_line(f"{len(report['unmatched_documents'])} document(s) match no record:",
                      "; ".join(report["unmatched_documents"][:20]), bold_first=True, sep=" ")
