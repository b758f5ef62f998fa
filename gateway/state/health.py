"""Each source's health: up, or down since when and why (docs/design.md §7).

A source is read alone: reading its tables at start-up and at every catalog refresh
(`read_tables`) either succeeds (the source is up) or fails for whatever reason (refused,
timed out, its password or role rejected: the source is down). One source's failure never
touches another's tables, nor the statements that do not need it. A change of state is
logged once, as a warning (down) or info line (up again), with the source and the reason
as structured fields; a source that stays down is not logged again at every refresh.

`HealthBoard` is what the ServerContext holds as `ctx.health`: `ctx.health[name]` is a
`SourceHealth` (state, since, last_error), read by anything that reports on the gateway.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from connectors.base import Source, TableInfo
from pgwire.errors import PgError

log = logging.getLogger("fedgate.health")

UP = "up"
DOWN = "down"


@dataclass(frozen=True)
class SourceHealth:
    state: str  # UP or DOWN
    since: datetime  # when it entered this state (UTC)
    last_error: str | None = None  # why it is down; the last failure's reason once up again

    @property
    def down(self) -> bool:
        return self.state == DOWN


def failure_reason(exc: BaseException) -> str:
    """One line saying why a source could not be read, as a statement needing it is told
    (`pgwire.errors.source_unavailable`): the server's words for a PgError, the system's
    for a socket error, else the exception's type and text."""
    if isinstance(exc, PgError):
        return exc.message
    if isinstance(exc, OSError):
        return str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {exc}"


class HealthBoard(Mapping[str, SourceHealth]):
    """The health of every source the gateway has tried to read."""

    def __init__(self) -> None:
        self._states: dict[str, SourceHealth] = {}

    def __getitem__(self, name: str) -> SourceHealth:
        return self._states[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)

    def is_down(self, name: str) -> bool:
        found = self._states.get(name)
        return found is not None and found.down

    def mark_up(self, name: str) -> None:
        previous = self._states.get(name)
        if previous is not None and not previous.down:
            return
        now = datetime.now(timezone.utc)
        self._states[name] = SourceHealth(UP, now, previous.last_error if previous else None)
        if previous is not None:
            log.info('source "%s" is up again (down for %.0f s)', name,
                     (now - previous.since).total_seconds(),
                     extra={"source": name, "health": UP})

    def mark_down(self, name: str, reason: str) -> None:
        previous = self._states.get(name)
        if previous is not None and previous.down:
            # Still down: keep when it went down, learn the latest reason, say nothing.
            self._states[name] = SourceHealth(DOWN, previous.since, reason)
            return
        self._states[name] = SourceHealth(DOWN, datetime.now(timezone.utc), reason)
        log.warning('source "%s" is unavailable: %s (its statements fail until it answers; '
                    "tables it had keep their last known shape, new ones appear when it does)",
                    name, reason, extra={"source": name, "health": DOWN})

    async def read_tables(self, source: Source) -> list[TableInfo] | None:
        """The source's tables, or None when it cannot be read now (marked down; the next
        refresh tries again). Any exception is the source's failure, not the caller's:
        one source never stops another's refresh, nor the gateway's start."""
        try:
            tables = await source.tables()
        except Exception as exc:  # noqa: BLE001 - whatever failed, it stays with this source
            self.mark_down(source.name, failure_reason(exc))
            return None
        self.mark_up(source.name)
        return tables
