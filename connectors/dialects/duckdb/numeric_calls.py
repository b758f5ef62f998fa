"""sqrt(), exp(), ln(), log(), log10() and power() of a numeric column, as numeric.c computes them, on DuckDB.

PostgreSQL answers these in numeric, at a display scale it picks for each value
(connectors.dialects.numeric_math has the rules); DuckDB answers a DOUBLE. Of constants
they are computed when the statement is planned (connectors.dialects.duckdb.constant_numerics).
Of a column or a cast of known scale, an output of the statement that is such a call
becomes the value's digits handed to a function the DuckDB runner registers on its
connections (`numeric_call` below), which returns PostgreSQL's text of the numeric; the
planner types the output numeric and the gateway reads the text back as one. The
arguments PostgreSQL raises on raise its words first:

    sqrt(n)                               (n: numeric(10, 2))
    →  CASE WHEN n < 0 THEN error('cannot take square root of a negative number')
            ELSE fedgate_numeric_call('sqrt', CAST(CAST(n * 100 AS HUGEINT) AS VARCHAR), 2,
                                      NULL, 0) END

log(b, x) is taken with a constant base (positive, not 1); power(x, y) with each of x
and y a column, a cast or a constant, one of them numeric. A value this cannot compute
as PostgreSQL does (exp() beyond ±1000, a power too large, or one exactly between two
values at its scale: connectors.dialects.numeric_math) raises 0A000 when met. As for
connectors.dialects.duckdb.deviations, the output is not one the statement compares
(DISTINCT, or ORDER BY/GROUP BY naming it: its text would compare as text); such an
output, and a call inside an expression, is left to connectors.dialects.duckdb.functions,
which refuses it.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import NUMERIC_OUTPUTS, volatile_reason
from connectors.dialects.duckdb.constant_numerics import NUMERIC, math_call, numeric_text, value_of
from connectors.numeric_shapes import compared_output
from connectors.dialects.duckdb.floats import COMPLEX_RESULT, ZERO_TO_NEGATIVE
from connectors.dialects.duckdb.functions import (LOG_OF_NEGATIVE, LOG_OF_ZERO, SQUARE_ROOT_OF_NEGATIVE,
                                                  exact_digits)
from connectors.dialects.numeric_math import FUNCTIONS
from connectors.dialects.rules import raised

NUMERIC_CALL_FUNCTION = "fedgate_numeric_call"
_CALLS = (exp.Sqrt, exp.Exp, exp.Ln, exp.Log, exp.Pow)


def numeric_call(name: str, digits: str | None, scale: int, other: str | None, other_scale: int) -> str | None:
    """PostgreSQL's text of `name` (sqrt, exp, ln, log, power) of the numeric whose
    unscaled digits are `digits` at `scale`, and for log its base, for power its exponent
    (`other`, likewise). NULL for a NULL argument (the functions are strict); the SQL
    around the call raised for the arguments PostgreSQL raises on."""
    if digits is None or (name in ("log", "power") and other is None):
        return None
    value = (int(digits), scale)
    second = (int(other), other_scale) if other is not None else None
    # numeric.c's order: log(base, x), power(base, exponent)
    arguments = [second, value] if name == "log" else [value, second] if name == "power" else [value]
    result = FUNCTIONS[name](*arguments)
    if result is None:  # what numeric_math leaves to PostgreSQL (the checks rule out the rest)
        raise ValueError(f"{name}() of these numerics is not supported by fedgate outside "
                         "PostgreSQL sources")
    return numeric_text((*result, NUMERIC))


def needs_rewrite(client: exp.Select) -> bool:
    return any(isinstance(item.unalias(), _CALLS) for item in client.expressions)


def _operand(argument: exp.Expression) -> exp.Expression | None:
    """A power() operand read as a numeric of known scale: a column, a cast or a number
    constant, not volatile."""
    if isinstance(argument, (exp.Column, exp.Cast, exp.Literal, exp.Neg)) and volatile_reason(argument) is None:
        return argument
    return None


def _power(node: exp.Pow) -> exp.Expression | None:
    """power(x, y) of a numeric (an integer's power is the float8 function's)."""
    base, exponent = _operand(node.this), _operand(node.expression)
    if base is None or exponent is None:
        return None
    numeric = [kind is not None and kind.this == exp.DataType.Type.DECIMAL
               for kind in (_kind(base), _kind(exponent))]
    found = [exact_digits(base.copy()), exact_digits(exponent.copy())]
    if not any(numeric) or found[0] is None or found[1] is None:
        return None
    (x, x_scale), (y, y_scale) = found
    zero = exp.Literal.number(0)
    failures = [(exp.and_(exp.EQ(this=base.copy(), expression=zero),
                          exp.LT(this=exponent.copy(), expression=zero.copy())), ZERO_TO_NEGATIVE),
                (exp.and_(exp.LT(this=base.copy(), expression=zero.copy()),
                          exp.NEQ(this=exponent.copy(), expression=exp.func("trunc", exponent.copy()))),
                 COMPLEX_RESULT)]
    return _checked_call("power", failures, x, x_scale, y, y_scale)


def _kind(argument: exp.Expression) -> exp.DataType | None:
    """A power() operand's type: a cast's target, a constant's as PostgreSQL reads it (a
    point or an exponent makes a numeric), a column's as annotated."""
    if isinstance(argument, exp.Cast):
        return argument.to
    number = argument.this if isinstance(argument, exp.Neg) else argument
    if isinstance(number, exp.Literal):  # a constant with a point or an exponent is numeric
        return exp.DataType.build("DECIMAL" if not number.this.isdigit() else "INT")
    return argument.type


def _checked_call(name: str, failures: list[tuple[exp.Expression, str]], digits: exp.Expression,
                  scale: int, other: exp.Expression | None, other_scale: int) -> exp.Expression:
    """The registered function's call behind PostgreSQL's errors for `failures`."""
    def text(value: exp.Expression) -> exp.Expression:
        return exp.Cast(this=value, to=exp.DataType.build("VARCHAR"))

    answer = exp.Anonymous(this=NUMERIC_CALL_FUNCTION, expressions=[
        exp.Literal.string(name), text(digits), exp.Literal.number(scale),
        text(other) if other is not None else exp.Null(), exp.Literal.number(other_scale)])
    if not failures:
        return answer
    return exp.Case(ifs=[exp.If(this=condition, true=raised(message)) for condition, message in failures],
                    default=answer)


def _call(node: exp.Expression) -> exp.Expression | None:
    """The written-out call for output `node` (see the module docstring), or None: its
    argument a column or a cast of known scale, numeric (an integer's is the float8
    function's, but for log(b, x)), log's base a constant PostgreSQL takes."""
    name, arguments, numeric_only = math_call(node)
    if name == "power":
        return _power(node)
    *base_argument, argument = arguments  # log: (base, x)
    if not isinstance(argument, (exp.Column, exp.Cast)) or volatile_reason(argument) is not None:
        return None
    kind = argument.to if isinstance(argument, exp.Cast) else argument.type
    numeric = kind is not None and kind.this == exp.DataType.Type.DECIMAL
    if not (numeric or (numeric_only and kind is not None and kind.this in exp.DataType.INTEGER_TYPES)):
        return None
    found = exact_digits(argument.copy())
    if found is None:
        return None
    digits, scale = found
    base: tuple[int, int] = (0, 0)
    if base_argument:
        known = value_of(base_argument[0])
        if known is None or known[0] <= 0 or known[:2] == (10 ** known[1], known[1]):
            return None  # a base that is not a constant, or one PostgreSQL raises on
        base = known[0], known[1]
    zero = exp.Literal.number(0)
    failures: list[tuple[exp.Expression, str]] = []
    if name == "sqrt":
        failures = [(exp.LT(this=argument.copy(), expression=zero), SQUARE_ROOT_OF_NEGATIVE)]
    elif name != "exp":
        failures = [(exp.LT(this=argument.copy(), expression=zero), LOG_OF_NEGATIVE),
                    (exp.EQ(this=argument.copy(), expression=zero.copy()), LOG_OF_ZERO)]
    other = exp.Literal.string(str(base[0])) if name == "log" else None
    return _checked_call(name, failures, digits, scale, other, base[1])


def numeric_calls(client: exp.Select) -> None:
    """Rewrite, in place, `client`'s outputs that are such calls typed numeric."""
    allowed = client.meta.get(NUMERIC_OUTPUTS, frozenset())
    for i, item in enumerate(client.expressions):
        node = item.unalias()
        if not isinstance(node, _CALLS) or i not in allowed or \
                compared_output(client, i + 1, item.alias_or_name):
            continue
        call = _call(node)
        if call is not None:
            node.replace(call)
