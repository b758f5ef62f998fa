"""`width_bucket(operand, low, high, count)` of float8s as PostgreSQL computes it, on DuckDB.

DuckDB has no width_bucket. PostgreSQL's float8 one (float.c, width_bucket_float8) is a
few comparisons and one float8 expression, truncated to int4; written out here in the same
order of operations, so every float8 step rounds as PostgreSQL's does:

    low < high:  operand < low -> 0;  operand >= high -> count + 1;
                 else trunc(count::float8 * (operand - low) / (high - low) + 1)
    low > high:  the mirror image;  low = high: 2201G

with PostgreSQL's errors (2201G) for a count below 1, a NaN argument, or an infinite
bound, raised by DuckDB's error() in PostgreSQL's words (pgwire.engine_words gives the
SQLSTATE), and NULL for a NULL argument (the function is strict).

PostgreSQL takes the float8 form when an argument is a float or all are integers (float8
is the numeric category's preferred type); with a numeric argument and no float it takes
the numeric form, which divides exactly: refused (0A000), as are the array form
(`width_bucket(x, thresholds)`) and arguments with a volatile call (each is written
several times).
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import volatile_reason
from connectors.dialects.rules import raised
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

T = exp.DataType.Type
COUNT_NOT_POSITIVE = "count must be greater than zero"
NAN_ARGUMENT = "operand, lower bound, and upper bound cannot be NaN"
INFINITE_BOUND = "lower and upper bounds must be finite"
EQUAL_BOUNDS = "lower bound cannot equal upper bound"
_NUMERIC_REFUSED = ("width_bucket() of numeric arguments (PostgreSQL divides them exactly) is not "
                    "supported by fedgate outside PostgreSQL sources")


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.WidthBucket) is not None


def _float(node: exp.Expression) -> bool:
    """Typed float by PostgreSQL too: sqlglot types a constant like `1.5` a double, which
    PostgreSQL reads as numeric."""
    return node.type is not None and node.type.this in (T.FLOAT, T.DOUBLE) and \
        not (isinstance(node, exp.Literal) or isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal))


def _exact(node: exp.Expression) -> bool:
    """A numeric in PostgreSQL: typed DECIMAL, or a constant with a point or an exponent."""
    literal = node.this if isinstance(node, exp.Neg) else node
    if isinstance(literal, exp.Null):
        return False
    if isinstance(literal, exp.Literal) and not literal.is_string:
        return not literal.this.isdigit()
    return node.type is None or node.type.this not in (*exp.DataType.INTEGER_TYPES, T.FLOAT, T.DOUBLE, T.NULL)


def _double(node: exp.Expression) -> exp.Expression:
    return exp.Cast(this=node.copy(), to=exp.DataType.build("DOUBLE"))


def _bucket(count: exp.Expression, near: exp.Expression, far: exp.Expression) -> exp.Expression:
    """trunc(count::float8 * near / far + 1) as int4 (a C cast of the float8): the 1 is
    added in float8, which rounds 0.9999999999999999 + 1 to 2."""
    quotient = exp.Div(this=exp.Mul(this=_double(count), expression=exp.Paren(this=near)),
                       expression=exp.Paren(this=far), typed=False)
    bucket = exp.Add(this=quotient, expression=exp.Literal.number(1.0))
    return exp.Cast(this=exp.Anonymous(this="trunc", expressions=[bucket]), to=exp.DataType.build("INT"))


def width_bucket(node: exp.Expression) -> exp.Expression:
    """The float8 width_bucket written out (see the module docstring); other nodes as they are."""
    if not isinstance(node, exp.WidthBucket):
        return node
    operand, low, high, count = (node.args.get(k) for k in ("this", "min_value", "max_value", "num_buckets"))
    if low is None or high is None or count is None or any(map(volatile_reason, (operand, low, high, count))):
        raise PgError(FEATURE_NOT_SUPPORTED, "width_bucket() with a thresholds array or a volatile "
                      "argument is not supported by fedgate outside PostgreSQL sources")
    values = (operand, low, high)
    if not any(map(_float, values)) and any(map(_exact, values)):
        raise PgError(FEATURE_NOT_SUPPORTED, _NUMERIC_REFUSED)
    x, lo, hi = (_double(v) for v in values)
    n = exp.Cast(this=count.copy(), to=exp.DataType.build("INT"))
    over = exp.Add(this=n.copy(), expression=exp.Literal.number(1))  # DuckDB raises on overflow: 22003
    rising = exp.Case(ifs=[exp.If(this=exp.LT(this=x.copy(), expression=lo.copy()), true=exp.Literal.number(0)),
                           exp.If(this=exp.GTE(this=x.copy(), expression=hi.copy()), true=over.copy())],
                      default=_bucket(n, exp.Sub(this=x.copy(), expression=lo.copy()),
                                      exp.Sub(this=hi.copy(), expression=lo.copy())))
    falling = exp.Case(ifs=[exp.If(this=exp.GT(this=x.copy(), expression=lo.copy()), true=exp.Literal.number(0)),
                            exp.If(this=exp.LTE(this=x.copy(), expression=hi.copy()), true=over.copy())],
                       default=_bucket(n, exp.Sub(this=lo.copy(), expression=x.copy()),
                                       exp.Sub(this=lo.copy(), expression=hi.copy())))
    nulls = exp.or_(*(exp.Is(this=e.copy(), expression=exp.null()) for e in (x, lo, hi, n)))
    nan = exp.or_(*(exp.Anonymous(this="isnan", expressions=[e.copy()]) for e in (x, lo, hi)))
    infinite = exp.or_(*(exp.Anonymous(this="isinf", expressions=[e.copy()]) for e in (lo, hi)))
    return exp.Case(ifs=[
        exp.If(this=nulls, true=exp.Cast(this=exp.null(), to=exp.DataType.build("INT"))),
        exp.If(this=exp.LTE(this=n.copy(), expression=exp.Literal.number(0)), true=raised(COUNT_NOT_POSITIVE)),
        exp.If(this=nan, true=raised(NAN_ARGUMENT)),
        exp.If(this=infinite, true=raised(INFINITE_BOUND)),
        exp.If(this=exp.LT(this=lo.copy(), expression=hi.copy()), true=rising),
        exp.If(this=exp.GT(this=lo.copy(), expression=hi.copy()), true=falling),
    ], default=raised(EQUAL_BOUNDS))
