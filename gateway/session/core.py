"""The session's shared machinery: planning, describing and running a statement's portal.

`SessionCore` adds to the session's state (`gateway.state.session.SessionState`) what
every road of the session uses: the links to its PostgreSQL sources (`gateway.relay.links`),
planning a statement (`prepare`, `plan_query`), and running a planned portal and
sending its rows (`start`, `execute`, `write_rows`). The handler classes build on it:
`gateway.session.relay` (relayed statements), `extended` (Parse/Bind/Describe/Execute/
Close), `copy_in` (COPY FROM STDIN), `cursors` and `utility` (statements the session
answers itself); `gateway.session.session.Session` puts them together.
"""

from __future__ import annotations

import asyncio
import functools

import pyarrow as pa

from connectors import writes
from connectors.postgres.roles import SOURCE_ROLES, SOURCE_SETTINGS
from connectors.time_zone import TIMEZONE
from gateway import pg_catalog
from gateway.pg_catalog.callable import CALLABLE_FUNCTIONS
from gateway.relay.block_executor import executor_for
from gateway.relay.links import SessionLinks
from gateway.relay.literals import lift
from gateway.session.enum_params import TEXT_ARRAY_OID, TEXT_OID, enum_oid
from gateway.state import logs
from gateway.state.activity import activity_of
from gateway.state.activity import note_stream
from gateway.state.context import PlanExecutor, ServerContext
from gateway.state.portals import Portal, Prepared
from gateway.state.route import Route
from gateway.state.session import FLUSH_BYTES, SessionState
from gateway.state.statements import is_execute, parse_utility
from pgwire.errors import (FEATURE_NOT_SUPPORTED, SUCCESSFUL_COMPLETION, UNDEFINED_COLUMN,
                           UNDEFINED_TABLE, PgError)
from pgwire.protocol import encoder
from pgwire.types.params import decode_param
from pgwire.types.rows import encode_rows, resolve_formats, row_description
from pgwire.types.table import pg_type_by_name, pg_type_by_oid
from planner import PlanSettings, QueryPlan
from planner.source_enums import EnumArray, EnumText

# Result batches above this many rows are encoded on a worker thread (pyarrow releases
# the GIL), so one large result does not stall every other session on the event loop.
OFFLOAD_ROWS = 8192


class SessionCore(SessionState):
    def __init__(self, ctx: ServerContext, writer: asyncio.StreamWriter,
                 startup: dict[str, str], pid: int, key: int) -> None:
        super().__init__(ctx, writer, startup, pid, key)
        self.links = SessionLinks(self)
        pg_catalog.bind_session(self)  # catalog queries of this connection answer for us
        # The planner's reads from PostgreSQL pools run under this user's source roles.
        SOURCE_ROLES.set(self.access.source_roles)

    # --- provided by the handler classes ------------------------------------------------

    async def execute_utility(self, portal: Portal, describe: bool) -> None:
        raise NotImplementedError  # gateway.session.utility.UtilityMixin

    async def utility_schema(self, prepared: Prepared) -> pa.Schema | None:
        raise NotImplementedError  # gateway.session.utility.UtilityMixin

    async def run_statements(self, statements: list[str]) -> bool:
        raise NotImplementedError  # gateway.session.session.Session

    async def run_prepared_sql(self, portal: Portal, describe: bool) -> None:
        raise NotImplementedError  # gateway.session.prepared_sql.PreparedSqlMixin (PREPARE, EXECUTE)

    async def explained_execute(self, sql: str) -> tuple[str, list, tuple[str | None, ...]]:
        raise NotImplementedError  # gateway.session.prepared_sql.PreparedSqlMixin (EXPLAIN EXECUTE)

    async def run_move(self, route: Route, sql: str, bound: Portal | None = None,
                       answer: bool = True, notes: list[str] | None = None) -> int:
        raise NotImplementedError  # gateway.session.moves.MoveMixin

    async def move_param_oids(self, route: Route, declared_oids: tuple[int, ...]) -> tuple[int, ...]:
        raise NotImplementedError  # gateway.session.moves.MoveMixin

    async def returning_schema(self, route: Route) -> pa.Schema | None:
        raise NotImplementedError  # gateway.session.relay.RelayMixin

    async def explain_move(self, route: Route, analyze: bool) -> list[str]:
        raise NotImplementedError  # gateway.session.moves.MoveMixin

    def statement_started(self, sql: str) -> None:
        """For pg_stat_activity, and the statement id of the lines logged until the next
        (gateway.state.logs); `gateway.state.activity.note_done` ends it."""
        pg_catalog.note_query(self, sql)
        logs.STATEMENT_ID.set(activity_of(self).statements)

    # --- planning and running -----------------------------------------------------------

    def reads_as_now(self) -> None:
        """The engine computes in the client's zone, and the planner's reads of PostgreSQL
        sources run with the session's settings they act on (connectors.postgres.roles),
        as the session has them now."""
        TIMEZONE.set(self.settings.timezone)
        SOURCE_SETTINGS.set(self.settings.forwarded)

    def plan_settings(self, declared: tuple[str | None, ...] = ()) -> PlanSettings:
        # PostgreSQL searches pg_catalog implicitly. It goes last here rather than first:
        # the planner takes current_schema() from the path's head.
        path = self.search_path  # without the sources this user may not see
        if "pg_catalog" not in path:
            path = (*path, "pg_catalog")
        # The zone is part of the plan (zone-dependent expressions stay off the sources)
        # and of what the engine computes in; setting it here too covers paths that run a
        # plan without start (COPY ... TO, EXPLAIN ANALYZE) on this session's task.
        self.reads_as_now()
        return PlanSettings(search_path=path, user=self.user,
                            database=self.database, version=self.ctx.version_string,
                            declared_param_types=declared, timezone=self.settings.timezone,
                            pre_aggregate=self.settings.values["fedgate.pre_aggregate"] == "on",
                            inlining=self.inlining,
                            functions=CALLABLE_FUNCTIONS,
                            hidden_schemas=self.hidden)

    async def prepare(self, sql: str, declared_oids: tuple[int, ...]) -> Prepared:
        if not sql:
            return Prepared(sql, None, None, tuple(declared_oids))
        utility = parse_utility(sql)
        declared = tuple(self.type_name(oid) for oid in declared_oids)
        if utility is not None:
            if utility.value and (utility.kind == "declare" or (
                    utility.kind == "explain" and not is_execute(utility.value)
                    and self.links.route(utility.value) is None)):
                # Planning errors show at Parse time; EXPLAIN and DECLARE take the query's
                # parameters.
                inner = await self.plan_query(utility.value, declared)
                return Prepared(sql, utility, None, await self.param_oids(inner, declared_oids))
            if utility.kind == "signal" and utility.value == "$1":  # its pid: int4 unless declared
                return Prepared(sql, utility, None, (declared_oids[0] if declared_oids and declared_oids[0] else 23,))
            return Prepared(sql, utility, None, tuple(declared_oids))
        self.check_not_failed(Prepared(sql, None, None, ()))
        epoch = self.ctx.schema_epoch  # read first: a change during planning re-plans once
        plan = await self.plan_query(sql, declared)
        return Prepared(sql, None, plan, await self.param_oids(plan, declared_oids), schema_epoch=epoch)

    async def prepare_by_shape(self, sql: str) -> tuple[Prepared, list] | None:
        """A simple Query's SELECT planned by its shape: its numbers lifted into parameters
        (gateway.relay.literals, each declared with the literal's own type), the plan the
        cache keeps for that shape, and the numbers as the parameters it runs with. None
        where the shape may not stand for the statement (planner.literal_shapes) or does
        not plan: the statement's text is then planned as written, and reports its own
        errors at the client's positions."""
        if sql.lstrip()[:6].upper() != "SELECT":
            return None
        lifted = lift(sql)
        if lifted is None:
            return None
        self.check_not_failed(Prepared(sql, None, None, ()))
        await self.ctx.refresh_if_stale()
        epoch = self.ctx.schema_epoch  # read first: a change during planning re-plans once
        settings = self.plan_settings(tuple(self.type_name(oid) for oid in lifted.oids))
        try:
            plan = self.ctx.plans.shape(lifted.sql, self.ctx.catalog, settings)
        except PgError:
            return None
        if plan is None or len(plan.param_types) != len(lifted.oids):
            return None
        zone = self.settings.timezone
        params = [decode_param(oid, 0, value, index=i + 1, timezone=zone)
                  for i, (oid, value) in enumerate(zip(lifted.oids, lifted.values))]
        return Prepared(lifted.sql, None, plan, lifted.oids, schema_epoch=epoch), params

    async def param_oids(self, plan: QueryPlan, declared_oids: tuple[int, ...]) -> tuple[int, ...]:
        """The OIDs a ParameterDescription gives: the declared ones, else the plan's types'
        (an enum's in the gateway's catalog, gateway.session.enum_params)."""
        found = []
        for i, name in enumerate(plan.param_types):
            if i < len(declared_oids) and declared_oids[i]:
                found.append(declared_oids[i])
            elif isinstance(name, (EnumText, EnumArray)):
                catalog = self.ctx.sources.get("pg_catalog")  # (None: no catalog, no enums)
                found.append((TEXT_OID if isinstance(name, EnumText) else TEXT_ARRAY_OID) if catalog is None
                             else await enum_oid(name, lambda source: catalog.row_type_oids(source, self.hidden)))  # type: ignore[attr-defined]
            else:
                found.append(self.type_oid(name))
        return tuple(found)

    async def plan_query(self, sql: str, declared: tuple[str | None, ...] = ()) -> QueryPlan:
        await self.ctx.refresh_if_stale()
        settings = self.plan_settings(declared)
        try:
            try:
                return self.ctx.plans.get(sql, self.ctx.catalog, settings)
            except PgError as err:
                # Maybe created since the last read (here, through another worker, or in
                # the source itself): look again before saying it does not exist.
                if err.sqlstate == UNDEFINED_TABLE:
                    self.ctx.offer_missing(err, settings.search_path)
                if err.sqlstate != UNDEFINED_TABLE or not await self.ctx.recheck_missing():
                    raise
                return self.ctx.plans.get(sql, self.ctx.catalog, self.plan_settings(declared))
        except PgError as err:
            if err.sqlstate != UNDEFINED_TABLE:
                raise
            # Not found in the sources that answered: a source that is down may have it.
            raise self.ctx.unavailable_instead(err, settings.search_path) from None

    @staticmethod
    def type_name(oid: int) -> str | None:
        found = pg_type_by_oid(oid) if oid else None
        return found.name if found else None

    @staticmethod
    def type_oid(name: str) -> int:
        found = pg_type_by_name(name)
        return found.oid if found else 25  # text

    async def announce_engine_start(self, executor: PlanExecutor, plan: QueryPlan, engine: str) -> None:
        """Tell the client, at once, when `plan` is about to wait for its engine to start
        (a cold Spark session takes 10-30 s): a NOTICE, flushed so that psql shows it
        while the statement waits (docs/design.md §6). A plan one source answers whole
        uses no engine and waits for none."""
        if plan.is_passthrough:
            return
        pending = executor.engines[engine].start_pending
        if pending is None:
            return
        self.write(encoder.notice_response("NOTICE", SUCCESSFUL_COMPLETION, pending))
        await self.flush()

    async def describe(self, prepared: Prepared) -> pa.Schema | None:
        if prepared.utility is not None:
            return await self.utility_schema(prepared)
        if prepared.plan is None:
            return None
        if prepared.row_schema is None:
            self.reads_as_now()
            executor = executor_for(self.links, prepared.plan) or self.ctx.executor
            engine = self.engine_for(prepared.plan)[0]
            await self.announce_engine_start(executor, prepared.plan, engine)
            prepared.row_schema = await executor.describe(prepared.plan, engine)
        return prepared.row_schema

    async def replan_if_reshaped(self, portal: Portal) -> None:
        """A plan prepared before tables may have changed shape is planned again before it
        runs; when its result columns changed, the client (which was told the old ones)
        gets PostgreSQL's answer, by which drivers know to prepare the statement again."""
        prepared = portal.statement
        if prepared.schema_epoch is None or (prepared.schema_epoch == self.ctx.schema_epoch
                                             and not self.ctx.catalog_stale):
            return
        epoch = self.ctx.schema_epoch
        declared = tuple(self.type_name(oid) for oid in prepared.param_oids)
        plan = await self.plan_query(prepared.sql, declared)
        told = prepared.row_schema
        if told is not None:
            now = await self.describe(Prepared(prepared.sql, None, plan, prepared.param_oids))
            assert now is not None
            if now.names != told.names or now.types != told.types:
                raise PgError(FEATURE_NOT_SUPPORTED, "cached plan must not change result type",
                              routine="RevalidateCachedQuery")
        # In place: the session's named statement is this object, planned once per change.
        prepared.plan, prepared.schema_epoch = plan, epoch

    async def start(self, portal: Portal) -> None:
        if portal.stream is None and not portal.done and portal.statement.plan is not None:
            await self.replan_if_reshaped(portal)
            plan = portal.statement.plan
            self.reads_as_now()
            executor = executor_for(self.links, plan) or self.ctx.executor
            engine = self.engine_for(plan)[0]
            await self.announce_engine_start(executor, plan, engine)
            portal.stream = await executor.run(plan, portal.params, engine, self.dynamic_filtering,
                                               self.statement_memory())
            note_stream(self, portal.stream)  # what it did, if the status page keeps it

    async def execute(self, portal: Portal, max_rows: int, *, describe: bool) -> None:
        prepared = portal.statement
        if prepared.empty:
            self.write(encoder.empty_query_response())
            return
        self.check_not_failed(prepared)
        if prepared.utility is not None:
            await self.execute_utility(portal, describe)
            return
        if portal.done:
            self.write(encoder.command_complete("SELECT 0"))
            return
        try:
            await self.start(portal)
            assert portal.stream is not None
            if describe:
                self.write(row_description(portal.stream.schema, portal.formats))
            await self.send_rows(portal, max_rows)
        except PgError as err:
            await portal.close()
            if err.sqlstate in (UNDEFINED_TABLE, UNDEFINED_COLUMN):
                # Planned with names a source no longer has (changed outside the gateway,
                # or a file removed): read the catalog again before the next plan.
                self.ctx.catalog_stale = True
            raise
        except BaseException:
            await portal.close()
            raise

    async def send_rows(self, portal: Portal, max_rows: int) -> None:
        formats = resolve_formats(portal.formats, len(portal.stream.schema))
        sent, exhausted = await self.write_rows(portal, max_rows, formats)
        self.write(encoder.command_complete(f"SELECT {sent}") if exhausted
                   else encoder.portal_suspended())

    def answer_write(self, result: writes.WriteResult, describe: bool,
                     formats: tuple[int, ...] = ()) -> None:
        """The answer of a SQLite or MySQL write: its RETURNING rows (described first in
        the simple protocol) in the client's `formats`, then its tag."""
        if result.rows is not None:
            if describe:
                self.write(row_description(result.rows.schema, formats))
            for batch in result.rows.combine_chunks().to_batches():
                self.write(encode_rows(batch, resolve_formats(formats, batch.num_columns),
                                       timezone=self.settings.timezone))
        self.write(encoder.command_complete(result.tag))

    async def write_rows(self, portal: Portal, max_rows: int, formats: list[int],
                          discard: bool = False) -> tuple[int, bool]:
        """DataRows of up to `max_rows` rows (0: all) of the portal's stream: how many were
        sent, and whether the stream ended (the portal is then closed). `discard` counts
        them without sending (MOVE)."""
        stream = portal.stream
        assert stream is not None
        timezone = self.settings.timezone
        loop = asyncio.get_running_loop()
        batches = aiter(stream)
        ahead: asyncio.Future[pa.RecordBatch | None] | None = None
        sent = 0
        try:
            while True:
                if portal.pending:
                    batch = portal.pending.pop()
                elif ahead is not None:
                    batch, ahead = await ahead, None
                else:
                    batch = await anext(batches, None)
                if batch is None:
                    await portal.close()
                    return sent, True
                if max_rows and sent + batch.num_rows > max_rows:
                    keep = max_rows - sent
                    portal.pending.append(batch.slice(keep))
                    batch = batch.slice(0, keep)
                if batch.num_rows > OFFLOAD_ROWS and not discard:
                    if not max_rows:
                        # The source produces the next batch while this one is encoded.
                        ahead = asyncio.ensure_future(anext(batches, None))
                    self.write(await loop.run_in_executor(
                        None, functools.partial(encode_rows, batch, formats, timezone=timezone)))
                elif not discard:
                    self.write(encode_rows(batch, formats, timezone=timezone))
                sent += batch.num_rows
                if self.buffered >= FLUSH_BYTES:
                    await self.flush()
                if max_rows and sent >= max_rows:
                    return sent, False
        finally:
            if ahead is not None and not ahead.done():
                ahead.cancel()
                await asyncio.wait([ahead])

    def discard_all(self) -> None:
        self.close_portals(keep_unnamed=False, keep_holdable=False)
        self.links.reset()
        self.relayed.clear()
        self.statements.clear()
        self.reset_setting("all")

    async def close(self) -> None:
        for portal in list(self.portals.values()):
            await portal.close()
        self.portals.clear()
        await self.links.aclose()
        if self.copy_local is not None:  # the client left mid-COPY: nothing of it stays
            writer, self.copy_local = self.copy_local[0], None
            await writer.finish(commit=False)
