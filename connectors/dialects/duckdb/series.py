"""`generate_series(start, stop [, step])` of numeric constants as PostgreSQL counts them, on DuckDB.

DuckDB's generate_series takes integers, timestamps and dates; PostgreSQL's numeric one
adds the step to the start until it passes the stop, each value a numeric whose display
scale is the larger of the previous value's and the step's. For constants the count is
known here, exactly: the i-th value is start + i * step, written as integer arithmetic on
the constants' digits at the common scale s (a 38-digit DECIMAL times 10^-s, which DuckDB
multiplies exactly):

    generate_series(1.5, 3.5, 1.0)
    -> CAST(CAST(15 AS HUGEINT) + CAST(UNNEST(GENERATE_SERIES(0, 2)) AS HUGEINT) * 10
            AS DECIMAL(38, 0)) * CAST('0.1' AS DECIMAL(2, 1))          -- 1.5, 2.5, 3.5

A start of smaller scale than the step (`generate_series(1, 2, 0.5)` is 1, 1.5, 2.0: the
first value has its own scale, a DECIMAL column one for all) and values beyond 38 digits
are refused (0A000); a zero step is PostgreSQL's 22023. Arguments that are not constants
are left to DuckDB, which refuses them (pgwire.engine_words).
"""

from __future__ import annotations

from decimal import Decimal, localcontext

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

MAX_DIGITS = 38
STEP_ZERO = "step size cannot equal zero"


def _constant(bound: exp.Expression | None) -> Decimal | None:
    """A number constant's value (with its written scale), else None."""
    negative = isinstance(bound, exp.Neg)
    literal = bound.this if negative else bound
    if not isinstance(literal, exp.Literal) or literal.is_string:
        return None
    value = Decimal(literal.this)
    return -value if negative else value


def _scale(value: Decimal) -> int:
    """PostgreSQL's display scale of a numeric constant (`1e3` is 1000, scale 0)."""
    return max(-value.as_tuple().exponent, 0)  # type: ignore[operator]


def is_numeric_series(node: exp.Expression) -> bool:
    """A generate_series of number constants, one of them with a point or an exponent."""
    if not isinstance(node, exp.ExplodingGenerateSeries):
        return False
    bounds = [node.args.get(name) for name in ("start", "end", "step")]
    written = [b for b in bounds if b is not None]
    values = [_constant(b) for b in written]
    return None not in values and any(
        not (b.this if isinstance(b, exp.Neg) else b).this.isdigit() for b in written)


def numeric_series(node: exp.ExplodingGenerateSeries) -> exp.Expression:
    """The series' values (see the module docstring), to stand where the call stood."""
    start, stop = _constant(node.args["start"]), _constant(node.args["end"])
    step = _constant(node.args.get("step")) if node.args.get("step") is not None else Decimal(1)
    assert start is not None and stop is not None and step is not None  # is_numeric_series
    if step == 0:
        raise PgError(INVALID_PARAMETER_VALUE, STEP_ZERO)
    scale = max(_scale(start), _scale(step))
    if _scale(start) < _scale(step):
        raise PgError(FEATURE_NOT_SUPPORTED, "generate_series() of a numeric start with fewer decimal "
                      "digits than its step (PostgreSQL shows the first value at its own scale) is not "
                      "supported by fedgate outside PostgreSQL sources")
    with localcontext() as context:
        context.prec = 1000
        count = max(int((stop - start) / step) + 1, 0) if (stop - start) * step >= 0 else 0
        last = start + (count - 1) * step if count else start
        digits = max(len(str(abs(int(v)))) for v in (start, last)) + scale
        start_digits, step_digits = (int(v.scaleb(scale)) for v in (start, step))
    if digits > MAX_DIGITS:
        raise PgError(FEATURE_NOT_SUPPORTED, "generate_series() of numerics beyond 38 digits is not "
                      "supported by fedgate outside PostgreSQL sources")

    def hugeint(e: exp.Expression) -> exp.Expression:
        return exp.Cast(this=e, to=exp.DataType.build("HUGEINT"))

    index = exp.ExplodingGenerateSeries(start=exp.Literal.number(0), end=exp.Literal.number(count - 1))
    unscaled = exp.Add(this=hugeint(exp.Literal.number(start_digits)),
                       expression=exp.Mul(this=hugeint(index), expression=hugeint(exp.Literal.number(step_digits))))
    unit = exp.Cast(this=exp.Literal.string(f"{Decimal(1).scaleb(-scale):f}"),
                    to=exp.DataType.build(f"DECIMAL({scale + 1}, {scale})"))
    return exp.Mul(this=exp.Cast(this=unscaled, to=exp.DataType.build("DECIMAL(38, 0)")), expression=unit)
