"""The extended query protocol's messages for a session: Parse, Bind, Describe, Execute, Close.

A statement is relayed (`gateway.session.relay.RelayMixin`, under the SQL-level prepared
statements' `gateway.session.prepared_sql.PreparedSqlMixin`, which this builds on),
answered by the session itself (utility), or planned (`gateway.session.core`); these
handlers keep the session's named statements and portals and hand each kind to its road.
Sync, error recovery and the simple Query live in `gateway.session.session`.
"""

from __future__ import annotations

import time

from gateway import pg_catalog
from pgwire.errors import (DUPLICATE_CURSOR, DUPLICATE_PREPARED_STATEMENT, PROTOCOL_VIOLATION,
                            SYNTAX_ERROR, PgError, from_exception)
from gateway.state.activity import note_done
from gateway.state.portals import Portal, Prepared
from pgwire.protocol import encoder
from pgwire.protocol import messages as m
from pgwire.types.rows import resolve_formats, row_description
from gateway.relay.relayed import relayed_description
from gateway.session import observe
from gateway.session.enum_params import decode_params
from gateway.session.prepared_sql import PreparedSqlMixin
from gateway.state.statements import split_statements


class ExtendedMixin(PreparedSqlMixin):
    async def on_parse(self, message: m.Parse) -> None:
        if message.name and message.name in self.statements:
            raise PgError(DUPLICATE_PREPARED_STATEMENT,
                          f'prepared statement "{message.name}" already exists')
        # Clients that re-Parse the unnamed statement for every query (pgbench -M extended,
        # most drivers) get the relayed statement they had: routing it again changes nothing.
        key = self.links.relay_key(message.query, message.param_types)
        reused = self.relayed.get(key)
        if reused is not None and not self.failed:
            self.statements[message.name] = reused
            self.write(encoder.parse_complete())
            return
        statements = split_statements(message.query)
        if len(statements) > 1:
            raise PgError(SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")
        sql = statements[0] if statements else ""
        prepared = await self.prepare_text(sql, message.param_types)
        if prepared.route is not None and prepared.route.kind == "postgres" and (
                prepared.route.sql is None or prepared.route.respelled):  # (a text's own respelling)
            if len(self.relayed) >= 256:
                self.relayed.clear()
            self.relayed[key] = prepared
        if message.name:
            prepared.prepared_at = time.time()  # for pg_prepared_statements
        self.statements[message.name] = prepared
        self.write(encoder.parse_complete())

    async def on_bind(self, message: m.Bind) -> None:
        prepared = self.statement(message.statement)
        self.check_not_failed(prepared)
        if message.portal and message.portal in self.portals:
            raise PgError(DUPLICATE_CURSOR, f'cursor "{message.portal}" already exists')
        if len(message.params) != len(prepared.param_oids):
            raise PgError(PROTOCOL_VIOLATION,
                          f"bind message supplies {len(message.params)} parameters, but prepared "
                          f'statement "{message.statement}" requires {len(prepared.param_oids)}')
        if prepared.route is not None:
            old = self.portals.pop(message.portal, None)
            if old is not None:
                await old.close()
            self.portals[message.portal] = Portal(prepared, [], message.result_formats,
                                                  raw_params=list(message.params),
                                                  param_formats=tuple(message.param_formats))
            self.write(encoder.bind_complete())
            return
        formats = resolve_formats(message.param_formats, len(message.params))
        params = decode_params(_param_types(prepared), prepared.param_oids, formats, message.params,
                               self.settings.timezone)
        old = self.portals.pop(message.portal, None)
        if old is not None:
            await old.close()
        self.portals[message.portal] = Portal(prepared, params, message.result_formats)
        self.write(encoder.bind_complete())

    async def on_describe(self, message: m.Describe) -> None:
        if message.kind == "S":
            prepared = self.statement(message.name)
            self.write(encoder.parameter_description(prepared.param_oids))
            if prepared.utility is not None and prepared.utility.kind == "execute":
                self.write(await self.describe_execute(prepared, ()))
                return
            if prepared.route is not None:
                self.write(relayed_description(prepared, ()))
                return
            schema = await self.describe(prepared)
            self.write(row_description(schema, ()) if schema is not None else encoder.no_data())
            return
        portal = self.portal(message.name)
        prepared = portal.statement
        if prepared.route is not None:
            self.write(relayed_description(prepared, portal.formats))
            return
        if prepared.utility is not None and prepared.utility.kind == "execute":
            self.write(await self.describe_execute(prepared, portal.formats))
            return
        if prepared.utility is not None or prepared.empty:
            schema = await self.describe(prepared)
        else:
            self.check_not_failed(prepared)
            await self.cancellable(self.start(portal))
            schema = portal.stream.schema if portal.stream is not None else prepared.row_schema
        self.write(row_description(schema, portal.formats) if schema is not None else encoder.no_data())

    async def on_execute(self, message: m.Execute) -> None:
        portal = self.portal(message.portal)
        self.statement_started(portal.statement.sql)
        road, failed = observe.Road(portal.statement.sql), None
        road.prepared(self, portal.statement)
        try:
            if portal.statement.route is not None:
                await self.cancellable(self.relay(portal, message.max_rows))
                return
            await self.cancellable(self.execute(portal, message.max_rows, describe=False))
        except Exception as exc:  # counted by its SQLSTATE; Session.handle reports it
            failed = from_exception(exc)
            raise
        finally:
            note_done(self)
            observe.ended(self, road, failed)

    async def on_close(self, message: m.Close) -> None:
        if message.kind == "S":
            self.statements.pop(message.name, None)
        else:
            portal = self.portals.pop(message.name, None)
            if portal is not None:
                await portal.close()
        self.write(encoder.close_complete())


def _param_types(prepared: Prepared) -> tuple[str, ...]:
    """The plan's types of the parameters (an enum's labels among them); none without one."""
    return prepared.plan.param_types if prepared.plan is not None else ()
