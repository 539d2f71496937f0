"""Line-end hyphens on the shared PDFs (not a test): how many are joined, and how many rightly.

    python benchmarks/line_hyphens.py [--pdf-dir ../shared/data/pdfs]

Every page's text layer is cleaned with its line-end hyphens left in place
(``clean_extracted_text(..., line_hyphens="keep")``); each break before a lowercase letter (not in
an already hyphenated compound) is then decided twice: before issue 28 every one was joined; now
:mod:`rag_core.text.hyphens` keeps the hyphen where the document's own words say it is the word's.
Printed: the breaks, how many each way joins, and both ways' agreement with the 150 breaks labelled
by hand in ``benchmarks/data/line_hyphen_labels.json`` (a real hyphen kept, a broken word joined).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.pdf.extraction import _quiet_pypdf, clean_extracted_text  # noqa: E402
from rag_core.text.hyphens import BREAK_RE, Vocabulary, _keeps_hyphen  # noqa: E402

LABELS = ROOT / "benchmarks" / "data" / "line_hyphen_labels.json"


def breaks(pdf_dir: Path) -> list[dict]:
    """Every line-end break a lowercase letter follows, with the new rule's decision, in order."""
    import re

    from pypdf import PdfReader

    out = []
    for path in sorted(pdf_dir.glob("*.pdf")):
        with _quiet_pypdf():
            reader = PdfReader(str(path), strict=False)
            texts = []
            for page in reader.pages:
                try:
                    texts.append(clean_extracted_text(page.extract_text() or "", line_hyphens="keep"))
                except Exception:  # noqa: BLE001 - a page that cannot be read has no breaks
                    texts.append("")
        vocabulary = Vocabulary(texts)
        for number, text in enumerate(texts, start=1):
            for match in BREAK_RE.finditer(text):
                prefix, letter, tail, _ = match.groups()
                if not tail[0].islower() or "-" in prefix or "\u2010" in prefix:
                    continue  # left as it was before and now
                left = re.search(r"[^\W\d_]+$", prefix + letter).group()
                right = re.match(r"[^\W\d_]+", tail).group()
                out.append({"file": path.name, "page": number, "word": f"{left}-{right}",
                            "keep": _keeps_hyphen(left, right, vocabulary)})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf-dir", default=str(ROOT.parent / "shared" / "data" / "pdfs"))
    args = parser.parse_args(argv)
    found = breaks(Path(args.pdf_dir))
    kept = sum(b["keep"] for b in found)
    print(f"{len(found)} line-end breaks before a lowercase letter in {len({b['file'] for b in found})} PDFs")
    print(f"  before: {len(found)} joined, 0 kept; now: {len(found) - kept} joined, {kept} kept")
    decided = {(b["file"], b["page"], b["word"]): b["keep"] for b in found}
    labels = json.loads(LABELS.read_text(encoding="utf-8"))["breaks"]
    right_before = right_now = 0
    wrong = []
    for label in labels:
        now = decided[(label["file"], label["page"], label["word"])]
        right_before += not label["hyphen"]
        right_now += now == label["hyphen"]
        if now != label["hyphen"]:
            wrong.append(f"{label['word']} ({'should keep' if label['hyphen'] else 'should join'})")
    real = sum(label["hyphen"] for label in labels)
    print(f"hand-labelled sample: {len(labels)} breaks, {real} real hyphens")
    print(f"  right before: {right_before}/{len(labels)} ({right_before / len(labels):.1%}); "
          f"right now: {right_now}/{len(labels)} ({right_now / len(labels):.1%})")
    print("  wrong now: " + (", ".join(wrong) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
