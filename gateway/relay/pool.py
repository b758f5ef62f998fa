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
session's task borrow one again.

Waiters are served in arrival order, and nobody looks for links on their behalf: each
waits on a future that whoever has a link to give hands it directly — a session that
ends (`give_back`), a session between statements (`SessionLinks.lend_waited`, told to
watch for that moment by `Holder.contended` when the first client starts waiting), or a
link closed, which leaves room for the first waiter to open one (`forget`). A waiter that
is cancelled (a CancelRequest, its client gone) leaves the line, and what it was handed
at that very moment goes on to the next. After 5 s one gets a NOTICE; after
`pool_timeout_s`, 53300 naming the source and the pool.

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
from gateway.relay.link_lifecycle import LinkLifecycle
from gateway.state.settings import DEFAULTS
from pgwire.errors import TOO_MANY_CONNECTIONS, PgError
from pgwire.protocol import encoder

if TYPE_CHECKING:
    from gateway.state.context import ServerContext

POOL_MODES = ("session", "transaction")
DEFAULT_POOL_MODE = "transaction"
DEFAULT_POOL_SIZE = 10
DEFAULT_POOL_TIMEOUT_S = 30.0
# PgBouncer's defaults for its server_idle_timeout and server_lifetime. 0: never.
DEFAULT_SERVER_IDLE_TIMEOUT_S = 600.0
DEFAULT_SERVER_LIFETIME_S = 3600.0
NOTICE_AFTER_S = 5.0
# A link that sat unused this long is asked whether its source is still there before it
# is lent (`borrow`): a source that restarted (or a connection a firewall dropped) costs
# a new connection, not the client's statement. Shorter idles are not asked: the source's
# hang-up reaches the link's socket as an end of file first.
CHECK_AFTER_IDLE_S = 1.0


class Holder(Protocol):
    """What the pool asks of a session's links (`gateway.relay.links.SessionLinks`)."""

    links: dict[str, PgLink]
    # A place in a pool's line the express lane took and handed to the session's task
    # (`gateway.relay.express.place_in_line.PlaceInLine.to_task`), which `borrow` waits on instead
    # of queueing again.
    adopted: dict[str, tuple[Waiter, LinkPool]]

    def lendable(self, link: PgLink, mode: str) -> bool: ...

    def drop_dead(self, link: PgLink) -> None: ...

    def contended(self) -> None: ...


@dataclass(frozen=True)
class PoolOptions:
    """A postgres source's pool settings (`pool_options`)."""

    size: int = DEFAULT_POOL_SIZE
    mode: str = DEFAULT_POOL_MODE
    timeout_s: float = DEFAULT_POOL_TIMEOUT_S
    idle_timeout_s: float = DEFAULT_SERVER_IDLE_TIMEOUT_S  # 0: never
    lifetime_s: float = DEFAULT_SERVER_LIFETIME_S  # 0: never


@dataclass(eq=False)
class Waiter:
    """A client in the queue: its future is handed a link, or None for room to open one
    (counted in `opening` from that moment, so nobody else takes the room)."""

    holder: Holder
    since: float
    future: asyncio.Future[PgLink | None]


class LinkPool:
    def __init__(self, source: str, login: str, size: int, mode: str, timeout_s: float,
                 idle_timeout_s: float = DEFAULT_SERVER_IDLE_TIMEOUT_S,
                 lifetime_s: float = DEFAULT_SERVER_LIFETIME_S) -> None:
        self.source, self.login = source, login
        self.size, self.mode, self.timeout_s = size, mode, timeout_s
        self.lifecycle = LinkLifecycle(idle_timeout_s, lifetime_s)
        self.free: list[PgLink] = []
        self.lent: dict[PgLink, Holder] = {}
        self.roles: dict[PgLink, str | None] = {}  # the role each link runs under now
        self.opening = 0
        self.waiters: deque[Waiter] = deque()  # not yet handed anything, first come first
        self.pinned = 0  # sessions whose link cannot move (SessionLinks.pin)
        self.longest_wait_s = 0.0
        self.reclaimed = 0
        self.timeouts = 0

    @property
    def total(self) -> int:
        return len(self.free) + len(self.lent) + self.opening

    async def acquire(self, holder: Holder, connect: Callable[[], Awaitable[PgLink]],
                      notice: Callable[[str], Awaitable[None]] | None = None,
                      waiter: Waiter | None = None) -> PgLink:
        """A link for `holder`: a free one, a new one while there is room, one taken back
        from an idle session (transaction mode), or, behind the clients already waiting,
        the next one given back (`_wait`; on `waiter`, a place in line taken before)."""
        if waiter is not None:
            return await self._wait(holder, connect, notice, waiter)
        if not self.waiters:
            link = self._take_free(holder)
            if link is not None:
                return link
            if self.total >= self.size:
                self._drop_dead()
            if self.total < self.size:
                return await self._open(holder, connect)
            link = self._reclaim(holder)
            if link is not None:
                return link
        return await self._wait(holder, connect, notice)

    def _take_free(self, holder: Holder) -> PgLink | None:
        now = asyncio.get_running_loop().time()
        while self.free:
            link = self.free.pop()
            if link.broken or link.port.eof or not self.lifecycle.taken(link, now, CHECK_AFTER_IDLE_S):
                self.forget(link)  # it died while nobody had it, or its time is up
                link.close()
                continue
            self.lent[link] = holder
            return link
        return None

    def _keep_free(self, link: PgLink) -> None:
        self.free.append(link)
        self.lifecycle.freed(link, asyncio.get_running_loop().time())
        self.lifecycle.arm(self.sweep)

    def sweep(self) -> None:
        """Close the free links whose idle time or lifetime is up; again later while
        some are free (nothing runs it when none is)."""
        now = asyncio.get_running_loop().time()
        for link in list(self.free):
            if link.broken or link.port.eof or self.lifecycle.expired_free(link, now):
                self.forget(link)
                link.close()
        if self.free:
            self.lifecycle.arm(self.sweep)

    def _drop_dead(self) -> None:
        """Links whose source went away (a restart) while their sessions were idle: a new
        one takes their place now, not when each session runs again."""
        for link, owner in list(self.lent.items()):
            if link.broken or link.port.eof:
                owner.drop_dead(link)
                if link in self.lent and owner.links.get(link.source) is not link:
                    self.forget(link)  # (the session gave it up: it is not counted)
                    link.close()

    def _reclaim(self, holder: Holder) -> PgLink | None:
        """The link of a session between statements (transaction mode)."""
        for link, owner in self.lent.items():
            if owner is not holder and owner.lendable(link, self.mode):
                if owner.links.get(link.source) is link:
                    del owner.links[link.source]
                self.lent[link] = holder
                self.reclaimed += 1
                return link
        return None

    async def _open(self, holder: Holder, connect: Callable[[], Awaitable[PgLink]], *,
                    reserved: bool = False) -> PgLink:
        if not reserved:
            self.opening += 1
        try:
            link = await connect()
        except BaseException:
            self.opening -= 1
            self._room()  # the next waiter tries in its turn
            raise
        self.opening -= 1
        self.lent[link] = holder
        self.roles[link] = None
        self.lifecycle.opened(link, asyncio.get_running_loop().time())
        return link

    def enqueue(self, holder: Holder) -> Waiter:
        """A place at the end of the line (`_wait`, or the express lane's `PlaceInLine.join`)."""
        loop = asyncio.get_running_loop()
        waiter = Waiter(holder, loop.time(), loop.create_future())
        self.waiters.append(waiter)
        if len(self.waiters) == 1:
            for owner in set(self.lent.values()):
                owner.contended()
        self._drop_dead()  # (room made so goes to the first waiter: `forget`)
        return waiter

    async def _wait(self, holder: Holder, connect: Callable[[], Awaitable[PgLink]],
                    notice: Callable[[str], Awaitable[None]] | None,
                    waiter: Waiter | None = None) -> PgLink:
        """Wait in line: a link is handed over by whoever has one to give (`give_back`,
        `lend`, `forget` for room to open one), never looked for. Every session holding a
        link of this pool is told (`Holder.contended`), so that the end of its statement
        is seen here even when the compiled repeats would have run it."""
        loop = asyncio.get_running_loop()
        if waiter is None:
            waiter = self.enqueue(holder)
        deadline = waiter.since + self.timeout_s
        future = waiter.future
        try:
            if notice is not None and self.timeout_s > NOTICE_AFTER_S:
                if not future.done():
                    await asyncio.wait((future,), timeout=max(waiter.since + NOTICE_AFTER_S
                                                              - loop.time(), 0))
                if not future.done():
                    await notice(f'waiting for a connection to source "{self.source}" '
                                 f'(pool of {self.size} for login "{self.login}" is in use)')
            if not future.done():
                await asyncio.wait((future,), timeout=max(deadline - loop.time(), 0))
            if not future.done():
                self.waiters.remove(waiter)
                future.cancel()
                self.timeouts += 1
                raise PgError(TOO_MANY_CONNECTIONS,
                              f'no connection to source "{self.source}" became free within '
                              f'{self.timeout_s:g} s (pool of {self.size} for login '
                              f'"{self.login}", {len(self.waiters)} other clients waiting)',
                              hint="Raise pool_size (within the source's max_connections) "
                                   "or pool_timeout_s, or use pool_mode = \"transaction\".")
        except BaseException:
            # Cancelled (a CancelRequest, the client gone) or the notice failed: out of
            # the line, and what was handed over at that very moment goes to the next.
            self.leave(waiter)
            raise
        finally:
            self.longest_wait_s = max(self.longest_wait_s, loop.time() - waiter.since)
        link = future.result()
        if link is None:
            return await self._open(holder, connect, reserved=True)
        return link

    def leave(self, waiter: Waiter) -> None:
        """`waiter` gives up its place; what it was handed goes on to the next."""
        if waiter in self.waiters:
            self.waiters.remove(waiter)
        future = waiter.future
        if not future.done():
            future.cancel()
            return
        if future.cancelled():
            return
        link = future.result()
        if link is None:  # room it will not use
            self.opening -= 1
            self._room()
        else:
            self.lent.pop(link, None)
            self.give_back(link)

    def _hand(self, link: PgLink) -> bool:
        """`link` to the first waiter, if any."""
        while self.waiters:
            waiter = self.waiters.popleft()
            if waiter.future.done():  # (it gave up: see `leave`)
                continue
            self.lent[link] = waiter.holder
            waiter.future.set_result(link)
            if self.waiters:  # (a session that borrows while others wait is told too)
                waiter.holder.contended()
            return True
        return False

    def _room(self) -> None:
        """A link was closed: the first waiter opens one in its place."""
        while self.waiters and self.total < self.size:
            waiter = self.waiters.popleft()
            if waiter.future.done():
                continue
            self.opening += 1
            waiter.future.set_result(None)

    def lend(self, link: PgLink) -> bool:
        """`link`'s session is between statements and may let it go
        (`SessionLinks.lend_waited`): to the first waiter. False when nobody waits."""
        if not self.waiters:
            return False
        self.lent.pop(link, None)
        if self.lifecycle.expired(link, asyncio.get_running_loop().time()):
            self.forget(link)  # (its room goes to the first waiter)
            link.close()
            return True
        if self._hand(link):
            self.reclaimed += 1
            return True
        self._keep_free(link)
        return True

    def give_back(self, link: PgLink) -> None:
        """`link`'s session is done with it (it ended, or DISCARD ALL): to the first
        waiter, or kept free."""
        self.lent.pop(link, None)
        if not link.idle or link.status != "I" or (
                self.lifecycle.expired(link, asyncio.get_running_loop().time())):
            self.forget(link)  # dead, in a block, an answer unread, or its time is up
            link.close()
            return
        if not self._hand(link):
            self._keep_free(link)

    def forget(self, link: PgLink) -> None:
        """A link that is closed, or about to be: its place is free for a new one."""
        self.lent.pop(link, None)
        self.roles.pop(link, None)
        self.lifecycle.forget(link)
        if link in self.free:
            self.free.remove(link)
        self._room()

    def row(self, now: float) -> tuple[Any, ...]:
        waiting = max((now - w.since for w in self.waiters), default=0.0)
        return (self.source, self.login, self.mode, self.size, self.total, len(self.free),
                len(self.lent), len(self.waiters), round(max(waiting, self.longest_wait_s), 3),
                self.pinned, self.reclaimed, self.timeouts)


POOL_COLUMNS = ["source", "login", "pool_mode", "pool_size", "server_total", "server_idle",
                "server_in_use", "clients_waiting", "longest_wait_s", "pinned_sessions",
                "reclaimed", "timeouts"]


def pool_options(options: dict[str, Any]) -> PoolOptions:
    """The pool settings of a postgres source's options (validated by gateway.config)."""
    return PoolOptions(int(options.get("pool_size", DEFAULT_POOL_SIZE)),
                       str(options.get("pool_mode", DEFAULT_POOL_MODE)),
                       float(options.get("pool_timeout_s", DEFAULT_POOL_TIMEOUT_S)),
                       float(options.get("server_idle_timeout_s", DEFAULT_SERVER_IDLE_TIMEOUT_S)),
                       float(options.get("server_lifetime_s", DEFAULT_SERVER_LIFETIME_S)))


def pool_rows(pools: dict[Any, LinkPool]) -> list[tuple[Any, ...]]:
    now = asyncio.get_running_loop().time()
    return [pool.row(now) for _, pool in sorted(pools.items(), key=lambda kv: str(kv[0]))]


def pool_for(ctx: ServerContext, source: str, read_only: bool) -> LinkPool:
    """This worker's pool of links to `source` for a login, made on first use."""
    key = (source, read_only)
    pool = ctx.pools.get(key)
    if pool is None:
        options = next((s.options for s in ctx.config.sources if s.name == source), {})
        chosen = pool_options(options)
        user = Target.from_dsn(ctx.sources[source].dsn).user  # type: ignore[attr-defined]
        pool = ctx.pools[key] = LinkPool(source, user + (" (read-only)" if read_only else ""),
                                         chosen.size, chosen.mode, chosen.timeout_s,
                                         chosen.idle_timeout_s, chosen.lifetime_s)
    return pool


async def checked(pool: LinkPool, link: PgLink) -> bool:
    """False when `link` sat unused (`CHECK_AFTER_IDLE_S`) and its source no longer
    answers on it (an empty Query: one round trip, no statement)."""
    if not pool.lifecycle.check_due(link):
        return True
    try:
        outcome = await link.simple("")
    except PgError:  # (the connection was lost: source_unavailable)
        link.broken = True
        return False
    return outcome.error is None and link.status == "I"


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

    adopted = holder.adopted.pop(source, None)
    while True:
        link = await pool.acquire(holder, connect, notice,
                                  adopted[0] if adopted is not None and adopted[1] is pool else None)
        adopted = None
        try:
            usable = not (link.broken or link.port.eof) and await checked(pool, link)
        except BaseException:
            pool.forget(link)
            link.close()
            raise
        if usable:
            break
        pool.forget(link)  # its source went away (a restart) while it was unused
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
