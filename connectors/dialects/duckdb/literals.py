"""Numeric constants as PostgreSQL reads them, on DuckDB.

PostgreSQL reads every constant with a decimal point or an exponent, and every integer
beyond bigint, as an exact numeric. DuckDB reads a constant in exponent notation (`1e3`)
as a DOUBLE, and one of more than its DECIMAL's 38 digits (`1e308`, a 50-digit integer)
as a DOUBLE too: the answer would come back as a float8, rounded (`1e308 / -1`, `1e308::text`
is 1e+308 where PostgreSQL prints 309 digits). So, on the type-annotated tree:

- a constant of up to 38 digits in exponent notation becomes the DECIMAL of its digits
  (`exponent_literal`, after the other rewrites: `1e3` is 1000 at scale 0, as PostgreSQL
  shows it); under a cast to text it is PostgreSQL's text of the numeric (`1.5e2::text` is
  150, DuckDB's DECIMAL text drops a leading zero: .0025), under a cast to numeric its
  digits written out (the cast then takes their precision and scale: `1e3::numeric` is 1000);
- a constant beyond 38 digits stays a DOUBLE only where PostgreSQL turns it into a float8
  itself: under a cast to float4/float8, an operand of arithmetic or comparison with a
  float operand (`1e308 * 'Infinity'::float8`), the argument of a function PostgreSQL has
  for float8 alone (`sin(1e300)`), or cast to an integer type it overflows anyway. Under a
  cast to text it is PostgreSQL's text; divided by a zero constant it raises 22012 as any
  numeric does; anywhere else it is refused (0A000) naming the constant: never a float
  where PostgreSQL computes an exact numeric.
"""

from __future__ import annotations

from decimal import Decimal

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

T = exp.DataType.Type
MAX_DIGITS = 38  # DuckDB's DECIMAL
_FLOATS = {T.DOUBLE, T.FLOAT}
_TEXTS = {T.TEXT, T.VARCHAR}
_INTEGERS = {T.SMALLINT, T.INT, T.BIGINT}
# PostgreSQL functions whose numeric arguments exist only as float8 (pg_proc): a numeric
# constant passed to one is turned into a float8 by PostgreSQL as well.
FLOAT8_ONLY = frozenset({
    "sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2", "sind", "cosd", "tand", "cotd",
    "asind", "acosd", "atand", "atan2d", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "degrees", "radians", "cbrt"})
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _number(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string


def pg_text(number: str) -> tuple[str, int]:
    """PostgreSQL's text of a numeric constant written `number` and its digits (precision):
    `1.5e2` is 150 (its display scale is the digits after the point less the exponent, at
    least 0)."""
    mantissa, _, exponent = number.lower().partition("e")
    scale = max(len(mantissa.partition(".")[2]) - int(exponent or 0), 0)
    text = f"{Decimal(number):.{scale}f}"
    return text, max(len(text.lstrip("-").replace(".", "").lstrip("0")), scale, 1)


def _beyond(node: exp.Expression) -> bool:
    return _number(node) and pg_text(node.this)[1] > MAX_DIGITS


def needs_rewrite(tree: exp.Expression) -> bool:
    """Whether `tree` holds a constant in exponent notation or beyond 38 digits (the
    planner then annotates types, see duckdb.needs_types)."""
    return any("e" in n.this.lower() or len(n.this) > MAX_DIGITS
               for n in tree.find_all(exp.Literal) if not n.is_string)


def _function_name(call: exp.Expression) -> str:
    return (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()


def _certainly_float(node: exp.Expression) -> bool:
    """Whether PostgreSQL types `node` float4/float8 (conservatively: what can be seen)."""
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    if isinstance(node, exp.Cast):
        return node.to.this in _FLOATS
    if isinstance(node, exp.Column):
        return node.type is not None and node.type.this in _FLOATS
    if isinstance(node, _ARITHMETIC):
        return _certainly_float(node.this) or _certainly_float(node.expression)
    if isinstance(node, exp.Func):
        return _function_name(node) in FLOAT8_ONLY
    return False


def _outer(literal: exp.Expression) -> exp.Expression:
    node = literal
    while isinstance(node.parent, (exp.Neg, exp.Paren)):
        node = node.parent
    return node


def _float_context(literal: exp.Expression) -> bool:
    node = _outer(literal)
    parent = node.parent
    if isinstance(parent, exp.Cast):
        return parent.to.this in _FLOATS or (parent.to.this in _INTEGERS and abs(Decimal(literal.this)) >= 10**MAX_DIGITS)
    if isinstance(parent, _ARITHMETIC + _COMPARISONS):
        other = parent.expression if node is parent.this else parent.this
        return _certainly_float(other)
    return isinstance(parent, exp.Func) and _function_name(parent) in FLOAT8_ONLY


def _zero_divisor(literal: exp.Expression) -> bool:
    node = _outer(literal)
    parent = node.parent
    return isinstance(parent, (exp.Div, exp.Mod)) and node is parent.this and \
        _number(parent.expression) and Decimal(parent.expression.this) == 0


def postgres_literals(node: exp.Expression) -> exp.Expression:
    """A numeric constant under a text cast, or beyond 38 digits, as the module docstring
    says; any other node as it is. Runs on the annotated tree before the other rewrites,
    which move constants under new parents."""
    if not _number(node):
        return node
    text, digits = pg_text(node.this)
    parent = node.parent
    if isinstance(parent, exp.Cast) and parent.to.this in _TEXTS and not parent.to.expressions \
            and ("e" in node.this.lower() or digits > MAX_DIGITS):
        return exp.Literal.string(text)
    if isinstance(parent, exp.Cast) and parent.to.this == T.DECIMAL and not parent.to.expressions \
            and "e" in node.this.lower() and digits <= MAX_DIGITS:
        return exp.Literal.number(text)  # its digits: duckdb.exact_numeric casts to their precision
    if digits <= MAX_DIGITS or _float_context(node):
        return node
    if _zero_divisor(node):  # PostgreSQL's numeric division raises whatever the dividend
        return exp.Literal.number("1.0")
    raise PgError(FEATURE_NOT_SUPPORTED, f"the numeric constant {node.this} is not supported by the "
                  f"query engine (more than {MAX_DIGITS} digits)")


def exponent_literal(node: exp.Expression) -> exp.Expression:
    """A constant of up to 38 digits in exponent notation as the DECIMAL of its digits (a
    float8 under a cast to float); any other node as it is."""
    if not (_number(node) and "e" in node.this.lower()):
        return node
    if isinstance(node.parent, exp.Cast) and node.parent.to.this in _FLOATS:
        return node
    text, digits = pg_text(node.this)
    if digits > MAX_DIGITS:
        return node  # postgres_literals left it: PostgreSQL makes a float8 of it as well
    scale = len(text.partition(".")[2])
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build(f"DECIMAL({digits}, {scale})"))
