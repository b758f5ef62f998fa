"""A PostgreSQL database as a federated source (asyncpg, one pool per source).

Rows stream as `COPY (query) TO STDOUT (FORMAT csv)` (connectors.postgres.stream).

Every remote session runs in UTC with ISO DateStyle, IntervalStyle postgres (a client's
default: an interval PostgreSQL turns into text reads as the client's would),
`extra_float_digits = 3` and `standard_conforming_strings = on` (whatever the database's
default: the SQL the gateway ships is written for standard strings); each query runs in a
REPEATABLE READ READ ONLY transaction, and the fragments one query starts together on this
source share one snapshot (connectors.postgres.snapshot).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import asyncpg
import pyarrow as pa
from sqlglot import exp

from connectors.postgres import snapshot as pg_snapshot
from connectors.postgres.roles import SOURCE_ROLES, SOURCE_SETTINGS, settings_sql
from connectors.base import BatchStream, Pushdown, ScanRequest, Storage, TableInfo, TableRef
from connectors.dialects import postgres as pg_dialect
from connectors.postgres.describe import describe_columns, discover_tables, relation_storage
from connectors.postgres.bound_text import Template, template_of
from connectors.postgres.failures import connect_error, pg_error
from connectors.postgres.stream import APPLICATION_NAME, PostgresStream
from connectors.postgres.types import ColumnType
from connectors.scan_sql import scan_tree

# standard_conforming_strings: the shipped SQL (and the client's, relayed) is written for
# standard strings; on a database whose default is off, '\'' would end a literal early.
SESSION = {"TimeZone": "UTC", "DateStyle": "ISO, MDY", "IntervalStyle": "postgres",
           "extra_float_digits": "3", "bytea_output": "hex", "application_name": APPLICATION_NAME,
           "standard_conforming_strings": "on"}
# A server that does not answer a connection attempt (a host gone, a firewall dropping
# packets) is down after this long, not asyncpg's 60 s: a catalog refresh waits for it.
CONNECT_TIMEOUT_S = 10.0


class PostgresSource:
    dialect = pg_dialect.DIALECT

    def __init__(self, name: str, dsn: str, *, schema: str = "public",
                 pool_size: int = 10) -> None:
        self.name = name
        self.dsn = dsn
        self.schema = schema
        self.pool_size = pool_size
        self._pool: asyncpg.Pool | None = None
        self._pool_lock = asyncio.Lock()
        # Result descriptions by SQL text, valid for the tables' shapes as `tables()` last
        # found them: a change of any shape (DDL, through the gateway or not) clears them,
        # so a table re-created with other columns is never read with its old description.
        self._described: dict[str, list[ColumnType]] = {}
        # How COPY binds a statement's parameters (its parameter types), by SQL text, kept
        # and forgotten as the descriptions are: a repeat then costs one round trip.
        self._templates: dict[str, Template] = {}
        self._shapes: dict[str, pa.Schema] | None = None
        self._shape_changes = 0  # a description begun before a change is not kept

    async def pool(self) -> asyncpg.Pool:
        # Created on first use: the gateway builds sources off the event loop.
        async with self._pool_lock:
            if self._pool is None:
                try:
                    # No floor of idle connections: asyncpg would keep reconnecting
                    # (and logging each failure) while the server is down.
                    self._pool = await asyncpg.create_pool(
                        self.dsn, min_size=0, max_size=self.pool_size,
                        server_settings=SESSION, statement_cache_size=0,
                        timeout=CONNECT_TIMEOUT_S)
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                    raise connect_error(exc) from exc
            return self._pool

    async def acquire(self) -> asyncpg.Connection:
        """A pooled connection; the pool reconnects when the server went away, and a
        failure to do so is a connect error (08001), not the statement's."""
        pool = await self.pool()
        try:
            return await pool.acquire()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise connect_error(exc) from exc

    async def tables(self) -> list[TableInfo]:
        conn = await self.acquire()
        try:
            found = await discover_tables(conn, self.name, self.schema)
        finally:
            await (await self.pool()).release(conn)
        shapes = {info.ref.name: info.schema for info in found}
        if shapes != self._shapes:
            self._described.clear()
            self._templates.clear()
            self._shapes = shapes
            self._shape_changes += 1
        return found

    async def ping(self) -> None:
        conn = await self.acquire()
        try:
            await conn.fetchval("SELECT 1")
        finally:
            await (await self.pool()).release(conn)

    async def check_setting(self, name: str, value: str) -> None:
        """PostgreSQL's own check of `value` for the setting `name`, for the string ones
        whose check reads the server (a text search configuration, a tablespace, a
        locale): set_config in a transaction rolled back, so nothing stays on the pooled
        connection; PostgreSQL's refusal is raised as it gives it (22023, 42704 ...)."""
        conn = await self.acquire()
        try:
            checking = conn.transaction()
            await checking.start()
            try:
                await conn.execute("SELECT set_config($1, $2, true)", name, value)
            except asyncpg.PostgresError as exc:
                raise pg_error(exc) from exc
            finally:
                await checking.rollback()
        finally:
            await (await self.pool()).release(conn)

    async def storage(self) -> dict[str, Storage]:
        """Sizes and view definitions, as PostgreSQL reports them now (StorageReporter)."""
        conn = await self.acquire()
        try:
            return await relation_storage(conn, self.schema)
        finally:
            await (await self.pool()).release(conn)

    def classify(self, table: TableRef, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        return [self.dialect.classify(f, None).pushdown for f in filters]

    async def _columns(self, conn: asyncpg.Connection, sql: str) -> list[ColumnType]:
        return await self._kept(self._described, sql,
                                lambda: describe_columns(conn, sql, self.schema))

    async def _template(self, conn: asyncpg.Connection, sql: str) -> Template:
        return await self._kept(self._templates, sql, lambda: template_of(conn, sql))

    async def _kept(self, cache: dict, sql: str, find: Any) -> Any:
        """What `find()` says of `sql`, kept by text unless a shape changed meanwhile."""
        found = cache.get(sql)
        if found is None:
            changes = self._shape_changes
            found = await find()
            if len(cache) > 1000:
                cache.clear()
            if changes == self._shape_changes:
                cache[sql] = found
        return found

    async def describe(self, sql: str, params: Sequence[Any] = ()) -> pa.Schema:
        conn = await self.acquire()
        try:
            columns = await self._columns(conn, sql)
        except Exception as exc:
            raise pg_error(exc) from exc
        finally:
            await (await self.pool()).release(conn)
        return pa.schema([c.field for c in columns])

    async def run_remote(self, sql: str, params: Sequence[Any] = ()) -> BatchStream:
        pool = await self.pool()  # before the connection: nothing to leak if cancelled here
        conn = await self.acquire()
        try:
            columns = await self._columns(conn, sql)
            template = await self._template(conn, sql) if params else None
        except BaseException as exc:
            await pool.release(conn)
            if isinstance(exc, Exception):
                raise pg_error(exc) from exc
            raise
        stream = PostgresStream(pool, conn, columns, template)
        await stream.start(sql, list(params), pg_snapshot.share_for(self.name),
                           SOURCE_ROLES.get().get(self.name), settings_sql(SOURCE_SETTINGS.get(), local=True))
        return stream

    async def scan(self, req: ScanRequest) -> BatchStream:
        return await self.run_remote(self.dialect.to_sql(scan_tree(req)))

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
