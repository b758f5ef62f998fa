"""PostgreSQL types as the gateway presents them: the public face of the type table.

The table itself is `pgwire.types.pg_type` (pg_type rows, the served `PgType`s, names
and typmods); the Arrow → PostgreSQL mapping is `pgwire.types.from_arrow`; Bind
parameter decoding is `pgwire.types.params`. This module gathers the names callers use.
"""

from __future__ import annotations

from pgwire.types.from_arrow import pg_type_for_arrow, pg_type_for_field
from pgwire.types.params import decode_param
from pgwire.types.pg_type import (
    ARRAY_OF,
    BOOL,
    BOOL_ARRAY,
    BPCHAR,
    BPCHAR_ARRAY,
    BYTEA,
    BYTEA_ARRAY,
    DATE,
    DATE_ARRAY,
    ELEMENT_OF,
    FLOAT4,
    FLOAT4_ARRAY,
    FLOAT8,
    FLOAT8_ARRAY,
    INT2,
    INT2_ARRAY,
    INT4,
    INT4_ARRAY,
    INT8,
    INT8_ARRAY,
    INTERVAL,
    INTERVAL_ARRAY,
    JSON,
    JSON_ARRAY,
    JSONB,
    JSONB_ARRAY,
    NAME,
    NAME_ARRAY,
    NUMERIC,
    NUMERIC_ARRAY,
    OID,
    OID_ARRAY,
    SCALAR_TYPES,
    TEXT,
    TEXT_ARRAY,
    TIME,
    TIME_ARRAY,
    TIMESTAMP,
    TIMESTAMP_ARRAY,
    TIMESTAMPTZ,
    TIMESTAMPTZ_ARRAY,
    UNKNOWN,
    UUID,
    UUID_ARRAY,
    VARCHAR,
    VARCHAR_ARRAY,
    PgType,
    input_syntax_error,
    format_type,
    numeric_typmod,
    pg_type_by_name,
    pg_type_by_oid,
    sql_name,
)

__all__ = [
    "ARRAY_OF", "BOOL", "BOOL_ARRAY", "BPCHAR", "BPCHAR_ARRAY", "BYTEA", "BYTEA_ARRAY",
    "DATE", "DATE_ARRAY", "ELEMENT_OF", "FLOAT4", "FLOAT4_ARRAY", "FLOAT8", "FLOAT8_ARRAY",
    "INT2", "INT2_ARRAY", "INT4", "INT4_ARRAY", "INT8", "INT8_ARRAY", "INTERVAL",
    "INTERVAL_ARRAY", "JSON", "JSON_ARRAY", "JSONB", "JSONB_ARRAY", "NAME", "NAME_ARRAY",
    "NUMERIC", "NUMERIC_ARRAY", "OID", "OID_ARRAY", "SCALAR_TYPES", "TEXT", "TEXT_ARRAY",
    "TIME", "TIME_ARRAY", "TIMESTAMP", "TIMESTAMP_ARRAY", "TIMESTAMPTZ",
    "TIMESTAMPTZ_ARRAY", "UNKNOWN", "UUID", "UUID_ARRAY", "VARCHAR", "VARCHAR_ARRAY",
    "PgType", "decode_param", "format_type", "input_syntax_error", "numeric_typmod", "pg_type_by_name",
    "pg_type_by_oid", "pg_type_for_arrow", "pg_type_for_field", "sql_name",
]  # fmt: skip
