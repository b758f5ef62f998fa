"""What the gateway counts for /metrics and remembers for the status page.

The session, the express lane and the executor note what happened at the few places a
statement ends or a fragment's rows arrive; `gateway.server.http.metrics_page` turns the
counts into Prometheus families at scrape time. Noting is plain integer arithmetic on
dicts and slots: the event loop is the only writer, so no lock is taken and no label
string is formatted per statement (the express lane is a hot path).

`RecentStatements` keeps the last slow or failed statements (with their plans), for the
status page.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field
from typing import Any

# Statement latency buckets, in seconds (Prometheus `le` bounds; +Inf is implied).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0, 30.0, 60.0)
# The roads a statement takes (docs/design.md §3).
PATHS = ("relay", "express", "federated", "utility")
# A statement that takes this long is kept for the status page even when it succeeds.
SLOW_SECONDS = 1.0
RECENT_LIMIT = 50
_TRANSACTION_KINDS = frozenset({"begin", "commit", "rollback", "savepoint", "release", "rollback_to"})


class LatencyHistogram:
    """A cumulative-at-scrape histogram: one count per bucket, the sum and the count."""

    __slots__ = ("counts", "total", "count")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)  # the last one is +Inf
        self.total = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.total += seconds
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """(le, count of observations <= le) per bucket, +Inf last, as Prometheus wants."""
        running, out = 0, []
        for bound, count in zip((*(repr(b) for b in LATENCY_BUCKETS), "+Inf"), self.counts):
            running += count
            out.append((bound, running))
        return out


def statement_kind(sql: str, utility_kind: str | None = None, writes: bool | None = None) -> str:
    """select, write, ddl, transaction, utility or copy: the `kind` label of a statement."""
    if utility_kind is not None:
        if utility_kind in _TRANSACTION_KINDS:
            return "transaction"
        return "copy" if utility_kind == "copy" else "utility"
    if not writes:
        return "select"
    verb = sql.lstrip()[:8].lower()
    if verb.startswith(("create", "drop", "alter", "truncate")):
        return "ddl"
    return "copy" if verb.startswith("copy") else "write"


@dataclass
class Metrics:
    """The counts of one gateway process."""

    # (kind, SQLSTATE class: "00" for success) -> statements completed
    statements: dict[tuple[str, str], int] = field(default_factory=dict)
    latency: dict[str, LatencyHistogram] = field(
        default_factory=lambda: {path: LatencyHistogram() for path in PATHS})
    source_rows: dict[str, int] = field(default_factory=dict)
    source_bytes: dict[str, int] = field(default_factory=dict)
    # Filter conjuncts of planned statements: "exact", "inexact", "unsupported" (local).
    pushdown: dict[str, int] = field(default_factory=lambda: {"exact": 0, "inexact": 0, "unsupported": 0})
    # Federated statements whose residual ran in an engine, by engine (duckdb, spark).
    engine_queries: dict[str, int] = field(default_factory=dict)

    def statement_done(self, kind: str, sqlstate: str | None, path: str, seconds: float) -> None:
        key = (kind, sqlstate[:2] if sqlstate else "00")
        self.statements[key] = self.statements.get(key, 0) + 1
        self.latency[path].observe(seconds)

    def fragment_read(self, source: str, rows: int, nbytes: int) -> None:
        self.source_rows[source] = self.source_rows.get(source, 0) + rows
        self.source_bytes[source] = self.source_bytes.get(source, 0) + nbytes

    def planned(self, exact: int, inexact: int, unsupported: int) -> None:
        counts = self.pushdown
        counts["exact"] += exact
        counts["inexact"] += inexact
        counts["unsupported"] += unsupported


@dataclass
class RecentStatement:
    """A slow or failed statement as the status page lists it."""

    finished: float  # time.time()
    user: str
    database: str
    sql: str
    path: str
    seconds: float
    sqlstate: str | None = None
    message: str | None = None
    sources: tuple[str, ...] = ()
    plan: Any = None  # the QueryPlan (planner.QueryPlan) of a federated statement
    engine: str = "duckdb"
    engine_why: str = ""
    figures: dict | None = None  # EXPLAIN ANALYZE's numbers, for an EXPLAIN ANALYZE


class RecentStatements:
    """The last `RECENT_LIMIT` slow or failed statements, each with a number that stays
    its own (the page's anchors)."""

    def __init__(self, limit: int = RECENT_LIMIT) -> None:
        self.entries: deque[tuple[int, RecentStatement]] = deque(maxlen=limit)
        self._numbers = 0

    def keep(self, entry: RecentStatement) -> None:
        self._numbers += 1
        self.entries.append((self._numbers, entry))

    def listed(self) -> list[tuple[int, RecentStatement]]:
        """Newest first."""
        return list(reversed(self.entries))

    @staticmethod
    def worth_keeping(seconds: float, sqlstate: str | None, analyzed: bool = False) -> bool:
        """Failed, slow, or an EXPLAIN ANALYZE (its plan with figures is worth a look)."""
        return sqlstate is not None or seconds >= SLOW_SECONDS or analyzed

    @staticmethod
    def now() -> float:
        return time.time()
