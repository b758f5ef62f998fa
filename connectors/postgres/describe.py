"""Catalog discovery and result description for the PostgreSQL source.

Discovery reads pg_catalog once: relations of the schema (tables, views, materialized
views, partitioned and foreign tables), columns with `format_type`, primary keys and
`pg_class.reltuples` as the row estimate (-1, never analyzed, becomes unknown), and the
columns' statistics from `pg_stats` (connectors.postgres.column_stats).

Describing a query needs each column's typmod (numeric(p, s) becomes decimal128(p, s)),
which asyncpg does not expose. When a result has numeric columns, the query is wrapped
in a temporary view inside a transaction that is rolled back, and pg_attribute gives the
typmods; parameters become typed NULLs for that (a view cannot have parameters).
"""

from __future__ import annotations

import itertools
import logging

import asyncpg
import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from connectors.base import Storage, TableInfo, TableRef
from connectors.postgres.anonymous_records import (anonymous_record_column, is_anonymous_record,
                                                   without_records)
from connectors.postgres.column_stats import column_stats
from connectors.postgres.records import row_column, rows_array_column
from connectors.postgres.types import ColumnType, column_type
from pgwire.types.pg_type import FIRST_NORMAL_OID
from pgwire.types.table import pg_type_for_field

log = logging.getLogger("fedgate.postgres")

_RELATIONS = """
SELECT c.oid, c.relname, c.reltuples::int8 AS reltuples, c.reltype::int8 AS reltype,
       rt.typarray::int8 AS typarray
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_type rt ON rt.oid = c.reltype
WHERE n.nspname = $1 AND c.relkind IN ('r', 'v', 'm', 'p', 'f') ORDER BY c.relname
"""
_COLUMNS = """
SELECT a.attrelid, a.attname,
       CASE WHEN t.typtype = 'd' THEN b.typname ELSE t.typname END AS typname,
       CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END AS typmod,
       format_type(a.atttypid, a.atttypmod) AS formatted, a.attnotnull, a.atttypid::int8 AS atttypid,
       CASE WHEN t.typtype = 'e' THEN (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder)
                                       FROM pg_enum e WHERE e.enumtypid = t.oid) END AS labels,
       CASE WHEN t.typtype = 'e' THEN t.typarray::int8 END AS enum_array
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type b ON b.oid = t.typbasetype
WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum
"""
_PRIMARY_KEYS = """
SELECT i.indrelid, a.attname
FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indisprimary AND i.indrelid = ANY($1::oid[])
ORDER BY i.indrelid, array_position(i.indkey::int2[], a.attnum)
"""
_VIEW_COLUMNS = """
SELECT a.attname, t.typname, a.atttypmod, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = $1::regclass AND a.attnum > 0 ORDER BY a.attnum
"""
# What pg_relation_size & co. and pg_get_viewdef answer for each relation of the schema,
# read live when a catalog query calls them (gateway.pg_catalog.storage).
_STORAGE = """
SELECT c.relname, pg_relation_size(c.oid, 'main') AS main, pg_relation_size(c.oid, 'fsm') AS fsm,
       pg_relation_size(c.oid, 'vm') AS vm, pg_relation_size(c.oid, 'init') AS init,
       pg_table_size(c.oid) AS table_size, pg_indexes_size(c.oid) AS indexes,
       pg_total_relation_size(c.oid) AS total,
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END AS definition,
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid, true) END AS pretty
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
"""
_view_names = itertools.count()


async def relation_storage(conn: asyncpg.Connection, schema: str) -> dict[str, Storage]:
    """Each relation of `schema` by name: its sizes and, for a view, its definition."""
    return {r["relname"]: Storage(r["main"], r["fsm"], r["vm"], r["init"], r["table_size"],
                                  r["indexes"], r["total"], r["definition"], r["pretty"])
            for r in await conn.fetch(_STORAGE, schema)}


async def discover_tables(conn: asyncpg.Connection, source: str, schema: str) -> list[TableInfo]:
    relations = await conn.fetch(_RELATIONS, schema)
    oids = [r["oid"] for r in relations]
    columns = await conn.fetch(_COLUMNS, oids)
    keys = await conn.fetch(_PRIMARY_KEYS, oids)
    stats = await column_stats(conn, schema)
    fields: dict[int, list] = {oid: [] for oid in oids}
    alike = set(oids)  # relations whose columns the gateway describes with their own types
    for c in columns:
        ctype = column_type(c["attname"], c["typname"], c["typmod"], c["formatted"], c["labels"],
                            c["atttypid"] if c["atttypid"] >= FIRST_NORMAL_OID else None, c["enum_array"])
        fields[c["attrelid"]].append(ctype.field.with_nullable(not c["attnotnull"]))
        if c["atttypid"] >= FIRST_NORMAL_OID or pg_type_for_field(ctype.field).oid != c["atttypid"]:
            alike.discard(c["attrelid"])
    primary: dict[int, list[str]] = {}
    for k in keys:
        primary.setdefault(k["indrelid"], []).append(k["attname"])
    infos = []
    for r in relations:
        ref = TableRef(source, r["relname"], remote_schema=schema, remote_name=r["relname"])
        estimate = r["reltuples"] if r["reltuples"] >= 0 else None
        row_type = (r["reltype"], r["typarray"]) if r["oid"] in alike and r["reltype"] else None
        infos.append(TableInfo(ref, pa_schema(fields[r["oid"]]), row_estimate=estimate,
                               column_stats=stats.get(r["oid"], ()),
                               primary_key=tuple(primary.get(r["oid"], ())), row_type=row_type))
    return infos


def pa_schema(fields: list[pa.Field]) -> pa.Schema:
    return pa.schema(fields)


async def describe_columns(conn: asyncpg.Connection, sql: str, schema: str) -> list[ColumnType]:
    """The Arrow types of `sql`'s result columns, without running it.

    Runs in a transaction that is rolled back: asyncpg's prepare leaves the protocol's
    implicit transaction open, which a later `BEGIN ISOLATION LEVEL ...` rejects. A whole
    row of a table of `schema` (`SELECT t FROM t`) is a struct of its fields
    (connectors.postgres.records); any other composite value is refused there.
    """
    transaction = conn.transaction()
    await transaction.start()
    try:
        statement = await conn.prepare(sql)
        attributes = statement.get_attributes()
        rows: dict[int, ColumnType] = {}
        for i, a in enumerate(attributes):  # a table's rows, and arrays of them
            if a.type.kind == "composite":
                rows[i] = await row_column(conn, a.name, a.type.oid, a.type.name, schema)
            elif a.type.kind == "array" and a.type.oid >= FIRST_NORMAL_OID:
                found = await rows_array_column(conn, a.name, a.type.oid, schema)
                if found is not None:
                    rows[i] = found
            elif is_anonymous_record(a.type.oid):
                rows[i] = await anonymous_record_column(conn, sql, i, a.name, a.type.oid)
        if not any(a.type.name == "numeric" for a in attributes):
            return [rows.get(i) or column_type(a.name, a.type.name, -1, type_oid=_own(a))
                    for i, a in enumerate(attributes)]
        return await _with_typmods(conn, sql, statement, attributes, rows)
    finally:
        await transaction.rollback()


async def _with_typmods(conn: asyncpg.Connection, sql: str, statement, attributes,
                        rows: dict[int, ColumnType]) -> list[ColumnType]:
    params = [p.name for p in statement.get_parameters()]
    records = [i for i, a in enumerate(attributes) if is_anonymous_record(a.type.oid)]
    view_sql = without_records(sql, records) if records else sql
    try:
        typed = None if view_sql is None else await _typmods_via_view(conn, view_sql, params)
    except (asyncpg.PostgresError, ParseError) as exc:
        # e.g. a read-only standby: numeric columns then keep their exact text.
        log.warning("cannot learn numeric typmods of a postgres query (%s); "
                    "numeric columns stay unconstrained", exc)
        typed = None
    if typed is None:
        return [rows.get(i) or column_type(a.name, a.type.name, -1, type_oid=_own(a))
                for i, a in enumerate(attributes)]
    return [rows.get(i) or column_type(a.name, typname, typmod, formatted, type_oid=_own(a))
            for i, (a, (typname, typmod, formatted)) in enumerate(zip(attributes, typed))]


def _own(attribute) -> int | None:
    """The source's OID of a result column's type, if it is one of the source's own (an
    enum): the gateway's catalog renumbers those."""
    return attribute.type.oid if attribute.type.oid >= FIRST_NORMAL_OID else None


async def _typmods_via_view(conn: asyncpg.Connection, sql: str,
                            params: list[str]) -> list[tuple[str, int, str]]:
    if params:
        tree = sqlglot.parse_one(sql, read="postgres")
        for node in list(tree.find_all(exp.Parameter)):
            index = int(node.name) - 1
            node.replace(exp.cast(exp.null(), exp.DataType.build(params[index], dialect="postgres")))
        sql = tree.sql("postgres")
    view = f"fedgate_describe_{next(_view_names)}"
    savepoint = conn.transaction()  # nested: a savepoint, so a failure spares the outer one
    await savepoint.start()
    try:
        await conn.execute(f"CREATE TEMP VIEW {view} AS {sql}")
        rows = await conn.fetch(_VIEW_COLUMNS, f"pg_temp.{view}")
    finally:
        await savepoint.rollback()
    return [(r["typname"], r["atttypmod"], r["format_type"]) for r in rows]
