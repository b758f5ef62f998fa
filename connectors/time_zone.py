"""The client session's TimeZone, for engines that compute zone-dependent values.

PostgreSQL computes `timestamptz::text`, `extract(hour from ts)`, `date_trunc`,
`ts + interval '1 day'` (across a DST change) and friends in the session's TimeZone. The
residual engine must do the same, so the session sets this context variable before it
hands a plan to the executor, and the engine reads it when it starts the query. A
context variable rather than an executor argument: asyncio tasks copy it, so every
query sees its own session's zone, and the executor's signature stays as it is.
"""

from __future__ import annotations

from contextvars import ContextVar

TIMEZONE: ContextVar[str] = ContextVar("fedgate_session_timezone", default="UTC")
