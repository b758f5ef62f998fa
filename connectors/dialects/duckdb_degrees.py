"""`sind(x)` and `cosd(x)` as PostgreSQL computes them, on DuckDB.

DuckDB has neither. PostgreSQL's (float.c, dsind/dcosd) reduce the angle to the first
quadrant, then stitch sin() and cos() so that 0, 30, 60 and 90 degrees come out exact
(`sind(30)` is 0.5, not 0.49999999999999994); written out here step for step, with the
same float8 operations and constants, so DuckDB's sin() and cos() (the same C library's)
give the same bits:

    a = fmod(x, 360) (C's: -30 stays -30); a < 0: a = -a, sign = -sign; a > 180: a = 360 - a, sign = -sign (sind)
    a > 90: a = 180 - a (sind; cosd flips the sign here instead)
    sind_q1(a) = a <= 30 ? sin(a * RPD) / sin(30 * RPD) / 2 : cosd_0_to_60(90 - a)
    cosd_q1(a) = a <= 60 ? 1 - (1 - cos(a * RPD)) / (1 - cos(60 * RPD)) / 2 : sind_0_to_30(90 - a)

NaN gives NaN, an infinite angle PostgreSQL's 22003 "input is out of range". The angle
is written several times, so an argument with a volatile call is refused (0A000); so
are the other degree functions (tand, cotd, asind, acosd, atand, atan2d).
"""

from __future__ import annotations

from sqlglot import exp, parse_one

from connectors.base import volatile_reason
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

OUT_OF_RANGE = "input is out of range"
# float.c's RADIANS_PER_DEGREE, as the C compiler rounds it (the nearest float8).
_RPD = f"CAST('{float('0.0174532925199432957692')!r}' AS DOUBLE)"
_OTHERS = {"tand", "cotd", "asind", "acosd", "atand", "atan2d"}


def _d(number: str) -> str:
    return f"CAST({number} AS DOUBLE)"


def _sind_0_to_30(x: str) -> str:
    return f"((sin({x} * {_RPD}) / sin({_d('30')} * {_RPD})) / {_d('2')})"


def _cosd_0_to_60(x: str) -> str:
    return (f"({_d('1')} - (({_d('1')} - cos({x} * {_RPD})) / ({_d('1')} - cos({_d('60')} * {_RPD})))"
            f" / {_d('2')})")


def _case(condition: str, then: str, otherwise: str) -> str:
    return f"(CASE WHEN {condition} THEN {then} ELSE {otherwise} END)"


def _template(sine: bool) -> str:
    a = f"(__angle % {_d('360')})"  # C's fmod (DuckDB's fmod() answers -30 as 330)
    sign = _case(f"{a} < 0", _d("-1"), _d("1")) if sine else _d("1")
    a = _case(f"{a} < 0", f"(-{a})", a)
    if sine:
        sign = _case(f"{a} > {_d('180')}", f"(-{sign})", sign)
    a = _case(f"{a} > {_d('180')}", f"({_d('360')} - {a})", a)
    if not sine:
        sign = _case(f"{a} > {_d('90')}", _d("-1"), _d("1"))
    a = _case(f"{a} > {_d('90')}", f"({_d('180')} - {a})", a)
    if sine:
        q1 = _case(f"{a} <= {_d('30')}", _sind_0_to_30(a), _cosd_0_to_60(f"({_d('90')} - {a})"))
    else:
        q1 = _case(f"{a} <= {_d('60')}", _cosd_0_to_60(a), _sind_0_to_30(f"({_d('90')} - {a})"))
    return (f"CASE WHEN isnan(__angle) THEN __angle WHEN isinf(__angle) THEN error('{OUT_OF_RANGE}') "
            f"ELSE {sign} * {q1} END")


_TEMPLATES = {"sind": parse_one(_template(True), read="duckdb"),
              "cosd": parse_one(_template(False), read="duckdb")}


def _name(node: exp.Expression) -> str | None:
    return str(node.this).lower() if isinstance(node, exp.Anonymous) else None


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(_name(call) in _TEMPLATES.keys() | _OTHERS for call in tree.find_all(exp.Anonymous))


def postgres_degrees(node: exp.Expression) -> exp.Expression:
    """sind(x)/cosd(x) written out (see the module docstring); other nodes as they are."""
    name = _name(node)
    if name in _OTHERS:
        raise PgError(FEATURE_NOT_SUPPORTED, f"{name}() is not supported by fedgate outside PostgreSQL sources")
    if name not in _TEMPLATES or len(node.expressions) != 1:
        return node
    angle = node.expressions[0]
    if volatile_reason(angle) is not None:
        raise PgError(FEATURE_NOT_SUPPORTED, f"{name}() of a volatile argument is not supported by "
                      "fedgate outside PostgreSQL sources")
    value = exp.Cast(this=angle.copy(), to=exp.DataType.build("DOUBLE"))

    def place(n: exp.Expression) -> exp.Expression:
        return value.copy() if isinstance(n, exp.Column) and n.name == "__angle" else n

    return exp.Paren(this=_TEMPLATES[name].copy().transform(place))
