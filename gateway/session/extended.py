"""The extended query protocol's messages for a session: Parse, Bind, Describe, Execute, Close.

A statement is relayed (`session_relay`), answered by the session itself (utility), or
planned; these handlers keep the session's named statements and portals and hand each
kind to its road. Sync, error recovery and the simple Query live in `gateway.session.session`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway import pg_catalog
from pgwire.errors import (DUPLICATE_CURSOR, DUPLICATE_PREPARED_STATEMENT, PROTOCOL_VIOLATION,
                            SYNTAX_ERROR, PgError)
from pgwire.types.table import decode_param
from gateway.state.portals import Portal
from pgwire.protocol import encoder
from pgwire.protocol import messages as m
from pgwire.types.rows import resolve_formats, row_description
from gateway.session.relay import relayed_description
from gateway.state.statements import split_statements

if TYPE_CHECKING:
    from gateway.session.session import Session


class ExtendedMixin:
    async def _on_parse(self: Session, message: m.Parse) -> None:
        if message.name and message.name in self.statements:
            raise PgError(DUPLICATE_PREPARED_STATEMENT,
                          f'prepared statement "{message.name}" already exists')
        # Clients that re-Parse the unnamed statement for every query (pgbench -M extended,
        # most drivers) get the relayed statement they had: routing it again changes nothing.
        key = self.relay_key(message)
        reused = self._relayed.get(key)
        if reused is not None and not self.failed:
            self.statements[message.name] = reused
            self.write(encoder.parse_complete())
            return
        statements = split_statements(message.query)
        if len(statements) > 1:
            raise PgError(SYNTAX_ERROR, "cannot insert multiple commands into a prepared statement")
        sql = statements[0] if statements else ""
        route = await self._route_fresh(sql) if sql else None
        prepared = await self._prepare_relay(route, sql, message.param_types) if route else None
        if prepared is None:
            prepared = await self._prepare(sql, message.param_types)
        elif prepared.route is not None and prepared.route.kind == "postgres" and prepared.route.sql is None:
            if len(self._relayed) >= 256:
                self._relayed.clear()
            self._relayed[key] = prepared
        self.statements[message.name] = prepared
        self.write(encoder.parse_complete())

    def relay_key(self: Session, message: m.Parse) -> tuple:
        """What a relayed statement's Parse depends on (the `_relayed` cache's key)."""
        return self.relay_key_for(message.query, message.param_types)

    def relay_key_for(self: Session, query: str, param_types: tuple[int, ...]) -> tuple:
        values = self.settings.values
        return (query, param_types, self.ctx.catalog.version, values["search_path"],
                values["fedgate.relay"], self.in_block and self.links.active)

    async def _on_bind(self: Session, message: m.Bind) -> None:
        prepared = self._statement(message.statement)
        self._check_not_failed(prepared)
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
        params = [decode_param(oid, fmt, data, index=i + 1, timezone=self.settings.timezone)
                  for i, (oid, fmt, data) in enumerate(zip(prepared.param_oids, formats, message.params))]
        old = self.portals.pop(message.portal, None)
        if old is not None:
            await old.close()
        self.portals[message.portal] = Portal(prepared, params, message.result_formats)
        self.write(encoder.bind_complete())

    async def _on_describe(self: Session, message: m.Describe) -> None:
        if message.kind == "S":
            prepared = self._statement(message.name)
            self.write(encoder.parameter_description(prepared.param_oids))
            if prepared.route is not None:
                self.write(relayed_description(prepared, ()))
                return
            schema = await self._describe(prepared)
            self.write(row_description(schema, ()) if schema is not None else encoder.no_data())
            return
        portal = self._portal(message.name)
        prepared = portal.statement
        if prepared.route is not None:
            self.write(relayed_description(prepared, portal.formats))
            return
        if prepared.utility is not None or prepared.empty:
            schema = await self._describe(prepared)
        else:
            self._check_not_failed(prepared)
            await self._cancellable(self._start(portal))
            schema = portal.stream.schema if portal.stream is not None else prepared.row_schema
        self.write(row_description(schema, portal.formats) if schema is not None else encoder.no_data())

    async def _on_execute(self: Session, message: m.Execute) -> None:
        portal = self._portal(message.portal)
        pg_catalog.note_query(self, portal.statement.sql)  # for pg_stat_activity
        if portal.statement.route is not None:
            await self._cancellable(self._relay(portal, message.max_rows))
            return
        await self._cancellable(self._execute(portal, message.max_rows, describe=False))

    async def _on_close(self: Session, message: m.Close) -> None:
        if message.kind == "S":
            self.statements.pop(message.name, None)
        else:
            portal = self.portals.pop(message.name, None)
            if portal is not None:
                await portal.close()
        self.write(encoder.close_complete())
