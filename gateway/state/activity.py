"""What pg_stat_activity shows of a session: its statement, since when, active or idle.

The session notes each statement it starts and when it is idle again (`note_query`,
`note_idle`), and the plan or sources it runs on (`note_plan`, `note_sources`); the
express lane does the same for the statements it relays. The emulated catalog
(`gateway.pg_catalog.session_state`) and the status page read it back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any


@dataclass
class Activity:
    """What pg_stat_activity shows for one session (kept on the session)."""

    backend_start: datetime
    query: str = ""
    started: float | None = None  # time.time(): cheaper than a datetime per statement
    state: str = "idle"
    # What the status page shows of the running statement: the sources it reaches, and
    # its federated plan (planner.QueryPlan) if it has one.
    sources: tuple[str, ...] = ()
    plan: Any = None
    # EXPLAIN ANALYZE's numbers for that plan (gateway.executor.execute.figures).
    figures: dict | None = None
    # The running federated statement's result stream: what it did, once it ends, for
    # the status page (gateway.executor.execute.stream_figures). Dropped at idle.
    stream: Any = None

    @property
    def query_start(self) -> datetime | None:
        return None if self.started is None else datetime.fromtimestamp(self.started, timezone.utc)


def note_query(session: Any, sql: str) -> None:
    """Record the statement a session is running, for pg_stat_activity."""
    activity = activity_of(session)
    activity.query = sql
    activity.started = time.time()
    activity.state = "active"
    activity.plan = None
    activity.sources = ()
    activity.figures = None
    activity.stream = None


def note_plan(session: Any, plan: Any) -> None:
    """The running statement's federated plan (planner.QueryPlan), for the status page."""
    activity = activity_of(session)
    activity.plan = plan
    activity.sources = tuple(dict.fromkeys(f.source for f in plan.fragments))


def note_figures(session: Any, figures: dict) -> None:
    activity_of(session).figures = figures


def note_stream(session: Any, stream: Any) -> None:
    activity_of(session).stream = stream


def note_sources(session: Any, sources: tuple[str, ...]) -> None:
    activity_of(session).sources = sources


def note_idle(session: Any) -> None:
    activity = activity_of(session)
    activity.state = "idle"
    activity.stream = None


def activity_of(session: Any) -> Activity:
    activity = getattr(session, "_pg_activity", None)
    if activity is None:
        activity = Activity(datetime.now(timezone.utc))
        session._pg_activity = activity
    return activity
