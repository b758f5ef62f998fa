"""SQL cursors: DECLARE, FETCH, MOVE and CLOSE, answered by the session.

psycopg's named cursors, psycopg2's (and so SQLAlchemy's `stream_results`) read large
results this way: `DECLARE c CURSOR FOR <query>` inside a transaction block, then
`FETCH FORWARD n FROM c` until it returns fewer rows, then `CLOSE c`. As in PostgreSQL a
cursor is a portal with a name: the query is planned at DECLARE (so its errors show
there), starts at the first FETCH, and each FETCH takes the next rows off its result
stream, so the result is never held whole. psycopg asks for a cursor's columns with a
Describe of the portal, which works because the cursor lives among the portals.

Cursors only move forward. A backward move on a cursor gets PostgreSQL's own error
(55000, "cursor can only scan forward"); SCROLL cursors, which would need the result kept,
are refused at DECLARE (0A000). A WITH HOLD cursor outlives its transaction, unless its
query reads through the transaction block's own source connections (refused at DECLARE).
`CursorMixin` builds on `gateway.session.core.SessionCore`.
"""

from __future__ import annotations

import pyarrow as pa

from pgwire.errors import (DUPLICATE_CURSOR, FEATURE_NOT_SUPPORTED, INVALID_CURSOR_NAME,
                            NO_ACTIVE_SQL_TRANSACTION, PgError)
from gateway.relay.block_executor import executor_for
from gateway.session.core import SessionCore
from gateway.state.portals import Portal, Prepared
from pgwire.protocol import encoder
from pgwire.types.rows import resolve_formats, row_description
from gateway.state.statements import Utility

OBJECT_NOT_IN_PREREQUISITE_STATE = "55000"
_BACKWARD = ("PRIOR", "FIRST", "LAST", "ABSOLUTE", "RELATIVE", "BACKWARD")


def forward_count(direction: str) -> int:
    """Rows a FETCH/MOVE direction asks for, moving forward (0: all that are left)."""
    words = direction.split()
    if words[0] in _BACKWARD or words[-1].startswith("-"):
        raise PgError(OBJECT_NOT_IN_PREREQUISITE_STATE, "cursor can only scan forward",
                      hint="Declare it with SCROLL option to enable backward scan.")
    count = words[-1] if words[-1] not in ("NEXT", "FORWARD") else "1"
    if count == "ALL":
        return 0
    if int(count) == 0:
        raise PgError(FEATURE_NOT_SUPPORTED, "FETCH of the current row (a count of 0) is not "
                      "supported by fedgate")
    return int(count)


class CursorMixin(SessionCore):
    async def declare(self, portal: Portal, utility: Utility) -> None:
        name, query = utility.name or "", utility.value or ""
        if "SCROLL" in utility.options:
            raise PgError(FEATURE_NOT_SUPPORTED, "SCROLL cursors are not supported by fedgate "
                          "(cursors read forward only)")
        hold = "HOLD" in utility.options
        if not self.in_block and not hold:
            raise PgError(NO_ACTIVE_SQL_TRANSACTION,
                          "DECLARE CURSOR can only be used in transaction blocks")
        if name in self.portals:
            raise PgError(DUPLICATE_CURSOR, f'cursor "{name}" already exists')
        inner = await self.prepare(query, portal.statement.param_oids)
        if inner.plan is None:
            raise PgError(FEATURE_NOT_SUPPORTED, "DECLARE CURSOR must be given a query")
        if hold and executor_for(self.links, inner.plan) is not None:
            raise PgError(FEATURE_NOT_SUPPORTED, "a WITH HOLD cursor over a source this "
                          "transaction block has used is not supported by fedgate")
        binary = "BINARY" in utility.options
        self.portals[name] = Portal(inner, portal.params, (1,) if binary else (0,), holdable=hold)
        self.write(encoder.command_complete("DECLARE CURSOR"))
        portal.ran_to_end()

    async def fetch(self, portal: Portal, utility: Utility, describe: bool) -> None:
        """FETCH or MOVE: the next rows of the cursor, sent (FETCH) or skipped (MOVE)."""
        cursor = self._cursor(utility.name or "")
        count = forward_count(utility.value or "NEXT")
        move = utility.kind == "move"
        schema = await self._cursor_schema(cursor)
        # A FETCH through the extended protocol answers in the formats of its own Bind.
        formats = resolve_formats(portal.formats or cursor.formats, len(schema))
        if describe and not move:
            self.write(row_description(schema, formats))
        sent = 0
        if not cursor.done:
            sent, _ = await self.write_rows(cursor, count, formats, discard=move)
        self.write(encoder.command_complete(f"{'MOVE' if move else 'FETCH'} {sent}"))
        portal.ran_to_end()

    def close_cursor(self, portal: Portal, utility: Utility) -> None:
        if utility.name is not None:
            self._cursor(utility.name)  # an unknown name is an error
            names = [utility.name]
        else:  # CLOSE ALL: every cursor, not the portal running this statement
            names = [name for name, open_ in self.portals.items() if open_ is not portal]
        for name in names:
            self.close_later(self.portals.pop(name))
        self.write(encoder.command_complete("CLOSE CURSOR"))
        portal.ran_to_end()

    def _cursor(self, name: str) -> Portal:
        cursor = self.portals.get(name)
        if cursor is None:
            raise PgError(INVALID_CURSOR_NAME, f'cursor "{name}" does not exist')
        return cursor

    async def _cursor_schema(self, cursor: Portal) -> pa.Schema:
        if cursor.stream is None and not cursor.done:
            await self.start(cursor)
        if cursor.stream is not None:
            return cursor.stream.schema
        schema = await self.describe(cursor.statement)
        assert schema is not None
        return schema

    async def fetch_schema(self, prepared: Prepared) -> pa.Schema | None:
        """What Describe says of a FETCH statement: its cursor's columns (none for MOVE)."""
        utility = prepared.utility
        assert utility is not None
        if utility.kind != "fetch":
            return None
        return await self._cursor_schema(self._cursor(utility.name or ""))
