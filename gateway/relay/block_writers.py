"""The SQLite and MySQL connections a transaction block holds (`gateway.relay.links`).

Outside a block, a write to such a source commits by itself (`connectors.writes`). Inside
one, the first write there opens a connection in a transaction, with the block's savepoints
made again on it, and the block keeps it until COMMIT or ROLLBACK, so later statements of
the block see their writes and a ROLLBACK undoes them.
"""

from __future__ import annotations

from connectors import writes
from gateway.state.route import Route
from pgwire.errors import PgError


class BlockWriters:
    def __init__(self) -> None:
        self._held: dict[str, writes.Writer] = {}

    def __bool__(self) -> bool:
        return bool(self._held)

    async def writer(self, sources: dict, route: Route, savepoints: list[str]) -> writes.Writer:
        """The block's connection to the route's source, opened on first use."""
        writer = self._held.get(route.source)
        if writer is None:
            writer = await writes.open_writer(sources[route.source], route.kind, route.source)
            self._held[route.source] = writer
            for name in savepoints:
                await writer.command(writes.savepoint_sql("savepoint", name, writer.dialect))
        return writer

    async def savepoint(self, kind: str, name: str) -> None:
        """SAVEPOINT, RELEASE or ROLLBACK TO (`kind`) of `name` on each connection held."""
        for writer in self._held.values():
            await writer.command(writes.savepoint_sql(kind, name, writer.dialect))

    async def finish(self, commit: bool) -> PgError | None:
        """COMMIT (or ROLLBACK) each; after the first failure, the rest roll back. The
        first error, if any."""
        held, self._held = self._held, {}
        error: PgError | None = None
        for writer in held.values():  # only readers, or the writer itself (one written to)
            try:
                await writer.finish(commit=commit and error is None)
            except PgError as err:
                error = error or err
        return error

    async def abandon(self) -> None:
        """The session ends: whatever the block wrote is rolled back."""
        held, self._held = self._held, {}
        for writer in held.values():
            try:
                await writer.finish(commit=False)
            except PgError:
                pass  # the connection is dropped either way; nothing was committed
