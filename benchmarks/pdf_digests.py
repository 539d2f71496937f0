"""Record (or check) the SHA-256 of the cleaned text of every page of the shared PDFs.

``tests/test_pdf_digests.py`` pins the extraction output with the file this writes, so that
speed work on ``rag_core.pdf`` cannot change a single character. Re-record only for a
deliberate change of the output (and say so in the commit):

    python benchmarks/pdf_digests.py --record      # writes tests/data/pdf_page_digests.json
    python benchmarks/pdf_digests.py               # compares and lists the pages that differ
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DIGESTS = REPO / "tests" / "data" / "pdf_page_digests.json"
PDF_DIR = REPO.parent / "shared" / "data" / "pdfs"


def environment() -> dict:
    """What else decides pypdf's output: its version and whether fontTools is there."""
    return {"pypdf": metadata.version("pypdf"), "fonttools": find_spec("fontTools") is not None}


def digests(pdf_dir: Path = PDF_DIR) -> dict:
    from rag_core.pdf import extract_pdf

    files = {}
    for path in sorted(pdf_dir.glob("*.pdf")):
        result = extract_pdf(path)
        files[path.name] = {
            "status": result.status,
            "n_pages": result.n_pages,
            "labels": [page.label for page in result.pages],
            "pages": [hashlib.sha256(page.text.encode("utf-8")).hexdigest() for page in result.pages],
        }
    return {"environment": environment(), "files": files}


def differences(expected: dict, actual: dict) -> list[str]:
    found = []
    for name in sorted(set(expected["files"]) | set(actual["files"])):
        want, got = expected["files"].get(name), actual["files"].get(name)
        if want is None or got is None:
            found.append(f"{name}: {'new file' if want is None else 'missing'}")
            continue
        for key in ("status", "n_pages", "labels"):
            if want[key] != got[key]:
                found.append(f"{name}: {key} {want[key]!r} -> {got[key]!r}")
        pages = [i + 1 for i, (a, b) in enumerate(zip(want["pages"], got["pages"])) if a != b]
        if pages or len(want["pages"]) != len(got["pages"]):
            found.append(f"{name}: cleaned text differs on page(s) {pages}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help=f"write {DIGESTS.relative_to(REPO)}")
    args = parser.parse_args()
    actual = digests()
    if args.record:
        DIGESTS.parent.mkdir(parents=True, exist_ok=True)
        DIGESTS.write_text(json.dumps(actual, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {DIGESTS} ({sum(len(f['pages']) for f in actual['files'].values())} pages)")
        return 0
    found = differences(json.loads(DIGESTS.read_text(encoding="utf-8")), actual)
    print("\n".join(found) or "identical")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
