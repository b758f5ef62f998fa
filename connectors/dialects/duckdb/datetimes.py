"""extract(), date_part(), age() and to_timestamp(float8) as PostgreSQL answers them, in DuckDB.

- `extract(field from x)` is numeric in PostgreSQL: whole-number fields at scale 0,
  `second`, `milliseconds`, `microseconds` and `epoch` at scale 6, 3, 0 and 6 (`epoch` and
  `julian` of a date at 0); DuckDB answers BIGINT or DOUBLE, so the value is computed
  from DuckDB's microseconds as a decimal. `date_part(...)` is that value as a float8.
  A timestamp column of a Parquet file is TIMESTAMPNTZ to sqlglot, a literal TIMESTAMP:
  both are timestamps here.
- Of an infinite date or timestamp, PostgreSQL answers the fields that only grow (year,
  decade, century, millennium, isoyear, julian, epoch) with ±Infinity and the others with
  NULL; DuckDB answers NULL to all. date_part()'s float8 infinity is written out;
  extract()'s numeric one has no DuckDB DECIMAL, so it is refused (0A000): at planning for
  a literal, by DuckDB's error() when a row holds one. A volatile operand is not checked
  (it would be evaluated twice); no volatile function makes an infinite timestamp.
- `age()` of an infinite timestamp is an overflowed interval in PostgreSQL
  ('-292252 years -8 days ...'), NULL in DuckDB: refused the same way.
- `to_timestamp(float8)`: PostgreSQL raises 22008 "timestamp cannot be NaN" for NaN and
  answers ±infinity for ±Infinity; DuckDB raises a conversion error for all three.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import volatile_reason
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

T = exp.DataType.Type

TIMESTAMP_NAN = "timestamp cannot be NaN"
# Types with ±infinity, in DuckDB and in PostgreSQL (and DuckDB's isinf() takes them).
_TIMESTAMPS = {T.TIMESTAMP, T.TIMESTAMPNTZ, T.TIMESTAMPTZ, T.TIMESTAMPLTZ, T.TIMESTAMP_S,
               T.TIMESTAMP_MS, T.TIMESTAMP_NS}
_INFINITE_KINDS = _TIMESTAMPS | {T.DATE}
# extract() fields whose value is a whole number (PostgreSQL: numeric, DuckDB: BIGINT);
# the planner types them so too (planner.pg_annotate.WHOLE_FIELDS).
WHOLE_FIELDS = frozenset({"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "QUARTER", "DOW", "DOY",
                          "WEEK", "ISOYEAR", "ISODOW", "DECADE", "CENTURY", "MILLENNIUM"})
# The fields PostgreSQL answers ±Infinity for an infinite input (NonFiniteTimestampTzPart).
_GROWING_FIELDS = frozenset({"YEAR", "DECADE", "CENTURY", "MILLENNIUM", "ISOYEAR", "JULIAN", "EPOCH"})
_INFINITIES = {"infinity", "+infinity", "-infinity"}


def _refusal(what: str) -> str:
    return f"{what} is not supported by fedgate outside PostgreSQL sources"


def _kind(value: exp.Expression) -> T | None:
    while isinstance(value, exp.Paren):
        value = value.this
    if isinstance(value, exp.Sub) and _kind(value.this) in _TIMESTAMPS and \
            _kind(value.expression) in _TIMESTAMPS:
        return T.INTERVAL  # a timestamp minus a timestamp (sqlglot types it a timestamp)
    kind = value.to if isinstance(value, exp.Cast) else value.type
    return kind.this if kind is not None else None


def _literal_infinity(value: exp.Expression) -> bool:
    """`DATE 'infinity'`, `'-infinity'::timestamp` and the like."""
    literal = value.this if isinstance(value, exp.Cast) else value
    return isinstance(literal, exp.Literal) and literal.is_string \
        and literal.this.strip().lower() in _INFINITIES


def _isinf(value: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this="isinf", expressions=[value.copy()])


def _raise(message: str) -> exp.Expression:
    return exp.Anonymous(this="error", expressions=[exp.Literal.string(message)])


def _double(text: str) -> exp.Expression:
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("DOUBLE"))


def _checkable(value: exp.Expression) -> bool:
    """An operand that may hold an infinity and may be evaluated more than once."""
    return _kind(value) in _INFINITE_KINDS and volatile_reason(value) is None


def _fraction_field(node: exp.Extract) -> exp.Expression:
    """extract() of a field PostgreSQL answers with a fraction (see the module docstring),
    from DuckDB's microseconds; any other extract() as it is."""
    field, operand = node.this.name.upper(), node.expression
    kind = _kind(operand)
    micros: exp.Expression
    if field in ("SECOND", "SECONDS", "MILLISECOND", "MILLISECONDS", "MICROSECOND",
                 "MICROSECONDS") and kind in _TIMESTAMPS | {T.TIME}:
        micros = exp.Anonymous(this="microsecond", expressions=[operand.copy()])
    elif field == "EPOCH" and kind == T.DATE:
        return exp.Cast(this=exp.Anonymous(this="epoch", expressions=[operand.copy()]),
                        to=exp.DataType.build("DECIMAL(38, 0)"))
    elif field == "EPOCH" and kind in _TIMESTAMPS | {T.INTERVAL}:
        micros = exp.Anonymous(this="epoch_us", expressions=[operand.copy()])
    elif field == "JULIAN" and kind == T.DATE:
        return exp.Cast(this=exp.Anonymous(this="julian", expressions=[operand.copy()]),
                        to=exp.DataType.build("DECIMAL(38, 0)"))
    else:
        return node
    scale = 0 if field.startswith("MICRO") else 3 if field.startswith("MILLI") else 6
    whole = exp.Cast(this=micros, to=exp.DataType.build("DECIMAL(38, 0)"))
    if scale == 0:
        return whole
    unit = exp.Literal.number("0." + "0" * (scale - 1) + "1")
    return exp.Cast(this=exp.Mul(this=whole, expression=unit),
                    to=exp.DataType.build(f"DECIMAL(38, {scale})"))


def postgres_extract(node: exp.Extract) -> exp.Expression:
    """extract() as a decimal, date_part() as its double; ±Infinity as above."""
    field, operand = node.this.name.upper(), node.expression
    exact = exp.Cast(this=node.copy(), to=exp.DataType.build("DECIMAL(38, 0)")) \
        if field in WHOLE_FIELDS else _fraction_field(node)
    date_part = node.meta.get("spelled") == "date_part"
    if date_part:
        # date_part() is float8 in PostgreSQL: extract()'s numeric, converted.
        exact = exp.Cast(this=exact, to=exp.DataType.build("DOUBLE"))
    if field not in _GROWING_FIELDS or not _checkable(operand):
        return exact
    infinite = _isinf(operand)
    if date_part:
        positive = exp.EQ(this=operand.copy(), expression=exp.Literal.string("infinity"))
        signed = exp.Case(ifs=[exp.If(this=positive, true=_double("Infinity"))],
                          default=_double("-Infinity"))
        return exp.Case(ifs=[exp.If(this=infinite, true=signed)], default=exact)
    what = f"extract({field.lower()} from an infinite date or timestamp)"
    if _literal_infinity(operand):
        raise PgError(FEATURE_NOT_SUPPORTED, _refusal(what))
    return exp.Case(ifs=[exp.If(this=infinite, true=_raise(_refusal(what)))], default=exact)


def is_age(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "age"


def postgres_age(node: exp.Anonymous) -> exp.Expression:
    """age() refused for an infinite argument (see the module docstring)."""
    what = "age() of an infinite timestamp"
    if any(_literal_infinity(argument) for argument in node.expressions):
        raise PgError(FEATURE_NOT_SUPPORTED, _refusal(what))
    checked = [argument for argument in node.expressions if _checkable(argument)]
    if not checked:
        return node
    infinite = exp.or_(*(_isinf(argument) for argument in checked))
    return exp.Case(ifs=[exp.If(this=infinite, true=_raise(_refusal(what)))], default=node.copy())


def postgres_epoch_time(node: exp.UnixToTime) -> exp.Expression:
    """to_timestamp(float8): NaN raises, ±Infinity is ±infinity (see the module docstring)."""
    seconds = node.this
    if node.args.get("scale") is not None or volatile_reason(seconds) is not None:
        return node
    infinity = exp.Cast(this=exp.Literal.string("infinity"), to=exp.DataType.build("TIMESTAMPTZ"))
    minus = exp.Cast(this=exp.Literal.string("-infinity"), to=exp.DataType.build("TIMESTAMPTZ"))
    return exp.Case(ifs=[
        exp.If(this=exp.Anonymous(this="isnan", expressions=[seconds.copy()]), true=_raise(TIMESTAMP_NAN)),
        exp.If(this=exp.EQ(this=seconds.copy(), expression=_double("Infinity")), true=infinity),
        exp.If(this=exp.EQ(this=seconds.copy(), expression=_double("-Infinity")), true=minus),
    ], default=node.copy())
