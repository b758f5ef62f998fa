"""What pg_stat_activity shows of a session: its statement, since when, active or idle;
and the statement log's count and clock.

The session notes each statement it starts and when it is idle again (`note_query`,
`note_idle`), and the plan or sources it runs on (`note_plan`, `note_sources`); the
express lane does the same for the statements it relays. The emulated catalog
(`gateway.pg_catalog.session_state`) and the status page read it back. `note_query` also
numbers the session's statements (the statement id of its log lines, gateway.state.logs),
and `note_done` logs a statement that ran at least `[server] log_min_duration_ms`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

log = logging.getLogger("fedgate.statement")
STATEMENT_SHOWN = 1024  # characters of a logged statement (PostgreSQL's track_activity_query_size)


@dataclass
class Activity:
    """What pg_stat_activity shows for one session (kept on the session)."""

    backend_start: datetime
    query: str = ""
    started: float | None = None  # time.time(): cheaper than a datetime per statement
    state: str = "idle"
    statements: int = 0  # statements started: the id of the latest
    timed: float | None = None  # time.perf_counter() at its start, until note_done
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

    def began(self, sql: str) -> float:
        """The session started `sql`: active since now (its time.time(), returned)."""
        self.query = sql
        started = self.started = time.time()
        self.state = "active"
        self.statements += 1
        self.timed = time.perf_counter()
        self.plan = None
        self.sources = ()
        self.figures = None
        self.stream = None
        return started

    def went_idle(self, logged: bool = True) -> None:
        """The statement ended: the session is idle, its result stream dropped. Not
        `logged` (log_min_duration_ms < 0): its clock is dropped too, as `ended` would."""
        self.state = "idle"
        self.stream = None
        if not logged:
            self.timed = None


def note_query(session: Any, sql: str) -> None:
    """Record the statement a session is running, for pg_stat_activity."""
    activity_of(session).began(sql)


def note_done(session: Any) -> None:
    """The statement `note_query` noted has finished: log it when it took at least
    `[server] log_min_duration_ms` (-1: never), with its duration, user and text."""
    ended(activity_of(session), session)


def ended(activity: Activity, session: Any) -> None:
    """`note_done` on the session's activity (the express lane keeps it at hand)."""
    started, activity.timed = activity.timed, None
    threshold = session.ctx.config.server.log_min_duration_ms
    if started is None or threshold < 0:
        return
    took_ms = (time.perf_counter() - started) * 1000
    if took_ms < threshold:
        return
    text = activity.query if len(activity.query) <= STATEMENT_SHOWN \
        else activity.query[:STATEMENT_SHOWN] + "..."
    log.info("duration: %.3f ms  statement: %s", took_ms, text,
             extra={"session": session.pid, "statement": activity.statements,
                    "duration_ms": round(took_ms, 3), "user": session.user})


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
    activity_of(session).went_idle()


def activity_of(session: Any) -> Activity:
    activity = getattr(session, "_pg_activity", None)
    if activity is None:
        activity = Activity(datetime.now(timezone.utc))
        session._pg_activity = activity
    return activity
