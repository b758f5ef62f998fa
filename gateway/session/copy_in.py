"""COPY FROM STDIN for a session: relayed to PostgreSQL, or taken in for SQLite/MySQL.

A COPY suspends the simple Query it belongs to: the session waits for CopyData and runs
the Query's remaining statements once CopyDone (or CopyFail) arrives. The relayed COPY
is `SessionState.copy_in`, the local one `SessionState.copy_local`
(`gateway.session.copy_local` parses and writes it).
"""

from __future__ import annotations

from connectors import writes
from pgwire.protocol import client as pg_wire
from gateway.session import copy_local as copying
from pgwire.errors import FEATURE_NOT_SUPPORTED, QUERY_CANCELED, PgError, from_exception
from pgwire.protocol import encoder
from pgwire.protocol import messages as m
from gateway.session.core import SessionCore
from gateway.state.route import Route
from gateway.state.session import ClientGone


class CopyInMixin(SessionCore):
    async def start_local_copy(self, route: Route, sql: str, rest: list[str]) -> None:
        """COPY FROM STDIN into a SQLite/MySQL source: the gateway takes the data itself."""
        writes.check_writable(route.kind, route.source)
        self.check_writable(sql)
        if self.in_block:
            raise PgError(FEATURE_NOT_SUPPORTED, f"COPY into {route.kind} sources cannot be part of a "
                          "transaction block")
        entry = self.ctx.catalog.sources[route.source]
        target = copying.parse_copy(sql, route.source, route.kind, [])
        info = entry.tables.get(target.table)
        if info is None:
            raise PgError("42P01", f'relation "{target.table}" does not exist')
        if not target.columns:
            target.columns = list(info.schema.names)
        target.types = {f.name: f.type for f in info.schema}
        writer = copying.CopyWriter(self.ctx.sources[route.source], target)
        await writer.open()
        self.copy_local = (writer, rest)
        self.write(encoder.copy_in_response(0, [0] * len(target.columns)))
        await self.flush()

    async def on_copy_data(self, message: m.CopyData) -> None:
        if self.copy_in is not None:
            await self.copy_in.link.copy_in(pg_wire.copy_data(message.data))
        elif self.copy_local is not None:
            writer = self.copy_local[0]
            try:
                chunk = copying.take_lines(writer.target, message.data, final=False)
                if chunk:
                    await writer.write(copying.parse_batch(writer.target, chunk))
            except PgError as err:
                self.copy_error = self.copy_error or err

    async def on_copy_done(self, message: m.CopyDone) -> None:
        await self._end_copy(None)

    async def on_copy_fail(self, message: m.CopyFail) -> None:
        await self._end_copy(f"COPY from stdin failed: {message.message}")

    async def _end_local_copy(self, failure: str | None) -> None:
        assert self.copy_local is not None
        (writer, rest), self.copy_local = self.copy_local, None
        error, self.copy_error = self.copy_error, None
        try:
            if error is None and failure is None:
                chunk = copying.take_lines(writer.target, b"", final=True)
                if chunk:
                    await writer.write(copying.parse_batch(writer.target, chunk))
        except PgError as err:
            error = err
        error = error or (PgError(QUERY_CANCELED, failure) if failure else None)
        await writer.finish(commit=error is None)
        if error is not None:
            self.report(error)
            finished = True
        else:
            self.write(encoder.command_complete(f"COPY {writer.target.rows}"))
            finished = await self.run_statements(rest)
        if finished:
            self.query_done()
            await self.flush()

    async def _end_copy(self, failure: str | None) -> None:
        if self.copy_local is not None:
            await self._end_local_copy(failure)
            return
        state, self.copy_in = self.copy_in, None
        if state is None:
            return  # PostgreSQL ignores copy messages outside COPY too
        try:
            await self.cancellable(self.links.copy_done(state.route, state.link, failure))
            finished = await self.run_statements(state.rest)
        except ClientGone:
            raise
        except Exception as exc:
            self.report(from_exception(exc))
            finished = True
        if finished:
            self.query_done()
            await self.flush()

    # --- extended query -------------------------------------------------------------------
