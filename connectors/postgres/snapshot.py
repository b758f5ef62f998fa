"""One snapshot for the PostgreSQL fragments of one query (docs/design.md §4).

Every fragment reads in its own REPEATABLE READ READ ONLY transaction. When a query
starts several fragments on the same source together (the executor says so through
`connectors.query_scope`), the first to open its transaction exports its snapshot with
`pg_export_snapshot()` and the others import it with `SET TRANSACTION SNAPSHOT` before
their first query, so a writer committing in between is invisible to all of them alike.
A query with one fragment on the source pays nothing: no export, no wait.

The exporting transaction must stay open until every importer has imported. It does:
the executor starts a query's fragments together and consumes none of them before all
have started. The one exception is a dynamic filter, whose build side is read whole
before its probe starts: if the build was the exporter, the probe finds the export
closed and reads a snapshot of its own (logged).

Nothing here waits for a fragment that has not started: only the exporter is awaited,
and it claims its role after it holds its connection, so a full pool cannot deadlock.
"""

from __future__ import annotations

import asyncio
import logging
import re

import asyncpg
from asyncpg.transaction import Transaction
from sqlglot import exp

from connectors import query_scope

log = logging.getLogger("fedgate.postgres")

_SNAPSHOT_ID = re.compile(r"^[0-9A-F]+-[0-9A-F]+-[0-9]+$")


class SharedSnapshot:
    """The snapshot the fragments of one query on one source share."""

    def __init__(self, expected: int) -> None:
        self.expected = expected  # fragments the executor starts together
        self._claimed = 0
        self._snapshot: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.exporter_open = True

    def claim(self) -> str:
        """'export' for the first fragment to open its transaction, 'import' for the other
        expected ones, 'own' for any beyond them."""
        self._claimed += 1
        if self._claimed == 1:
            return "export"
        return "import" if self._claimed <= self.expected else "own"

    def publish(self, snapshot: str | None) -> None:
        if not self._snapshot.done():
            self._snapshot.set_result(snapshot)

    async def wait(self) -> str | None:
        return await asyncio.shield(self._snapshot)


def share_for(source: str) -> SharedSnapshot | None:
    """The query's shared snapshot on `source`, or None when the fragment reads alone."""
    scope = query_scope.current()
    if scope is None:
        return None
    expected = scope.fragments(source)
    if expected < 2:
        return None
    return scope.shared(source, lambda: SharedSnapshot(expected))


async def begin(conn: asyncpg.Connection, transaction: Transaction,
                share: SharedSnapshot | None) -> bool:
    """Start the fragment's read-only REPEATABLE READ `transaction` on `conn`, on the
    query's shared snapshot when there is one; True when this fragment exported it (it
    must call `share.exporter_open = False` before it ends its transaction)."""
    role = share.claim() if share is not None else "own"
    if role == "own":
        await transaction.start()
        return False
    assert share is not None
    if role == "export":
        try:
            await transaction.start()
            snapshot = await conn.fetchval("SELECT pg_export_snapshot()")
        except BaseException:
            share.publish(None)  # importers go on alone; this fragment's error fails the query
            raise
        share.publish(snapshot)
        return True
    snapshot = await share.wait()
    await transaction.start()
    if snapshot is None or not share.exporter_open:
        log.info("fragment reads its own snapshot: the query's exporter is gone")
        return False
    if not _SNAPSHOT_ID.match(snapshot):
        raise ValueError(f"unexpected snapshot identifier {snapshot!r}")
    await conn.execute(f"SET TRANSACTION SNAPSHOT {exp.Literal.string(snapshot).sql('postgres')}")
    return False
