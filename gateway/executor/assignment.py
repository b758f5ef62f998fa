"""A move's values converted to its target's column types by PostgreSQL's assignment casts.

`INSERT INTO t SELECT ...` in PostgreSQL converts each output column to its target
column's type by the assignment cast between the two (or refuses with 42804 when there is
none), and a value that does not fit fails the statement: 22003 for an integer or a
numeric out of range, 22001 for a string longer than varchar(n)/char(n) (unless what is
beyond n is spaces, which are cut), 22P02 for a string literal that is no value of the
type. The same rules hold here for every target, so a SQLite column, which would store
anything, gets what a PostgreSQL one would. An untyped string literal of the query's
select list (`SELECT id, 'f' FROM ...`) is PostgreSQL's `unknown` and is read by the
target type's input, as PostgreSQL does; a text column is not.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

from connectors.bulk import TargetColumn
from pgwire.errors import PgError
from pgwire.types.from_arrow import pg_type_for_field

INTEGERS = {"int2": (pa.int16(), "smallint"), "int4": (pa.int32(), "integer"),
            "int8": (pa.int64(), "bigint")}
FLOATS = {"float4": pa.float32(), "float8": pa.float64()}
STRINGS = frozenset({"text", "varchar", "bpchar", "name"})
_TRUE = frozenset({"t", "tr", "tru", "true", "y", "ye", "yes", "on", "1"})
_FALSE = frozenset({"f", "fa", "fal", "fals", "false", "n", "no", "of", "off", "0"})


def target_arrow(column: TargetColumn, timezone: str = "UTC") -> pa.DataType | None:
    """The Arrow type a value of `column` is held in on its way (None: as it comes)."""
    kind = column.pg_type
    if kind in INTEGERS:
        return INTEGERS[kind][0]
    if kind in FLOATS:
        return FLOATS[kind]
    if kind in STRINGS:
        return pa.string()
    if kind == "numeric" and column.precision is not None:
        return (pa.decimal128 if column.precision <= 38 else pa.decimal256)(column.precision,
                                                                            column.scale or 0)
    return {"bool": pa.bool_(), "date": pa.date32(), "timestamp": pa.timestamp("us"),
            "timestamptz": pa.timestamp("us", tz="UTC"), "bytea": pa.binary()}.get(kind)


def convert(array: pa.Array, column: TargetColumn, *, unknown: bool = False,
            timezone: str = "UTC") -> pa.Array:
    """`array` as values of `column`; `unknown`: it is a string literal of the query."""
    source = array.type
    if pa.types.is_null(source):
        wanted = target_arrow(column, timezone)
        return pa.nulls(len(array), wanted) if wanted is not None else array
    if isinstance(source, pa.BaseExtensionType) and source.extension_name == "arrow.bool8":
        array = pc.cast(array.storage, pa.bool_())  # a boolean held in a byte
        source = array.type
    if isinstance(source, pa.BaseExtensionType) and column.pg_type not in STRINGS:
        return array  # uuid, json ...: taken as they are, the target checks them
    if _is_string(source) and unknown and column.pg_type not in STRINGS:
        return convert(_parsed(array, column, timezone), column, timezone=timezone)
    kind = column.pg_type
    if kind in INTEGERS:
        return _to_integer(array, column)
    if kind in FLOATS:
        return _to_float(array, column)
    if kind == "numeric":
        return _to_numeric(array, column)
    if kind in STRINGS:
        return _fitted(_as_text(array, timezone), column)
    if kind == "bool" and pa.types.is_boolean(source):
        return array
    if kind in ("date", "timestamp", "timestamptz") and (pa.types.is_date(source)
                                                       or pa.types.is_timestamp(source)):
        return _to_datetime(array, kind, timezone)
    if kind == "bytea" and (pa.types.is_binary(source) or pa.types.is_large_binary(source)):
        return array
    if target_arrow(column) is None:
        return array  # a type of the target's own: the target's input checks the value
    raise mismatch(column, array.type)


def mismatch(column: TargetColumn, source: pa.DataType) -> PgError:
    given = pg_type_for_field(pa.field(column.name, source)).name
    return PgError("42804", f'column "{column.name}" is of type {column.type_text} but '
                   f"expression is of type {_spelled(given)}",
                   hint="You will need to rewrite or cast the expression.")


def _spelled(name: str) -> str:
    return TargetColumn("", name).type_text


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _to_integer(array: pa.Array, column: TargetColumn) -> pa.Array:
    wanted, name = INTEGERS[column.pg_type]
    source = array.type
    if pa.types.is_floating(source):
        finite = pc.is_finite(array)
        if not pc.all(pc.or_kleene(finite, pc.is_null(array))).as_py():
            raise PgError("22003", f"{name} out of range")
        array = pc.round(array, round_mode="half_to_even")  # float8 to int: rint()
    elif not pa.types.is_integer(source) and not pa.types.is_decimal(source):
        raise mismatch(column, source)
    try:
        if pa.types.is_decimal(source):  # numeric to integer: half away from zero
            array = pc.round(array, round_mode="half_towards_infinity")
        return pc.cast(array, wanted, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise PgError("22003", f"{name} out of range") from exc


def _to_float(array: pa.Array, column: TargetColumn) -> pa.Array:
    if not _is_number(array.type):
        raise mismatch(column, array.type)
    wanted = FLOATS[column.pg_type]
    out = pc.cast(array, wanted, safe=False)
    if column.pg_type == "float4" and (pa.types.is_floating(array.type) or pa.types.is_decimal(array.type)):
        overflow = pc.and_(pc.invert(pc.is_finite(out)), pc.is_finite(pc.cast(array, pa.float64(), safe=False)))
        if pc.any(overflow).as_py():
            raise PgError("22003", f'"{_first(array, overflow)}" is out of range for type real')
    return out


def _first(array: pa.Array, mask: pa.Array) -> object:
    return array.filter(mask)[0].as_py()


def _to_numeric(array: pa.Array, column: TargetColumn) -> pa.Array:
    source = array.type
    if not _is_number(source):
        raise mismatch(column, source)
    if column.precision is None:
        return array  # numeric without a typmod holds any number
    precision, scale = column.precision, column.scale or 0
    wanted = target_arrow(column)
    overflow = PgError("22003", "numeric field overflow",
                       detail=f"A field with precision {precision}, scale {scale} must round "
                              f"to an absolute value less than {'1' if precision == scale else '10^' + str(precision - scale)}.")
    if pa.types.is_floating(source):
        if not pc.all(pc.or_kleene(pc.is_finite(array), pc.is_null(array))).as_py():
            raise PgError("22003", "numeric field overflow",
                          detail=f"A field with precision {precision}, scale {scale} cannot hold an infinite value.")
        rounded = pc.round(array, scale, round_mode="half_towards_infinity")
        if pc.any(pc.greater_equal(pc.abs(rounded), 10.0 ** (precision - scale))).as_py():
            raise overflow
        return pa.array([None if v is None else decimal.Decimal(repr(v)).quantize(
            decimal.Decimal(1).scaleb(-scale), decimal.ROUND_HALF_UP) for v in rounded.to_pylist()], wanted)
    if pa.types.is_integer(source):
        # Arrow sizes an integer's decimal by its type (20 digits for int64), not by its
        # values: widened first, then narrowed value by value below.
        array = pc.cast(array, pa.decimal128(38, scale) if scale <= 18 else pa.decimal256(76, scale))
    try:
        if pa.types.is_decimal(source) and source.scale > scale:
            array = pc.round(array, scale, round_mode="half_towards_infinity")
        return pc.cast(array, wanted, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise overflow from exc


def _as_text(array: pa.Array, timezone: str) -> pa.Array:
    """Any value as PostgreSQL's output function writes it (the assignment cast to text)."""
    source = array.type
    if _is_string(source):
        return pc.cast(array, pa.string())
    if isinstance(source, pa.BaseExtensionType):
        return pa.array([None if v is None else str(v) for v in array.to_pylist()], pa.string())
    if pa.types.is_boolean(source):
        return pc.if_else(array, "true", "false")
    if pa.types.is_floating(source):
        return pa.array([None if v is None else _float_text(v) for v in array.to_pylist()], pa.string())
    if pa.types.is_timestamp(source):
        return pa.array([None if v is None else _timestamp_text(v, timezone)
                         for v in array.to_pylist()], pa.string())
    if pa.types.is_binary(source) or pa.types.is_large_binary(source):
        return pa.array([None if v is None else "\\x" + v.hex() for v in array.to_pylist()], pa.string())
    return pc.cast(array, pa.string())


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _timestamp_text(value: dt.datetime, timezone: str) -> str:
    if value.tzinfo is not None:

        local = value.astimezone(ZoneInfo(timezone))
        offset = local.utcoffset() or dt.timedelta()
        sign, minutes = ("-" if offset < dt.timedelta() else "+"), abs(int(offset.total_seconds())) // 60
        zone = f"{sign}{minutes // 60:02d}" + (f":{minutes % 60:02d}" if minutes % 60 else "")
        return _timestamp_text(local.replace(tzinfo=None), timezone) + zone
    text = value.isoformat(sep=" ")
    return text.rstrip("0") if "." in text else text


def _fitted(array: pa.Array, column: TargetColumn) -> pa.Array:
    """Strings held to varchar(n)/char(n): what is beyond n must be spaces, and is cut."""
    n = column.length
    if n is None:
        return array
    over = pc.fill_null(pc.greater(pc.utf8_length(array), n), False)
    if not pc.any(over).as_py():
        return array
    values = array.to_pylist()
    for i, value in enumerate(values):
        if value is not None and len(value) > n:
            if value[n:].strip(" "):
                raise PgError("22001", f"value too long for type {column.type_text}")
            values[i] = value[:n]
    return pa.array(values, pa.string())


def _to_datetime(array: pa.Array, kind: str, timezone: str) -> pa.Array:
    source = array.type
    zoned = pa.types.is_timestamp(source) and source.tz is not None
    if kind == "date":
        if zoned:
            array = pc.local_timestamp(pc.cast(array, pa.timestamp("us", tz=timezone)))
        return pc.cast(array, pa.date32())
    if pa.types.is_date(source):
        array = pc.cast(array, pa.timestamp("us"))
    elif source.unit != "us":
        array = pc.cast(array, pa.timestamp("us", tz=source.tz), safe=False)
    if kind == "timestamp":
        return pc.local_timestamp(pc.cast(array, pa.timestamp("us", tz=timezone))) if zoned else array
    if not zoned:  # a wall clock read in the session's zone, as timestamp -> timestamptz
        array = pc.assume_timezone(array, timezone, ambiguous="earliest", nonexistent="latest")
    return pc.cast(array, pa.timestamp("us", tz="UTC"))


def _parsed(array: pa.Array, column: TargetColumn, timezone: str) -> pa.Array:
    """A string literal read by the input function of the column's type."""
    kind, out = column.pg_type, []
    wanted = target_arrow(column)
    for value in array.to_pylist():
        if value is None:
            out.append(None)
            continue
        try:
            out.append(_input(value, kind, timezone))
        except (ValueError, decimal.InvalidOperation) as exc:
            raise PgError("22P02", f'invalid input syntax for type {_spelled(kind)}: "{value}"') from exc
    if wanted is None:
        return pa.array(out)
    if kind in INTEGERS:  # range checked by the cast from int64
        return pa.array(out, pa.int64()) if all(v is None or -2**63 <= v < 2**63 for v in out) \
            else _out_of_range(kind)
    if kind == "numeric":
        try:
            return pa.array(out)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise PgError("22003", "numeric field overflow") from exc
    if kind == "timestamptz":
        return pa.array(out, pa.timestamp("us", tz="UTC"))
    return pa.array(out, wanted)


def _out_of_range(kind: str) -> pa.Array:
    raise PgError("22003", f"value out of range for type {INTEGERS[kind][1]}")


def _input(text: str, kind: str, timezone: str) -> object:
    s = text.strip()
    if kind in INTEGERS:
        return int(s)
    if kind in FLOATS:
        return float(s)
    if kind == "numeric":
        return decimal.Decimal(s)
    if kind == "bool":
        lowered = s.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(s)
    if kind == "date":
        return dt.date.fromisoformat(s)
    if kind in ("timestamp", "timestamptz"):
        value = dt.datetime.fromisoformat(s)
        if kind == "timestamptz" and value.tzinfo is None:

            value = value.replace(tzinfo=ZoneInfo(timezone))
        return value
    if kind == "bytea":
        return bytes.fromhex(s[2:]) if s.startswith("\\x") else s.encode()
    return text
