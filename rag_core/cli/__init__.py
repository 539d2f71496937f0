"""The ``rag-core`` command line: :func:`main` builds the parser, one sub-parser family per module.

``ingest`` (ingest, embed), ``search``, ``check`` (a manuscript's report), ``store`` (list, remove,
rename, check-store, copy, serve-db), ``models``, ``evaluation`` (eval), ``judgments`` and ``meta``
(the documents' bibliographic records) each add their sub-commands; ``common`` holds what they all
use (exit codes, :class:`~rag_core.cli.common.UsageError`, the library a command opens, text made
safe to print). The command modules import nothing heavy at the top, so ``--help`` and ``list``
stay quick.
"""

from __future__ import annotations

import argparse
import sys

from rag_core.cli import check, evaluation, ingest, judgments, meta, models, search, store
from rag_core.cli.common import EXIT_FAILURE, EXIT_USAGE, Parser, UsageError
from rag_core.output.render import terminal_safe
from rag_core.settings import DATA_DIR_ENV

EXIT_BROKEN_PIPE = 141  # as a shell reports a command stopped by SIGPIPE


def _drop_stdout() -> None:
    """Standard output pointed at /dev/null, so that the interpreter's last flush finds no closed pipe."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass

__all__ = ["build_parser", "main"]

# In the order `rag-core --help` lists them.
COMMAND_FAMILIES = (ingest, search, check, store, models, evaluation, judgments, meta)


def build_parser() -> argparse.ArgumentParser:
    """The ``rag-core`` parser: the options every command takes, and each family's sub-commands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=argparse.SUPPRESS,
                        help=f"data folder holding the collections (default: ${DATA_DIR_ENV} or the user data folder)")
    common.add_argument("--store", default=argparse.SUPPRESS, metavar="URL",
                        help="where the collections live: a postgresql:// URL or a data folder "
                             "(default: $RAG_CORE_STORE, else the data folder)")
    parser = Parser(prog="rag-core", description="Ground claims in scientific PDFs: ingest, search, evaluate.",
                    parents=[common])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for family in COMMAND_FAMILIES:
        family.add_parsers(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one ``rag-core`` command; its exit status (0 done, 1 failed, 2 a usage error, 3 ``check --fail-on``,
    141 its output's reader went away, as ``| head`` does)."""
    import logging

    # A database connection lost is reported once, as one line; the pool's own retries stay quiet.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            raise UsageError("a command is needed: ingest, search, check, list, remove, rename, embed, check-store, "
                             "copy, serve-db, models, eval, judgments or meta")
        args.data_dir = getattr(args, "data_dir", None)
        args.store = getattr(args, "store", None)
        if hasattr(args, "top") and args.top <= 0:
            raise UsageError("--top must be at least 1")
        if getattr(args, "pool", None) is not None and args.pool <= 0:
            raise UsageError("--pool must be at least 1")
        if getattr(args, "context", None) is not None and args.context < 0:
            raise UsageError("--context must be 0 or more")
        return args.func(args)
    except UsageError as exc:
        print(f"rag-core: error: {terminal_safe(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("rag-core: interrupted; the collection keeps its previous version.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of the output went away (`rag-core check ... | head -n 1`): no error
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    except (ValueError, RuntimeError, OSError, ImportError) as exc:
        print(f"rag-core: error: {terminal_safe(exc)}", file=sys.stderr)
        return EXIT_FAILURE
