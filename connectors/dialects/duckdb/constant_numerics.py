"""Numeric arithmetic of constants, computed exactly when the statement is planned.

PostgreSQL computes `12345678901234567890 / 123`, `div(999999999999999999999::numeric,
1e21)` or `4790999999999999999999999999999999 * 9999999999999999999999999` exactly, in
numerics of any size. DuckDB's decimals stop at 38 digits: it refused the first (an
integer beyond bigint, divided), and overflowed its 128-bit integers on the third (22003
where PostgreSQL answers). So a tree of `+ - * / %`, unary minus and div() over number
literals (and their casts to `numeric`) whose value PostgreSQL types numeric is computed
here, with numeric.c's rules, into the one constant it is:

    SELECT 12345678901234567890 / 123, 1.5 * 2.25 + n FROM t
    →  SELECT CAST('100371365056030633.25203252' AS DECIMAL(26, 8)), CAST('4.375' AS DECIMAL(4, 3)) + n FROM t

- `+`, `-`: exact, at the larger display scale; `*`: exact, at the sum of the scales;
- `/`: rounded half away from zero at select_div_scale's scale (`duckdb.quotient` has the
  rule); div(): truncated, scale 0; `%` and mod(): the dividend less the truncated
  quotient's multiple, at the larger scale, with the dividend's sign;
- integers keep PostgreSQL's integer arithmetic (int4, or int8 past int4's range): a
  subtree that overflows its integer type, or divides by zero, is not computed here, and
  the engine raises PostgreSQL's error for it as before;
- sqrt(), exp(), ln(), log(), log10() and power() of a numeric, and log(b, x) of any
  numbers (PostgreSQL's only two-argument log is numeric): computed at numeric.c's scale
  by `connectors.dialects.numeric_math` (of integers they are float8 functions, DuckDB's);
  NULL::numeric among their arguments makes them NULL::numeric, and constants PostgreSQL
  raises on make them raise its error when the engine runs the statement (the planner
  types them numeric, so the engine's double would not be presented).

A result of up to 38 digits (and scale) is handed to DuckDB as a DECIMAL of exactly its
digits and scale. A wider one is PostgreSQL's numeric text when it is an output of the
statement the planner types numeric (`connectors.base.NUMERIC_OUTPUTS`; the gateway reads
it back as a numeric); anywhere else it is a plain literal, which
`duckdb.literals.postgres_literals` then refuses (0A000) unless PostgreSQL itself turns it
into a float8 or text.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import NUMERIC_OUTPUTS
from connectors.dialects.duckdb.floats import COMPLEX_RESULT, ZERO_TO_NEGATIVE
from connectors.dialects.duckdb.functions import LOG_OF_NEGATIVE, LOG_OF_ZERO, SQUARE_ROOT_OF_NEGATIVE
from connectors.dialects.duckdb.literals import MAX_DIGITS, pg_text
from connectors.dialects.rules import raised
from connectors.dialects.numeric_math import FUNCTIONS

T = exp.DataType.Type
INT4, INT8, NUMERIC = "int4", "int8", "numeric"
_RANGES = {INT4: 2**31, INT8: 2**63}
_WIDEST = 1000  # digits: a larger intermediate value is left to the engine (and refused)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod)
_WRAPPERS = (exp.Paren, exp.Neg, exp.Cast)
_MATH = (exp.Sqrt, exp.Exp, exp.Ln, exp.Log, exp.Pow)  # numeric in PostgreSQL when an argument is
_OPERANDS = (exp.Literal,) + _WRAPPERS + _ARITHMETIC

# (unscaled digits, display scale, PostgreSQL type: int4, int8 or numeric)
Value = tuple[int, int, str]


def needs_rewrite(tree: exp.Expression) -> bool:
    """Whether `tree` has arithmetic of two constants, or a function of _MATH of constants
    (a cheap look: `value_of` decides)."""
    return any(isinstance(node.this, _OPERANDS) and isinstance(node.expression, _OPERANDS)
               for node in tree.find_all(*_ARITHMETIC)) \
        or any(isinstance(node.this, _OPERANDS) for node in tree.find_all(*_MATH))


def _integer(value: int) -> Value:
    """An integer literal: int4, int8, or numeric beyond int8 (as PostgreSQL's lexer reads it)."""
    kind = INT4 if -2**31 <= value < 2**31 else INT8 if -2**63 <= value < 2**63 else NUMERIC
    return value, 0, kind


def _literal(node: exp.Literal, negative: bool = False) -> Value | None:
    text = node.this
    if node.is_string:
        return None
    if "." in text or "e" in text.lower():
        digits, _ = pg_text(text)
        scale = len(digits.partition(".")[2])
        unscaled = int(digits.replace(".", ""))
        return (-unscaled if negative else unscaled), scale, NUMERIC
    if not text.isdigit():
        return None
    # `-9223372036854775808` is one bigint constant in PostgreSQL's grammar, not a minus
    # applied to a numeric.
    return _integer(-int(text) if negative else int(text))


def _align(a: Value, b: Value) -> tuple[int, int, int]:
    scale = max(a[1], b[1])
    return a[0] * 10 ** (scale - a[1]), b[0] * 10 ** (scale - b[1]), scale


def _truncated(a: int, b: int) -> int:
    """a / b truncated toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def _weight_and_first(unscaled: int, scale: int) -> tuple[int, int]:
    """numeric.c's weight (of the first non-zero base-10000 digit) and that digit; (0, 0)
    for zero."""
    if unscaled == 0:
        return 0, 0
    digits = str(abs(unscaled))
    # With the point moved to a multiple of 4 below the digits, the base-10000 digits are
    # groups of four from the point.
    pad = (-scale) % 4
    whole = digits + "0" * pad
    places = (scale + pad) // 4  # base-10000 digits after the point
    groups = (len(whole) + 3) // 4
    whole = whole.rjust(groups * 4, "0")
    first_index = next(i for i in range(groups) if whole[4 * i:4 * i + 4] != "0000")
    return groups - places - 1 - first_index, int(whole[4 * first_index:4 * first_index + 4])


def division_scale(a: Value, b: Value) -> int:
    """select_div_scale: the display scale of numeric a / b."""
    w1, d1 = _weight_and_first(a[0], a[1])
    w2, d2 = _weight_and_first(b[0], b[1])
    qweight = w1 - w2 - (1 if d1 <= d2 else 0)
    return min(max(16 - 4 * qweight, a[1], b[1], 0), 1000)


def numeric_divide(a: Value, b: Value) -> Value:
    scale = division_scale(a, b)
    numerator = abs(a[0]) * 10 ** (b[1] + scale)
    denominator = abs(b[0]) * 10 ** a[1]
    q, r = divmod(numerator, denominator)
    if 2 * r >= denominator:
        q += 1
    return (-q if (a[0] < 0) != (b[0] < 0) else q), scale, NUMERIC


def _combine(node: exp.Expression, a: Value, b: Value) -> Value | None:
    kind = NUMERIC if NUMERIC in (a[2], b[2]) or isinstance(node, exp.IntDiv) else \
        INT8 if INT8 in (a[2], b[2]) else INT4
    if isinstance(node, (exp.Div, exp.IntDiv, exp.Mod)) and b[0] == 0:
        return None  # 22012, raised by the engine as before
    if isinstance(node, exp.Mul):
        value: Value = (a[0] * b[0], a[1] + b[1], kind)
    elif isinstance(node, (exp.Add, exp.Sub)):
        x, y, scale = _align(a, b)
        value = (x + y if isinstance(node, exp.Add) else x - y), scale, kind
    elif isinstance(node, exp.Div) and kind == NUMERIC:
        value = numeric_divide(a, b)
    elif isinstance(node, (exp.Div, exp.IntDiv)):  # integers, or div(): truncated
        x, y, _ = _align(a, b)
        value = _truncated(x, y), 0, kind
    else:  # Mod: the dividend less the truncated quotient's multiple
        x, y, scale = _align(a, b)
        value = x - y * _truncated(x, y), scale, kind
    if kind != NUMERIC and not -_RANGES[kind] <= value[0] < _RANGES[kind]:
        return None  # integer out of range: the engine raises 22003 as PostgreSQL does
    if len(str(abs(value[0]))) > _WIDEST:
        return None
    return value


def value_of(node: exp.Expression) -> Value | None:
    """The value of a constant arithmetic tree as PostgreSQL computes it; None for
    anything else (or what this module leaves to the engine, see the docstring)."""
    if isinstance(node, exp.Literal):
        return _literal(node)
    if isinstance(node, exp.Paren):
        return value_of(node.this)
    if isinstance(node, exp.Neg):
        if isinstance(node.this, exp.Literal):
            return _literal(node.this, negative=True)
        inner = value_of(node.this)
        if inner is None or (inner[2] != NUMERIC and not -_RANGES[inner[2]] < inner[0]):
            return None
        return -inner[0], inner[1], inner[2]
    if isinstance(node, exp.Cast):
        if node.to.this != T.DECIMAL or node.to.expressions:
            return None  # numeric(p, s) rounds: the engine's cast does that
        inner = value_of(node.this)
        return None if inner is None else (inner[0], inner[1], NUMERIC)
    if isinstance(node, _ARITHMETIC):
        a, b = value_of(node.this), value_of(node.expression)
        return None if a is None or b is None else _combine(node, a, b)
    if isinstance(node, _MATH):
        return _math(node)
    return None


def math_call(node: exp.Expression) -> tuple[str, list[exp.Expression], bool]:
    """A _MATH call as (PostgreSQL's name, its arguments in numeric.c's order, whether it is
    numeric whatever their types): log(x) and log10(x) are log(10, x), numeric only when x
    is (else the float8 function); log(b, x) as written is numeric only."""
    ten = exp.Literal.number(10)
    if isinstance(node, exp.Log):
        if node.meta.get("spelled") == "log10":  # sqlglot reads log10(x) as log(10, x)
            return "log", [ten, node.expression], False
        if node.expression is None:
            return "log", [ten, node.this], False
        return "log", [node.this, node.expression], True
    if isinstance(node, exp.Pow):
        return "power", [node.this, node.expression], False
    return node.key, [node.this], False  # sqrt, exp, ln


def _math_values(node: exp.Expression) -> tuple[str, list[Value]] | None:
    """A _MATH call of constants PostgreSQL computes in numeric: its name and values."""
    name, arguments, numeric_only = math_call(node)
    values = [value_of(argument) for argument in arguments]
    if any(v is None for v in values):
        return None
    known = [v for v in values if v is not None]
    if not numeric_only and all(v[2] != NUMERIC for v in known):
        return None  # of integers: the float8 function (DuckDB's double is its answer)
    return name, known


def _math(node: exp.Expression) -> Value | None:
    """A function of _MATH of constants, when PostgreSQL computes it in numeric."""
    found = _math_values(node)
    computed = None if found is None else FUNCTIONS[found[0]](*(v[:2] for v in found[1]))
    if computed is None or len(str(abs(computed[0]))) > _WIDEST:
        return None
    return computed[0], computed[1], NUMERIC


def _logarithm_error(value: Value) -> str | None:
    return LOG_OF_ZERO if value[0] == 0 else LOG_OF_NEGATIVE if value[0] < 0 else None


def _math_error(node: exp.Expression) -> str | None:
    """PostgreSQL's words for a function of _MATH of constants it raises on (in its
    order: log's base first), or None."""
    found = _math_values(node)
    if found is None:
        return None  # not constants, or the float8 function (whose checks are the engine's)
    name, values = found
    if name == "log":
        base, x = values
        if base[:2] == (10 ** base[1], base[1]):
            return _logarithm_error(x) or "division by zero"  # ln(1) is 0
        return _logarithm_error(base) or _logarithm_error(x)
    if name == "power":
        base, exponent = values
        if base[0] == 0 and exponent[0] < 0:
            return ZERO_TO_NEGATIVE
        integral = exponent[0] % 10 ** exponent[1] == 0
        return COMPLEX_RESULT if base[0] < 0 and not integral else None
    if name == "sqrt":
        return SQUARE_ROOT_OF_NEGATIVE if values[0][0] < 0 else None
    return _logarithm_error(values[0]) if name == "ln" else None


def _null_math(node: exp.Expression) -> bool:
    """A function of _MATH PostgreSQL answers NULL::numeric: a NULL::numeric argument,
    the others constants or NULL::numeric too."""
    if not isinstance(node, _MATH):
        return False
    arguments = [a for a in (node.this, node.expression) if a is not None]
    nulls = [isinstance(a, exp.Cast) and isinstance(a.this, exp.Null) and a.to.this == T.DECIMAL
             and not a.to.expressions for a in arguments]
    return any(nulls) and all(null or value_of(a) is not None for a, null in zip(arguments, nulls))


def numeric_text(value: Value) -> str:
    """PostgreSQL's text of a numeric value (no negative zero)."""
    unscaled, scale, _ = value
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    text = digits[:len(digits) - scale] + ("." + digits[len(digits) - scale:] if scale else "")
    return "-" + text if unscaled < 0 else text


def _constant(value: Value, output: bool) -> exp.Expression:
    text = numeric_text(value)
    precision = max(len(str(abs(value[0]))), value[1], 1)
    if precision <= MAX_DIGITS:
        return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build(f"DECIMAL({precision}, {value[1]})"))
    return exp.Literal.string(text) if output else exp.Literal.number(text)


def fold_numeric_constants(tree: exp.Expression, client: exp.Select | None) -> exp.Expression:
    """`tree`, changed in place: each largest constant arithmetic subtree PostgreSQL types
    numeric replaced by its value (see the module docstring); `client` is the statement
    whose outputs go to the client, if any."""
    outputs = set()
    if client is not None:
        allowed = client.meta.get(NUMERIC_OUTPUTS, frozenset())
        outputs = {id(item.unalias()) for i, item in enumerate(client.expressions) if i in allowed}

    def fold(node: exp.Expression) -> None:
        error = _math_error(node) if isinstance(node, _MATH) else None
        if error is not None:
            failing = exp.Cast(this=raised(error), to=exp.DataType.build("DECIMAL"))
            failing.type = node.type
            node.replace(failing)
            return
        if _null_math(node):
            null = exp.Cast(this=exp.Null(), to=exp.DataType.build("DECIMAL"))
            null.type = node.type
            node.replace(null)
            return
        # Arithmetic and _MATH only: a lone literal or cast is the engine's as before.
        if isinstance(node, _ARITHMETIC + _MATH) or \
                (isinstance(node, _WRAPPERS) and node.find(*_ARITHMETIC, *_MATH)):
            value = value_of(node)
            if value is not None and value[2] == NUMERIC:
                replacement = _constant(value, id(node) in outputs)
                replacement.type = node.type
                node.replace(replacement)
                return
        for child in list(node.iter_expressions()):
            fold(child)

    fold(tree)
    return tree
