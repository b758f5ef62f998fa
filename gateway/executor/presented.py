"""Result columns presented with the planner's names and PostgreSQL's types.

The planner says what PostgreSQL would name and type each output column
(planner.colnames, planner.result_types); the engine's columns carry its own. Where the
types differ, a column is converted only where the values stay exactly what PostgreSQL
computes:

- an integer (or a numeric of scale 0) to another integer width: a value beyond the
  target's range is PostgreSQL's error (22003 "integer out of range");
- an integer or float4 to float8, as PostgreSQL converts them (`round(7)` is 7; a bigint
  beyond 2^53 becomes the nearest float8, as in `round(9223372036854775807)`);
- an integer to a numeric of a known display scale (`round(7, 1)` is 7.0), and a decimal
  of a smaller scale to it (`round(2.5, 2)` is 2.50);
- text to numeric where the engine wrote PostgreSQL's text of a numeric of per-value
  scale (a division, an average);
- text to varchar(n) or bpchar(n): cut to n characters (an explicit cast does that in
  PostgreSQL) and, for bpchar, padded with spaces to n, as PostgreSQL shows char(n);
- a PostgreSQL source's text of a type Arrow cannot hold (an unconstrained numeric, a
  jsonb, an array), passed through the engine unchanged (planner.kept_texts): said to be
  of that type, as the source's own rows are;
- json to jsonb (`'{"a": 1}'::jsonb -> 'a'`, which the engine computes as json): laid out
  as PostgreSQL prints a jsonb, `{"a": 1, "b": [1, 2]}`, keys shorter first then bytewise,
  a repeated key once with its last value. Numbers keep the engine's text.

A float where PostgreSQL computes a numeric (a numeric division inside an expression,
`2::numeric / 3 * 3`) is refused (0A000): its digits are not PostgreSQL's; except from
the Spark engine, which divides numerics in double precision by design
(connectors.dialects.spark; docs/compatibility.md). Anything else keeps the engine's type.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from connectors.base import BatchStream
from pgwire.errors import FEATURE_NOT_SUPPORTED, NUMERIC_VALUE_OUT_OF_RANGE, PgError
from pgwire.types.from_arrow import pg_type_for_field
from pgwire.types.jsonb import jsonb_text
from pgwire.types.pg_type import pg_type_by_name

_INTEGERS = {"int2": (pa.int16(), "smallint"), "int4": (pa.int32(), "integer"),
             "int8": (pa.int64(), "bigint")}
_NUMERIC_DIGITS = 38  # Arrow's decimal128


def _conversion(field: pa.Field, target: str | None, double_numerics: bool) -> pa.Field | None:
    """The field `field` is presented as for PostgreSQL type `target`; None: as it is.
    `double_numerics`: the engine divides numerics in double precision by design."""
    if target is None or (field.metadata and b"pg_type" in field.metadata):
        return None  # the source said what the column is (an oid, a name, a jsonb)
    t = field.type
    if target.startswith("numeric(") and pa.types.is_decimal(t):
        # every value has the planner's display scale (`round(2.5, 2)` is 2.50), which
        # the engine's DECIMAL may show with fewer digits: pad them, the value stays
        scale = int(target[:-1].split(",")[1])
        width = t.precision - t.scale + scale
        if t.scale < scale and width <= _NUMERIC_DIGITS:
            return field.with_type(pa.decimal128(width, scale))
    wanted = pg_type_by_name(target)
    have = pg_type_for_field(field)
    if wanted is None or wanted.oid == have.oid:
        return None
    if target in ("name", "_name"):  # catalog names stored as text (planner.catalog.PgSchema)
        listed = target == "_name"
        if listed != pa.types.is_list(t):
            return None
        texts = t.value_type if listed else t
        if not (pa.types.is_string(texts) or pa.types.is_large_string(texts)):
            return None
        return field.with_metadata({**(field.metadata or {}),
                                    b"pg_type": b"name[]" if listed else b"name"})
    if target == "oid" and pa.types.is_unsigned_integer(t) and t.bit_width <= 32:
        # the engine's UINTEGER of a `::oid` (planner.pgcompat), an int8 to Arrow alone
        return pa.field(field.name, pa.uint32(), field.nullable,
                        {**(field.metadata or {}), b"pg_type": b"oid"})
    whole = pa.types.is_integer(t) or (pa.types.is_decimal(t) and t.scale == 0)
    base = target.split("(")[0]
    if base in _INTEGERS and whole:
        return field.with_type(_INTEGERS[base][0])
    if base == "float8" and (pa.types.is_integer(t) or pa.types.is_float32(t)):
        return field.with_type(pa.float64())
    if base == "numeric" and "," in target and pa.types.is_integer(t):
        scale = int(target[:-1].split(",")[1])
        if scale + 20 <= _NUMERIC_DIGITS:
            return field.with_type(pa.decimal128(_NUMERIC_DIGITS, scale))
        return None
    if base == "numeric" and pa.types.is_floating(t) and not double_numerics:
        # a numeric the engine computed in floating point (a division inside an
        # expression, a float turned numeric): its digits are not PostgreSQL's
        raise PgError(FEATURE_NOT_SUPPORTED, "a numeric result the engine computes in floating "
                      "point (such as a numeric division inside an expression) is not supported "
                      "by fedgate outside PostgreSQL sources")
    if base == "numeric" and have.name == "text" and pa.types.is_string(t):
        # PostgreSQL's text of a numeric, as the DuckDB dialect writes a division or an
        # average out (connectors.dialects.duckdb.quotient), or a constant beyond its
        # decimals (connectors.dialects.duckdb.constant_numerics)
        return field.with_metadata({**(field.metadata or {}), b"pg_type": b"numeric"})
    if target == "json" and have.name == "text" and pa.types.is_string(t):
        # json written as text by the DuckDB dialect (connectors.dialects.duckdb.json_agg)
        return field.with_metadata({**(field.metadata or {}), b"pg_type": b"json"})
    if (base in ("varchar", "bpchar") or base.startswith("reg")) and have.name == "text" \
            and not pa.types.is_dictionary(t):
        # (reg*: the text the catalog's regclass_out etc. print, planner.pgcompat)
        return field.with_metadata({**(field.metadata or {}), b"pg_type": target.encode()})
    if base == "jsonb" and have.name == "json" and isinstance(t, pa.BaseExtensionType) \
            and pa.types.is_string(t.storage_type):
        return pa.field(field.name, pa.string(), field.nullable,
                        {**(field.metadata or {}), b"pg_type": b"jsonb"})
    return None


def _length(field: pa.Field) -> int | None:
    """n of a varchar(n)/bpchar(n) presentation."""
    name = (field.metadata or {}).get(b"pg_type", b"").decode()
    if name.startswith(("varchar(", "bpchar(")):
        return int(name.split("(")[1].rstrip(")"))
    return None


def _kept(field: pa.Field, target: str | None) -> pa.Field:
    """A source's text of `target` passed through the engine (planner.kept_texts): said
    to be of that type, as the source's own rows are (connectors.postgres.types)."""
    if target is None or not pa.types.is_string(field.type):
        return field
    return field.with_metadata({**(field.metadata or {}), b"pg_type": target.encode()})


def presented_schema(schema: pa.Schema, names: Sequence[str] | None,
                     types: Sequence[str | None] | None, double_numerics: bool = False,
                     kept: Sequence[int] = ()) -> pa.Schema:
    fields = list(schema)
    if types is not None and len(types) == len(fields):
        fields = [_kept(f, t) if i in kept else _conversion(f, t, double_numerics) or f
                  for i, (f, t) in enumerate(zip(fields, types))]
    if names is not None and len(names) == len(fields):
        fields = [f.with_name(n) for f, n in zip(fields, names)]
    elif names == ():  # rows of no columns: the engine's placeholder goes (planner.empty_select)
        fields = []
    return pa.schema(fields, metadata=schema.metadata)


def _cast(column: pa.Array, field: pa.Field, length: int | None) -> pa.Array:
    if isinstance(column.type, pa.BaseExtensionType) and field.metadata \
            and field.metadata.get(b"pg_type") == b"jsonb":
        texts = column.storage.to_pylist()
        return pa.array([None if t is None else jsonb_text(t) for t in texts], pa.string())
    if length is not None:
        cut = pc.utf8_slice_codeunits(column, 0, length)
        return pc.utf8_rpad(cut, length, " ") if field.metadata[b"pg_type"].startswith(b"bpchar") \
            else cut
    if column.type == field.type:
        return column
    if pa.types.is_floating(field.type):
        # As PostgreSQL's int8 -> float8: to the nearest float8 (2^63 - 1 is 2^63).
        return column.cast(field.type, safe=False)
    try:
        return column.cast(field.type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        for base, (arrow, name) in _INTEGERS.items():
            if field.type == arrow:
                raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"{name} out of range") from exc
        raise


class Presented:
    """A stream whose schema is `presented_schema`'s; batches are cast where it differs."""

    def __init__(self, stream: BatchStream, names: Sequence[str] | None,
                 types: Sequence[str | None] | None, double_numerics: bool = False,
                 kept: Sequence[int] = ()) -> None:
        self.inner = stream
        self.schema = presented_schema(stream.schema, names, types, double_numerics, kept)
        self._lengths = [_length(f) if f.metadata != g.metadata else None
                         for f, g in zip(self.schema, stream.schema)]
        # a changed metadata alone (text presented as numeric) still needs the new schema
        self._casts = any(a.type != b.type or a.metadata != b.metadata
                          for a, b in zip(stream.schema, self.schema))
        self._no_columns = len(self.schema) < len(stream.schema)

    def __aiter__(self) -> AsyncIterator[pa.RecordBatch]:
        if self._no_columns:
            return self._rows_only()
        return self._cast_batches() if self._casts else self.inner.__aiter__()

    async def _rows_only(self) -> AsyncIterator[pa.RecordBatch]:
        async for batch in self.inner:
            yield batch.select([])  # as many rows, no column

    async def _cast_batches(self) -> AsyncIterator[pa.RecordBatch]:
        async for batch in self.inner:
            yield pa.RecordBatch.from_arrays(
                [_cast(c, f, n) for c, f, n in zip(batch.columns, self.schema, self._lengths)],
                schema=self.schema)

    async def aclose(self) -> None:
        await self.inner.aclose()
