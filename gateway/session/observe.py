"""What the session tells /metrics and the status page about each statement it runs.

`Road` follows one statement: the road it takes (relay, federated, utility; the express
lane counts its own in `gateway.relay.express.lane`), its kind, its plan. `ended` counts it
(`gateway.state.metrics`) and keeps it for the status page when it failed or was slow.
The work per statement is a few attribute stores and dict increments.
"""

from __future__ import annotations

import time
from typing import Any

from gateway.executor.execute import stream_figures
from gateway.state.activity import activity_of, note_plan, note_sources
from gateway.state.metrics import RecentStatement, RecentStatements, statement_kind
from gateway.state.portals import Prepared
from gateway.state.route import Route
from pgwire.errors import PgError


class Road:
    __slots__ = ("sql", "path", "kind", "plan", "sources", "started")

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.path = "federated"
        self.kind = "select"
        self.plan: Any = None
        self.sources: tuple[str, ...] = ()
        self.started = time.perf_counter()

    def relayed(self, session: Any, route: Route) -> None:
        self.path = "relay"
        self.kind = statement_kind(self.sql, writes=route.writes)
        self.sources = (route.source,)
        note_sources(session, self.sources)

    def prepared(self, session: Any, prepared: Prepared) -> None:
        if prepared.route is not None:
            self.relayed(session, prepared.route)
        elif prepared.utility is not None:
            self.path = "utility"
            self.kind = statement_kind(self.sql, prepared.utility.kind)
        elif prepared.plan is not None:
            self.plan = prepared.plan
            note_plan(session, prepared.plan)


def ended(session: Any, road: Road, error: PgError | None) -> None:
    seconds = time.perf_counter() - road.started
    sqlstate = error.sqlstate if error is not None else None
    ctx = session.ctx
    ctx.metrics.statement_done(road.kind, sqlstate, road.path, seconds)
    plan, figures = road.plan, None
    if plan is not None:
        ctx.metrics.planned(*plan.pushdown_counts)
    elif road.path == "utility":  # EXPLAIN: the plan it explained, measured if ANALYZE
        activity = activity_of(session)
        plan, figures = activity.plan, activity.figures
    if not RecentStatements.worth_keeping(seconds, sqlstate, figures is not None):
        return
    stream = activity_of(session).stream
    if figures is None and stream is not None:  # a slow or failed federated statement
        figures = stream_figures(stream)
    engine, why = session.engine_for(plan) if plan is not None else ("", "")
    sources = tuple(dict.fromkeys(f.source for f in plan.fragments)) if plan is not None else road.sources
    ctx.recent.keep(RecentStatement(
        RecentStatements.now(), session.user, session.database, road.sql, road.path, seconds,
        sqlstate, error.message if error is not None else None, sources, plan, engine, why,
        figures))
