"""Type names across the three worlds the planner touches: Arrow, sqlglot and PostgreSQL."""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

T = exp.DataType.Type

# sqlglot type -> PostgreSQL type name (the gateway maps names to OIDs).
_PG_NAMES: dict[exp.DataType.Type, str] = {
    T.BOOLEAN: "bool", T.TINYINT: "int2", T.SMALLINT: "int2", T.INT: "int4",
    T.BIGINT: "int8", T.UTINYINT: "int2", T.USMALLINT: "int4", T.UINT: "int8",
    T.UBIGINT: "numeric", T.INT128: "numeric", T.FLOAT: "float4", T.DOUBLE: "float8",
    T.DECIMAL: "numeric", T.BIGDECIMAL: "numeric", T.MONEY: "money",
    T.TEXT: "text", T.VARCHAR: "varchar", T.NVARCHAR: "varchar", T.CHAR: "bpchar",
    T.NCHAR: "bpchar", T.BPCHAR: "bpchar", T.NAME: "text",
    T.DATE: "date", T.TIME: "time", T.TIMESTAMP: "timestamp",
    T.TIMESTAMPTZ: "timestamptz", T.TIMESTAMPLTZ: "timestamptz", T.INTERVAL: "interval",
    T.UUID: "uuid", T.JSON: "json", T.JSONB: "jsonb",
    T.VARBINARY: "bytea", T.BINARY: "bytea", T.BLOB: "bytea",
}

# PostgreSQL type name (as the gateway reports declared parameter types) -> sqlglot type.
_FROM_PG: dict[str, str] = {
    "bool": "BOOLEAN", "int2": "SMALLINT", "int4": "INT", "int8": "BIGINT",
    "float4": "REAL", "float8": "DOUBLE PRECISION", "numeric": "NUMERIC",
    "text": "TEXT", "varchar": "VARCHAR", "bpchar": "CHAR", "name": "TEXT",
    "date": "DATE", "time": "TIME", "timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMPTZ",
    "interval": "INTERVAL", "uuid": "UUID", "json": "JSON", "jsonb": "JSONB", "bytea": "BYTEA",
    "oid": "BIGINT", "unknown": "TEXT",
}


def pg_type_name(datatype: exp.DataType | None) -> str | None:
    if datatype is None:
        return None
    if datatype.this == T.ARRAY and datatype.expressions:
        # $1::oid[] (asyncpg's type introspection) arrives as uint[] (planner.pgcompat).
        if datatype.expressions[0].this == T.UINT:
            return "_oid"
        element = pg_type_name(datatype.expressions[0])
        return f"_{element}" if element else None
    return _PG_NAMES.get(datatype.this)


def datatype_from_pg(name: str) -> exp.DataType | None:
    """A declared parameter type (pg_type.typname), an array of one too (`_text`)."""
    sql = _FROM_PG.get(name)
    if sql is None and name.startswith("_") and name[1:] in _FROM_PG and name != "_unknown":
        sql = f"{_FROM_PG[name[1:]]}[]"
    return exp.DataType.build(sql, dialect="postgres") if sql else None


def is_known(datatype: exp.DataType | None) -> bool:
    return datatype is not None and datatype.this not in (T.UNKNOWN, T.NULL)


def is_integer(datatype: exp.DataType | None) -> bool:
    return datatype is not None and datatype.this in exp.DataType.INTEGER_TYPES


# A PostgreSQL source's text of these types (connectors.postgres.types) is typed as the
# value the engine reads it as where it computes on it (planner.source_values).
_SOURCE_TEXTS = {"jsonb": "JSONB", "integer[]": "INT[]", "bigint[]": "BIGINT[]",
                 "smallint[]": "SMALLINT[]", "boolean[]": "BOOLEAN[]", "text[]": "TEXT[]"}


def sqlglot_type_of_field(field: pa.Field) -> str:
    """A table column's type as sqlglot's schema has it: its Arrow type's, or the value
    a source's text stands for."""
    kept = (field.metadata or {}).get(b"pg_type", b"").decode()
    if kept in _SOURCE_TEXTS and pa.types.is_string(field.type):
        return _SOURCE_TEXTS[kept]
    return sqlglot_type_of(field.type)


def sqlglot_type_of(arrow_type: pa.DataType) -> str:
    """An Arrow column type as a type string sqlglot's schema understands (DuckDB spelling)."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        return sqlglot_type_of(t.value_type)
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t):
        return "SMALLINT"
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return "INT"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "BIGINT"
    if pa.types.is_uint64(t):
        return "DECIMAL(20, 0)"
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return "REAL"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if pa.types.is_date(t):
        return "DATE"
    if pa.types.is_time(t):
        return "TIME"
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ" if t.tz else "TIMESTAMP"
    if pa.types.is_interval(t) or pa.types.is_duration(t):
        return "INTERVAL"
    if isinstance(t, pa.ExtensionType):
        return {"arrow.uuid": "UUID", "arrow.json": "JSON"}.get(t.extension_name, "VARCHAR")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "BLOB"
    return "VARCHAR"
