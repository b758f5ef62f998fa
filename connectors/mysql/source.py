"""A MySQL/MariaDB database as a federated source (asyncmy, one pool per source).

Rows stream through an unbuffered cursor (SSCursor) `BATCH_ROWS` at a time, so memory
stays bounded. `aclose()` of an unfinished stream sends `KILL QUERY <id>` on a separate
connection: the server stops, and the streaming connection is dropped rather than
drained. Every session runs with `time_zone = '+00:00'` and a binary NO PAD connection
collation (so comparisons of literals are PostgreSQL's), in a consistent-snapshot
read-only transaction per query. `$n` parameters arrive as markers (see
connectors.dialects.mysql) and are replaced by literals rendered with sqlglot.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from decimal import Decimal
from operator import itemgetter
from typing import Any
from urllib.parse import unquote, urlparse

import asyncmy
import pyarrow as pa
import sqlglot
from asyncmy.cursors import SSCursor
from sqlglot import exp, tokens

from connectors.base import BatchStream, Pushdown, ScanRequest, TableInfo, TableRef
from connectors.dialects import mysql as mysql_dialect
from connectors.mysql.column_stats import distinct_counts
from connectors.mysql.types import catalog_field, result_field, to_array
from connectors.scan_sql import scan_schema, scan_tree
from pgwire.errors import (CONNECTION_EXCEPTION, CONNECTION_FAILURE, FEATURE_NOT_SUPPORTED,
                           SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
                            INTERNAL_ERROR, QUERY_CANCELED, SYNTAX_ERROR, UNDEFINED_COLUMN,
                            UNDEFINED_TABLE, PgError)

log = logging.getLogger("fedgate.mysql")

BATCH_ROWS = 65_536
FETCH_ROWS = 16_384  # rows per batch after the first: a short pause for other sessions
_JSON_CHECK = re.compile(r"json_valid\(`([^`]+)`\)")  # how MariaDB declares a JSON column
# MySQL error numbers -> SQLSTATE the client expects from PostgreSQL.
_ERRORS = {1146: UNDEFINED_TABLE, 1054: UNDEFINED_COLUMN, 1064: SYNTAX_ERROR,
           1317: QUERY_CANCELED, 3024: QUERY_CANCELED,
           # A write's constraint and value errors (strict mode), in PostgreSQL's terms.
           1062: "23505", 1048: "23502", 1406: "22001", 1264: "22003", 1690: "22003"}
# No connection could be made (08001, pgwire.errors.source_unavailable): the server's
# socket, host or port (2002, 2003, 2005), or it refused the dsn's user, password or
# database (1044, 1045, 1049).
_CANNOT_CONNECT = {2002, 2003, 2005, 1044, 1045, 1049}


def mysql_error(exc: BaseException) -> PgError:
    if isinstance(exc, PgError):
        return exc
    if isinstance(exc, (OSError, asyncio.IncompleteReadError)):
        return PgError(CONNECTION_FAILURE, f"mysql: connection lost: {exc}")
    args = getattr(exc, "args", ())
    if len(args) == 2 and isinstance(args[0], int):
        if args[0] in _CANNOT_CONNECT:
            return PgError(SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, f"mysql: {args[1]}")
        # Client-side errors (2000 and up: cannot connect, server gone) are connection ones.
        code = _ERRORS.get(args[0], INTERNAL_ERROR if args[0] < 2000 else CONNECTION_EXCEPTION)
        return PgError(code, f"mysql: {args[1]}")
    return PgError(INTERNAL_ERROR, f"mysql: {type(exc).__name__}: {exc}")


# What a MySQL driver call can raise: the server's errors, or the network's.
DRIVER_ERRORS = (asyncmy.errors.Error, OSError, asyncio.IncompleteReadError)


MYSQL = sqlglot.Dialect.get_or_raise("mysql")


def mysql_literal(value: Any) -> str:
    """A bound value as a MySQL literal of the parameter's type (sqlglot quotes it).

    The session runs in UTC, so an aware timestamp becomes its UTC wall clock; numerics
    are written out in full (an exponent would make MySQL read a double)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise PgError(FEATURE_NOT_SUPPORTED, f"mysql has no numeric value {value}")
        return format(value, "f")
    if isinstance(value, float) and not math.isfinite(value):
        raise PgError(FEATURE_NOT_SUPPORTED, f"mysql has no float value {value}")
    return exp.convert(value).sql("mysql")


def bind_markers(sql: str, params: Sequence[Any]) -> str:
    """Replace the dialect's parameter markers (bare tokens, never inside strings or quoted
    identifiers) by literals. MySQL's own tokenizer reads the text: backquoted names hold
    any character, doubled backquotes included."""
    pieces, last = [], 0
    for token in MYSQL.tokenize(sql) if params else ():
        text = token.text
        if (token.token_type is tokens.TokenType.VAR
                and text.startswith("__fedgate_param_") and text.endswith("__")):
            index = int(text[len("__fedgate_param_"):-2]) - 1
            pieces.append(sql[last:token.start])
            pieces.append(mysql_literal(params[index]))
            last = token.end + 1
    pieces.append(sql[last:])
    return "".join(pieces)


def boolean_columns(sql: str) -> set[int]:
    """Result positions the dialect marked as PostgreSQL booleans (its leading comment)."""
    prefix = mysql_dialect.BOOL_HINT.split("{}")[0]
    if not sql.startswith(prefix):
        return set()
    listed = sql[len(prefix):sql.index("*/")].strip()
    return {int(i) for i in listed.split(",")}


class MySQLSource:
    dialect = mysql_dialect.DIALECT

    def __init__(self, name: str, dsn: str, *, pool_size: int = 10) -> None:
        url = urlparse(dsn)
        if url.scheme not in ("mysql", "mariadb") or not url.path.strip("/"):
            raise ValueError("mysql dsn must look like mysql://user:pw@host:port/database")
        self.name = name
        self.database = url.path.strip("/")
        self._connect = dict(host=url.hostname or "127.0.0.1", port=url.port or 3306,
                             user=unquote(url.username or "root"),
                             password=unquote(url.password or ""), db=self.database,
                             charset="utf8mb4", autocommit=True)
        self.pool_size = pool_size
        self._pool: Any = None
        self._lock = asyncio.Lock()
        self._mariadb = False
        # (table, column) -> the Arrow type of uuid/json columns (see tables()).
        self._textual: dict[tuple[str, str], pa.DataType] = {}

    async def pool(self) -> Any:
        async with self._lock:
            if self._pool is None:
                try:
                    probe = await asyncmy.connect(**self._connect)
                    async with probe.cursor() as cur:
                        await cur.execute("SELECT VERSION()")
                        version = (await cur.fetchone())[0]
                    await probe.ensure_closed()
                except (OSError, asyncmy.errors.Error) as exc:
                    raise mysql_error(exc) from exc
                self._mariadb = "MariaDB" in version
                collation = "utf8mb4_nopad_bin" if self._mariadb else "utf8mb4_0900_bin"
                init = f"SET time_zone = '+00:00', NAMES utf8mb4 COLLATE {collation}"
                self._pool = await asyncmy.create_pool(minsize=1, maxsize=self.pool_size,
                                                       init_command=init, **self._connect)
            return self._pool

    async def ping(self) -> None:
        pool = await self.pool()
        async with pool.acquire() as conn, conn.cursor() as cur:
            await cur.execute("SELECT 1")

    async def tables(self) -> list[TableInfo]:
        pool = await self.pool()
        async with pool.acquire() as conn, conn.cursor() as cur:
            await cur.execute(
                "SELECT TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME", (self.database,))
            tables = await cur.fetchall()
            await cur.execute(
                "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, "
                "NUMERIC_SCALE, COLLATION_NAME, IS_NULLABLE, COLUMN_KEY "
                "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s "
                "ORDER BY TABLE_NAME, ORDINAL_POSITION", (self.database,))
            columns = await cur.fetchall()
            stats = await distinct_counts(cur, self.database)
            json_columns: set[tuple[str, str]] = set()
            if self._mariadb:
                await cur.execute(
                    "SELECT TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS "
                    "WHERE CONSTRAINT_SCHEMA = %s AND CHECK_CLAUSE LIKE 'json\\_valid(%%'",
                    (self.database,))
                json_columns = {(table, m.group(1)) for table, clause in await cur.fetchall()
                                if (m := _JSON_CHECK.fullmatch(clause))}
        fields: dict[str, list[pa.Field]] = {t[0]: [] for t in tables}
        keys: dict[str, list[str]] = {}
        for table, column, dtype, ctype, prec, scale, coll, nullable, key in columns:
            fields.setdefault(table, []).append(
                catalog_field(column, dtype, ctype, prec, scale, coll, nullable == "YES",
                              json=(table, column) in json_columns))
            if key == "PRI":
                keys.setdefault(table, []).append(column)
        # Result columns read straight from a table take these when the wire cannot tell.
        self._textual = {(table, f.name): f.type for table, fs in fields.items() for f in fs
                         if isinstance(f.type, (pa.UuidType, pa.JsonType))}
        return [TableInfo(TableRef(self.name, name, remote_name=name), pa.schema(fields[name]),
                          row_estimate=rows, column_stats=stats.get(name, ()),
                          primary_key=tuple(keys.get(name, ())))
                for name, rows in tables]

    def classify(self, table: TableRef, filters: Sequence[exp.Expression]) -> list[Pushdown]:
        return [self.dialect.classify(f, None).pushdown for f in filters]

    async def run_remote(self, sql: str, params: Sequence[Any] = (),
                         schema: pa.Schema | None = None) -> BatchStream:
        pool = await self.pool()
        try:
            conn = await pool.acquire()
        except DRIVER_ERRORS as exc:
            raise mysql_error(exc) from exc
        stream = MySQLStream(self, pool, conn, schema)
        await stream.start(bind_markers(sql, params), boolean_columns(sql))
        return stream

    async def describe(self, sql: str, params: Sequence[Any] = ()) -> pa.Schema:
        hint = sql[:sql.index("*/") + 3] if boolean_columns(sql) else ""
        wrapped = hint + exp.select("*").from_(
            sqlglot.parse_one(bind_markers(sql, params), read="mysql").subquery("described")
        ).limit(0).sql("mysql", identify=True)
        stream = await self.run_remote(wrapped)
        await stream.aclose()
        return stream.schema

    async def scan(self, req: ScanRequest) -> BatchStream:
        schema = scan_schema(await self.tables(), req)
        return await self.run_remote(self.dialect.to_sql(scan_tree(req)), schema=schema)

    async def kill_query(self, thread_id: int) -> None:
        conn = await asyncmy.connect(**self._connect)
        try:
            async with conn.cursor() as cur:
                await cur.execute(f"KILL QUERY {int(thread_id)}")
        finally:
            await conn.ensure_closed()

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            await self._pool.wait_closed()
            self._pool = None


class MySQLStream:
    def __init__(self, source: MySQLSource, pool: Any, conn: Any, schema: pa.Schema | None):
        self._source, self._pool, self._conn = source, pool, conn
        self._given = schema
        self.schema = schema or pa.schema([])
        self._cursor: Any = None
        self._first: list[tuple] | None = None
        self._done = False

    async def start(self, sql: str, booleans: set[int] = frozenset()) -> None:
        try:
            self._cursor = self._conn.cursor(SSCursor)
            await self._cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            await self._cursor.execute(sql)
            self._first = list(await self._cursor.fetchmany(BATCH_ROWS))
            if len(self._first) < BATCH_ROWS:
                # The whole result is here; reading the end marker now frees the connection.
                self._first.extend(await self._cursor.fetchmany(BATCH_ROWS))
                self._done = True
        except DRIVER_ERRORS as exc:
            await self.aclose(broken=True)
            raise mysql_error(exc) from exc
        except asyncio.CancelledError:
            # Cancelled while the server computes the first rows (a CancelRequest, a
            # statement timeout, a failing sibling): stop the server's query too.
            await self.aclose()
            raise
        if self._given is None:
            # The field packets, not `description`: it drops the flags (unsigned) and the
            # charset (binary strings are bytea, not text).
            fields = self._cursor._result.fields if self._cursor._result is not None else ()
            textual = self._source._textual
            self.schema = pa.schema([
                result_field(f, i in booleans, textual.get((f.org_table, f.org_name)))
                for i, f in enumerate(fields)])

    def _batch(self, rows: list[tuple]) -> pa.RecordBatch:
        # One column at a time: zip(*rows) makes an iterator per row, and that churn of
        # 65,536 tracked objects per batch sets off the garbage collector (~5x slower).
        columns = [list(map(itemgetter(i), rows)) for i in range(len(self.schema))]
        arrays = [to_array(c, f.type) for c, f in zip(columns, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(
            [f.with_type(a.type) for f, a in zip(self.schema, arrays)]))

    def __aiter__(self) -> MySQLStream:
        return self

    async def __anext__(self) -> pa.RecordBatch:
        if self._first:
            rows, self._first = self._first, None
            return self._batch(rows)
        if self._done or self._cursor is None:
            await self.aclose()
            raise StopAsyncIteration
        try:
            # Small batches, decoded and converted on the event loop: the driver buffers
            # whatever the socket delivers without limit, so the loop must stay busy with
            # this stream while it converts (memory stays flat), and a small batch keeps
            # the pause short for other sessions.
            rows = list(await self._cursor.fetchmany(FETCH_ROWS))
        except DRIVER_ERRORS as exc:
            await self.aclose(broken=True)
            raise mysql_error(exc) from exc
        if not rows:
            self._done = True  # every row read: the connection can be reused
            await self.aclose()
            raise StopAsyncIteration
        return self._batch(rows)

    async def aclose(self, broken: bool = False) -> None:
        if self._done and self._conn is None:
            return
        exhausted, self._done = self._done, True
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if not exhausted and not broken:
                # Unread rows: stop the server's work, then drop the connection unread.
                try:
                    await self._source.kill_query(conn.thread_id())
                except DRIVER_ERRORS as exc:
                    log.info("mysql: could not stop query of thread %s: %s", conn.thread_id(), exc)
                conn.close()
            elif not broken:
                try:
                    await conn.rollback()
                except DRIVER_ERRORS as exc:
                    log.info("mysql: dropping a connection that failed to roll back: %s", exc)
                    conn.close()
            else:
                conn.close()
        finally:
            await self._pool.release(conn)
