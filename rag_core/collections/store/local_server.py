"""A local PostgreSQL 16 with pgvector for trying the shared store (``rag-core serve-db``).

It runs from the ``pgserver`` package (no system install), listens only on a Unix socket
of this machine, and trusts local connections: it is for one machine, several app
instances and command lines; a lab's shared library belongs on a PostgreSQL server that
people run, back up and replicate (see the README).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from urllib.parse import quote


def start_local_server(folder: str | os.PathLike, *, stop_on_exit: bool = True):
    """Start (or find running) the server whose data lives in ``folder``; returns ``(server, url)``.

    The pgvector extension is created in its ``postgres`` database, so the URL works at once
    as ``RAG_CORE_STORE``.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs' note about XDG_RUNTIME_DIR
        try:
            import pgserver
        except ImportError as exc:
            raise ImportError(f"`serve-db` needs the pgserver package: pip install 'rag_core[postgres]' ({exc})") \
                from None
    import psycopg

    folder = Path(folder).expanduser().resolve()
    folder.parent.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(folder, cleanup_mode="stop" if stop_on_exit else None)
    info = server.get_postmaster_info()
    if info.socket_dir is not None:
        url = f"postgresql://postgres@/postgres?host={quote(str(info.socket_dir), safe='/')}"
    else:  # pragma: no cover - Windows: pgserver listens on a local TCP port
        url = f"postgresql://postgres@{info.hostname}:{info.port}/postgres"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return server, url
