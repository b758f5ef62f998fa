"""When a pooled server connection is too old or too long unused to keep, and when it must be
asked whether its source is still there before it is lent.

PgBouncer's `server_lifetime` and `server_idle_timeout`, kept per pool
(`gateway.relay.pool.LinkPool` owns one `LinkLifecycle`): a link opened more than
`lifetime_s` ago, or free for more than `idle_timeout_s`, is retired (closed) when it is
next free, given back or lent; a timer sweeps the free ones so that an idle pool shrinks
with nobody using it. 0 means never. A link that was free at least `check_after_s` is
marked when it is taken, and `borrow` asks it (an empty Query) before the client's
statement runs on it.

This object only keeps the times and answers; the pool decides what to do with a link.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from connectors.postgres.link import PgLink


class LinkLifecycle:
    def __init__(self, idle_timeout_s: float, lifetime_s: float) -> None:
        self.idle_timeout_s, self.lifetime_s = idle_timeout_s, lifetime_s
        self._opened_at: dict[PgLink, float] = {}
        self._freed_at: dict[PgLink, float] = {}  # when each free link was given back
        self._to_check: set[PgLink] = set()
        self._sweep: asyncio.TimerHandle | None = None
        self.retired = 0  # closed for their idle time or lifetime

    def opened(self, link: PgLink, now: float) -> None:
        self._opened_at[link] = now

    def freed(self, link: PgLink, now: float) -> None:
        """`link` is free from `now`."""
        self._freed_at[link] = now

    def arm(self, sweep: Callable[[], None]) -> None:
        """`sweep` (the pool's) runs once, soon enough to close a free link in time."""
        if self._sweep is None and (self.idle_timeout_s or self.lifetime_s):
            every = min(t for t in (self.idle_timeout_s, self.lifetime_s) if t)
            self._sweep = asyncio.get_running_loop().call_later(max(every / 4, 0.05), self._swept, sweep)

    def _swept(self, sweep: Callable[[], None]) -> None:
        self._sweep = None
        sweep()

    def taken(self, link: PgLink, now: float, check_after_s: float) -> bool:
        """False when the free `link` is spent (to be closed, not lent). Else it is taken,
        marked to be checked first when it was free `check_after_s` or more."""
        freed = self._freed_at.pop(link, now)
        if self.expired(link, now, freed):
            return False
        if now - freed >= check_after_s:
            self._to_check.add(link)
        return True

    def expired(self, link: PgLink, now: float, freed: float | None = None) -> bool:
        """`link` is past `lifetime_s` since it opened, or (free since `freed`) past
        `idle_timeout_s`: it is closed rather than lent or kept, and counted as retired."""
        if self.lifetime_s and now - self._opened_at.get(link, now) >= self.lifetime_s:
            self.retired += 1
            return True
        if freed is not None and self.idle_timeout_s and now - freed >= self.idle_timeout_s:
            self.retired += 1
            return True
        return False

    def expired_free(self, link: PgLink, now: float) -> bool:
        """`expired` for a link of the pool's free list, free since it was given back."""
        return self.expired(link, now, self._freed_at.get(link, now))

    def check_due(self, link: PgLink) -> bool:
        """`link` was marked when taken (`taken`): True once, and the mark is gone."""
        if link not in self._to_check:
            return False
        self._to_check.discard(link)
        return True

    def will_check(self, link: PgLink) -> bool:
        return link in self._to_check

    def forget(self, link: PgLink) -> None:
        self._opened_at.pop(link, None)
        self._freed_at.pop(link, None)
        self._to_check.discard(link)
