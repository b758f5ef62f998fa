"""One statement's verdict: identical to PostgreSQL, refused by the gateway, or different.

An outcome is what a server answered through the extended protocol (asyncpg prepares, so
the RowDescription's column names and type OIDs come from Describe): either columns and
rows, or an error's SQLSTATE and message. The gateway's outcome is

- identical: same column names, same type OIDs, same rows (as a multiset unless the
  statement orders its rows), or the same SQLSTATE and message as PostgreSQL's error;
- refused: the gateway answered 0A000 (feature not supported) where PostgreSQL did not
  answer with that very error;
- different: anything else.

Dates, times and intervals are compared in their text form (see TEXT_DECODED). Floats are
compared to 12 significant digits: an aggregate over floats may add in another order than
PostgreSQL does, which moves the last bits, and PostgreSQL itself promises no order there. Every other value is compared exactly (numeric by value and scale).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from decimal import Decimal

import asyncpg

from pgwire.types.pg_type import FIRST_NORMAL_OID

STATEMENT_TIMEOUT = 30.0
# Read as the server's text: Python's datetime cannot hold infinity, years BC or beyond 9999,
# and PostgreSQL's text form of these is what a client shows anyway.
UNDECODABLE = "undecodable"  # not a SQLSTATE: the answer came, the client could not read it
TEXT_DECODED = ["date", "timestamp", "timestamptz", "interval", "time", "timetz"]


@dataclass(frozen=True)
class Outcome:
    names: tuple[str, ...] = ()
    type_oids: tuple[int | str, ...] = ()  # a user-defined type (a row type) by its name
    rows: tuple[tuple, ...] = ()
    sqlstate: str | None = None
    message: str | None = None

    @property
    def failed(self) -> bool:
        return self.sqlstate is not None


@dataclass(frozen=True)
class Verdict:
    kind: str  # "identical" | "refused" | "different"
    detail: str = ""  # for refused: the gateway's message; for different: what differs


class Session:
    """A connection to one server that survives what a statement can do to it."""

    def __init__(self, dsn: str, *setup: str) -> None:
        self.dsn = dsn
        self.setup = setup
        self.conn: asyncpg.Connection | None = None

    async def _connect(self) -> asyncpg.Connection:
        conn = await asyncpg.connect(self.dsn, command_timeout=STATEMENT_TIMEOUT)
        for type_name in TEXT_DECODED:
            await conn.set_type_codec(type_name, schema="pg_catalog", encoder=str, decoder=str, format="text")
        for statement in self.setup:
            await conn.execute(statement)
        return conn

    async def run(self, sql: str) -> Outcome:
        if self.conn is None or self.conn.is_closed():
            self.conn = await self._connect()
        try:
            try:
                prepared = await self.conn.prepare(sql)
                attributes, rows = prepared.get_attributes(), await prepared.fetch()
            except asyncpg.UnsupportedClientFeatureError as error:
                if "composite" not in str(error):
                    raise
                attributes, rows = await self._fetch_records(sql)
        except asyncpg.PostgresError as error:
            return Outcome(sqlstate=error.sqlstate, message=str(error.args[0]) if error.args else "")
        except (ValueError, OverflowError) as error:  # a value the client library cannot decode
            return Outcome(sqlstate=UNDECODABLE, message=f"{type(error).__name__}: {error}")
        except (asyncio.TimeoutError, asyncpg.InterfaceError, OSError) as error:
            await self.close()  # the connection's state is unknown: start afresh next time
            return Outcome(sqlstate="timeout", message=f"{type(error).__name__}: {error}")
        # A table's row type is numbered by each server (the source's, the gateway's
        # catalog): it is the same type when it has the same name.
        return Outcome(tuple(a.name for a in attributes),
                       tuple(a.type.oid if a.type.oid < FIRST_NORMAL_OID else a.type.name for a in attributes),
                       tuple(tuple(r.values()) for r in rows))

    async def _fetch_records(self, sql: str) -> tuple[list, list]:
        """The attributes and rows of a statement with a whole row in them, as Records: on
        a connection of asyncpg's own codecs (it decodes a row type in binary only, and
        TEXT_DECODED's are text)."""
        conn = await asyncpg.connect(self.dsn, command_timeout=STATEMENT_TIMEOUT)
        try:
            for statement in self.setup:
                await conn.execute(statement)
            prepared = await conn.prepare(sql)
            return list(prepared.get_attributes()), await prepared.fetch()
        finally:
            await conn.close()

    async def close(self) -> None:
        if self.conn is not None:
            try:
                await asyncio.wait_for(self.conn.close(), 5)
            except Exception:  # noqa: BLE001 - a broken connection is dropped either way
                self.conn.terminate()
            self.conn = None


def _same_value(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=1e-12)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        if a.is_nan() or b.is_nan():
            return a.is_nan() and b.is_nan()
        return a == b and a.as_tuple().exponent == b.as_tuple().exponent
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _sort_key(row: tuple) -> tuple:
    # Floats rounded so that rows equal under _same_value sort next to each other.
    return tuple((v is None, type(v).__name__, repr(round(v, 9) if isinstance(v, float) else v))
                 for v in row)


def _rows_differ(expected: tuple[tuple, ...], got: tuple[tuple, ...], ordered: bool) -> str:
    if len(expected) != len(got):
        return f"{len(got)} rows instead of {len(expected)}"
    if not ordered:
        expected, got = tuple(sorted(expected, key=_sort_key)), tuple(sorted(got, key=_sort_key))
    for index, (want, have) in enumerate(zip(expected, got)):
        if len(want) != len(have) or not all(_same_value(x, y) for x, y in zip(want, have)):
            return f"row {index + 1}: {_short(have)} instead of {_short(want)}"
    return ""


def _short(value: object, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def judge(truth: Outcome, gateway: Outcome, *, ordered: bool) -> Verdict:
    if UNDECODABLE in (truth.sqlstate, gateway.sqlstate):  # nothing to compare: never call it identical
        return Verdict("different", f"undecodable answer: PostgreSQL {truth.sqlstate} {truth.message}, "
                                    f"gateway {gateway.sqlstate} {gateway.message}")
    if gateway.failed:
        if truth.failed and (truth.sqlstate, truth.message) == (gateway.sqlstate, gateway.message):
            return Verdict("identical")
        if gateway.sqlstate == "0A000":
            return Verdict("refused", gateway.message or "")
        expected = f"{truth.sqlstate} {truth.message}" if truth.failed else "rows"
        return Verdict("different", f"error {gateway.sqlstate} {_short(gateway.message)} instead of "
                                    f"{_short(expected)}")
    if truth.failed:
        return Verdict("different", f"rows instead of error {truth.sqlstate} {_short(truth.message)}")
    if gateway.names != truth.names:
        return Verdict("different", f"names {list(gateway.names)} instead of {list(truth.names)}")
    if gateway.type_oids != truth.type_oids:
        return Verdict("different", f"type OIDs {list(gateway.type_oids)} instead of {list(truth.type_oids)}")
    rows = _rows_differ(truth.rows, gateway.rows, ordered)
    return Verdict("different", rows) if rows else Verdict("identical")
