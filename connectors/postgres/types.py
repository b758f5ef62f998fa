"""PostgreSQL column types as Arrow fields, and PostgreSQL's CSV text as Arrow arrays.

The source streams `COPY (query) TO STDOUT (FORMAT csv)` and lets pyarrow's C++ CSV
reader parse it with explicit column types, so values never become Python objects. With
the remote session in UTC, ISO DateStyle, IntervalStyle postgres and
`extra_float_digits = 3`, PostgreSQL's text is exact and pyarrow reads most of it
directly (`t`/`f`, `Infinity`/`NaN`, `+00` offsets). The rest is read as text and
converted per batch, vectorized where it matters:
bytea (`\\x` hex), uuid (hex), interval (ISO 8601, per value: rare).
Types Arrow cannot hold exactly keep their text and say what they are in the `pg_type`
field metadata the gateway's result encoder honours: unconstrained numeric, jsonb,
varchar(n)/char(n), arrays, enums and other user types.
bit, varbit, timetz, money and the reg* types keep their text too, presented as
themselves (their binary encoders read that text: pgwire.types.text_backed).
A record (`SELECT row(id, s) FROM t`), or an array of them, is not mapped here: its text
is PostgreSQL's, but a client reading it in binary needs each field's type, which the
text does not carry. Describing a result learns them for a row constructor of the select
list (connectors.postgres.anonymous_records); any other record is refused (0A000).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, PgError

Convert = Callable[[pa.Array], pa.Array]


@dataclass(frozen=True)
class ColumnType:
    field: pa.Field  # what the stream yields
    parse_as: pa.DataType  # what pyarrow's CSV reader parses the text into
    convert: Convert | None = None  # parse_as -> field.type, per batch


def _meta(name: str, t: pa.DataType, pg_type: str) -> pa.Field:
    return pa.field(name, t, metadata={"pg_type": pg_type})


def column_type(name: str, typname: str, typmod: int, formatted: str | None = None,
                labels: Sequence[str] | None = None, type_oid: int | None = None,
                array_oid: int | None = None) -> ColumnType:
    """Map a column of PostgreSQL type `typname` (pg_type.typname) and typmod to Arrow.

    `formatted` is `format_type(oid, typmod)` where known (catalog discovery), used for
    the pg_type metadata of types kept as text. `labels`: an enum's labels in their
    declared order (pg_enum.enumsortorder), which the engine orders it by
    (planner.source_enums): kept in the `enum_labels` metadata, as JSON. `type_oid`: the
    source's OID of a type of its own (pg_type.oid, an enum's), kept in the
    `source_type_oid` metadata: the gateway's catalog numbers the source's enums itself,
    and a result column of one is described with that number (gateway.executor.enum_types).
    `array_oid`: the source's OID of an enum's array type (pg_type.typarray), kept in the
    `source_array_oid` metadata, so that `st = ANY($1)` relayed is described by the
    catalog's array of the enum.
    """
    if typname in ("record", "_record", "record[]"):  # record[] is asyncpg's name of _record
        what = "record (a row constructor)" if typname == "record" else "record[] (an array of rows)"
        raise PgError(FEATURE_NOT_SUPPORTED, f"a result column of type {what} is not supported "
                      "by fedgate outside simple queries relayed to PostgreSQL")
    simple = _SIMPLE.get(typname)
    if simple is not None:
        return ColumnType(pa.field(name, simple), simple)
    if typname == "numeric":
        return _numeric(name, typmod)
    if typname == "oid":  # uint32, presented as oid (Arrow alone would say int8)
        return ColumnType(_meta(name, pa.uint32(), "oid"), pa.uint32())
    if typname == "name":  # text, presented as name (catalog-like columns, ::name)
        return ColumnType(_meta(name, pa.string(), "name"), pa.string())
    if typname == "char":  # "char": its text (charout), presented as "char"
        return ColumnType(_meta(name, pa.string(), '"char"'), pa.string())
    if typname in ("varchar", "bpchar"):
        spelled = {"varchar": "varchar", "bpchar": "char"}[typname]
        shown = f"{spelled}({typmod - 4})" if typmod >= 4 else spelled
        if typname == "bpchar" and typmod < 4:
            shown = "bpchar"
        return ColumnType(_meta(name, pa.string(), shown), pa.string())
    if typname == "uuid":
        return ColumnType(pa.field(name, pa.uuid()), pa.string(), uuid_from_text)
    if typname == "bytea":
        return ColumnType(pa.field(name, pa.binary()), pa.string(), bytea_from_text)
    if typname == "json":
        return ColumnType(pa.field(name, pa.json_()), pa.string(),
                          lambda a: pa.ExtensionArray.from_storage(pa.json_(), a))
    if typname == "jsonb":
        return ColumnType(_meta(name, pa.string(), "jsonb"), pa.string())
    if typname == "interval":
        return ColumnType(pa.field(name, pa.month_day_nano_interval()), pa.string(),
                          interval_from_text)
    # Arrays, enums, domains over text, ranges, ...: their PostgreSQL text, named as such
    # when the gateway knows the type (int4[] etc.), else plain text that still says
    # which type it is the text of (`source_type`), so the engine never sorts or compares
    # it as text (planner.kept_texts): an enum's order is its labels' order.
    from pgwire.types.table import pg_type_by_name  # the gateway's type registry
    shown = formatted or (typname[1:] + "[]" if typname.startswith("_") else typname)
    known = pg_type_by_name(shown)
    field = _meta(name, pa.string(), shown) if known is not None else \
        pa.field(name, pa.string(), metadata={"source_type": shown, **(
            {"enum_labels": json.dumps(list(labels))} if labels is not None else {}), **(
            {"source_type_oid": str(type_oid), "source_typname": typname}
            if type_oid is not None else {}), **(
            {"source_array_oid": str(array_oid)} if array_oid else {})})
    return ColumnType(field, pa.string())


def _numeric(name: str, typmod: int) -> ColumnType:
    """numeric(p, s) as decimal128 where every value fits, else PostgreSQL's exact text.

    PostgreSQL 15 allows a scale below zero (numeric(3,-2) rounds to hundreds) and above
    the precision (numeric(2,5) holds 0.00099); Arrow's CSV reader wants precision ≥ the
    digits it reads, so those parse into a decimal wide enough for every value, and the
    `pg_type` metadata keeps the declared type for RowDescription. Unconstrained numeric
    (no typmod: also sums, averages and arithmetic on numeric) has no fixed scale and
    stays text, which the result encoders send as numeric in text and binary format.
    """
    if typmod < 4:
        return ColumnType(_meta(name, pa.string(), "numeric"), pa.string())
    precision = ((typmod - 4) >> 16) & 0xFFFF
    scale = (((typmod - 4) & 0x7FF) ^ 1024) - 1024  # 11-bit two's complement
    declared = f"numeric({precision},{scale})"
    if 0 <= scale <= precision <= 38:
        t = pa.decimal128(precision, scale)
        return ColumnType(pa.field(name, t), t)
    if scale < 0 and precision - scale <= 38:
        t = pa.decimal128(precision - scale, 0)
        return ColumnType(_meta(name, t, declared), t)
    if scale > precision and scale <= 38:
        t = pa.decimal128(scale, scale)
        return ColumnType(_meta(name, t, declared), t)
    return ColumnType(_meta(name, pa.string(), declared), pa.string())


_SIMPLE: dict[str, pa.DataType] = {
    "bool": pa.bool_(), "int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(),
    "float4": pa.float32(), "float8": pa.float64(),
    "text": pa.string(), "date": pa.date32(),
    "time": pa.time64("us"), "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
}

_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF", start=10):
    _NIBBLE[_c] = _i


def hex_to_binary(text: pa.Array, skip: int = 0) -> pa.Array:
    """Decode an array of hex strings (after `skip` leading chars) into binary, vectorized."""
    if skip:
        text = pc.utf8_slice_codeunits(text, skip)
    text = text.cast(pa.string()) if text.type != pa.string() else text
    n = len(text)
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[text.offset:text.offset + n + 1]
    data = np.frombuffer(text.buffers()[2] or b"", dtype=np.uint8)[offsets[0]:offsets[-1]]
    if len(data) % 2 or (offsets % 2 != offsets[0] % 2).any():
        raise PgError(INVALID_TEXT_REPRESENTATION, "invalid hexadecimal data: odd number of digits")
    high, low = _NIBBLE[data[0::2]], _NIBBLE[data[1::2]]
    if (high == 255).any() or (low == 255).any():
        raise PgError(INVALID_TEXT_REPRESENTATION, "invalid hexadecimal digit")
    decoded = (high << 4) | low
    new_offsets = ((offsets - offsets[0]) // 2).astype(np.int32)
    validity = text.buffers()[0] if text.null_count else None
    if validity is not None and text.offset:
        validity = pc.is_valid(text).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(new_offsets),
                                                  pa.py_buffer(decoded.tobytes())],
                                 null_count=text.null_count)


def bytea_from_text(text: pa.Array) -> pa.Array:
    return hex_to_binary(text, skip=2)  # bytea_output = hex: "\x" then two digits a byte


def uuid_from_text(text: pa.Array) -> pa.Array:
    raw = hex_to_binary(pc.replace_substring(text, "-", ""))
    return pa.ExtensionArray.from_storage(pa.uuid(), raw.cast(pa.binary(16)))


_ISO_INTERVAL = re.compile(
    r"^(-)?P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?"
    r"(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?\d+(?:\.\d+)?)S)?)?$")


# IntervalStyle postgres, the sessions' (and clients' default): each field signed on its
# own, '1 year 2 mons -3 days +04:05:06.5'.
_POSTGRES_INTERVAL = re.compile(
    r"^(?:([+-]?\d+) years? ?)?(?:([+-]?\d+) mons? ?)?(?:([+-]?\d+) days? ?)?"
    r"(?:([+-])?(\d+):(\d+):(\d+(?:\.\d+)?))?$")


def _micros(seconds: str) -> int:
    whole, _, frac = seconds.partition(".")
    us = abs(int(whole)) * 1_000_000 + int((frac + "000000")[:6])
    return -us if whole.startswith("-") else us


def _interval(value: str) -> tuple[int, int, int]:
    """(months, days, nanoseconds) of an interval's text in IntervalStyle postgres or
    iso_8601 (a block's link mirrors the client's style)."""
    m = _POSTGRES_INTERVAL.match(value)
    if m is not None and value:
        years, months, days, sign, hours, minutes, seconds = m.groups()
        micros = (int(hours or 0) * 3600 + int(minutes or 0) * 60) * 1_000_000 + \
            (_micros(seconds) if seconds else 0)
        return (int(years or 0) * 12 + int(months or 0), int(days or 0),
                (-micros if sign == "-" else micros) * 1000)
    m = _ISO_INTERVAL.match(value)
    if m is None:
        raise PgError(INVALID_TEXT_REPRESENTATION, f"unexpected interval text {value!r}")
    neg, years, months, days, hours, minutes, seconds = m.groups()
    factor = -1 if neg else 1
    micros = (int(hours or 0) * 3600 + int(minutes or 0) * 60) * 1_000_000 + \
        (_micros(seconds) if seconds else 0)
    return (factor * (int(years or 0) * 12 + int(months or 0)), factor * int(days or 0),
            factor * micros * 1000)


def interval_from_text(text: pa.Array) -> pa.Array:
    """An interval column's text (IntervalStyle postgres, or iso_8601) to month_day_nano,
    per value."""
    return pa.array([None if value is None else _interval(value) for value in text.to_pylist()],
                    pa.month_day_nano_interval())
