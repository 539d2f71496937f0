"""``rag-core check COLLECTION MANUSCRIPT``: a manuscript's quotes and cited claims checked from a terminal.

A table for a person (verdict, document and page, changed words, the meaning and its cues)
or, with ``--json``, one object per statement; document and manuscript text is printed
without control characters. The exit status is 0 whatever the verdicts, unless ``--fail-on``
names outcomes (:data:`CHECK_OUTCOMES`): then :data:`EXIT_FLAGGED` when any statement has one,
for use before submission (``--fail-on changed,not_found``).
"""

from __future__ import annotations

import sys
import textwrap

from rag_core.cli.common import EXIT_OK, UsageError, json_text, open_library, warm_query_encoder

__all__ = ["CHECK_OUTCOMES", "EXIT_FLAGGED", "add_parsers", "cmd_check"]

EXIT_FLAGGED = 3  # --fail-on: a statement has one of the outcomes named
CHECK_OUTCOMES = ("changed", "unclear", "verbatim", "near_verbatim", "related", "not_found", "misattributed",
                  "not_in_collection", "not_checked")


def cmd_check(args) -> int:
    """Check a manuscript's quotes and cited claims against a collection: exit 0 whatever the
    verdicts, or EXIT_FLAGGED (3) when ``--fail-on`` names an outcome some statement has."""
    _refuse_special_file(args.file)  # before the seconds of imports below: a FIFO is refused at once
    from rag_core.citations.drafts import read_stream
    from rag_core.citations.manuscript import (
        ManuscriptError,
        check_statements,
        manuscript_from_text,
        printable,
        read_manuscript,
    )
    from rag_core.citations.report import OUTCOMES, cues_text, outcome

    fail_on = _fail_on(args.fail_on)

    try:  # only a regular file is opened, standard input is read up to the cap, parsing is linear
        bib = getattr(args, "bib", None)
        if args.file == "-":
            manuscript = manuscript_from_text(read_stream(sys.stdin), name="standard input")
            if bib:
                from rag_core.citations.manuscript import add_bib_references

                add_bib_references(manuscript, bib)
        else:
            manuscript = read_manuscript(args.file, bib=bib)
        statements = manuscript.statements()
    except ManuscriptError as exc:
        raise UsageError(printable(str(exc))) from None
    for note in manuscript.notes:
        print(f"note: {printable(note)}", file=sys.stderr)
    library = open_library(args)
    warm_query_encoder(library, args.collection)
    index = library.load_index(args.collection)
    if index is None:
        raise RuntimeError(f"Collection {args.collection!r} has no documents yet; add PDFs with `rag-core ingest`.")
    show = not args.json and sys.stderr.isatty()
    bar = None
    if show and statements:
        from tqdm import tqdm

        bar = tqdm(total=len(statements), desc="checking", unit="statement", file=sys.stderr, leave=False)
    seconds = _time_budget(args, len(statements))
    try:
        rows = check_statements(statements, index, documents=library.documents(args.collection), top=args.top,
                                back_matter=args.include_back_matter,
                                progress=(lambda done, total, text: bar.update(done - bar.n)) if bar else None,
                                seconds=seconds)
    finally:
        if bar is not None:
            bar.close()
    flagged = [n for n, row in enumerate(rows, start=1) if _has_outcome(row, fail_on)]
    code = EXIT_FLAGGED if flagged else EXIT_OK
    if args.json:
        print(json_text([row.to_dict() for row in rows], one_line=True))
        return code
    if not rows:
        print(f"No checkable statements in {printable(manuscript.name)}: no quoted passages and no sentences with a "
              "citation marker ([12], (Author et al., 2019), Author et al. (2019), \\cite{...}).")
        return EXIT_OK
    for n, row in enumerate(rows, start=1):
        where = printable(row.source or "-")
        if row.page is not None:
            where += f", p. {row.page}"
            if row.page_label and str(row.page_label) != str(row.page):
                where += f" (printed {printable(row.page_label)})"
        similarity = "" if row.similarity is None else f"{row.similarity:.2f}"
        if row.not_in_collection:  # what was found elsewhere is not the cited work's: no score shown for it
            where, similarity = (f"(for reference: {where})" if row.source else ""), ""
        print(f"#{n:<3} {outcome(row):13s} {similarity:>5s}  {where}")
        statement = printable(row.statement)
        print(textwrap.indent(textwrap.fill(statement[:300] + ("…" if len(statement) > 300 else ""), 96), "     "))
        if row.not_checked:
            print(f"     ! {printable(row.message)}")
        if row.diff:
            print(f"     changed: {printable(row.diff)}")
        for resolution in row.resolutions:
            print(f"     cited {printable(resolution['text'])}")
        if row.not_in_collection:
            print("     ! the cited work is not in the collection: nothing to check the statement against "
                  "(add its PDF); the closest passage elsewhere is for reference only")
        if row.misattributed:
            print("     ! found, but in a different document than the one cited")
        if row.meaning == "changed":
            print(f"     ! meaning changed: {printable(cues_text(row.meaning_cues))}")
        elif row.meaning_cues:
            print(f"     meaning {row.meaning}: {printable(cues_text(row.meaning_cues))}")
        elif row.verdict == "related":
            print(f"     meaning {row.meaning}: close in meaning, not confirmed: read the passage")
        if row.stance_model != "rules" and row.evidence_sentences:
            first = row.evidence_sentences[0]
            words = {"supports": "supports", "contradicts": "contradicts", "nei": "does not say"}[row.stance]
            page = f", p. {first['page']}" if first.get("page") is not None else ""
            sentence = printable(" ".join(str(first.get("sentence") or "").split()))[:240]
            print(f"     evidence {words} ({row.stance_score:.2f}): {printable(first.get('source') or '-')}{page}: "
                  f"{sentence}")
    counts = {v: sum(outcome(r) == v for r in rows) for v in OUTCOMES}
    print("\n" + ", ".join(f"{n} {v.replace('_in_', ' in ')}" for v, n in counts.items()
                           if n or v != "not_checked") +
          f"; {sum(r.misattributed for r in rows)} misattributed ({len(rows)} statements).")
    statuses = [r["status"] for row in rows for r in row.resolutions]
    if statuses:
        print("Citations: " + ", ".join(f"{statuses.count(s)} {s.replace('_', ' ')}"
                                        for s in ("matched", "ambiguous", "not_in_collection", "unresolved")) + ".")
    changed = sum(r.meaning == "changed" for r in rows)
    print(f"Meaning changed (the source says otherwise): {changed} statement{'s' if changed != 1 else ''}.")
    if flagged:
        print(f"--fail-on {','.join(fail_on)}: statement{'s' if len(flagged) != 1 else ''} "
              f"{', '.join(f'#{n}' for n in flagged)}.")
    return code


def _time_budget(args, statements: int) -> float:
    """``--time-budget SECONDS``, else the app's: CHECK_SECONDS_BASE plus CHECK_SECONDS_PER_STATEMENT a statement."""
    from rag_core.settings import CHECK_SECONDS_BASE, CHECK_SECONDS_PER_STATEMENT

    given = getattr(args, "time_budget", None)
    return float(given) if given is not None else CHECK_SECONDS_BASE + CHECK_SECONDS_PER_STATEMENT * statements


def _positive_seconds(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 10**7):
        raise argparse.ArgumentTypeError(f"give a number of seconds above 0, not {text[:40]!r}")
    return value


def _refuse_special_file(name: str) -> None:
    """A FIFO, a device or a folder given as the manuscript: the usage error read_manuscript would
    give, said before the citation modules are imported (they take a second or more to load)."""
    import os
    from pathlib import Path

    from rag_core.errors import InputFileError
    from rag_core.output.render import terminal_safe
    from rag_core.safe_files import regular_file_size

    if name == "-" or not os.path.lexists(name):
        return  # standard input, or a missing file: read_manuscript says so
    try:
        regular_file_size(name, label=Path(name).name)
    except InputFileError as exc:
        raise UsageError(terminal_safe(f"{exc} Give a manuscript file (.txt, .md, .tex, .pdf or .docx).",
                                       one_line=True)) from None


def _fail_on(text: str | None) -> list[str]:
    """``--fail-on changed,not_found``: the outcomes that make ``rag-core check`` exit 3."""
    if not text:
        return []
    outcomes = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [o for o in outcomes if o not in CHECK_OUTCOMES]
    if unknown or not outcomes:
        raise UsageError(f"--fail-on takes a comma-separated list of {', '.join(CHECK_OUTCOMES)}"
                         + (f"; not {', '.join(unknown)}" if unknown else ""))
    return outcomes


def _has_outcome(row, outcomes: list[str]) -> bool:
    return any(row.meaning == o if o in ("changed", "unclear") else
               row.misattributed if o == "misattributed" else
               row.not_in_collection if o == "not_in_collection" else
               row.not_checked if o == "not_checked" else
               row.verdict == o and not row.not_in_collection and not row.not_checked for o in outcomes)


def add_parsers(sub, common) -> None:
    """The sub-command ``check``."""
    from rag_core.settings import CHECK_SECONDS_BASE, CHECK_SECONDS_PER_STATEMENT

    p = sub.add_parser("check", parents=[common],
                       help="check the quotes and cited claims of a manuscript against a collection")
    p.add_argument("collection")
    p.add_argument("file", help="the manuscript: .txt, .md, .tex, .pdf or .docx (- reads text from standard input)")
    p.add_argument("--top", type=int, default=3, help="close passages kept per statement not found word for word")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per statement")
    p.add_argument("--include-back-matter", action="store_true",
                   help="look in reference lists, acknowledgements and other back matter too (left out by default)")
    p.add_argument("--fail-on", metavar="OUTCOMES",
                   help="exit 3 when any statement has one of these outcomes (comma-separated: "
                        "changed, unclear (the meaning), verbatim, near_verbatim, related, not_found, "
                        "misattributed, not_in_collection, not_checked), e.g. --fail-on changed,not_found "
                        "before submission")
    p.add_argument("--time-budget", metavar="SECONDS", type=_positive_seconds,
                   help="stop checking after this long; the statements not reached are reported not_checked "
                        f"(default: {CHECK_SECONDS_BASE:.0f} s plus {CHECK_SECONDS_PER_STATEMENT:.0f} s a statement)")
    p.add_argument("--bib", metavar="FILE",
                   help="a .bib (or CSL-JSON .json, .ris) whose keys resolve \\cite{key} and pandoc's [@key] "
                        "(default for a .tex: the .bib its \\bibliography{} names beside it)")
    p.set_defaults(func=cmd_check)
