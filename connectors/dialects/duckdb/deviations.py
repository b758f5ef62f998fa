"""stddev() and variance() of integers and numerics, as numeric.c computes them, on DuckDB.

PostgreSQL answers these in numeric (numeric_stddev_internal): with N rows, the sum of
the values and the sum of their squares exact, the numerator N * sumX2 - sumX * sumX at
twice the values' scale (zero or less is the numeric 0), divided by N * (N - 1) (or N * N
for the _pop forms) at select_div_scale's scale, rounded half away from zero; stddev is
the square root of that rounded variance at the same scale, rounded likewise. NULL for no
rows, and for one row in the sample forms. DuckDB answers in DOUBLE.

So an output of the statement that is such a call (with its FILTER and OVER) on an
integer or a numeric of known scale becomes DuckDB's exact sums, handed to a function
the DuckDB runner registers on its connections (`deviation` below: Python integers,
no size limit), which returns PostgreSQL's text of the numeric; the planner types the
output numeric and the gateway reads the text back as one:

    stddev(n) FILTER (WHERE g > 1)      (n: numeric(10, 2))
    →  fedgate_numeric_deviation('stddev_samp', count(n) FILTER (...),
           CAST(sum(CAST(d AS BIGNUM)) FILTER (...) AS VARCHAR),
           CAST(sum(CAST(d * d AS BIGNUM)) FILTER (...) AS VARCHAR), 2)
       with d = n's digits as a HUGEINT; DuckDB's BIGNUM adds exactly

The argument is a column, a constant or a cast (whose scale is declared), and the
statement does not compare the output (DISTINCT, or ORDER BY/GROUP BY naming it). A value of 20
digits or more (whose square a HUGEINT cannot hold) raises 0A000 when met. A call inside
an expression, of another argument, or of a float, is left to
connectors.dialects.duckdb.functions (a float: DuckDB's double, as PostgreSQL's;
otherwise refused).
"""

from __future__ import annotations

from math import isqrt

from sqlglot import exp

from connectors.base import DEVIATIONS, NUMERIC_OUTPUTS, aggregate_call, in_same_context
from connectors.numeric_shapes import compared_output
from connectors.dialects.duckdb.constant_numerics import NUMERIC, numeric_divide, numeric_text
from connectors.dialects.duckdb.functions import exact_digits
from connectors.dialects.rules import raised

DEVIATION_FUNCTION = "fedgate_numeric_deviation"
# PostgreSQL's name of each of connectors.base.DEVIATIONS
_KINDS = {exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop",
          exp.Variance: "var_samp", exp.VariancePop: "var_pop"}
_BIGNUM = exp.DataType.build("BIGNUM", dialect="duckdb")  # DuckDB adds these exactly
_FLOATS = {exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE}
TOO_WIDE = "stddev() or variance() of a value of more than 19 digits is not supported by " \
    "fedgate outside PostgreSQL sources"


def deviation(kind: str, count: int, total: str | None, squares: str | None, scale: int) -> str | None:
    """PostgreSQL's text of `kind` (var_samp, var_pop, stddev_samp, stddev_pop) of `count`
    values at display scale `scale` whose digits add up to `total` and whose squared digits
    to `squares` (decimal texts; NULL for no values)."""
    sample = kind.endswith("_samp")
    if not count or total is None or squares is None or (sample and count == 1):
        return None
    x, x2 = int(total), int(squares)
    numerator = count * x2 - x * x  # at scale 2 * scale
    if numerator <= 0:  # numeric.c: "watch out for roundoff error producing a negative numerator"
        return "0"
    denominator = count * (count - 1) if sample else count * count
    variance = numeric_divide((numerator, 2 * scale, NUMERIC), (denominator, 0, NUMERIC))
    if kind.startswith("var_"):
        return numeric_text(variance)
    digits, places, _ = variance
    # the square root at one place more, truncated, then rounded half up to `places`
    return numeric_text(((isqrt(digits * 10 ** (places + 2)) + 5) // 10, places, NUMERIC))


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(*DEVIATIONS) is not None


def _exact_call(node: exp.Expression) -> exp.Expression | None:
    """The written-out call for output `node` (see the module docstring), or None."""
    inner = aggregate_call(node)
    kind = _KINDS.get(type(inner))
    argument = inner.this if kind is not None else None
    # Columns, constants and casts only: their scale is declared. (An expression's is
    # sqlglot's reading of it, which need not be DuckDB's: `n * 1.5`.)
    if not isinstance(argument, (exp.Column, exp.Literal, exp.Neg, exp.Cast)) or \
            (argument.type is not None and argument.type.this in _FLOATS):
        return None
    found = exact_digits(argument.copy())
    if found is None:
        return None
    digits, scale = found
    limit = exp.Cast(this=exp.Literal.number(10 ** 19), to=exp.DataType.build("HUGEINT"))
    wide = exp.GTE(this=exp.Abs(this=digits.copy()), expression=limit)
    square = exp.Case(ifs=[exp.If(this=wide, true=raised(TOO_WIDE))],
                      default=exp.Mul(this=digits.copy(), expression=digits.copy()))

    def exact_sum(value: exp.Expression) -> exp.Expression:
        total = in_same_context(node, exp.Sum(this=exp.Cast(this=value, to=_BIGNUM.copy())))
        total.type = _BIGNUM.copy()  # not a float, whose text the formats' rules write out
        return exp.Cast(this=total, to=exp.DataType.build("VARCHAR"))

    return exp.Anonymous(this=DEVIATION_FUNCTION, expressions=[
        exp.Literal.string(kind), in_same_context(node, exp.Count(this=argument.copy())),
        exact_sum(digits), exact_sum(square), exp.Literal.number(scale)])


def exact_deviations(client: exp.Select) -> None:
    """Rewrite, in place, `client`'s outputs that are deviations typed numeric."""
    allowed = client.meta.get(NUMERIC_OUTPUTS, frozenset())
    for i, item in enumerate(client.expressions):
        node = item.unalias()
        call = _exact_call(node) if i in allowed and not compared_output(client, i + 1, item.alias_or_name) \
            else None
        if call is not None:
            node.replace(call)
