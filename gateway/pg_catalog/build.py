"""Build the catalog database: an in-memory DuckDB holding pg_catalog and
information_schema for one version of the federated catalog.

Layout inside DuckDB (its own built-in pg_catalog and information_schema stay untouched,
and no query of ours reaches them): schema `fg_pg` holds pg_catalog's relations, `fg_is`
information_schema's, `fg_fn` the function macros and `fg_x` helper tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from connectors.base import TableInfo, TableRef
from connectors.duckdb.runner import DUCKDB_CONFIG, DuckDBRunner, restrict_access
from pgwire.keywords import keyword_rows
from gateway.pg_catalog import functions, infoschema, procs, relations, types, views
from gateway.pg_catalog.model import CatalogModel
from gateway.pg_catalog.tables import CHAR_ENUM_SQL, PG_CATALOG, PG_CATALOG_VIEWS, create_table_sql

PG_SCHEMA, IS_SCHEMA, HELPER_SCHEMA = "fg_pg", "fg_is", "fg_x"
REMOTE_SCHEMAS = {"pg_catalog": PG_SCHEMA, "information_schema": IS_SCHEMA}
ONE_ROW = "_fedgate_one_row"  # what table-less catalog queries read FROM (planner.pgcompat)


@dataclass
class BuiltCatalog:
    runner: DuckDBRunner
    tables: dict[str, list[TableInfo]]  # schema as clients see it -> its relations
    model: CatalogModel


def oid_schema(schema: pa.Schema) -> pa.Schema:
    """Present UINTEGER columns (and lists of them) as PostgreSQL `oid` / `oid[]`, and
    the "char" enum's (tables.CHAR_ENUM_SQL: Arrow dictionaries) as `"char"` strings;
    `oid_batch` gives a batch the matching values."""
    fields = []
    for field in schema:
        t = field.type
        if pa.types.is_uint32(t):
            field = field.with_metadata({b"pg_type": b"oid"})
        elif pa.types.is_list(t) and pa.types.is_uint32(t.value_type):
            field = field.with_metadata({b"pg_type": b"oid[]"})
        elif pa.types.is_dictionary(t):
            field = pa.field(field.name, pa.string(), metadata={b"pg_type": b'"char"'})
        elif pa.types.is_list(t) and pa.types.is_dictionary(t.value_type):
            field = pa.field(field.name, pa.list_(pa.string()), metadata={b"pg_type": b'"char"[]'})
        fields.append(field)
    return pa.schema(fields, metadata=schema.metadata)


def oid_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch` under `oid_schema`'s `schema`: "char" enum values as their strings."""
    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def build(version: int, database: str, user_tables: dict[str, list[TableInfo]]) -> BuiltCatalog:
    con = duckdb.connect(":memory:", config=DUCKDB_CONFIG)
    for schema in (PG_SCHEMA, IS_SCHEMA, HELPER_SCHEMA, "fg_fn"):
        con.execute(f"CREATE SCHEMA {schema}")
    con.execute(CHAR_ENUM_SQL)
    for name, spec in PG_CATALOG.items():
        con.execute(create_table_sql(PG_SCHEMA, name, spec))
    for name, spec in infoschema.INFORMATION_SCHEMA.items():
        con.execute(create_table_sql(IS_SCHEMA, name, spec))
    for name, spec in functions.SESSION_TABLES.items():
        con.execute(f"CREATE TABLE main.{name} ({spec})")
    for name, spec in functions.HELPER_TABLES.items():
        con.execute(f"CREATE TABLE {HELPER_SCHEMA}.{name} ({spec})")
    for name in PG_CATALOG_VIEWS:
        con.execute(views.create_view_sql(PG_SCHEMA, name))
    con.execute(f"CREATE VIEW {PG_SCHEMA}.{ONE_ROW} AS SELECT 1 AS one")

    system = {"pg_catalog": _infos(con, "pg_catalog", [*PG_CATALOG, *PG_CATALOG_VIEWS]),
              "information_schema": _infos(con, "information_schema",
                                           list(infoschema.INFORMATION_SCHEMA))}
    model = CatalogModel.build(version, user_tables, system)
    _fill(con, model, database)
    con.execute(functions.VISIBILITY_VIEW)
    con.execute(functions.STORAGE_VIEW)
    _create_macros(con)
    system["pg_catalog"].append(_info(con, "pg_catalog", ONE_ROW))
    restrict_access(con)  # built from Python data: client queries reach no file from here
    return BuiltCatalog(DuckDBRunner(con), system, model)


def _create_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Create every macro; one that calls a macro not made yet waits for the next pass."""
    pending = dict(functions.MACROS)
    reserved = [row[0] for row in con.sql(
        "SELECT word FROM fg_x.keywords WHERE catcode <> 'U' ORDER BY word").fetchall()]
    while pending:
        failed: dict[str, str] = {}
        last_error: Exception | None = None
        for name, body in pending.items():
            try:
                con.execute(functions.create_macro_sql(name, body, reserved))
            except duckdb.CatalogException as exc:
                failed[name], last_error = body, exc
        if len(failed) == len(pending):
            raise RuntimeError(f"catalog macros {sorted(failed)} cannot be created") from last_error
        pending = failed


def _info(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> TableInfo:
    remote = REMOTE_SCHEMAS[schema]
    arrow = con.sql(f'SELECT * FROM {remote}."{name}" LIMIT 0').to_arrow_table().schema
    return TableInfo(TableRef(schema, name, remote_schema=remote, remote_name=name),
                     oid_schema(arrow))


def _infos(con: duckdb.DuckDBPyConnection, schema: str, names: list[str]) -> list[TableInfo]:
    return [_info(con, schema, name) for name in names]


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple]) -> None:
    if not rows:
        return
    schema = con.sql(f"SELECT * FROM {table} LIMIT 0").to_arrow_table().schema
    if len(rows[0]) != len(schema):
        raise ValueError(f"{table}: rows have {len(rows[0])} values, the table {len(schema)} columns")
    data = pa.table([pa.array([r[i] for r in rows], type=f.type) for i, f in enumerate(schema)],
                    schema=schema)
    con.register("fg_rows", data)
    try:
        con.execute(f"INSERT INTO {table} SELECT * FROM fg_rows")
    finally:
        con.unregister("fg_rows")


def _fill(con: duckdb.DuckDBPyConnection, model: CatalogModel, database: str) -> None:
    proc_oid = procs.proc_oids()
    pg = {
        "pg_namespace": relations.namespace_rows(model),
        "pg_class": relations.class_rows(model),
        "pg_attribute": relations.attribute_rows(model),
        "pg_index": relations.index_rows(model),
        "pg_constraint": relations.constraint_rows(model),
        "pg_description": relations.description_rows(model),
        "pg_database": relations.database_rows(database),
        "pg_stat_user_tables": relations.stat_user_table_rows(model),
        "pg_type": types.type_rows(proc_oid) + types.row_type_rows(model, proc_oid)
        + types.enum_type_rows(model.enums, proc_oid),
        "pg_enum": types.enum_label_rows(model.enums),
        "pg_proc": procs.proc_rows(proc_oid),
        **relations.STATIC_ROWS,
    }
    for name, rows in pg.items():
        _insert(con, f'{PG_SCHEMA}."{name}"', rows)
    for name, rows in infoschema.rows(model, database).items():
        _insert(con, f'{IS_SCHEMA}."{name}"', rows)
    _insert(con, f"{HELPER_SCHEMA}.type_display",
            types.display_rows() + types.row_type_display_rows(model) + types.enum_display_rows(model.enums))
    _insert(con, f"{HELPER_SCHEMA}.type_names", _type_names())
    _insert(con, f"{HELPER_SCHEMA}.definitions", relations.definition_rows(model))
    _insert(con, f"{HELPER_SCHEMA}.one_row", [(1,)])
    _insert(con, f"{HELPER_SCHEMA}.keywords", keyword_rows())  # PostgreSQL's, not DuckDB's


# Spellings to_regtype() and ::regtype accept beyond typname and format_type's names.
_TYPE_ALIASES = {"int": 23, "integer": 23, "bigint": 20, "smallint": 21, "boolean": 16,
                 "real": 700, "double precision": 701, "float": 701, "decimal": 1700,
                 "character varying": 1043, "character": 1042, "char": 1042,
                 "timestamp without time zone": 1114, "timestamp with time zone": 1184,
                 "time without time zone": 1083, "time with time zone": 1266,
                 '"char"': 18}


def _type_names() -> list[tuple]:
    names: dict[str, int] = {}
    for t in types.ALL_TYPES:
        names.setdefault(t.name, t.oid)
    for name, oid in _TYPE_ALIASES.items():
        names.setdefault(name, oid)
    for t in types.TYPES:
        if t.array_oid:
            for name, oid in list(names.items()):
                if oid == t.oid and not name.startswith("_"):
                    names.setdefault(f"{name}[]", t.array_oid)
    return sorted(names.items())
