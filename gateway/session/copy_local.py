"""COPY ... FROM STDIN into a SQLite or MySQL source, through Arrow batches.

PostgreSQL sources get COPY relayed as it is (`gateway.relay.links`). For the others the
gateway speaks the COPY sub-protocol itself: CopyInResponse, then the client's CopyData
is cut into lines, parsed by pyarrow's CSV reader (text format: tab-separated, `\\N` for
NULL; csv format: PostgreSQL's defaults), and inserted in batches with the driver's
parameter binding (`INSERT INTO t (cols) VALUES (?, ...)`, names quoted by sqlglot).
Values go as text: both SQLite's affinity and MySQL convert them to the column's type.
"""

from __future__ import annotations

import asyncio
import io
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

BATCH_BYTES = 4 * 1024 * 1024
_COPY = re.compile(r"\s*COPY\s+(?P<table>(?:\"(?:[^\"]|\"\")+\"|[\w$]+)(?:\.(?:\"(?:[^\"]|\"\")+\"|[\w$]+))?)"
                   r"\s*(?:\((?P<columns>[^)]*)\))?\s+FROM\s+STDIN\b(?P<options>.*)$", re.I | re.S)


@dataclass
class CopyOptions:
    csv: bool = False
    header: bool = False
    delimiter: str = ""  # "": the format's default (tab for text, comma for csv)
    null: str | None = None  # None: the format's default (\N for text, empty for csv)


@dataclass
class CopyTarget:
    source: str
    kind: str
    table: str
    columns: list[str]
    options: CopyOptions
    types: dict[str, pa.DataType] = field(default_factory=dict)  # the table's, to check values
    buffer: bytearray = field(default_factory=bytearray)
    rows: int = 0
    header_pending: bool = False


def parse_copy(sql: str, source: str, kind: str, table_columns: list[str]) -> CopyTarget:
    found = _COPY.match(sql)
    if found is None:
        raise PgError("42601", "cannot parse COPY statement")
    table = _unquote(found.group("table").split(".")[-1])
    columns = [_unquote(c.strip()) for c in found.group("columns").split(",")] if found.group("columns") \
        else table_columns
    options = _options(found.group("options") or "")
    return CopyTarget(source, kind, table, columns, options, header_pending=options.header)


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()


def _options(text: str) -> CopyOptions:
    text = re.sub(r"^\s*WITH\b", "", text, flags=re.I).strip()
    options = CopyOptions()
    if text.startswith("("):  # FORMAT csv, HEADER, DELIMITER ','
        items = [(m[0], m[1]) for m in re.findall(r"(\w+)(?:\s+('(?:[^']|'')*'|\w+))?\s*(?:,|$)",
                                                    text.strip("()").strip())]
    else:  # the pre-9.0 syntax: CSV HEADER DELIMITER [AS] ',' NULL [AS] ''
        items = re.findall(r"(\w+)(?:\s+(?:AS\s+)?('(?:[^']|'')*'))?", text, flags=re.I)
    for name, value in items:
        name, value = name.upper(), value.strip("'") if value else ""
        if name == "FORMAT":
            if value.lower() not in ("text", "csv"):
                raise PgError(FEATURE_NOT_SUPPORTED, f"COPY format {value} is not supported here")
            options.csv = value.lower() == "csv"
        elif name == "CSV":
            options.csv = True
        elif name == "HEADER":
            options.header = value.lower() not in ("false", "off", "0")
        elif name == "DELIMITER":
            options.delimiter = value
        elif name == "NULL":
            options.null = value
        elif name in ("FREEZE", "ENCODING"):
            continue
        else:
            raise PgError(FEATURE_NOT_SUPPORTED, f'COPY option "{name.lower()}" is not supported here')
    options.delimiter = options.delimiter or ("," if options.csv else "\t")
    if options.null is None:
        options.null = "" if options.csv else "\\N"
    if len(options.delimiter) != 1:
        raise PgError(INVALID_PARAMETER_VALUE, "COPY delimiter must be a single one-byte character")
    return options


def parse_batch(target: CopyTarget, data: bytes) -> pa.Table:
    """Complete lines of COPY data as a table of strings (NULLs as nulls)."""
    options = target.options
    if not options.csv and b"\\" in data.replace(b"\\N", b""):
        raise PgError(FEATURE_NOT_SUPPORTED, "backslash escapes in COPY text data are not supported "
                      "for this source; use FORMAT csv")
    names = list(target.columns)
    read = pacsv.ReadOptions(column_names=names, skip_rows=1 if target.header_pending else 0)
    target.header_pending = False
    parse = pacsv.ParseOptions(delimiter=options.delimiter, quote_char='"' if options.csv else False,
                               double_quote=options.csv, newlines_in_values=options.csv)
    convert = pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                   null_values=[options.null or ""], strings_can_be_null=True,
                                   quoted_strings_can_be_null=False)
    try:
        table = pacsv.read_csv(io.BytesIO(data), read_options=read, parse_options=parse,
                               convert_options=convert)
    except pa.ArrowInvalid as exc:
        raise PgError("22P04", f"bad COPY data: {exc}") from exc
    return _typed(table, target.types)


_CHECKED = (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal, pa.types.is_boolean,
            pa.types.is_date, pa.types.is_timestamp)


def _typed(table: pa.Table, types: dict[str, pa.DataType]) -> pa.Table:
    """Values converted to the column types, so bad input fails here with 22P02 (SQLite
    would store 'abc' in an integer column) and the driver gets ints, not strings."""
    columns = []
    for name, column in zip(table.column_names, table.columns):
        wanted = types.get(name)
        if wanted is not None and any(check(wanted) for check in _CHECKED):
            try:
                column = column.cast(wanted)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise PgError("22P02", f'invalid input for column "{name}" of type {wanted}: {exc}') from exc
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def insert_sql(target: CopyTarget, dialect: str, placeholder: str) -> str:
    table = exp.to_identifier(target.table, quoted=True)
    columns = ", ".join(exp.to_identifier(c, quoted=True).sql(dialect=dialect) for c in target.columns)
    values = ", ".join([placeholder] * len(target.columns))
    return f"INSERT INTO {table.sql(dialect=dialect)} ({columns}) VALUES ({values})"


class CopyWriter:
    """Inserts the batches of one COPY in one transaction of the source: a COPY that
    fails (bad data, CopyFail, a lost client) leaves nothing behind, as in PostgreSQL."""

    def __init__(self, source: Any, target: CopyTarget) -> None:
        self.source = source
        self.target = target
        self._sqlite: sqlite3.Connection | None = None
        self._mysql: Any = None
        self._pool: Any = None

    async def open(self) -> None:
        if self.target.kind == "sqlite":
            def connect() -> sqlite3.Connection:
                con = sqlite3.connect(str(self.source.path), isolation_level=None, check_same_thread=False)
                con.execute("BEGIN")
                return con
            self._sqlite = await asyncio.to_thread(connect)
        else:
            self._pool = await self.source.pool()
            self._mysql = await self._pool.acquire()
            await self._mysql.begin()

    async def write(self, table: pa.Table) -> None:
        rows = [tuple(r.values()) for r in table.to_pylist()]
        if not rows:
            return
        if self._sqlite is not None:
            con, sql = self._sqlite, insert_sql(self.target, "sqlite", "?")
            try:
                await asyncio.to_thread(con.executemany, sql, rows)
            except sqlite3.Error as exc:
                raise PgError("23505" if "constraint" in str(exc) else "22P04", f"sqlite: {exc}") from exc
        else:
            import asyncmy
            try:
                async with self._mysql.cursor() as cur:
                    await cur.executemany(insert_sql(self.target, "mysql", "%s"), rows)
            except asyncmy.errors.Error as exc:
                from connectors.mysql.source import mysql_error
                raise mysql_error(exc) from exc
        self.target.rows += len(rows)

    async def finish(self, commit: bool) -> None:
        if self._sqlite is not None:
            con, self._sqlite = self._sqlite, None
            await asyncio.to_thread(con.execute, "COMMIT" if commit else "ROLLBACK")
            con.close()
        elif self._mysql is not None:
            conn, self._mysql = self._mysql, None
            try:
                await (conn.commit() if commit else conn.rollback())
            finally:
                self._pool.release(conn)


def take_lines(target: CopyTarget, data: bytes, final: bool) -> bytes | None:
    """Add client data; return whole lines once a batch is big enough (or at the end)."""
    target.buffer += data
    if not final and len(target.buffer) < BATCH_BYTES:
        return None
    cut = len(target.buffer) if final else target.buffer.rfind(b"\n") + 1
    if cut <= 0:
        return None
    if not final and target.options.csv and target.buffer.count(b'"', 0, cut) % 2:
        return None  # the cut would split a quoted value holding a newline: wait for more
    chunk = bytes(target.buffer[:cut])
    del target.buffer[:cut]
    if final and chunk.endswith(b"\\.\n"):
        chunk = chunk[:-3]  # the old end-of-data marker
    return chunk
