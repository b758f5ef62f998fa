"""The relay side of a session: where a statement goes, and running it on a link.

`gateway.relay.routing` decides (asked through `SessionLinks.route`); statements of one
PostgreSQL source are relayed over the session's links (`gateway.relay.links`), writes to
SQLite/MySQL go through `connectors.writes`, and a relayed read fetched in pieces falls
back to the planner. `RelayMixin` builds on `gateway.session.core.SessionCore`;
`implicit_transaction` says when a multi-statement Query runs as one transaction.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pyarrow as pa
from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.table import pg_type_by_oid
from gateway.relay.relayed import spelled_out
from gateway.state.portals import Portal, Prepared
from pgwire.protocol import encoder
from pgwire.types.rows import resolve_formats
from gateway.session.core import SessionCore
from gateway.session.enum_params import decode_params
from gateway.session.move_statements import final_probe, last_param
from gateway.state.route import Route


class RelayMixin(SessionCore):
    async def route_fresh(self, sql: str) -> Route | None:
        """`SessionLinks.route`, on a catalog read again if DDL ran since the last read (a
        table created since is found, one dropped is not routed to).

        Read now, after the client's statement arrived, rather than only when the route
        misses: a session that does nothing but relay (each pgbench client after a CREATE
        INDEX or DDL on another table) would otherwise keep the catalog marked stale, and
        the express lane, which repeats statements only on a fresh catalog, would stay off
        for the rest of the session. One read serves every session waiting on it."""
        if self.ctx.catalog_stale:
            await self.ctx.refresh_if_stale()
        return self.links.route(sql)

    async def prepare_relay(self, route: Route, sql: str, declared: tuple[int, ...]) -> Prepared | None:
        """A statement relayed to its PostgreSQL source, described by the source. Reads
        whose result types our catalog cannot describe to clients take the planner."""
        if route.copy_in:
            raise PgError(FEATURE_NOT_SUPPORTED, "COPY FROM STDIN is supported in simple queries only")
        if route.move:
            # Run whole at Execute (`relay`), described as NoData; its query is planned
            # now for its parameters' types, and again at Execute with their values.
            assert route.tree is not None
            if route.tree.args.get("returning") is not None and route.kind == "postgres":
                # Described by PostgreSQL itself, its rows answered there in the portal's
                # formats (connectors.postgres.link_bulk_write).
                probe = final_probe(route.tree, getattr(self.ctx.sources[route.source], "schema", "public"))
                remote = await self.links.prepare(replace(route, sql=None), probe, ())
                return Prepared(sql, None, None, await self.move_param_oids(route, tuple(declared)),
                                route=route, remote_fields=remote.fields, remote=remote,
                                declared_oids=tuple(declared))
            return Prepared(sql, None, None, await self.move_param_oids(route, tuple(declared)),
                            row_schema=await self.returning_schema(route),
                            route=route, declared_oids=tuple(declared))
        self.check_not_failed(Prepared(sql, None, None, ()))
        if route.kind != "postgres":
            assert route.tree is not None
            oids = tuple(declared[i] if i < len(declared) and declared[i] else 25
                         for i in range(last_param(route.tree)))
            return Prepared(sql, None, None, oids, row_schema=await self.returning_schema(route),
                            route=route, declared_oids=tuple(declared))
        route = spelled_out(self.ctx.router, route, sql)  # a prepared text is sent whole
        remote = await self.links.prepare(route, sql, tuple(declared))
        if not route.writes and remote.fields and any(pg_type_by_oid(f.type_oid) is None
                                                      for f in remote.fields):
            return None
        return Prepared(sql, None, None, remote.param_oids, route=route,
                        remote_fields=remote.fields, remote=remote, declared_oids=tuple(declared))

    async def relay(self, portal: Portal, max_rows: int) -> None:
        prepared = portal.statement
        if portal.done:
            self.write(encoder.command_complete("SELECT 0"))
            return
        if prepared.route is not None and prepared.route.move:
            await self.run_move(prepared.route, prepared.sql, portal)
            portal.ran_to_end()
            return
        if prepared.route is not None and prepared.route.kind != "postgres":
            await self.write_elsewhere(prepared.route, self.decoded(portal), describe=False,
                                       formats=portal.formats, typed=prepared.row_schema)
            portal.ran_to_end()
            return
        if max_rows and prepared.remote_fields and not (prepared.route and prepared.route.writes):
            # A read fetched in pieces: the relay sends whole answers, the planner's
            # portals can stop and resume.
            await self.plan_instead(portal)
            await self.execute(portal, max_rows, describe=False)
            return
        await self.links.execute(portal)
        portal.ran_to_end()

    async def plan_instead(self, portal: Portal) -> None:
        prepared = portal.statement
        declared = tuple(self.type_name(oid) for oid in prepared.param_oids)
        plan = await self.plan_query(prepared.sql, declared)
        portal.statement = Prepared(prepared.sql, None, plan, prepared.param_oids)
        portal.params = self.decoded(portal)  # by the plan's types (an enum's labels)

    def decoded(self, portal: Portal) -> list[Any]:
        oids = portal.statement.param_oids
        formats = resolve_formats(portal.param_formats, len(portal.raw_params))
        plan = portal.statement.plan
        return decode_params(plan.param_types if plan is not None else (), oids, formats,
                             portal.raw_params, self.settings.timezone)

    async def write_elsewhere(self, route: Route, params: list[Any], *, describe: bool,
                              formats: tuple[int, ...] = (), typed: pa.Schema | None = None) -> None:
        """A write to a SQLite or MySQL source, rendered in its dialect (gateway.relay.links);
        `typed`: its RETURNING's columns as described (in the simple protocol, found now)."""
        if typed is None:
            typed = await self.returning_schema(route)
        self.answer_write(await self.links.write_elsewhere(route, params, typed), describe, formats)
        if route.ddl:
            await self.ctx.catalog_changed()

    async def returning_schema(self, route: Route) -> pa.Schema | None:
        """The columns of a SQLite or MySQL write's RETURNING, typed as PostgreSQL would
        type them: the planner's description of the same list read from the target."""
        returning = route.tree.args.get("returning") if route.tree is not None else None
        if returning is None:
            return None
        if returning.find(exp.Placeholder, exp.Parameter):
            raise PgError(FEATURE_NOT_SUPPORTED, f"a parameter in RETURNING of a write to a "
                          f"{route.kind} source is not supported")
        target = route.tree.this.this if isinstance(route.tree.this, exp.Schema) else route.tree.this
        target = target.copy()
        target.set("db", exp.to_identifier(route.source))  # the catalog's name of it
        # (SQLite's RETURNING reads the modified table only, not an UPDATE's FROM tables;
        # MySQL's takes no UPDATE, nor a DELETE of several tables)
        read = exp.select(*(e.copy() for e in returning.expressions)).from_(target)
        return await self.describe(await self.prepare(read.sql(dialect="postgres"), ()))


_CONTROL = re.compile(r"\s*(BEGIN|START|COMMIT|END|ROLLBACK|ABORT|SAVEPOINT|RELEASE|PREPARE\s+TRANSACTION|"
                      r"COPY|VACUUM|CREATE\s+DATABASE|DROP\s+DATABASE|CREATE\s+INDEX\s+CONCURRENTLY)\b",
                      re.IGNORECASE)


def implicit_transaction(statements: list[str]) -> bool:
    """Whether a multi-statement Query runs as one implicit transaction here: not when it
    controls transactions itself, copies, or runs what cannot be inside a block."""
    return len(statements) > 1 and not any(_CONTROL.match(sql) for sql in statements)
