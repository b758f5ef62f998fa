"""Which PostgreSQL type a result column is presented as, from its Arrow field.

Every result column is described to clients by a `PgType` (RowDescription carries its OID,
typlen and typmod); `pg_type_for_field` picks it from the Arrow field, honouring a
`pg_type` metadata override that connectors set when Arrow alone loses the SQL type
(jsonb vs text, varchar(n) vs text). A text with `pg_type_oid` and `pg_type_name` is a
value of a type the gateway's catalog numbers itself (a PostgreSQL source's enum:
gateway.pg_catalog.enums), sent as its label's text in both formats (enum_send's bytes).
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.pg_type import (
    ARRAY_OF,
    BOOL,
    BYTEA,
    DATE,
    ELEMENT_OF,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    NUMERIC,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    PgType,
    numeric_typmod,
    pg_type_by_name,
)


def pg_type_for_field(field: pa.Field) -> PgType:
    """The PostgreSQL type a result column of this Arrow field is presented as.

    Field metadata b"pg_type" (e.g. b"jsonb", b"varchar(20)") wins over the Arrow type.
    """
    meta = field.metadata
    if pa.types.is_struct(field.type):
        return row_type(field)
    if pa.types.is_list(field.type) and pa.types.is_struct(field.type.value_type):
        return rows_array_type(field)
    if meta and b"pg_type_oid" in meta and pa.types.is_string(field.type):
        return PgType(int(meta[b"pg_type_oid"]), meta[b"pg_type_name"].decode(), 4)
    if meta:
        override = meta.get(b"pg_type")
        if override is not None:
            found = pg_type_by_name(override.decode("utf-8", "replace"))
            if found is None:
                raise PgError(
                    FEATURE_NOT_SUPPORTED,
                    f"unknown pg_type {override!r} in metadata of column {field.name!r}",
                )
            return found
    return pg_type_for_arrow(field.type)


WHOLE_ROW_REFUSED = ("a record column (a row constructor, a whole-row reference, or an array "
                     "of them) is answered only by the PostgreSQL source holding its "
                     "tables, for a statement shipped whole to it")


def row_type(field: pa.Field) -> PgType:
    """A table's row type, or `record` for a row constructor's value, for a struct
    column whose metadata `pg_type_oid` gives the gateway catalog's OID of it (set by
    gateway.executor.row_types, or by the PostgreSQL source for a record); without one,
    0A000."""
    oid = (field.metadata or {}).get(b"pg_type_oid")
    if oid is None:
        raise PgError(FEATURE_NOT_SUPPORTED, WHOLE_ROW_REFUSED)
    name = field.metadata.get(b"pg_row_of", b"record").decode()
    return PgType(int(oid), name, -1)


def rows_array_type(field: pa.Field) -> PgType:
    """An array of a table's rows (`array_agg(t)`) or of records, for a list of structs
    whose metadata gives the gateway catalog's OIDs of the array (`pg_type_oid`) and of
    the row type (`pg_elem_oid`; gateway.executor.row_types); without them, 0A000."""
    meta = field.metadata or {}
    oid, elem = meta.get(b"pg_type_oid"), meta.get(b"pg_elem_oid")
    if oid is None or elem is None:
        raise PgError(FEATURE_NOT_SUPPORTED, WHOLE_ROW_REFUSED)
    name = "_" + meta.get(b"pg_row_of", b"record").decode()
    return PgType(int(oid), name, -1, elem=int(elem))


def pg_type_for_arrow(t: pa.DataType) -> PgType:
    """The PostgreSQL type for an Arrow type (no metadata involved)."""
    if pa.types.is_boolean(t):
        return BOOL
    if pa.types.is_integer(t):
        return _INTEGER_TYPES[t.bit_width, pa.types.is_signed_integer(t)]
    if pa.types.is_floating(t):
        return FLOAT8 if t.bit_width == 64 else FLOAT4
    if pa.types.is_decimal(t):
        return replace(NUMERIC, typmod=numeric_typmod(t.precision, t.scale))
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
    ):
        return TEXT
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return BYTEA
    if pa.types.is_date(t):
        return DATE
    if pa.types.is_time(t):
        return TIME
    if pa.types.is_timestamp(t):
        return TIMESTAMPTZ if t.tz is not None else TIMESTAMP
    if pa.types.is_interval(t) or pa.types.is_duration(t):
        return INTERVAL
    if pa.types.is_null(t):
        return TEXT
    if pa.types.is_dictionary(t):
        return pg_type_for_arrow(t.value_type)
    if isinstance(t, pa.BaseExtensionType):
        name = t.extension_name
        if name == "arrow.uuid":
            return UUID
        if name == "arrow.json":
            return JSON
        if name == "arrow.bool8":  # DuckDB's lossless Arrow export of BOOLEAN
            return BOOL
        return pg_type_for_arrow(t.storage_type)
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        elem = pg_type_for_arrow(t.value_type)
        if elem.oid in ELEMENT_OF:  # list<list<x>> is a multidimensional x[]
            return elem
        array = ARRAY_OF.get(elem.oid)
        if array is None:
            raise PgError(
                FEATURE_NOT_SUPPORTED, f"arrays of {elem.name} are not supported"
            )
        return array
    raise PgError(FEATURE_NOT_SUPPORTED, f"Arrow type {t} has no PostgreSQL equivalent")


# (bit width, signed) → the narrowest PostgreSQL integer holding every value.
_INTEGER_TYPES: dict[tuple[int, bool], PgType] = {
    (8, True): INT2,
    (16, True): INT2,
    (32, True): INT4,
    (64, True): INT8,
    (8, False): INT2,
    (16, False): INT4,
    (32, False): INT8,
    (64, False): replace(NUMERIC, typmod=numeric_typmod(20, 0)),
}
