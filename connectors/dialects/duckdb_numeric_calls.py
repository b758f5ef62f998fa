"""sqrt(), exp(), ln(), log() and log10() of a numeric column, as numeric.c computes them, on DuckDB.

PostgreSQL answers these in numeric, at a display scale it picks for each value
(connectors.dialects.numeric_math has the rules); DuckDB answers a DOUBLE. Of constants
they are computed when the statement is planned (connectors.dialects.duckdb_constant_numerics).
Of a column or a cast of known scale, an output of the statement that is such a call
becomes the value's digits handed to a function the DuckDB runner registers on its
connections (`numeric_call` below), which returns PostgreSQL's text of the numeric; the
planner types the output numeric and the gateway reads the text back as one. The
arguments PostgreSQL raises on raise its words first:

    sqrt(n)                               (n: numeric(10, 2))
    →  CASE WHEN n < 0 THEN error('cannot take square root of a negative number')
            ELSE fedgate_numeric_call('sqrt', CAST(CAST(n * 100 AS HUGEINT) AS VARCHAR), 2,
                                      NULL, 0) END

log(b, x) is taken with a constant base (positive, not 1); exp() of a value beyond
±1000 raises 0A000 when met. As for connectors.dialects.duckdb_deviations, the output is
not one the statement compares (DISTINCT, or ORDER BY/GROUP BY naming it: its text would
compare as text); such an output, and a call inside an expression, is left to
connectors.dialects.duckdb_functions, which refuses it.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import NUMERIC_OUTPUTS, volatile_reason
from connectors.dialects.duckdb_constant_numerics import NUMERIC, numeric_text, value_of
from connectors.dialects.duckdb_deviations import compared_output
from connectors.dialects.duckdb_functions import (LOG_OF_NEGATIVE, LOG_OF_ZERO, SQUARE_ROOT_OF_NEGATIVE,
                                                  exact_digits)
from connectors.dialects.numeric_math import numeric_exp, numeric_ln, numeric_log, numeric_sqrt
from connectors.dialects.rules import raised

NUMERIC_CALL_FUNCTION = "fedgate_numeric_call"
EXP_LIMIT = 1000
TOO_LARGE = "exp() of a numeric beyond ±1000 is not supported by fedgate outside PostgreSQL sources"
_CALLS = (exp.Sqrt, exp.Exp, exp.Ln, exp.Log)


def numeric_call(name: str, digits: str | None, scale: int, base: str | None, base_scale: int) -> str | None:
    """PostgreSQL's text of `name` (sqrt, exp, ln, log) of the numeric whose unscaled
    digits are `digits` at `scale`; log's base likewise. NULL for a NULL argument (the
    functions are strict); the SQL around the call raised for the arguments PostgreSQL
    raises on."""
    if digits is None or (name == "log" and base is None):
        return None
    value = (int(digits), scale)
    if name == "log":
        assert base is not None
        result = numeric_log((int(base), base_scale), value)
    else:
        result = {"sqrt": numeric_sqrt, "exp": numeric_exp, "ln": numeric_ln}[name](value)
    if result is None:  # the checks around the call rule these out
        raise ValueError(f"{name}() of {digits}e-{scale} was not checked")
    return numeric_text((*result, NUMERIC))


def needs_rewrite(client: exp.Select) -> bool:
    return any(isinstance(item.unalias(), _CALLS) for item in client.expressions)


def _argument(node: exp.Expression) -> exp.Expression | None:
    """The argument the call reads as a numeric of known scale: a column or a cast of
    one, or of a constant; None when PostgreSQL would call the float8 function or the
    argument is anything else (volatile, computed)."""
    spelled_log10 = node.meta.get("spelled") == "log10"  # sqlglot reads log10(x) as log(10, x)
    argument = node.expression if isinstance(node, exp.Log) and node.expression is not None else node.this
    if not isinstance(argument, (exp.Column, exp.Cast)) or volatile_reason(argument) is not None:
        return None
    kind = argument.to if isinstance(argument, exp.Cast) else argument.type
    if kind is None or kind.this != exp.DataType.Type.DECIMAL:
        # of an integer: the float8 function, unless it is log(b, x) (numeric only)
        two_argument_log = isinstance(node, exp.Log) and node.expression is not None and not spelled_log10
        if not (two_argument_log and kind is not None and kind.this in exp.DataType.INTEGER_TYPES):
            return None
    return argument


def _call(node: exp.Expression) -> exp.Expression | None:
    """The written-out call for output `node` (see the module docstring), or None."""
    argument = _argument(node)
    found = exact_digits(argument.copy()) if argument is not None else None
    if argument is None or found is None:
        return None
    digits, scale = found
    zero = exp.Literal.number(0)
    base: tuple[int, int] = (0, 0)
    if isinstance(node, exp.Log):
        spelled_log10 = node.meta.get("spelled") == "log10"
        known = (10, 0, NUMERIC) if node.expression is None or spelled_log10 else value_of(node.this)
        if known is None or known[0] <= 0 or known[:2] == (10 ** known[1], known[1]):
            return None  # a base that is not a constant, or one PostgreSQL raises on
        base = known[0], known[1]
    name = "log" if isinstance(node, exp.Log) else node.key  # sqrt, exp, ln
    if isinstance(node, exp.Sqrt):
        failures = [(exp.LT(this=argument.copy(), expression=zero), SQUARE_ROOT_OF_NEGATIVE)]
    elif isinstance(node, exp.Exp):
        limit = exp.Literal.number(EXP_LIMIT)
        failures = [(exp.GT(this=exp.Abs(this=argument.copy()), expression=limit), TOO_LARGE)]
    else:
        failures = [(exp.LT(this=argument.copy(), expression=zero), LOG_OF_NEGATIVE),
                    (exp.EQ(this=argument.copy(), expression=zero.copy()), LOG_OF_ZERO)]
    text = exp.Cast(this=digits, to=exp.DataType.build("VARCHAR"))
    answer = exp.Anonymous(this=NUMERIC_CALL_FUNCTION, expressions=[
        exp.Literal.string(name), text, exp.Literal.number(scale),
        exp.Literal.string(str(base[0])) if isinstance(node, exp.Log) else exp.Null(),
        exp.Literal.number(base[1])])
    return exp.Case(ifs=[exp.If(this=condition, true=raised(message)) for condition, message in failures],
                    default=answer)


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
