"""`sind(x)`, `cosd(x)`, `tand(x)` and `cotd(x)` as PostgreSQL computes them, on DuckDB.

DuckDB has neither. PostgreSQL's (float.c, dsind/dcosd) reduce the angle to the first
quadrant, then stitch sin() and cos() so that 0, 30, 60 and 90 degrees come out exact
(`sind(30)` is 0.5, not 0.49999999999999994); written out here step for step, with the
same float8 operations and constants, so DuckDB's sin() and cos() (the same C library's)
give the same bits:

    a = fmod(x, 360) (C's: -30 stays -30); a < 0: a = -a, sign = -sign; a > 180: a = 360 - a, sign = -sign (sind)
    a > 90: a = 180 - a (sind; cosd flips the sign here instead)
    sind_q1(a) = a <= 30 ? sin(a * RPD) / sin(30 * RPD) / 2 : cosd_0_to_60(90 - a)
    cosd_q1(a) = a <= 60 ? 1 - (1 - cos(a * RPD)) / (1 - cos(60 * RPD)) / 2 : sind_0_to_30(90 - a)

tand and cotd (dtand, dcotd) reduce the angle to [0, 90] and divide sind_q1 by cosd_q1 (or
the reverse), then by that quotient at 45 degrees: tand(45) is exactly 1, tand(90) and
cotd(0) an infinity. NaN gives NaN, an infinite angle PostgreSQL's 22003 "input is out of
range". The angle is written several times, so an argument with a volatile call is
refused (0A000); so are the other degree functions (asind, acosd, atand, atan2d).
"""

from __future__ import annotations

from sqlglot import exp, parse_one

from connectors.base import volatile_reason
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

OUT_OF_RANGE = "input is out of range"
# float.c's RADIANS_PER_DEGREE, as the C compiler rounds it (the nearest float8).
_RPD = f"CAST('{float('0.0174532925199432957692')!r}' AS DOUBLE)"
_OTHERS = {"asind", "acosd", "atand", "atan2d"}


def _d(number: str) -> str:
    return f"CAST({number} AS DOUBLE)"


def _sind_0_to_30(x: str) -> str:
    return f"((sin({x} * {_RPD}) / sin({_d('30')} * {_RPD})) / {_d('2')})"


def _cosd_0_to_60(x: str) -> str:
    return (f"({_d('1')} - (({_d('1')} - cos({x} * {_RPD})) / ({_d('1')} - cos({_d('60')} * {_RPD})))"
            f" / {_d('2')})")


def _case(condition: str, then: str, otherwise: str) -> str:
    return f"(CASE WHEN {condition} THEN {then} ELSE {otherwise} END)"


def _sind_q1(a: str) -> str:
    return _case(f"{a} <= {_d('30')}", _sind_0_to_30(a), _cosd_0_to_60(f"({_d('90')} - {a})"))


def _cosd_q1(a: str) -> str:
    return _case(f"{a} <= {_d('60')}", _cosd_0_to_60(a), _sind_0_to_30(f"({_d('90')} - {a})"))


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
    q1 = _sind_q1(a) if sine else _cosd_q1(a)
    return (f"CASE WHEN isnan(__angle) THEN __angle WHEN isinf(__angle) THEN error('{OUT_OF_RANGE}') "
            f"ELSE {sign} * {q1} END")


def _tangent_template(cotangent: bool) -> str:
    """dtand/dcotd: the angle reduced to [0, 90] (fmod by 360, then mirrored), the quotient
    of the first-quadrant sine and cosine divided by its own value at 45 degrees (so
    tand(45) is 1 exactly), an infinity where the divisor is 0, and no minus zero."""
    a = f"(__angle % {_d('360')})"
    sign = _case(f"{a} < 0", _d("-1"), _d("1"))
    a = _case(f"{a} < 0", f"(-{a})", a)
    sign = _case(f"{a} > {_d('180')}", f"(-{sign})", sign)
    a = _case(f"{a} > {_d('180')}", f"({_d('360')} - {a})", a)
    sign = _case(f"{a} > {_d('90')}", f"(-{sign})", sign)
    a = _case(f"{a} > {_d('90')}", f"({_d('180')} - {a})", a)
    forty_five = _d("45")
    if cotangent:
        top, bottom, at_45 = _cosd_q1(a), _sind_q1(a), f"({_cosd_q1(forty_five)} / {_sind_q1(forty_five)})"
    else:
        top, bottom, at_45 = _sind_q1(a), _cosd_q1(a), f"({_sind_q1(forty_five)} / {_cosd_q1(forty_five)})"
    return (f"CASE WHEN isnan(__angle) THEN __angle WHEN isinf(__angle) THEN error('{OUT_OF_RANGE}') "
            f"WHEN {bottom} = 0 THEN {sign} * CAST('Infinity' AS DOUBLE) "
            f"ELSE {sign} * (({top} / {bottom}) / {at_45}) + {_d('0')} END")


_TEMPLATES = {"sind": parse_one(_template(True), read="duckdb"),
              "cosd": parse_one(_template(False), read="duckdb"),
              "tand": parse_one(_tangent_template(False), read="duckdb"),
              "cotd": parse_one(_tangent_template(True), read="duckdb")}


def _name(node: exp.Expression) -> str | None:
    return str(node.this).lower() if isinstance(node, exp.Anonymous) else None


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(_name(call) in _TEMPLATES.keys() | _OTHERS for call in tree.find_all(exp.Anonymous))


def postgres_degrees(node: exp.Expression) -> exp.Expression:
    """sind/cosd/tand/cotd(x) written out (see the module docstring); other nodes as they are."""
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
