"""MySQL/MariaDB column types as Arrow fields, from information_schema or a result header.

Catalog columns carry their collation as Arrow field metadata (`collation`), which the
MySQL capability table reads. `tinyint(1)` is MySQL's BOOLEAN and becomes bool; MariaDB's
UUID is uuid and its JSON (LONGTEXT checked by json_valid) is json. A result column read
straight from a table column takes that column's catalog type when the field packet
cannot tell (uuid and json arrive as plain strings).
TIMESTAMP is stored in UTC and shown in the session zone (UTC here): timestamp with zone;
DATETIME is a wall-clock value: timestamp without zone; TIME can exceed a day, so it
becomes an interval (duration), as PostgreSQL's `interval` holds it.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pyarrow as pa
from asyncmy.constants import FIELD_TYPE

from connectors.base import COLLATION_KEY
from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError

_INTS = {"tinyint": (pa.int8(), pa.uint8()), "smallint": (pa.int16(), pa.uint16()),
         "mediumint": (pa.int32(), pa.uint32()), "int": (pa.int32(), pa.uint32()),
         "integer": (pa.int32(), pa.uint32()), "bigint": (pa.int64(), pa.uint64())}
_TEXT = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"}
_BINARY = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bit"}


def catalog_field(name: str, data_type: str, column_type: str, precision: int | None,
                  scale: int | None, collation: str | None, nullable: bool,
                  json: bool = False) -> pa.Field:
    """`json`: MariaDB's JSON is LONGTEXT with a json_valid() check; the check says so."""
    t = data_type.lower()
    meta: dict[str, str] = {}
    if json:
        arrow: pa.DataType = pa.json_()
    elif t == "tinyint" and column_type.lower().startswith("tinyint(1)"):
        arrow = pa.bool_()
    elif t in _INTS:
        arrow = _INTS[t][1 if "unsigned" in column_type.lower() else 0]
    elif t == "decimal":
        arrow = _decimal(precision or 10, scale or 0)
    elif t in ("float", "double", "real"):
        arrow = pa.float32() if t == "float" else pa.float64()
    elif t in _TEXT:
        arrow = pa.string()
        if collation:
            meta[COLLATION_KEY] = collation
    elif t in _BINARY:
        arrow = pa.binary()
    elif t == "json":
        arrow = pa.json_()
    elif t == "uuid":
        arrow = pa.uuid()
    elif t == "date":
        arrow = pa.date32()
    elif t == "datetime":
        arrow = pa.timestamp("us")
    elif t == "timestamp":
        arrow = pa.timestamp("us", tz="UTC")
    elif t == "time":
        arrow = pa.duration("us")
    elif t == "year":
        arrow = pa.int16()
    else:
        arrow = pa.string()  # geometry, inet6: their text form
    return pa.field(name, arrow, nullable=nullable, metadata=meta or None)


def _decimal(precision: int, scale: int) -> pa.DataType:
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


UNSIGNED_FLAG = 32
BINARY_CHARSET = 63  # charsetnr of binary strings (BLOB, VARBINARY): bytes, not text


def result_field(column: Any, boolean: bool = False,
                 textual: pa.DataType | None = None) -> pa.Field:
    """A result column from asyncmy's field packet (name, type_code, length, flags,
    scale, charsetnr), with PostgreSQL's widths: INT is int4, SMALLINT int2, and an
    unsigned type takes the next wider one. `boolean`: the query's column is boolean in
    PostgreSQL (MySQL sends it as an integer; see connectors.dialects.mysql.BOOL_HINT).
    `textual`: the uuid/json type of the table column the result reads, if it reads one."""
    name, code, length = column.name, column.type_code, column.length
    unsigned = bool(column.flags & UNSIGNED_FLAG)
    if boolean or (code == FIELD_TYPE.TINY and length == 1):
        return pa.field(name, pa.bool_())
    ints = {FIELD_TYPE.TINY: pa.int16(), FIELD_TYPE.SHORT: pa.int32() if unsigned else pa.int16(),
            FIELD_TYPE.INT24: pa.int32(), FIELD_TYPE.LONG: pa.int64() if unsigned else pa.int32(),
            FIELD_TYPE.LONGLONG: pa.uint64() if unsigned else pa.int64()}
    if code in ints:
        return pa.field(name, ints[code])
    simple = {FIELD_TYPE.FLOAT: pa.float32(),
              FIELD_TYPE.DOUBLE: pa.float64(), FIELD_TYPE.DATE: pa.date32(),
              FIELD_TYPE.NEWDATE: pa.date32(), FIELD_TYPE.DATETIME: pa.timestamp("us"),
              FIELD_TYPE.TIMESTAMP: pa.timestamp("us", tz="UTC"),
              FIELD_TYPE.TIME: pa.duration("us"), FIELD_TYPE.YEAR: pa.int16(),
              FIELD_TYPE.JSON: pa.json_(), FIELD_TYPE.BIT: pa.binary()}.get(code)
    if simple is not None:
        return pa.field(name, simple)
    if code in (FIELD_TYPE.DECIMAL, FIELD_TYPE.NEWDECIMAL):
        scale = column.scale
        # length counts digits plus a sign (unless unsigned) and a point (when scale > 0).
        digits = max(length - (1 if scale else 0) - (0 if unsigned else 1), 1)
        return pa.field(name, _decimal(max(digits, scale), scale))
    if textual is not None and column.charsetnr != BINARY_CHARSET:
        return pa.field(name, textual)
    if column.charsetnr == BINARY_CHARSET and code in (
            FIELD_TYPE.BLOB, FIELD_TYPE.TINY_BLOB, FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB,
            FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.VARCHAR):
        return pa.field(name, pa.binary())
    return pa.field(name, pa.string())


def to_array(values: list[Any], t: pa.DataType) -> pa.Array:
    try:
        if pa.types.is_boolean(t):
            return pa.array([None if v is None else bool(v) for v in values], t)
        if pa.types.is_timestamp(t) and t.tz is not None:
            return pa.array(values, pa.timestamp("us")).cast(t)  # naive UTC wall clock
        if pa.types.is_duration(t):
            return pa.array([v if v is None or isinstance(v, timedelta) else None
                             for v in values], t)
        if isinstance(t, pa.UuidType):
            storage = [None if v is None else uuid.UUID(v).bytes for v in values]
            return pa.ExtensionArray.from_storage(t, pa.array(storage, t.storage_type))
        if isinstance(t, pa.BaseExtensionType):
            return pa.ExtensionArray.from_storage(t, pa.array(values, t.storage_type))
        return pa.array(values, t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise PgError(INVALID_TEXT_REPRESENTATION,
                      f"mysql value does not fit column type {t}: {exc}") from exc
