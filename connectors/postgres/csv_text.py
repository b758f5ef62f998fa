"""PostgreSQL's CSV text of a result read into Arrow, ±infinity dates and timestamps included.

pyarrow's CSV reader parses dates and timestamps itself, fast, but knows no `infinity`
(a table of validity periods ending at 'infinity' is common). When a segment holds one,
it is read again with its date and timestamp columns as text, and each of those columns
is converted here: the infinities go to the type's extremes, as DuckDB hands its own
infinities to Arrow and as the result encoders (pgwire.types.datetime) print them. A date
before the year 1 (`0044-03-15 BC`) is refused (0A000), not read as another; so is a
NaN in a numeric(p,s) column, which an Arrow decimal cannot hold.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from pgwire.errors import FEATURE_NOT_SUPPORTED, INTERNAL_ERROR, PgError

_INT32, _INT64 = (2**31 - 1, -(2**31)), (2**63 - 1, -(2**63))
# A finite value of each type, standing in for an infinity while the text is parsed.
_PLACEHOLDER = {"date": "2000-01-01", "timestamp": "2000-01-01 00:00:00",
                "timestamptz": "2000-01-01 00:00:00+00"}


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamptz" if t.tz is not None else "timestamp"
    return None


def read_csv(source: pa.Buffer | bytes, read: pacsv.ReadOptions, parse: pacsv.ParseOptions,
             convert: pacsv.ConvertOptions, names: Sequence[str] = ()) -> pa.Table:
    """`pacsv.read_csv` of PostgreSQL's CSV text; its ArrowInvalid is XX000 (ours to fix).
    `names`: the result's column names, for errors (the reader's are c0, c1, ...)."""
    try:
        return pacsv.read_csv(_reader(source), read_options=read, parse_options=parse,
                              convert_options=convert)
    except pa.ArrowInvalid as exc:
        if "infinity'" not in str(exc) and " BC'" not in str(exc):
            raise _read_error(exc, names) from exc
    types = dict(convert.column_types)
    temporal = {name: t for name, t in types.items() if _kind(t) is not None}
    as_text = pacsv.ConvertOptions(
        column_types={**types, **{name: pa.string() for name in temporal}},
        true_values=convert.true_values, false_values=convert.false_values,
        null_values=convert.null_values, strings_can_be_null=convert.strings_can_be_null,
        quoted_strings_can_be_null=convert.quoted_strings_can_be_null)
    try:
        table = pacsv.read_csv(_reader(source), read_options=read, parse_options=parse,
                               convert_options=as_text)
        for name, t in temporal.items():
            index = table.schema.get_field_index(name)
            table = table.set_column(index, name, temporal_from_text(table.column(name).combine_chunks(), t))
    except pa.ArrowInvalid as exc:
        raise _read_error(exc, names) from exc
    return table


def _read_error(exc: pa.ArrowInvalid, names: Sequence[str]) -> PgError:
    if "'NaN' is not a valid decimal" in str(exc):
        # numeric(p,s) holds NaN in PostgreSQL; an Arrow decimal has no NaN
        return PgError(FEATURE_NOT_SUPPORTED, "a numeric NaN in a column of fixed precision and "
                       "scale read from a PostgreSQL source is not supported by fedgate outside "
                       f"queries relayed to PostgreSQL ({_column_of(exc, names)})")
    return PgError(INTERNAL_ERROR, f"cannot read PostgreSQL's text as Arrow: {exc}")


def _column_of(exc: pa.ArrowInvalid, names: Sequence[str]) -> str:
    """The column an error of pyarrow's CSV reader names by number ("CSV column #3")."""
    match = re.search(r"CSV column #(\d+)", str(exc))
    if match is None or int(match.group(1)) >= len(names):
        return "a result column"
    return f'column "{names[int(match.group(1))]}"'


def _reader(source: pa.Buffer | bytes) -> pa.BufferReader | io.BytesIO:
    return pa.BufferReader(source) if isinstance(source, pa.Buffer) else io.BytesIO(source)


def temporal_from_text(texts: pa.Array, target: pa.DataType) -> pa.Array:
    """A date or timestamp column's PostgreSQL text, ±infinity at the type's extremes."""
    kind = _kind(target)
    assert kind is not None
    if pc.any(pc.ends_with(texts, " BC")).as_py():
        raise PgError(FEATURE_NOT_SUPPORTED, "a date or timestamp before the year 1 (BC) read from a "
                      "PostgreSQL source is not supported by fedgate")
    positive = pc.fill_null(pc.equal(texts, "infinity"), False)
    negative = pc.fill_null(pc.equal(texts, "-infinity"), False)
    finite = pc.if_else(pc.or_(positive, negative), _PLACEHOLDER[kind], texts)
    lines = "".join("\n" if value is None else value + "\n" for value in finite.to_pylist())
    parsed = pacsv.read_csv(io.BytesIO(lines.encode()),
                            read_options=pacsv.ReadOptions(column_names=["v"]),
                            parse_options=pacsv.ParseOptions(ignore_empty_lines=False),
                            convert_options=pacsv.ConvertOptions(column_types={"v": target},
                                                                 null_values=[""])).column(0)
    storage, (high, low) = (pa.int32(), _INT32) if kind == "date" else (pa.int64(), _INT64)
    raw = parsed.combine_chunks().cast(storage)
    raw = pc.if_else(positive, pa.scalar(high, storage), pc.if_else(negative, pa.scalar(low, storage), raw))
    return raw.cast(target)
