"""What a server answers to one statement, as the tests compare it with PostgreSQL's own.

An `Answer` is the result's column types (by name, as the client library names the OIDs)
and its rows. `described` asks through the extended protocol (asyncpg: Parse/Describe,
then binary rows decoded by the described types), `simple` through a simple Query
(psycopg: text rows parsed by the RowDescription's OIDs), so both encodings are checked.
`collect` reads a connector's batch stream into one table; `sqlstate_of` runs a statement
that should fail and gives its SQLSTATE.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
import psycopg
import pyarrow as pa


@dataclass
class Answer:
    types: list[str]  # type names, by OID
    rows: list[tuple]


async def described(dsn: str, sql: str, *setup: str, timeout: float = 300) -> Answer:
    """Parse/Describe, then Bind/Execute; `setup` statements run first on the connection."""
    conn = await asyncpg.connect(dsn, command_timeout=timeout)
    try:
        for statement in setup:
            await conn.execute(statement)
        prepared = await conn.prepare(sql)
        return Answer([a.type.name for a in prepared.get_attributes()],
                      [tuple(r.values()) for r in await prepared.fetch()])
    finally:
        await conn.close()


async def described_names(dsn: str, sql: str, *setup: str) -> list[str]:
    """The result's column names, as Parse/Describe gives them (after `setup`)."""
    conn = await asyncpg.connect(dsn)
    try:
        for statement in setup:
            await conn.execute(statement)
        return [a.name for a in (await conn.prepare(sql)).get_attributes()]
    finally:
        await conn.close()


async def execute(dsn: str, *statements: str) -> None:
    """Run `statements` on a connection of their own (say, DDL in a source)."""
    conn = await asyncpg.connect(dsn)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


async def error_of(dsn: str, sql: str, *setup: str) -> asyncpg.PostgresError:
    """The error the server answers `sql` with (after `setup`); a test failure if none."""
    conn = await asyncpg.connect(dsn)
    try:
        for statement in setup:
            await conn.execute(statement)
        try:
            await conn.fetch(sql)
        except asyncpg.PostgresError as exc:
            return exc
        raise AssertionError(f"no error for {sql}")
    finally:
        await conn.close()


async def assert_described_alike(truth: str, gateway: str, sql: str, *setup: str,
                                 gateway_sql: str | None = None,
                                 truth_setup: tuple[str, ...] = ()) -> None:
    """The gateway (after `setup`) answers `gateway_sql` (default: `sql`) with the types and
    rows PostgreSQL at `truth` (after `truth_setup`) answers `sql` with, through the
    extended protocol."""
    want = await described(truth, sql, *truth_setup)
    got = await described(gateway, sql if gateway_sql is None else gateway_sql, *setup)
    assert (got.types, got.rows) == (want.types, want.rows), (got, want)


def simple(dsn: str, sql: str) -> Answer:
    """A simple Query: RowDescription and text rows, parsed by psycopg by the OIDs."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(sql, prepare=False)
        names = conn.adapters.types
        types = [names.get(d.type_code).name if names.get(d.type_code) else str(d.type_code)
                 for d in cursor.description]
        return Answer(types, [tuple(r) for r in cursor.fetchall()])


async def collect(stream) -> pa.Table:
    """Every batch of a connector's stream as one table (the stream is closed after)."""
    try:
        batches = [b async for b in stream]
    finally:
        await stream.aclose()
    return pa.Table.from_batches(batches, schema=stream.schema)


def sqlstate_of(conn: psycopg.Connection, sql: str) -> str | None:
    """The SQLSTATE `sql` fails with on `conn` (None: it did not fail)."""
    try:
        conn.execute(sql)
    except psycopg.Error as exc:
        return exc.sqlstate
    return None
