"""The PostgreSQL store's side data: committed generations with checksums, and copies (the rules
are in :mod:`rag_core.collections.store.side_data`).

Tables::

    side_data       the live value of each key (jsonb), as earlier versions wrote and read it
    side_data_log   a row per kept generation of a key: its number, the SHA-256 of the value's
                    canonical bytes, those bytes (the copy), and the SHA-256 of the live row's
                    value as PostgreSQL prints it (``value::text``) with the live row's ``xmin``
                    (a read that finds the row it wrote need not hash it; a row changed, or
                    restored from a dump, is hashed); a deletion is a row without a value, so a
                    deleted key is not taken for a lost one

A write is one transaction (the live row, the generation's row, pruning the oldest copies), so
there is no half-written state. A live row deleted, emptied or replaced by hand no longer matches
its record: reads take the committed copy, ``check`` reports it, and ``check --repair`` writes the
copy back.
"""

from __future__ import annotations

import json
import re
import time

import psycopg

from rag_core.collections.store.base import CheckReport, damaged
from rag_core.collections.store.postgres.codecs import dumps_for_pg, loads_from_pg, opaque_for_pg
from rag_core.collections.store.postgres.rows import CollectionRow
from rag_core.collections.store.side_data import canonical_bytes, prepare_value, sha256_hex, what
from rag_core.settings import PG_SIDE_DATA_OPAQUE_BYTES, SIDE_DATA_GENERATIONS

# The SHA-256 of a live row's value as PostgreSQL prints it (jsonb prints one way for one value).
_LIVE_DIGEST = "encode(sha256(convert_to(s.value::text, 'UTF8')), 'hex')"
_EMPTY = ("{}", "[]", "null", '""')


def _newest(conn: psycopg.Connection, collection_id: int, key: str):
    """``(generation, sha256, live_digest, sha256 of the copy)`` of the key's newest generation, or None."""
    return conn.execute(
        "SELECT generation, sha256, live_digest, encode(sha256(data), 'hex') FROM rag_core.side_data_log "
        "WHERE collection_id = %s AND key = %s ORDER BY generation DESC LIMIT 1", (collection_id, key)).fetchone()


def _newest_generation(conn: psycopg.Connection, collection_id: int, key: str) -> int | None:
    return conn.execute("SELECT max(generation) FROM rag_core.side_data_log WHERE collection_id = %s AND key = %s",
                        (collection_id, key)).fetchone()[0]


def _live(conn: psycopg.Connection, collection_id: int, key: str):
    """``(value, digest, printed value if short)`` of the live row, or None."""
    return conn.execute(
        f"SELECT s.value, {_LIVE_DIGEST}, CASE WHEN length(s.value::text) < 8 THEN s.value::text END "
        "FROM rag_core.side_data s WHERE s.collection_id = %s AND s.key = %s", (collection_id, key)).fetchone()


def read(conn: psycopg.Connection, row: CollectionRow, key: str):
    """The committed value of ``key`` (None when there is none); ``conn`` in one snapshot."""
    newest = conn.execute(
        "SELECT generation, sha256, live_digest, live_xmin FROM rag_core.side_data_log WHERE collection_id = %s "
        "AND key = %s ORDER BY generation DESC LIMIT 1", (row.id, key)).fetchone()
    live = conn.execute("SELECT value, xmin::text FROM rag_core.side_data WHERE collection_id = %s AND key = %s",
                        (row.id, key)).fetchone()
    if newest is None:  # written before records existed: read as it is
        return None if live is None else loads_from_pg(live[0])
    generation, sha, live_digest, live_xmin = newest
    if sha is None:
        return None
    if live is not None and (live[1] == live_xmin or _live(conn, row.id, key)[1] == live_digest):
        return loads_from_pg(live[0])
    data = _copy(conn, row.id, key, generation)
    if data is not None and sha256_hex(data) == sha:
        return json.loads(data)
    raise damaged(row.name, f"{what(key)} (side data {key!r}) is missing or altered, and so is its committed "
                            f"copy (generation {generation})")


def _copy(conn: psycopg.Connection, collection_id: int, key: str, generation: int) -> bytes | None:
    found = conn.execute("SELECT data FROM rag_core.side_data_log WHERE collection_id = %s AND key = %s "
                         "AND generation = %s", (collection_id, key, generation)).fetchone()
    return None if found is None or found[0] is None else bytes(found[0])


def token(conn: psycopg.Connection, row: CollectionRow, key: str) -> str:
    newest = _newest_generation(conn, row.id, key)
    if newest is not None:
        return f"g{newest}"
    live = conn.execute("SELECT xmin::text FROM rag_core.side_data WHERE collection_id = %s AND key = %s",
                        (row.id, key)).fetchone()
    return "absent" if live is None else f"unrecorded:{live[0]}"


def keys(conn: psycopg.Connection, row: CollectionRow) -> list[str]:
    """Keys with a value: live rows not deleted by their newest record, and recorded values whose
    live row was lost (their copy is read)."""
    found = conn.execute(
        "SELECT k.key FROM (SELECT key FROM rag_core.side_data WHERE collection_id = %(c)s UNION "
        "SELECT key FROM rag_core.side_data_log WHERE collection_id = %(c)s) k "
        "WHERE coalesce((SELECT l.sha256 IS NOT NULL FROM rag_core.side_data_log l WHERE l.collection_id = %(c)s "
        "AND l.key = k.key ORDER BY l.generation DESC LIMIT 1), true)", {"c": row.id}).fetchall()
    return sorted(k for (k,) in found)


def write(conn: psycopg.Connection, row: CollectionRow, key: str, value) -> None:
    """One transaction: the live row and a new generation (the caller holds the writer lock)."""
    with conn.transaction():
        _adopt(conn, row)
        newest = _newest_generation(conn, row.id, key)
        generation = (newest or 0) + 1
        if value is None:
            conn.execute("DELETE FROM rag_core.side_data WHERE collection_id = %s AND key = %s", (row.id, key))
            conn.execute("DELETE FROM rag_core.side_data_log WHERE collection_id = %s AND key = %s", (row.id, key))
            if newest is not None:
                conn.execute("INSERT INTO rag_core.side_data_log (collection_id, key, generation, created) "
                             "VALUES (%s, %s, %s, %s)", (row.id, key, generation, time.time()))
            return
        prepared = prepare_value(value)
        _commit(conn, row.id, key, generation, prepared.value, prepared.data, strict=prepared.strict)


# Escapes jsonb refuses (NUL) or may (a surrogate half): a value holding one is stored escaped.
_JSONB_UNSAFE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _commit(conn: psycopg.Connection, collection_id: int, key: str, generation: int, value, data: bytes, *,
            strict: bool = False) -> None:
    now = time.time()
    if len(data) > PG_SIDE_DATA_OPAQUE_BYTES:  # a large value: one string for jsonb to parse, not millions of items
        text = opaque_for_pg(data.decode("ascii"))
    elif strict and not _JSONB_UNSAFE.search(data):  # the canonical bytes serve as jsonb text as they are
        text = data.decode("ascii")
    else:
        text = dumps_for_pg(value)
    conn.execute(
        "INSERT INTO rag_core.side_data (collection_id, key, value, updated) VALUES (%s, %s, %s::jsonb, %s) "
        "ON CONFLICT (collection_id, key) DO UPDATE SET value = EXCLUDED.value, updated = EXCLUDED.updated",
        (collection_id, key, text, now))
    conn.execute(
        "INSERT INTO rag_core.side_data_log (collection_id, key, generation, sha256, data, live_digest, live_xmin, "
        f"created) SELECT %s, %s, %s, %s, %s, {_LIVE_DIGEST}, s.xmin::text, %s FROM rag_core.side_data s "
        "WHERE s.collection_id = %s AND s.key = %s",
        (collection_id, key, generation, sha256_hex(data), data, now, collection_id, key))
    conn.execute("DELETE FROM rag_core.side_data_log WHERE collection_id = %s AND key = %s AND generation <= %s",
                 (collection_id, key, generation - SIDE_DATA_GENERATIONS))


def _adopt(conn: psycopg.Connection, row: CollectionRow) -> int:
    """Record every live value written before records existed (generation 1, with a copy)."""
    unrecorded = conn.execute(
        "SELECT s.key, s.value FROM rag_core.side_data s WHERE s.collection_id = %(c)s AND NOT EXISTS "
        "(SELECT 1 FROM rag_core.side_data_log l WHERE l.collection_id = %(c)s AND l.key = s.key)",
        {"c": row.id}).fetchall()
    for key, value in unrecorded:
        value = loads_from_pg(value)
        _commit(conn, row.id, key, 1, value, canonical_bytes(value))
    return len(unrecorded)


def check(conn: psycopg.Connection, row: CollectionRow, report: CheckReport, *, repair: bool) -> None:
    """Add what is wrong with the side data to ``report`` (and, with ``repair``, what was restored)."""
    all_keys = [k for (k,) in conn.execute(
        "SELECT key FROM rag_core.side_data WHERE collection_id = %(c)s UNION "
        "SELECT key FROM rag_core.side_data_log WHERE collection_id = %(c)s ORDER BY 1", {"c": row.id})]
    adopted = 0
    for key in all_keys:
        with conn.transaction():
            newest = _newest(conn, row.id, key)
            live = _live(conn, row.id, key)
            if newest is None:
                if repair:
                    value = loads_from_pg(live[0])
                    _commit(conn, row.id, key, 1, value, canonical_bytes(value))
                    adopted += 1
                continue
            _check_key(conn, row, key, newest, live, report, repair=repair)
    if adopted:
        report.repaired.append(f"recorded the checksums of {adopted} side-data value(s) written by an earlier "
                               "version")


def _check_key(conn: psycopg.Connection, row: CollectionRow, key: str, newest, live, report: CheckReport, *,
               repair: bool) -> None:
    generation, sha, live_digest, copy_digest = newest
    name = f"{what(key)} (side data {key!r})"
    for gen, in conn.execute(  # earlier generations' copies: a repair falls back on them
            "SELECT generation FROM rag_core.side_data_log WHERE collection_id = %s AND key = %s AND generation < %s "
            "AND data IS NOT NULL AND encode(sha256(data), 'hex') IS DISTINCT FROM sha256", (row.id, key, generation)
    ).fetchall():
        report.problems.append(f"the copy of generation {gen} of {what(key)} is damaged")
        if repair:
            conn.execute("DELETE FROM rag_core.side_data_log WHERE collection_id = %s AND key = %s AND generation = %s",
                         (row.id, key, gen))
            report.repaired.append(f"removed the damaged copy of generation {gen} of {what(key)}")
    if sha is None:
        if live is not None:
            report.problems.append(f"{name} was deleted, but its row is there again")
            if repair:
                value = loads_from_pg(live[0])
                _commit(conn, row.id, key, generation + 1, value, canonical_bytes(value))
                report.repaired.append(f"recorded {name} as it is now (its checksum was not recorded)")
        return
    live_ok = live is not None and live[1] == live_digest
    copy_ok = copy_digest == sha
    if live_ok and copy_ok:
        return
    if live_ok:
        report.problems.append(f"the committed copy of {name}, generation {generation}, is missing or damaged")
        if repair:
            value = loads_from_pg(live[0])
            _commit(conn, row.id, key, generation + 1, value, canonical_bytes(value))
            report.repaired.append(f"wrote the copy of {name} again")
        return
    state = "missing (its row was deleted)" if live is None else (
        "emptied" if live[2] in _EMPTY else f"altered (its checksum differs from generation {generation}'s)")
    report.problems.append(f"{name} is {state}")
    if not repair:
        return
    candidates = conn.execute(
        "SELECT generation, sha256, data FROM rag_core.side_data_log WHERE collection_id = %s AND key = %s "
        "AND data IS NOT NULL ORDER BY generation DESC", (row.id, key)).fetchall()
    for gen, gen_sha, data in candidates:
        data = bytes(data)
        if sha256_hex(data) != gen_sha:
            continue
        conn.execute("DELETE FROM rag_core.side_data_log WHERE collection_id = %s AND key = %s AND data IS NOT NULL "
                     "AND encode(sha256(data), 'hex') IS DISTINCT FROM sha256", (row.id, key))  # damaged copies
        _commit(conn, row.id, key, generation + 1, json.loads(data), data)
        report.repaired.append(f"restored {name} from its committed copy (generation {gen})" if gen == generation
                               else f"restored {name} from generation {gen}, the newest intact copy (the copy of "
                                    f"generation {generation} is damaged too)")
        return
    report.problems.append(f"no intact copy of {what(key)} is left to restore it from")
