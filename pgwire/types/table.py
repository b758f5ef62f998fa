"""PostgreSQL types as the gateway presents them: OIDs, names, and the Arrow → PG mapping.

Every result column is described to clients by a `PgType` (RowDescription carries its OID,
typlen and typmod); `pg_type_for_field` picks it from the Arrow field, honouring a
`pg_type` metadata override that connectors set when Arrow alone loses the SQL type
(jsonb vs text, varchar(n) vs text). Parameter decoding lives in `pgwire.types.params`; a
forwarding `decode_param` is available here too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import pyarrow as pa

from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, PgError


@dataclass(frozen=True)
class PgType:
    """A PostgreSQL type as sent in RowDescription: OID, name, typlen and typmod."""

    oid: int
    name: str
    size: int
    typmod: int = -1


# Scalar types: PgType(oid, pg_type.typname, typlen).
BOOL = PgType(16, "bool", 1)
BYTEA = PgType(17, "bytea", -1)
NAME = PgType(19, "name", 64)
INT8 = PgType(20, "int8", 8)
INT2 = PgType(21, "int2", 2)
INT4 = PgType(23, "int4", 4)
TEXT = PgType(25, "text", -1)
OID = PgType(26, "oid", 4)
JSON = PgType(114, "json", -1)
FLOAT4 = PgType(700, "float4", 4)
FLOAT8 = PgType(701, "float8", 8)
UNKNOWN = PgType(705, "unknown", -2)
BPCHAR = PgType(1042, "bpchar", -1)
VARCHAR = PgType(1043, "varchar", -1)
DATE = PgType(1082, "date", 4)
TIME = PgType(1083, "time", 8)
TIMESTAMP = PgType(1114, "timestamp", 8)
TIMESTAMPTZ = PgType(1184, "timestamptz", 8)
INTERVAL = PgType(1186, "interval", 16)
NUMERIC = PgType(1700, "numeric", -1)
UUID = PgType(2950, "uuid", 16)
JSONB = PgType(3802, "jsonb", -1)

# Array types (pg_type.typarray of the scalars above); arrays are always varlena.
BOOL_ARRAY = PgType(1000, "_bool", -1)
BYTEA_ARRAY = PgType(1001, "_bytea", -1)
NAME_ARRAY = PgType(1003, "_name", -1)
INT2_ARRAY = PgType(1005, "_int2", -1)
INT4_ARRAY = PgType(1007, "_int4", -1)
TEXT_ARRAY = PgType(1009, "_text", -1)
BPCHAR_ARRAY = PgType(1014, "_bpchar", -1)
VARCHAR_ARRAY = PgType(1015, "_varchar", -1)
INT8_ARRAY = PgType(1016, "_int8", -1)
FLOAT4_ARRAY = PgType(1021, "_float4", -1)
FLOAT8_ARRAY = PgType(1022, "_float8", -1)
OID_ARRAY = PgType(1028, "_oid", -1)
TIMESTAMP_ARRAY = PgType(1115, "_timestamp", -1)
DATE_ARRAY = PgType(1182, "_date", -1)
TIME_ARRAY = PgType(1183, "_time", -1)
TIMESTAMPTZ_ARRAY = PgType(1185, "_timestamptz", -1)
INTERVAL_ARRAY = PgType(1187, "_interval", -1)
NUMERIC_ARRAY = PgType(1231, "_numeric", -1)
JSON_ARRAY = PgType(199, "_json", -1)
UUID_ARRAY = PgType(2951, "_uuid", -1)
JSONB_ARRAY = PgType(3807, "_jsonb", -1)

SCALAR_TYPES: tuple[PgType, ...] = (
    BOOL, BYTEA, NAME, INT8, INT2, INT4, TEXT, OID, JSON, FLOAT4, FLOAT8, UNKNOWN, BPCHAR,
    VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL, NUMERIC, UUID, JSONB,
)  # fmt: skip

# element oid → array type, and back.
ARRAY_OF: dict[int, PgType] = {
    BOOL.oid: BOOL_ARRAY,
    BYTEA.oid: BYTEA_ARRAY,
    NAME.oid: NAME_ARRAY,
    INT2.oid: INT2_ARRAY,
    INT4.oid: INT4_ARRAY,
    INT8.oid: INT8_ARRAY,
    TEXT.oid: TEXT_ARRAY,
    OID.oid: OID_ARRAY,
    JSON.oid: JSON_ARRAY,
    FLOAT4.oid: FLOAT4_ARRAY,
    FLOAT8.oid: FLOAT8_ARRAY,
    BPCHAR.oid: BPCHAR_ARRAY,
    VARCHAR.oid: VARCHAR_ARRAY,
    DATE.oid: DATE_ARRAY,
    TIME.oid: TIME_ARRAY,
    TIMESTAMP.oid: TIMESTAMP_ARRAY,
    TIMESTAMPTZ.oid: TIMESTAMPTZ_ARRAY,
    INTERVAL.oid: INTERVAL_ARRAY,
    NUMERIC.oid: NUMERIC_ARRAY,
    UUID.oid: UUID_ARRAY,
    JSONB.oid: JSONB_ARRAY,
}
ELEMENT_OF: dict[int, PgType] = {
    arr.oid: elem for elem in SCALAR_TYPES if (arr := ARRAY_OF.get(elem.oid))
}

_BY_OID: dict[int, PgType] = {t.oid: t for t in (*SCALAR_TYPES, *ARRAY_OF.values())}

# Every spelling PostgreSQL's grammar or format_type() uses for the types above.
_ALIASES: dict[str, PgType] = {
    "bool": BOOL,
    "boolean": BOOL,
    "bytea": BYTEA,
    "name": NAME,
    "int8": INT8,
    "bigint": INT8,
    "int2": INT2,
    "smallint": INT2,
    "int4": INT4,
    "int": INT4,
    "integer": INT4,
    "text": TEXT,
    "oid": OID,
    "json": JSON,
    "float4": FLOAT4,
    "real": FLOAT4,
    "float8": FLOAT8,
    "double precision": FLOAT8,
    "float": FLOAT8,
    "unknown": UNKNOWN,
    "bpchar": BPCHAR,
    "char": BPCHAR,
    "character": BPCHAR,
    "varchar": VARCHAR,
    "character varying": VARCHAR,
    "date": DATE,
    "time": TIME,
    "time without time zone": TIME,
    "timestamp": TIMESTAMP,
    "timestamp without time zone": TIMESTAMP,
    "timestamptz": TIMESTAMPTZ,
    "timestamp with time zone": TIMESTAMPTZ,
    "interval": INTERVAL,
    "numeric": NUMERIC,
    "decimal": NUMERIC,
    "uuid": UUID,
    "jsonb": JSONB,
}

_BY_TYPNAME: dict[str, PgType] = {t.name: t for t in _BY_OID.values()}

_TYPE_WITH_ARGS = re.compile(
    r"^(?P<base>[a-z ]+?)\s*\(\s*(?P<args>[-+0-9, ]*)\)(?P<rest>[a-z ]*)$"
)


def pg_type_by_oid(oid: int) -> PgType | None:
    """The built-in type with this OID, or None when the gateway does not know it."""
    return _BY_OID.get(oid)


def pg_type_by_name(name: str) -> PgType | None:
    """Look a type up by any of its SQL spellings: 'integer', 'character varying', 'int4[]'.

    Type modifiers are understood where they change RowDescription: 'numeric(10,2)',
    'varchar(20)', 'char(3)', 'timestamp(3) with time zone'. Unknown names give None.
    """
    key = " ".join(name.strip().lower().replace('"', "").split())
    if key.endswith("[]"):
        elem = pg_type_by_name(key[:-2])
        return ARRAY_OF.get(elem.oid) if elem is not None else None
    plain = _ALIASES.get(key) or _BY_TYPNAME.get(key)
    if plain is not None:
        return plain
    m = _TYPE_WITH_ARGS.match(key)
    if m is None:
        return None
    base = _ALIASES.get(
        (m.group("base").strip() + " " + m.group("rest").strip()).strip()
    )
    if base is None:
        return None
    try:
        args = [int(a) for a in m.group("args").split(",") if a.strip()]
    except ValueError:
        return None
    return _with_typmod(base, args)


def _with_typmod(base: PgType, args: list[int]) -> PgType | None:
    """Apply SQL type arguments the way PostgreSQL's typmodin functions encode them."""
    if base is NUMERIC and 1 <= len(args) <= 2:
        precision, scale = args[0], args[1] if len(args) == 2 else 0
        return replace(NUMERIC, typmod=numeric_typmod(precision, scale))
    if base in (VARCHAR, BPCHAR) and len(args) == 1:
        return replace(base, typmod=args[0] + 4)  # VARHDRSZ + length
    if base in (TIME, TIMESTAMP, TIMESTAMPTZ) and len(args) == 1:
        return replace(base, typmod=args[0])
    if base is FLOAT8 and len(args) == 1 and 1 <= args[0] <= 53:
        return FLOAT4 if args[0] <= 24 else FLOAT8
    if base is INTERVAL and len(args) == 1:
        # INTERVAL_FULL_RANGE (0x7FFF) in the high half, precision in the low half.
        return replace(base, typmod=(0x7FFF << 16) | args[0])
    return None


def numeric_typmod(precision: int, scale: int) -> int:
    """numeric(p, s) as PostgreSQL 15 encodes it (negative scales keep 11 bits)."""
    return ((precision << 16) | (scale & 0x7FF)) + 4


def pg_type_for_field(field: pa.Field) -> PgType:
    """The PostgreSQL type a result column of this Arrow field is presented as.

    Field metadata b"pg_type" (e.g. b"jsonb", b"varchar(20)") wins over the Arrow type.
    """
    meta = field.metadata
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


# The names PostgreSQL's input functions use in their error messages.
_SQL_NAMES: dict[int, str] = {
    BOOL.oid: "boolean",
    INT2.oid: "smallint",
    INT4.oid: "integer",
    INT8.oid: "bigint",
    FLOAT4.oid: "real",
    FLOAT8.oid: "double precision",
    TIME.oid: "time",
    TIMESTAMPTZ.oid: "timestamp with time zone",
    JSONB.oid: "json",
}


def sql_name(oid: int) -> str:
    """How PostgreSQL names a type in 'invalid input syntax for type X' messages."""
    known = _SQL_NAMES.get(oid)
    if known is not None:
        return known
    found = _BY_OID.get(oid)
    return found.name if found is not None else "unknown"


def input_syntax_error(oid: int, text: str) -> PgError:
    """The 22P02 error an input function raises for text it cannot parse."""
    return PgError(
        INVALID_TEXT_REPRESENTATION,
        f'invalid input syntax for type {sql_name(oid)}: "{text}"',
    )


def decode_param(
    oid: int,
    fmt: int,
    data: bytes | None,
    *,
    index: int | None = None,
    timezone: str = "UTC",
) -> object:
    """Decode one Bind parameter; see `pgwire.types.params.decode_param`.

    A forwarding function rather than a re-export because pgwire.types.params imports this
    module for the type constants.
    """
    from pgwire.types.params import decode_param as decode

    return decode(oid, fmt, data, index=index, timezone=timezone)
