"""A session's PostgreSQL links and the transaction they carry (docs/design.md §5).

`gateway.relay.routing` decides that a statement goes to one PostgreSQL source; this module
runs it there over the session's own link (`connectors.postgres.link`), opened on first use and
kept for the session, like a session-pooled connection.

Transactions: BEGIN only moves the session's status. The first statement of the block
that reaches a source starts the transaction there (BEGIN is pipelined in front of it),
so a block touching one source costs what it costs on PostgreSQL itself. COMMIT and
ROLLBACK go to every source the block touched. A block may read from several sources
but write to one: the first write to a second source is refused (0A000) before anything
reaches it.

`SessionLinks` is handed the session's state (`gateway.state.session.SessionState`); the
session and the express lane both go through it to route a statement (`route`), key the
relayed-statement cache (`relay_key`) and find the commands a statement needs in front
(`prefix`).
"""

from __future__ import annotations

from typing import Any

from pgwire.protocol import client as w
from connectors import writes
from connectors.postgres.link import Outcome, PgLink, RemoteStatement
from gateway.relay.block_writers import BlockWriters
from pgwire.errors import (ACTIVE_SQL_TRANSACTION, FEATURE_NOT_SUPPORTED, IN_FAILED_SQL_TRANSACTION, PgError,
                           source_unavailable)
from gateway.relay.literals import Lifted, lift
from gateway.relay.relayed import (lifted_execute, result_type, spelled_out, stale_plan,
                                   unlifted, unspelled)
from gateway.relay.pool import LinkPool, Waiter, borrow, pool_for
from planner.access import function_denied
from gateway.state.portals import Portal
from gateway.state.route import Route
from gateway.state.session import SessionState


LIFTED_VERBS = frozenset({"select", "insert", "update", "delete"})


class SessionLinks:
    def __init__(self, state: SessionState) -> None:
        self.state = state
        self.links: dict[str, PgLink] = {}
        self.writers = BlockWriters()  # the SQLite/MySQL connections a block holds
        self.writer: str | None = None  # the source this transaction block wrote to
        self.begin_sql = "BEGIN"
        self.ddl = False  # DDL ran: the catalog is read again once it is visible
        self.busy = 0  # the session's task is handling a message (its links stay)
        self.pinned: set[str] = set()  # sources whose link is this session's to the end
        self.pools: dict[str, LinkPool] = {}  # the pool each link of `links` came from
        self.adopted: dict[str, tuple[Waiter, LinkPool]] = {}  # see gateway.relay.pool.Holder

    @property
    def active(self) -> bool:
        """A transaction block has reached a source (reads must go where writes went)."""
        if self.writers:
            return True
        for link in self.links.values():  # (a loop: asked before every relayed statement)
            if link.status != "I":
                return True
        return False

    def route(self, sql: str) -> Route | None:
        """Where `sql` goes (gateway.relay.routing), or None for the planner: reads are
        relayed only while `fedgate.relay` is on."""
        state = self.state
        route = state.ctx.router.route(sql, state.search_path, state.hidden)
        if route is None:
            return None
        for name in route.admin_calls:
            # Without a role of its own on the source, the statement would run with the
            # gateway's rights there (planner.access.ADMIN_FUNCTIONS); set_config() could
            # leave the role (set_config('role', ...)), so it is never relayed.
            if route.source not in state.access.source_roles or name == "set_config":
                raise function_denied(name)
        if not route.writes and state.settings.values["fedgate.relay"] != "on":
            return None
        if route.respelled and route.sql is None and self.lifted(route, sql) is None:
            return spelled_out(self.state.ctx.router, route, sql)  # sent as a whole text: respelled as one
        return route

    def relay_key(self, query: str, param_types: tuple[int, ...]) -> tuple:
        """What a relayed statement's Parse depends on (the key of `SessionState.relayed`)."""
        state = self.state
        values = state.settings.values
        return (query, param_types, state.ctx.catalog.version, values["search_path"],
                values["fedgate.relay"], state.in_block and self.active, state.hidden)

    async def link(self, source: str) -> PgLink:
        link = self.links.get(source)
        if link is not None and not link.broken and link.port.eof:
            # The source hung up while the link was idle (it restarted, or went down).
            link.broken = True
            if link.status != "I":  # this transaction's work there is gone with it
                raise source_unavailable(source, "the connection was lost", lost=True)
        if link is not None and not link.broken:
            link.expire_statements(self.state.ctx.schema_epoch)
            await self._row_types(link)
            return link
        if link is not None:  # broken: the pool opens another in its place
            del self.links[source]
            self._drop(source, link)
        # From the worker's pool (gateway.relay.pool), under this user's role there.
        pool, link = await borrow(self, self.state, source)
        try:
            await self._row_types(link)
        except BaseException:
            pool.give_back(link)
            raise
        self.links[source] = link
        self.pools[source] = pool
        return link

    def lendable(self, link: PgLink, mode: str) -> bool:
        """`link` may go to another session now (transaction pooling, the pool's `mode`
        unless the user's `pool_modes` says otherwise): the session has nothing in flight
        on it, no block, nothing that cannot move (`pin`)."""
        state = self.state
        if (state.access.pool_modes.get(link.source, mode) != "transaction" or self.busy
                or link.source in self.pinned or state.in_block or self.writers
                or link.status != "I" or not link.idle or self.links.get(link.source) is not link
                or state.copy_in is not None):
            return False
        lane = state.lane  # nothing in flight, and no cancel on its way to this link
        return lane is None or lane.at_rest()

    def lend_waited(self) -> bool:
        """The session is between statements: each link a client waits for goes to it
        (`LinkPool.lend`) when it may (`lendable`). True when the session keeps a link
        that is waited for: the end of its next statement must be seen here too (the
        express lane does not arm its compiled repeats, whose end Python does not see)."""
        for pool in self.pools.values():  # (on every statement's end: nobody waits, mostly)
            if pool.waiters:
                break
        else:
            return False
        kept = False
        for source, link in list(self.links.items()):
            pool = self.pools[source]
            if not pool.waiters:
                continue
            if self.lendable(link, pool.mode):
                del self.links[source]
                pool.lend(link)
            else:
                kept = True
        return kept

    def release_adopted(self) -> None:
        """The task handled what the lane queued for a link without borrowing one there
        (the statement went elsewhere, or was cancelled first): the place is given up."""
        adopted, self.adopted = self.adopted, {}
        for waiter, pool in adopted.values():
            pool.leave(waiter)

    def contended(self) -> None:
        """A client now waits for a link of this session's: the lane's next end of a
        statement is seen in Python, where `lend_waited` runs."""
        lane = self.state.lane
        if lane is not None:
            lane.contended()

    def drop_dead(self, link: PgLink) -> None:
        """`link`'s source hung up while this session was idle outside a block: it leaves
        the session (which borrows another on its next statement, no error)."""
        if (not self.busy and not self.state.in_block and link.status == "I"
                and self.links.get(link.source) is link):
            del self.links[link.source]
            self._drop(link.source, link)

    def pin(self, route: Route) -> None:
        """The statement leaves state on its link that other sessions must not see, or
        that would be lost on another link: the link stays this session's."""
        if route.pins and route.source not in self.pinned:
            self.pinned.add(route.source)
            pool_for(self.state.ctx, route.source, route.source in self.state.ctx.router.read_only
                     or self.state.access.read_only).pinned += 1

    def _drop(self, source: str, link: PgLink) -> None:
        """`link` leaves this session: back to its pool (closed there when it cannot
        serve another: broken, in a transaction, or pinned)."""
        ctx = self.state.ctx
        pool = pool_for(ctx, source, source in ctx.router.read_only or self.state.access.read_only)
        if source in self.pinned:
            self.pinned.discard(source)
            pool.pinned -= 1
            link.broken = True  # its temporary tables, locks ... end with the session
        pool.give_back(link)

    async def _row_types(self, link: PgLink) -> None:
        """Give `link` the row type OIDs of the catalog this session reads, once per
        catalog version (a relayed `SELECT t FROM t` is described with them)."""
        state = self.state
        read_for = (state.ctx.catalog.version, state.hidden)
        if link.row_types_for != read_for:
            catalog = state.ctx.sources.get("pg_catalog")  # (None: no catalog, no row types)
            row_types = {} if catalog is None else \
                await catalog.row_type_oids(link.source, state.hidden)  # type: ignore[attr-defined]
            link.use_row_types(row_types, read_for)

    def prefix(self, link: PgLink, *, begin: bool = True) -> tuple[bytes, int]:
        """Commands to send ahead of a statement, pipelined, and how many exchanges they
        are: the client's settings the source lacks, then BEGIN (with the block's
        savepoints) when the block has not reached this source yet. The settings go in
        a Query of their own, before the source's transaction starts: its isolation comes
        from default_transaction_isolation as it is then."""
        settings = self.state.settings
        commands = link.setting_commands(settings.values, settings.forwarded)
        sent = (w.query("; ".join(commands)), 1) if commands else (b"", 0)
        if not (begin and self.state.in_block and link.status == "I"):
            return sent
        opening = [self.begin_sql, *(writes.savepoint_sql("savepoint", name, "postgres")
                                     for name in self.state.savepoints)]
        return sent[0] + w.query("; ".join(opening)), sent[1] + 1

    def _check(self, route: Route, sql: str | None) -> None:
        state = self.state
        if state.failed:
            raise PgError(IN_FAILED_SQL_TRANSACTION,
                          "current transaction is aborted, commands ignored until end of transaction block")
        if route.writes and state.writes_refused:
            # A SQLite/MySQL write (sql None) is named from its parsed statement.
            if sql is None:
                sql = route.tree.sql(dialect="postgres") if route.tree is not None else route.verb
            state.check_writable(sql)
        if route.writes and state.in_block and self.writer not in (None, route.source):
            raise PgError(FEATURE_NOT_SUPPORTED,
                          f'this transaction already wrote to source "{self.writer}"; a transaction '
                          f'may write to one source only (not also "{route.source}")',
                          hint="COMMIT first, then write to the other source in its own transaction.")

    async def _finish(self, route: Route, outcome: Outcome) -> None:
        if outcome.error is not None:
            raise outcome.error
        self.wrote(route)
        if route.ddl:
            self.ddl = True
            if not self.state.in_block:
                await self._stale()

    async def _stale(self) -> None:
        """DDL is visible to other connections now: the catalog is read again before the
        next statement is planned (once for a run of DDL, as `pgbench -i` sends), by this
        worker and, told before the client hears back, every other one; routing
        does not wait for it (gateway.relay.routing sends writes on unknown tables to the
        first source on search_path, and reads on them to the planner)."""
        self.ddl = False
        await self.state.ctx.catalog_changed()

    # --- running statements --------------------------------------------------------------

    async def simple(self, route: Route, sql: str) -> PgLink | None:
        """Relay one statement of a simple Query; returns the link when the source now
        waits for COPY data. Its numbers go as parameters of a statement prepared once
        per shape, when they can (`gateway.relay.literals`)."""
        self._check(route, sql)
        link = await self.link(route.source)
        self.pin(route)
        lifted = self.lifted(route, sql)
        if lifted is not None:
            try:
                statement = await self.prepared_on(link, lifted.sql, lifted.oids)
            except PgError as err:
                raise unlifted(err, lifted) from None
            prefix, quiet = self.prefix(link)
            outcome = await link.relay(prefix + lifted_execute(statement.name, lifted), self.state,
                                       ready=1 + quiet, quiet=quiet)
            outcome.error = unlifted(outcome.error, lifted)
            if stale_plan(outcome.error) and link.status == "I":
                # The table changed shape since the statement was prepared: a Query
                # has no such plan, so this one runs as written (and is prepared anew
                # next time).
                link.statements.pop((lifted.sql, lifted.oids), None)
                route = spelled_out(self.state.ctx.router, route, sql)
                outcome = await link.relay(w.query(route.sql or sql), self.state)
                outcome.error = unspelled(self.state.ctx.router, route, sql, outcome.error)
        else:
            prefix, quiet = self.prefix(link)
            outcome = await link.relay(prefix + w.query(route.sql or sql), self.state,
                                       ready=1 + quiet, quiet=quiet)
            outcome.error = unspelled(self.state.ctx.router, route, sql, outcome.error)
        if outcome.copy_in:
            return link
        await self._finish(route, outcome)
        return None

    def lifted(self, route: Route, sql: str) -> Lifted | None:
        """`sql` with its numbers as parameters, for statements that may be sent so."""
        if route.sql is not None or route.copy_in or route.verb not in LIFTED_VERBS \
                or self.state.settings.values["fedgate.parameterize"] != "on":
            return None
        lifted = lift(sql)
        if lifted is None or not route.respelled:
            return lifted
        # The lifted text is the shape's: respelled once for all its statements.
        respelling = self.state.ctx.router.respell(lifted.sql, route.source)
        return None if respelling is None else lifted.respelled_as(respelling)

    async def copy_done(self, route: Route, link: PgLink, failure: str | None) -> None:
        message = w.COPY_DONE if failure is None else w.copy_fail(failure)
        outcome = await link.relay(message, self.state)
        await self._finish(route, outcome)

    async def prepare(self, route: Route, sql: str, param_oids: tuple[int, ...]) -> RemoteStatement:
        """`sql` prepared on its source, on the route `spelled_out` gave."""
        link = await self.link(route.source)
        try:
            return await self.prepared_on(link, route.sql or sql, param_oids)
        except PgError as err:
            raise unspelled(self.state.ctx.router, route, sql, err) from None

    async def prepared_on(self, link: PgLink, sql: str, param_oids: tuple[int, ...]) -> RemoteStatement:
        """`link`'s statement for `sql`, prepared there with the client's settings sent
        ahead when it is new. (The settings are asked for only then: asking marks them
        sent, and a statement found prepared sends nothing.)"""
        found = link.statements.get((sql, param_oids))
        if found is not None:
            return found
        return await link.prepare(sql, param_oids, *self.prefix(link, begin=False))

    async def execute(self, portal: Portal) -> None:
        prepared = portal.statement
        route = prepared.route
        assert route is not None
        self._check(route, prepared.sql)
        link = await self.link(route.source)
        self.pin(route)
        statement = await link.prepare(route.sql or prepared.sql, prepared.declared_oids)
        if prepared.remote is not None and result_type(statement) != result_type(prepared.remote):
            # Described to the client with other columns (the table changed shape since):
            # PostgreSQL's own answer, by which drivers know to prepare it again.
            raise PgError(FEATURE_NOT_SUPPORTED, "cached plan must not change result type",
                          routine="RevalidateCachedQuery")
        prefix, quiet = self.prefix(link)
        payload = (prefix + w.bind("", statement.name, portal.param_formats, portal.raw_params,
                                   portal.formats) + w.execute("", 0) + w.SYNC)
        outcome = await link.relay(payload, self.state, ready=1 + quiet, quiet=quiet)
        await self._finish(route, outcome)

    async def write_elsewhere(self, route: Route, params: list[Any], typed: Any = None) -> writes.WriteResult:
        """A write to a SQLite or MySQL source (`typed`: its RETURNING's schema); inside a
        block, on a connection the block holds until COMMIT/ROLLBACK (with its savepoints)."""
        entry, writer = self.state.ctx.catalog.sources.get(route.source), await self.block_writer(route)
        return await writes.write(self.state.ctx.sources[route.source], route, params, writer,
                                  entry.tables if entry is not None else None, typed)

    async def block_writer(self, route: Route) -> writes.Writer | None:
        """After the checks of a write (`_check`), the SQLite/MySQL connection the block
        holds on the route's source, opened with its savepoints on first use; None
        outside a block. The block writes to that source from now on."""
        self._check(route, None)
        if not self.state.in_block:
            return None
        writer = await self.writers.writer(self.state.ctx.sources, route, self.state.savepoints)
        self.writer = route.source
        return writer

    async def block_link(self, route: Route) -> tuple[PgLink, tuple[bytes, int]]:
        """A move into a PostgreSQL source over the session's link (after `_check`): the
        link and what goes ahead of its first command; a block writes there from now."""
        self._check(route, None)
        link = await self.link(route.source)
        if self.state.in_block:
            self.writer = route.source
        return link, self.prefix(link)

    # --- transaction control -------------------------------------------------------------

    def block_began(self, sql: str) -> None:
        """BEGIN, as the client said it: sent ahead on each source the block reaches."""
        self.begin_sql = sql

    def wrote(self, route: Route) -> None:
        """`route`'s statement succeeded: in a block, the block writes to its source."""
        if route.writes and self.state.in_block:
            self.writer = route.source

    def block_ended(self) -> None:
        """The block's COMMIT or ROLLBACK is done: it writes nowhere now."""
        self.writer = None

    def repeat_link(self, source: str, in_block: bool, writes: bool,
                    kept_in_transaction: bool | None) -> PgLink | None:
        """The link to `source` a repeat of the express lane may go to: None when a block's
        write would reach a second source (0A000, the task's to report), or the block has
        (not) reached a source (`active`) where the repeat was kept with(out) one."""
        if in_block and writes and self.writer not in (None, source):
            return None
        if kept_in_transaction is not None and (in_block and self.active) != kept_in_transaction:
            return None
        return self.links.get(source)

    def ending_links(self) -> list[PgLink] | None:
        """The links a block's COMMIT or ROLLBACK goes to, when it ends nothing else (no
        other kind of source's writer, no DDL to read the catalog again after)."""
        return None if self.writers or self.ddl else self.in_transaction()

    def in_transaction(self) -> list[PgLink]:
        touched = [link for link in self.links.values() if link.status != "I" and not link.broken]
        # The source that was written to commits last: a failure before it leaves no write.
        return sorted(touched, key=lambda link: link.source == self.writer)

    async def end(self, commit: bool) -> None:
        """COMMIT (or ROLLBACK) on every source the block touched."""
        command = "COMMIT" if commit and not self.state.failed else "ROLLBACK"
        error = await self.writers.finish(command == "COMMIT")  # one writer at most: see _check
        for link in self.in_transaction():
            outcome = await link.simple(command if error is None else "ROLLBACK")
            error = error or outcome.error
        self.block_ended()
        if self.ddl:
            await self._stale()
        if error is not None:
            raise error

    async def savepoint(self, kind: str, name: str) -> None:
        command = writes.savepoint_sql(kind, name, "postgres")
        for link in self.in_transaction():
            outcome = await link.simple(command)
            if outcome.error is not None:
                raise outcome.error
        await self.writers.savepoint(kind, name)

    def set_transaction(self, modes: str) -> None:
        """SET TRANSACTION `modes` (an isolation level, DEFERRABLE: words the session
        checked) goes to each source with the block's BEGIN: 25001 once one has it."""
        if self.active:
            raise PgError(ACTIVE_SQL_TRANSACTION, "SET TRANSACTION ISOLATION LEVEL must be called before any query")
        self.begin_sql = f"{self.begin_sql}; SET TRANSACTION {modes}"

    def reset(self) -> None:
        """DISCARD ALL: give the links back (a pinned one is closed: its temp tables go)."""
        self.close()

    def close(self) -> None:
        self.release_adopted()
        links, self.links = self.links, {}
        for source, link in links.items():
            self._drop(source, link)
        self.writer = None

    async def aclose(self) -> None:
        """The session ends: whatever a block held is rolled back."""
        await self.writers.abandon()
        self.close()

