"""Fixtures for issue 18 (kept in rag_core.testing, which the benchmarks may import too)."""

from rag_core.testing import ZOTERO_SCHEMA, make_field_code_docx, make_zotero_folder, zotero_field_code

__all__ = ["ZOTERO_SCHEMA", "make_field_code_docx", "make_zotero_folder", "zotero_field_code"]
