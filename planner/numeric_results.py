"""PostgreSQL's type of a numeric result: literals, arithmetic, and the functions of the
numeric category (sum, round and trunc, sign, ceil and floor, sqrt to power, gcd and lcm).

`planner.result_types` walks an expression and asks these rules once it knows the types of
its arguments, as type names (`int4`, `numeric(1000,2)`, None for "not known here"); they
look at nothing but those names and the node itself, so they sit below it.

Arithmetic picks the operator of the wider operand (`NUMERIC_ORDER`: int2 < int4 < int8 <
numeric < float4 < float8, PostgreSQL's implicit casts). A numeric type carries the display
scale where every value has the same one (`numeric(1000,s)`); a plain `numeric` means the
scale depends on the value (a division).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

NUMERIC_ORDER = ("int2", "int4", "int8", "numeric", "float4", "float8")
MAX_SCALE = 1000  # PostgreSQL's numeric display scale limit


def numeric(scale: int | None) -> str:
    return "numeric" if scale is None or not 0 <= scale <= MAX_SCALE else f"numeric(1000,{scale})"


def scale_of(name: str | None) -> int | None:
    if name is None or not name.startswith("numeric("):
        return None
    return int(name[:-1].split(",")[1])


def base_of(name: str | None) -> str | None:
    return name.split("(")[0] if name is not None else None


def literal_type(node: exp.Literal, negative: bool = False) -> str | None:
    if node.is_string:
        return "unknown"
    text = node.name
    if text.isdigit():
        value = -int(text) if negative else int(text)
        return "int4" if -2**31 <= value < 2**31 else "int8" if -2**63 <= value < 2**63 \
            else numeric(0)
    mantissa, _, exponent = text.lower().partition("e")
    digits = mantissa.partition(".")[2]
    try:
        scale = max(len(digits) - int(exponent or 0), 0)
    except ValueError:
        return None
    return numeric(scale)


def arithmetic(node: exp.Expression, left: str | None, right: str | None) -> str | None:
    a, b = base_of(left), base_of(right)
    if a == "date" and b == "date" and isinstance(node, exp.Sub):
        return "int4"
    if a not in NUMERIC_ORDER or b not in NUMERIC_ORDER:
        return None
    wider = max(a, b, key=NUMERIC_ORDER.index)
    if isinstance(node, exp.Mod) and wider in ("float4", "float8"):
        return None  # no float % in PostgreSQL: an error either way
    if wider == "float4" and (a, b) != ("float4", "float4"):
        # float4 with an integer or numeric is float8's operator in PostgreSQL (float48pl),
        # and the engine computes it so (connectors.dialects.duckdb.float4).
        return "float8"
    if wider != "numeric":
        return wider
    sl, sr = (scale_of(left) if a == "numeric" else 0), (scale_of(right) if b == "numeric" else 0)
    if sl is None or sr is None or isinstance(node, exp.Div):
        return "numeric"
    return numeric(sl + sr if isinstance(node, exp.Mul) else max(sl, sr))


def math_result(node: exp.Expression, of: Callable[[exp.Expression | None], str | None]) -> str | None:
    """sqrt, exp, ln, log, log10, power: numeric when an argument is, float8 for integers
    and floats; log(b, x) is numeric only (sqlglot reads log10(x) as log(10, x))."""
    if isinstance(node, exp.Log) and node.expression is not None:
        if node.meta.get("spelled") != "log10":
            return "numeric"
        arguments = [node.expression]
    else:
        arguments = [a for a in (node.this, node.expression) if a is not None]
    bases = {base_of(of(a)) for a in arguments}
    if "numeric" in bases:
        return "numeric"
    return "float8" if bases <= {"int2", "int4", "int8", "float4", "float8"} else None


def sum_result(arg: str | None) -> str | None:
    base = base_of(arg)
    if base in ("int2", "int4"):
        return "int8"
    if base == "int8":
        return numeric(0)
    return arg if base in ("numeric", "float4", "float8") else None


def integers_result(a: str | None, b: str | None) -> str | None:
    """gcd/lcm/mod: int4 and int8 signatures, and numeric's."""
    if a in ("int2", "int4", "int8") and b in ("int2", "int4", "int8"):
        wider = max(a, b, key=NUMERIC_ORDER.index)
        return "int4" if wider == "int2" else wider
    return None


def float_or_numeric(arg: str | None, scale: int | None) -> str | None:
    """A function with float8 and numeric signatures (sign, ceil, floor, round(x)): an
    integer or float4 argument takes float8's, a numeric numeric's."""
    base = base_of(arg)
    if base in ("int2", "int4", "int8", "float4", "float8"):
        return "float8"
    if base == "numeric":
        return numeric(scale)
    return None


def rounded(arg: str | None, decimals: exp.Expression | None) -> str | None:
    if decimals is None:
        return float_or_numeric(arg, 0)
    if base_of(arg) not in ("int2", "int4", "int8", "numeric"):
        return None  # round(float8, int) does not exist
    places = decimals.this if isinstance(decimals, exp.Neg) else decimals
    if not (isinstance(places, exp.Literal) and places.name.isdigit()):
        return "numeric"
    return numeric(0 if isinstance(decimals, exp.Neg) else int(places.name))
