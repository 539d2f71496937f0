"""Record (or check) the SHA-256 of the cleaned text of every page of the shared PDFs.

``tests/pdf/test_pdf_digests.py`` pins the extraction output with the file this writes, so that
speed work on ``rag_core.pdf.extraction`` cannot change a single character. Re-record only for a
deliberate change of the output (and say so in the commit):

    python benchmarks/pdf_digests.py --record      # writes tests/data/pdf_page_digests.json
    python benchmarks/pdf_digests.py               # compares and lists the pages that differ
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rag_core.testing import digest_differences, page_digests

REPO = Path(__file__).resolve().parents[1]
DIGESTS = REPO / "tests" / "data" / "pdf_page_digests.json"
PDF_DIR = REPO.parent / "shared" / "data" / "pdfs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help=f"write {DIGESTS.relative_to(REPO)}")
    args = parser.parse_args()
    actual = page_digests(PDF_DIR)
    if args.record:
        DIGESTS.parent.mkdir(parents=True, exist_ok=True)
        DIGESTS.write_text(json.dumps(actual, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {DIGESTS} ({sum(len(f['pages']) for f in actual['files'].values())} pages)")
        return 0
    found = digest_differences(json.loads(DIGESTS.read_text(encoding="utf-8")), actual)
    print("\n".join(found) or "identical")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
