"""The relay's server connections to one PostgreSQL source, shared by a worker's sessions.

Each (source, login) has one `LinkPool` of at most `pool_size` links
(`connectors.postgres.link.PgLink`); the login is the source's dsn user, read-only or not
(a read-only user's links refuse writes at the source, so they never serve another
user). A session takes a link on its first statement there (`SessionLinks.link`) and
keeps it while it can ("affinity": a client alone on the pool never pays for a checkout,
and the express lane and its repeats find the link where they look,
`SessionLinks.links`).

`pool_mode = "session"`: the link is the session's until it ends; a client that finds the
pool full waits for one to end. `"transaction"`: a waiting client also takes a link from a
session that does not use it now (`SessionLinks.lendable`: outside a transaction block,
nothing in flight, nothing pinned there) — the link leaves that session's `links`, and
the lane and the repeats, which look it up for every statement, decline and let the
session's task borrow one again. Waiters are served in arrival order; after
`pool_timeout_s` one gets 53300 naming the source and the pool.

A link carries no user's state into another's statement: the mirrored settings are sent as
a difference from what the link has (`PgLink.setting_commands`), the role of
`source_roles` is set (or reset) when a link changes hands (`SessionLinks.link`), and the
statements prepared on it are keyed by their text and types, so any session may use them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from connectors.postgres.link import PgLink
from connectors.postgres.roles import set_role_sql
from connectors.postgres.target import Target
from gateway.state.settings import DEFAULTS
from pgwire.errors import TOO_MANY_CONNECTIONS, PgError
from pgwire.protocol import encoder

if TYPE_CHECKING:
    from gateway.state.context import ServerContext

POOL_MODES = ("session", "transaction")
DEFAULT_POOL_MODE = "transaction"
DEFAULT_POOL_SIZE = 10
DEFAULT_POOL_TIMEOUT_S = 30.0
# The first waiter looks for a link to take back this often: a session gives its link
# back by being idle, which nothing announces (the repeats run without the task).
RECLAIM_POLL_S = 0.0005
NOTICE_AFTER_S = 5.0


class Holder(Protocol):
    """What the pool asks of a session's links (`gateway.relay.links.SessionLinks`)."""

    links: dict[str, PgLink]

    def lendable(self, link: PgLink, mode: str) -> bool: ...

    def drop_dead(self, link: PgLink) -> None: ...


@dataclass
class Waiter:
    holder: Holder
    since: float
    event: asyncio.Event
    link: PgLink | None = None


class LinkPool:
    def __init__(self, source: str, login: str, size: int, mode: str, timeout_s: float) -> None:
        self.source, self.login = source, login
        self.size, self.mode, self.timeout_s = size, mode, timeout_s
        self.free: list[PgLink] = []
        self.lent: dict[PgLink, Holder] = {}
        self.roles: dict[PgLink, str | None] = {}  # the role each link runs under now
        self.opening = 0
        self.waiters: deque[Waiter] = deque()
        self.pinned = 0  # sessions whose link cannot move (SessionLinks.pin)
        self.longest_wait_s = 0.0
        self.reclaimed = 0
        self.timeouts = 0

    @property
    def total(self) -> int:
        return len(self.free) + len(self.lent) + self.opening

    async def acquire(self, holder: Holder, connect: Callable[[], Awaitable[PgLink]],
                      notice: Callable[[str], Awaitable[None]] | None = None) -> PgLink:
        """A link for `holder`: a free one, a new one while there is room, one taken back
        from an idle session (transaction mode), or the next one given back."""
        if not self.waiters:
            link = self._take(holder, reclaim=False)
            if link is not None:
                return link
            if self.total < self.size:
                return await self._open(holder, connect)
            link = self._take(holder)
            if link is not None:
                return link
        return await self._wait(holder, connect, notice)

    def _take(self, holder: Holder, *, reclaim: bool = True) -> PgLink | None:
        while self.free:
            link = self.free.pop()
            if link.broken or link.port.eof:  # it died while nobody had it
                self.forget(link)
                link.close()
                continue
            self.lent[link] = holder
            return link
        if self.total >= self.size:
            # Links whose source went away (a restart) while their sessions were idle: a
            # new one takes their place now, not when each session runs again.
            for link, owner in list(self.lent.items()):
                if link.broken or link.port.eof:
                    owner.drop_dead(link)
                    if link in self.lent and owner.links.get(link.source) is not link:
                        self.forget(link)  # (the session gave it up: it is not counted)
                        link.close()
        if reclaim:
            for link, owner in self.lent.items():
                if owner is not holder and owner.lendable(link, self.mode):
                    if owner.links.get(link.source) is link:
                        del owner.links[link.source]
                    self.lent[link] = holder
                    self.reclaimed += 1
                    return link
        return None

    async def _open(self, holder: Holder, connect: Callable[[], Awaitable[PgLink]]) -> PgLink:
        self.opening += 1
        try:
            link = await connect()
        finally:
            self.opening -= 1
        self.lent[link] = holder
        self.roles[link] = None
        return link

    async def _wait(self, holder: Holder, connect: Callable[[], Awaitable[PgLink]],
                    notice: Callable[[str], Awaitable[None]] | None) -> PgLink:
        loop = asyncio.get_running_loop()
        waiter = Waiter(holder, loop.time(), asyncio.Event())
        self.waiters.append(waiter)
        deadline = waiter.since + self.timeout_s
        noticed = False
        try:
            while True:
                if waiter.link is not None:
                    return waiter.link
                now = loop.time()
                if self.waiters[0] is waiter:
                    link = self._take(holder, reclaim=False)
                    if link is None and self.total < self.size:
                        link = await self._open(holder, connect)
                        if waiter.link is not None:  # handed one meanwhile: not needed
                            self.give_back(waiter.link)
                            waiter.link = None
                        return link
                    link = link or self._take(holder)
                    if link is not None:
                        return link
                if now >= deadline:
                    self.timeouts += 1
                    raise PgError(TOO_MANY_CONNECTIONS,
                                  f'no connection to source "{self.source}" became free within '
                                  f'{self.timeout_s:g} s (pool of {self.size} for login '
                                  f'"{self.login}", {len(self.waiters) - 1} other clients waiting)',
                                  hint="Raise pool_size (within the source's max_connections) "
                                       "or pool_timeout_s, or use pool_mode = \"transaction\".")
                if notice is not None and not noticed and now - waiter.since > NOTICE_AFTER_S:
                    noticed = True
                    await notice(f'waiting for a connection to source "{self.source}" '
                           f'(pool of {self.size} for login "{self.login}" is in use)')
                head = self.waiters[0] is waiter
                timeout = min(RECLAIM_POLL_S if head else NOTICE_AFTER_S, deadline - now)
                try:
                    await asyncio.wait_for(waiter.event.wait(), max(timeout, 0))
                except TimeoutError:
                    pass
                waiter.event.clear()
        except BaseException:
            if waiter.link is not None:  # handed one as it gave up: pass it on
                self.lent.pop(waiter.link, None)
                self.give_back(waiter.link)
                waiter.link = None
            raise
        finally:
            self.longest_wait_s = max(self.longest_wait_s, loop.time() - waiter.since)
            if waiter in self.waiters:
                first = self.waiters[0] is waiter
                self.waiters.remove(waiter)
                if first and self.waiters:
                    self.waiters[0].event.set()  # its turn to look for a link

    def give_back(self, link: PgLink) -> None:
        """`link`'s session is done with it (it ended, or DISCARD ALL): to the first
        waiter, or kept free."""
        self.lent.pop(link, None)
        if not link.idle or link.status != "I":  # dead, in a block, or an answer unread
            self.forget(link)
            link.close()
            return
        for waiter in self.waiters:
            if waiter.link is None:
                waiter.link = link
                self.lent[link] = waiter.holder
                waiter.event.set()
                return
        self.free.append(link)

    def forget(self, link: PgLink) -> None:
        """A link that is closed, or about to be: its place is free for a new one."""
        self.lent.pop(link, None)
        self.roles.pop(link, None)
        if link in self.free:
            self.free.remove(link)
        if self.waiters:
            self.waiters[0].event.set()

    def row(self, now: float) -> tuple[Any, ...]:
        waiting = max((now - w.since for w in self.waiters), default=0.0)
        return (self.source, self.login, self.mode, self.size, self.total, len(self.free),
                len(self.lent), len(self.waiters), round(max(waiting, self.longest_wait_s), 3),
                self.pinned, self.reclaimed, self.timeouts)


POOL_COLUMNS = ["source", "login", "pool_mode", "pool_size", "server_total", "server_idle",
                "server_in_use", "clients_waiting", "longest_wait_s", "pinned_sessions",
                "reclaimed", "timeouts"]


def pool_options(options: dict[str, Any]) -> tuple[int, str, float]:
    """`pool_size`, `pool_mode` and `pool_timeout_s` of a postgres source's options."""
    return (int(options.get("pool_size", DEFAULT_POOL_SIZE)),
            str(options.get("pool_mode", DEFAULT_POOL_MODE)),
            float(options.get("pool_timeout_s", DEFAULT_POOL_TIMEOUT_S)))


def pool_rows(pools: dict[Any, LinkPool]) -> list[tuple[Any, ...]]:
    now = asyncio.get_running_loop().time()
    return [pool.row(now) for _, pool in sorted(pools.items(), key=lambda kv: str(kv[0]))]


def pool_for(ctx: ServerContext, source: str, read_only: bool) -> LinkPool:
    """This worker's pool of links to `source` for a login, made on first use."""
    key = (source, read_only)
    pool = ctx.pools.get(key)
    if pool is None:
        options = next((s.options for s in ctx.config.sources if s.name == source), {})
        size, mode, timeout_s = pool_options(options)
        user = Target.from_dsn(ctx.sources[source].dsn).user  # type: ignore[attr-defined]
        pool = ctx.pools[key] = LinkPool(source, user + (" (read-only)" if read_only else ""),
                                         size, mode, timeout_s)
    return pool


async def borrow(holder: Holder, state: Any, source: str) -> tuple[LinkPool, PgLink]:
    """A link to `source` for the session of `state`, from its pool, running under the
    session's role there (`source_roles`) and no other."""
    ctx = state.ctx
    # A read-only user's link refuses writes at the source too (say, a function called by
    # a SELECT): such links serve read-only users only.
    read_only = source in ctx.router.read_only or state.access.read_only
    pool = pool_for(ctx, source, read_only)
    remote = ctx.sources[source]

    async def connect() -> PgLink:
        # Started with the settings every session has a value of: one a session may
        # leave unset (bytea_output) is RESET to the source's default, never to the
        # value of the client that opened the link (PgLink.setting_commands).
        settings = {k: v for k, v in state.settings.values.items() if k in DEFAULTS}
        return await PgLink.connect(source, remote.dsn, schema=remote.schema,
                                    settings=settings, read_only=read_only)

    async def notice(message: str) -> None:
        state.write(encoder.notice_response("NOTICE", "00000", message))
        await state.flush()

    while True:
        link = await pool.acquire(holder, connect, notice)
        if not (link.broken or link.port.eof):
            break
        pool.forget(link)  # taken back from a session after its source went away
        link.close()
    role = state.access.source_roles.get(source)
    if pool.roles.get(link) != role:
        # A link changing hands drops the last user's role before it runs anything.
        try:
            outcome = await link.simple("RESET ROLE" if role is None else set_role_sql(role, local=False))
        except BaseException:
            pool.forget(link)
            link.close()
            raise
        if outcome.error is not None:
            pool.forget(link)
            link.close()
            raise outcome.error
        pool.roles[link] = role
    return pool, link
