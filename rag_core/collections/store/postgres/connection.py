"""Reaching the PostgreSQL store: its URL, masked wherever it is shown, and one connection
pool per database and process."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from rag_core.collections.store.postgres.schema import setup_schema
from rag_core.errors import StoreConnectionError
from rag_core.settings import PG_CONNECT_TIMEOUT_S, PG_POOL_MAX

# --------------------------------------------------------------------------- connection strings


def is_postgres_url(location: object) -> bool:
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def mask_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://***"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            user, password = userinfo.split(":", 1)
            userinfo = f"{user}:***" if password else user
        netloc = f"{userinfo}@{host}"
    query = re.sub(r"(?i)(^|&)(password)=[^&]*", r"\1\2=***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _passwords(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = []
    if parts.password:
        found += [parts.password, unquote(parts.password)]
    for match in re.finditer(r"(?i)(?:^|&)password=([^&]*)", parts.query):
        found += [match.group(1), unquote(match.group(1))]
    return [p for p in found if p]


def redact(text: str, url: str) -> str:
    """``text`` (an error message, say) with every password of ``url`` and the URL itself masked."""
    text = str(text).replace(url, mask_url(url))
    for password in sorted(set(_passwords(url)), key=len, reverse=True):
        text = text.replace(password, "***")
    return text


# --------------------------------------------------------------------------- one pool per database and process


class Engine:
    """The connection pool of one database, shared by every store object of the process."""

    def __init__(self, url: str):
        self.url = url
        self.masked = mask_url(url)
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
        self.local = threading.local()  # writer locks this thread holds: {collection id: [conn, depth]}
        self.vector_oid: int | None = None
        # embedder slots this process holds: collection id -> the backend pid of the session
        # holding it (the progress record names it, so a status can tell a live run from a dead one)
        self.slots: dict[int, int] = {}

    def fail(self, exc: BaseException) -> StoreConnectionError:
        """The error to raise for a driver or pool error, without the password."""
        detail = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, self.url)
        return StoreConnectionError(f"Cannot use the PostgreSQL store at {self.masked}: {detail}")

    def _setup(self) -> None:
        """Create the schema, tables and the vector extension (once; idempotent)."""
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=PG_CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise self.fail(exc) from None
        try:
            setup_schema(conn, where=self.masked, redact=lambda text: redact(text, self.url))
            row = conn.execute("SELECT oid FROM pg_type WHERE typname = 'vector'").fetchone()
            self.vector_oid = int(row[0])
        except psycopg.Error as exc:
            raise self.fail(exc) from None
        finally:
            conn.close()

    @property
    def pool(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                self._setup()
                pool = ConnectionPool(self.url, min_size=1, max_size=PG_POOL_MAX, open=False,
                                      timeout=PG_CONNECT_TIMEOUT_S,
                                      kwargs={"autocommit": True, "connect_timeout": PG_CONNECT_TIMEOUT_S},
                                      name="rag_core")
                pool.open(wait=False)
                self._pool = pool
            return self._pool

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as exc:
            raise self.fail(exc) from None

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def held(self) -> dict:
        """The writer locks this thread holds: {collection id: [connection, depth]}."""
        if not hasattr(self.local, "writers"):
            self.local.writers = {}
        return self.local.writers


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def engine(url: str) -> Engine:
    """The process's one engine for ``url``."""
    with _engines_lock:
        found = _engines.get(url)
        if found is None:
            found = _engines[url] = Engine(url)
        return found


def close_all() -> None:
    """Close every pool of this process (tests; a long-lived process never needs it)."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for found in engines:
        found.close()
