"""Snapshots: a query-set run kept with the collection, and the difference between two.

A snapshot holds the settings, every method's top 10 per judged query (as passage ids, so
it stays meaningful after the collection changes) and the per-query metrics. Comparing two
snapshots says which queries gained or lost and which passages moved. Snapshots saved under
earlier method names (``cross_encoder``, ``mmr``) read back under today's.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from rag_core.evaluation.methods import current_name
from rag_core.lab.judgments import JudgmentError
from rag_core.lab.queryset import QuerySetRun
from rag_core.retrieval.search_spec import SearchSpec

PREFIX = "snapshots/"
FORMAT = "rag_core.snapshot"
MAX_LABEL = 200
CHANGE_EPSILON = 1e-9


def _store(store_or_library):
    return getattr(store_or_library, "store", store_or_library)


def _current_names(payload: Mapping) -> dict:
    """``payload`` with every method named as today (snapshots of earlier versions)."""
    out = dict(payload)
    out["methods"] = list(dict.fromkeys(current_name(m) for m in payload.get("methods", [])))
    for key in ("rankings", "per_query", "skipped", "summary"):
        if isinstance(payload.get(key), Mapping):
            out[key] = {current_name(m): value for m, value in payload[key].items()}
    return out


def save_snapshot(store, name: str, run: QuerySetRun, *, label: str = "") -> str:
    """Keep ``run`` as a snapshot of collection ``name``; returns its id."""
    store = _store(store)
    label = " ".join(str(label or "").split())[:MAX_LABEL] or time.strftime("snapshot %Y-%m-%d %H:%M")
    sid = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
    payload = {"format": FORMAT, "id": sid, "label": label, "saved_at": time.time(), **run.to_dict()}
    with store.writing(name):
        store.write_data(name, PREFIX + sid, payload)
    return sid


def list_snapshots(store, name: str) -> list[dict]:
    """Each snapshot's id, label, time, settings and mean nDCG@10 per method, newest first."""
    store = _store(store)
    out = []
    for key in store.list_data(name, PREFIX):
        raw = store.read_data(name, key)
        if not isinstance(raw, Mapping) or raw.get("format") != FORMAT:
            continue
        raw = _current_names(raw)
        out.append({"id": raw.get("id", key[len(PREFIX):]), "label": raw.get("label", ""),
                    "saved_at": raw.get("saved_at", 0.0), "config": raw.get("config", {}),
                    "methods": raw.get("methods", []), "queries": len(raw.get("queries", {})),
                    "summary": raw.get("summary", {})})
    return sorted(out, key=lambda s: -float(s["saved_at"] or 0))


def load_snapshot(store, name: str, sid: str) -> dict:
    store = _store(store)
    if not re.fullmatch(r"[0-9a-z\-]{1,64}", str(sid)):
        raise JudgmentError(f"{sid!r} is not a snapshot id.")
    raw = store.read_data(name, PREFIX + sid)
    if not isinstance(raw, Mapping) or raw.get("format") != FORMAT:
        raise JudgmentError(f"Collection {name!r} has no snapshot {sid!r}.")
    return _current_names(raw)


def delete_snapshot(store, name: str, sid: str) -> None:
    store = _store(store)
    load_snapshot(store, name, sid)
    with store.writing(name):
        store.write_data(name, PREFIX + sid, None)


@dataclass
class SnapshotDiff:
    """What changed from snapshot ``a`` to ``b`` for one method."""

    method: str
    metric: str
    queries: list[dict] = field(default_factory=list)  # query, a, b, change, status (gained/lost/same/...)
    moved: list[dict] = field(default_factory=list)  # query, passage, where, grade, rank_a, rank_b, movement
    settings: dict = field(default_factory=dict)  # setting -> (a, b) for the settings that differ

    @property
    def gained(self) -> list[dict]:
        return [q for q in self.queries if q["status"] == "gained"]

    @property
    def lost(self) -> list[dict]:
        return [q for q in self.queries if q["status"] == "lost"]

    def to_dict(self) -> dict:
        return {"method": self.method, "metric": self.metric, "queries": self.queries, "moved": self.moved,
                "settings": self.settings}


def diff_snapshots(a: Mapping, b: Mapping, *, method: str, metric: str = "ndcg@10") -> SnapshotDiff:
    """Per query: ``metric`` in ``a`` and ``b`` and whether it gained or lost; per passage in
    either top 10: its rank in each (None: not in that top 10) and its grade in ``b``."""
    diff = SnapshotDiff(method, metric)
    # both as a spec reads them: a setting an earlier snapshot did not record has its default
    config_a, config_b = (SearchSpec.from_dict(s.get("config") or {}, strict=False).to_dict() for s in (a, b))
    diff.settings = {k: (config_a.get(k), config_b.get(k)) for k in sorted(set(config_a) | set(config_b))
                     if config_a.get(k) != config_b.get(k)}
    queries = {**a.get("queries", {}), **b.get("queries", {})}
    per_a = a.get("per_query", {}).get(method, {})
    per_b = b.get("per_query", {}).get(method, {})
    rank_a = a.get("rankings", {}).get(method, {})
    rank_b = b.get("rankings", {}).get(method, {})
    grades_b = b.get("grades", {})
    grades_a = a.get("grades", {})
    info = {**a.get("passages", {}), **b.get("passages", {})}
    for qid, text in queries.items():
        va = (per_a.get(qid) or {}).get(metric)
        vb = (per_b.get(qid) or {}).get(metric)
        if qid not in per_a:
            status = "new query"
        elif qid not in per_b:
            status = "dropped"
        elif va is None or vb is None:
            status = "not scored"
        elif vb > va + CHANGE_EPSILON:
            status = "gained"
        elif vb < va - CHANGE_EPSILON:
            status = "lost"
        else:
            status = "same"
        change = None if va is None or vb is None else vb - va
        diff.queries.append({"query_id": qid, "query": text, "a": va, "b": vb, "change": change, "status": status})
        list_a, list_b = rank_a.get(qid, []), rank_b.get(qid, [])
        pos_a = {p: r for r, p in enumerate(list_a, start=1)}
        pos_b = {p: r for r, p in enumerate(list_b, start=1)}
        for pid in dict.fromkeys([*list_b, *list_a]):
            ra, rb = pos_a.get(pid), pos_b.get(pid)
            if ra == rb:
                continue
            if ra is None:
                move = "new"
            elif rb is None:
                move = "dropped"
            else:
                move = "up" if rb < ra else "down"
            grade = grades_b.get(qid, {}).get(pid, grades_a.get(qid, {}).get(pid))
            where = info.get(pid, {})
            diff.moved.append({"query_id": qid, "query": text, "passage": pid, "source": where.get("source", ""),
                               "page": where.get("page", ""), "title": where.get("title", ""), "grade": grade,
                               "rank_a": ra, "rank_b": rb, "movement": move})
    order = {"gained": 0, "lost": 1, "new query": 2, "dropped": 3, "not scored": 4, "same": 5}
    diff.queries.sort(key=lambda q: (order[q["status"]], -abs(q["change"] or 0.0), q["query"]))
    return diff
