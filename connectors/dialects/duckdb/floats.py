"""Float functions whose out-of-range inputs and results PostgreSQL raises on, DuckDB not.

PostgreSQL checks the arguments and results of its float8 functions (float.c); DuckDB
answers NaN, an infinity or zero. Each call is rewritten to raise PostgreSQL's words
through DuckDB's `error()` (pgwire.errors gives them their SQLSTATEs):
- `sin`, `cos`, `tan`, `cot` of an infinity, `asin`, `acos` beyond [-1, 1]:
  'input is out of range' (22003);
- `exp(x)`, `power(a, b)` whose result overflows to an infinity or underflows to zero
  from finite arguments: 'value out of range: overflow' / 'underflow' (22003);
- `power(0, negative)` and a negative number to a fractional power (2201F).
A volatile argument is left alone: it would be evaluated more than once.

A float written as a string (`'1e400'::float8`) beyond the type's range is PostgreSQL's
22003, where DuckDB reads an infinity or zero.

And `round(float8)` rounds half to even in PostgreSQL (it is rint(): 2.5 is 2), half away
from zero in DuckDB (3): it becomes DuckDB's `round_even(x, 0)` where the argument is
certainly a float (`_certainly_float`; a column's type needs the tree's types,
`needs_types`).
"""

from __future__ import annotations

import math
import sys

from sqlglot import exp

from connectors.base import volatile_reason
from connectors.dialects.rules import call, raised
from pgwire.errors import NUMERIC_VALUE_OUT_OF_RANGE, PgError

OUT_OF_RANGE = "input is out of range"
OVERFLOW = "value out of range: overflow"
UNDERFLOW = "value out of range: underflow"
ZERO_TO_NEGATIVE = "zero raised to a negative power is undefined"
COMPLEX_RESULT = "a negative number raised to a non-integer power yields a complex result"
_PERIODIC = (exp.Sin, exp.Cos, exp.Tan, exp.Cot)
_REWRITTEN = (*_PERIODIC, exp.Asin, exp.Acos, exp.Exp, exp.Pow)


_FLOATS = {exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT}


def _plain_round(node: exp.Expression) -> bool:
    return isinstance(node, exp.Round) and node.args.get("decimals") is None


def needs_types(tree: exp.Expression) -> bool:
    """A one-argument round(): whether it rounds half to even takes its argument's type."""
    return any(map(_plain_round, tree.find_all(exp.Round)))


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(*_REWRITTEN, exp.Round) is not None or any(
        map(_float_text, tree.find_all(exp.Cast)))


def _float_text(node: exp.Expression) -> bool:
    return isinstance(node, exp.Cast) and node.to.this in _FLOATS and \
        isinstance(node.this, exp.Literal) and node.this.is_string


def _checked_float_text(node: exp.Cast) -> exp.Cast:
    """A string read as float8/float4 as float8in reads it: a number beyond the type's
    range, or a nonzero one that would round to zero, is 22003 (DuckDB reads inf and 0)."""
    text = node.this.this.strip()
    try:
        value = float(text)
    except ValueError:
        return node  # not a number: the engine's 22P02 (and 'Infinity', 'NaN' are read alike)
    name, limits = ("real", (3.4028235677973366e38, 7.006e-46)) if node.to.this == exp.DataType.Type.FLOAT \
        else ("double precision", (sys.float_info.max, 2.2250738585072014e-308 * sys.float_info.epsilon))
    spelled_infinite = text.lower().lstrip("+-") in ("inf", "infinity")
    nonzero = any(c in "123456789" for c in text.lower().partition("e")[0])
    if not spelled_infinite and (math.isinf(value) or abs(value) > limits[0] or
                                 (nonzero and abs(value) < limits[1])):
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f'"{node.this.this}" is out of range for type {name}')
    return node


def _certainly_float(node: exp.Expression) -> bool:
    """A float4/float8 in PostgreSQL for certain: a cast to one, a column typed so (not
    under VALUES, whose `1.5` sqlglot types a double, PostgreSQL a numeric), or arithmetic
    with one (float8's operators take numerics and integers)."""
    if isinstance(node, (exp.Paren, exp.Neg)):
        return _certainly_float(node.this)
    if isinstance(node, exp.Cast):
        return node.to.this in _FLOATS
    if isinstance(node, exp.Column):
        return node.type is not None and node.type.this in _FLOATS and _values_agree(node)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
        return _certainly_float(node.this) or _certainly_float(node.expression)
    return False


def _values_agree(column: exp.Column) -> bool:
    """A VALUES list naming `column` has a certain float in that place in every row."""
    for values in column.root().find_all(exp.Values):
        alias = values.args.get("alias")
        rows = [row for row in values.expressions if isinstance(row, exp.Tuple)]
        width = len(rows[0].expressions) if rows else 0
        names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        names += [f"column{i + 1}" for i in range(len(names), width)]
        if column.name in names:
            at = names.index(column.name)
            if not all(at < len(row.expressions) and _certainly_float(row.expressions[at]) for row in rows):
                return False
    return True


def _rint(node: exp.Expression) -> exp.Expression:
    """round(float8) as rint(): half to even."""
    if not _plain_round(node) or not _certainly_float(node.this):
        return node
    value = exp.Cast(this=node.this.copy(), to=exp.DataType.build("DOUBLE"))
    return exp.Anonymous(this="round_even", expressions=[value, exp.Literal.number(0)])


def _infinite(value: exp.Expression) -> exp.Expression:
    return call("isinf", exp.Cast(this=value.copy(), to=exp.DataType.build("DOUBLE")))


def _finite(value: exp.Expression) -> exp.Expression:
    return exp.Not(this=_infinite(value))


def _number(text: str) -> exp.Expression:
    return exp.Literal.number(text)


def _guarded(node: exp.Expression, failures: list[tuple[exp.Expression, str]]) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=condition, true=raised(message)) for condition, message in failures],
                    default=node.copy())


def postgres_floats(node: exp.Expression) -> exp.Expression:
    """`node` raising where PostgreSQL raises (children are rewritten first)."""
    if isinstance(node, exp.Round):
        return _rint(node)
    if _float_text(node):
        return _checked_float_text(node)
    if not isinstance(node, _REWRITTEN) or any(
            volatile_reason(arg) is not None for arg in node.iter_expressions()):
        return node
    if isinstance(node, _PERIODIC):
        return _guarded(node, [(_infinite(node.this), OUT_OF_RANGE)])
    if isinstance(node, (exp.Asin, exp.Acos)):
        beyond = exp.or_(exp.LT(this=node.this.copy(), expression=_number("-1")),
                         exp.GT(this=node.this.copy(), expression=_number("1")))
        return _guarded(node, [(beyond, OUT_OF_RANGE)])
    arguments = [node.this] if isinstance(node, exp.Exp) else [node.this, node.expression]
    finite = exp.and_(*[_finite(a) for a in arguments])
    overflow = exp.and_(_infinite(node), finite)
    underflow = exp.and_(exp.EQ(this=node.copy(), expression=_number("0")), finite)
    if isinstance(node, exp.Exp):
        return _guarded(node, [(overflow, OVERFLOW), (underflow, UNDERFLOW)])
    base, exponent = node.this, node.expression
    zero_base = exp.EQ(this=base.copy(), expression=_number("0"))
    failures = [
        (exp.and_(zero_base, exp.LT(this=exponent.copy(), expression=_number("0"))), ZERO_TO_NEGATIVE),
        (exp.and_(exp.LT(this=base.copy(), expression=_number("0")),
                  exp.NEQ(this=exponent.copy(), expression=call("trunc", exponent.copy()))), COMPLEX_RESULT),
        (overflow, OVERFLOW),
        (exp.and_(underflow, exp.Not(this=zero_base.copy())), UNDERFLOW)]
    return _guarded(node, failures)
