"""sqrt(), exp(), ln(), log() and power() of numerics, to the scale and digits numeric.c gives.

PostgreSQL computes these on numeric arguments in numeric, at a display scale it picks
from the argument (numeric_sqrt, numeric_exp, numeric_ln, log_var): enough for 16
significant digits (NUMERIC_MIN_SIG_DIGITS), never fewer than the arguments' own scales,
at most 1000, and the value rounded half away from zero at that scale:

    sqrt(2.0)      1.414213562373095      (scale 15: the root's weight is 0)
    exp(2.5)       12.182493960703473     (scale 15: 2.5 * log10(e) truncates to 1)
    ln(2.5)        0.9162907318741551     (scale 16: ln's estimated weight is 0)
    log(2, 8)      3.0000000000000000     (ln(8) / ln(2), at 16 - (0 - 0))
    power(2.5, 3)  15.6250000000000000    (an integer exponent: at 16 places or the base's)
    power(2, 2.5)  5.6568542494923802     (at 16 - trunc(2.5 * ln(2) * log10(e)))

DuckDB answers in double precision, a float8 with other digits, so the DuckDB dialect
computes these here: when the statement is planned for constants
(connectors.dialects.duckdb.constant_numerics), and for a column's values in a function
the DuckDB runner registers (connectors.dialects.duckdb.numeric_calls).
A value is (unscaled digits, display scale): 2.50 is (250, 2). The root, and a power to
an integer exponent, are exact (integer arithmetic); exp, ln, log and other powers are
computed by Python's decimal, correctly rounded at thirty digits more than the result
needs, then rounded half up at PostgreSQL's scale. numeric.c carries eight guard digits
itself, so the two agree unless the true value lies within about 1e-8 of a unit of the
last place of a rounding boundary: never for a transcendental result of a short
constant. An exact power that lies on such a boundary (0.5 ^ 17 at 16 places), which
numeric.c's approximate products or division might round either way, is not computed.

Arguments PostgreSQL raises on (a negative root, the logarithm of zero or of a negative
number, log base 1, zero to a negative power, a negative number to a non-integer one)
and values too large to compute here give None: the callers raise PostgreSQL's error
for the first (its checks come first) and refuse the others (0A000).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext
from math import isqrt

MIN_SIG_DIGITS = 16  # NUMERIC_MIN_SIG_DIGITS
MAX_DISPLAY_SCALE = 1000  # NUMERIC_MAX_DISPLAY_SCALE
MAX_RESULT_SCALE = 2000  # NUMERIC_MAX_RESULT_SCALE
_NBASE_DIGITS = 4  # DEC_DIGITS: numeric.c keeps base-10000 digits
_GUARD = 30
_EXP_LIMIT = 1000  # |x| beyond this: exp() is left to the engine (overflow, or 1000 zeros)

Value = tuple[int, int]  # (unscaled digits, display scale)


def _clamped(rscale: int, *scales: int) -> int:
    return min(max(rscale, *scales, 0), MAX_DISPLAY_SCALE)


def base_digits(value: Value) -> tuple[int, list[int]]:
    """numeric.c's (weight, digits) of `value`: its base-10000 digits with leading and
    trailing zero digits stripped, the weight being the first one's power of 10000;
    (0, []) for zero."""
    unscaled, scale = value
    if unscaled == 0:
        return 0, []
    pad = (-scale) % _NBASE_DIGITS  # the point moved onto a base-10000 boundary
    text = str(abs(unscaled)) + "0" * pad
    places = (scale + pad) // _NBASE_DIGITS  # base-10000 digits after the point
    text = text.rjust(-(-len(text) // _NBASE_DIGITS) * _NBASE_DIGITS, "0")
    digits = [int(text[i:i + _NBASE_DIGITS]) for i in range(0, len(text), _NBASE_DIGITS)]
    weight = len(digits) - places - 1
    while digits[0] == 0:
        digits.pop(0)
        weight -= 1
    while digits[-1] == 0:
        digits.pop()
    return weight, digits


def _decimal(value: Value) -> Decimal:
    return Decimal(value[0]).scaleb(-value[1])


def _rounded(result: Decimal, rscale: int) -> Value:
    """`result` rounded half away from zero at `rscale`, as (digits, rscale)."""
    exact = result.quantize(Decimal(1).scaleb(-rscale), rounding=ROUND_HALF_UP)
    return int(exact.scaleb(rscale)), rscale


def estimate_ln_dweight(value: Value) -> int:
    """numeric.c's estimate of the decimal weight of ln(value), for value > 0."""
    decimal = _decimal(value)
    if Decimal("0.9") <= decimal <= Decimal("1.1"):
        # ln(1 + x) is about x: the weight of x's first decimal digit
        weight, digits = base_digits((value[0] - 10 ** value[1], value[1]))
        return weight * _NBASE_DIGITS + int(math.log10(digits[0])) if digits else 0
    weight, digits = base_digits(value)
    leading, dweight = digits[0], weight * _NBASE_DIGITS
    if len(digits) > 1:
        leading, dweight = leading * 10 ** _NBASE_DIGITS + digits[1], dweight - _NBASE_DIGITS
    estimate = math.log(leading) + dweight * 2.302585092994046
    return int(math.log10(abs(estimate)))  # C's (int): toward zero


def numeric_sqrt(value: Value) -> Value | None:
    """numeric_sqrt: the square root, rounded at max(16 - its weight, the scale)."""
    unscaled, scale = value
    if unscaled < 0:
        return None  # 2201F, the engine's check raises it
    weight = base_digits(value)[0]
    sweight = (weight + 1) * _NBASE_DIGITS // 2 - 1  # (weight + 1) * 4 is even: exact
    rscale = _clamped(MIN_SIG_DIGITS - sweight, scale)
    # The root truncated one place further, then rounded half up (as in
    # connectors.dialects.duckdb.deviations): exact for any argument.
    root = isqrt(unscaled * 10 ** (2 * (rscale + 1) - scale))
    return (root + 5) // 10, rscale


def numeric_exp(value: Value) -> Value | None:
    """numeric_exp: e to the value, at 16 - trunc(value * log10(e)) places or more."""
    x = _decimal(value)
    if abs(x) > _EXP_LIMIT:
        return None
    weight = float(x) * 0.434294481903252  # the result's decimal weight, about
    weight = min(max(weight, -MAX_RESULT_SCALE), MAX_RESULT_SCALE)
    rscale = _clamped(MIN_SIG_DIGITS - int(weight), value[1])
    with localcontext() as context:
        context.prec = rscale + max(int(weight), 0) + _GUARD
        return _rounded(x.exp(), rscale)


def numeric_ln(value: Value) -> Value | None:
    """numeric_ln: the natural logarithm, at 16 - its estimated weight places or more."""
    if value[0] <= 0:
        return None  # 2201E, the engine's check raises it
    dweight = estimate_ln_dweight(value)
    rscale = _clamped(MIN_SIG_DIGITS - dweight, value[1])
    with localcontext() as context:
        context.prec = rscale + max(dweight, 0) + _GUARD
        return _rounded(_decimal(value).ln(), rscale)


def numeric_log(base: Value, value: Value) -> Value | None:
    """log_var: log(base, value) = ln(value) / ln(base), at 16 less the estimated weight of
    the quotient places, or either argument's scale if more. (log(x) and log10(x) of a
    numeric are log(10, x).)"""
    if base[0] <= 0 or value[0] <= 0 or base == (10 ** base[1], base[1]):
        return None  # 2201E, or log base 1's division by zero (22012): the engine's
    result_dweight = estimate_ln_dweight(value) - estimate_ln_dweight(base)
    rscale = _clamped(MIN_SIG_DIGITS - result_dweight, base[1], value[1])
    with localcontext() as context:
        # ln(value) may be tiny (value near 1): enough digits for the quotient's places
        context.prec = rscale + abs(result_dweight) + 2 * _GUARD
        return _rounded(_decimal(value).ln() / _decimal(base).ln(), rscale)


_INT32 = 2 ** 31
_POWER_DIGITS = 20_000  # digits of an exact integer power computed here, at most
_MAX_LN_PRODUCT = MAX_RESULT_SCALE * 3.01  # power_var's overflow/underflow test


def _half_up(numerator: int, denominator: int, ties: bool) -> int | None:
    """numerator / denominator (denominator > 0) rounded half away from zero; on an exact
    half None unless `ties` (see the module docstring)."""
    q, r = divmod(abs(numerator), denominator)
    if 2 * r == denominator and not ties:
        return None
    q += 2 * r >= denominator
    return -q if numerator < 0 else q


def numeric_power(base: Value, exponent: Value) -> Value | None:
    """power_var: an integer exponent within int4 by power_var_int (at 16 places, or the
    base's scale if more), any other from exp(exponent * ln(base)) at a scale chosen from
    a first, 8-digit estimate of that product."""
    (digits, scale), (e_digits, e_scale) = base, exponent
    if digits == 0 and e_digits < 0:
        return None  # 2201F, the engine's check raises it
    if e_digits % 10 ** e_scale == 0 and -_INT32 <= e_digits // 10 ** e_scale < _INT32:
        return _integer_power(base, e_digits // 10 ** e_scale, _clamped(MIN_SIG_DIGITS, scale))
    if digits == 0:
        return 0, MIN_SIG_DIGITS
    if digits < 0:
        return None  # 2201F (or an integer exponent beyond int4: left to the engine)
    x, e = _decimal(base), _decimal(exponent)
    ln_dweight = estimate_ln_dweight(base)
    local = max(8 - ln_dweight, 0)
    with localcontext() as context:
        context.prec = local + len(str(abs(e_digits))) + 40
        places = Decimal(1).scaleb(-local)
        ln_base = x.ln().quantize(places, rounding=ROUND_HALF_UP)  # ln_var at `local` places
        estimate = (ln_base * e).quantize(places, rounding=ROUND_HALF_UP)  # mul_var likewise
    if abs(float(estimate)) > _MAX_LN_PRODUCT:
        return None  # overflow (22003), or zero at 1000 places: left to the engine
    weight = float(estimate) * 0.434294481903252
    rscale = _clamped(MIN_SIG_DIGITS - int(weight), scale, e_scale)
    with localcontext() as context:
        context.prec = rscale + max(int(weight), 0) + len(str(abs(e_digits))) + _GUARD + 10
        return _rounded((e * x.ln()).exp(), rscale)


def _integer_power(base: Value, n: int, rscale: int) -> Value | None:
    """power_var_int: base ^ n, exact, rounded half up at `rscale`."""
    digits, scale = base
    if n == 0:
        return 10 ** rscale, rscale
    if digits == 0:
        return 0, rscale
    if len(str(abs(digits))) * abs(n) > _POWER_DIGITS:
        return None  # too large to compute here (or PostgreSQL's overflow): the engine's
    power, places = digits ** abs(n), scale * abs(n)  # |base| ^ |n| = power / 10^places
    ties = abs(n) <= 2  # base, base * base and 1 / base are exact in numeric.c too
    if n < 0:
        rounded = _half_up(10 ** (places + rscale) * (1 if power > 0 else -1), abs(power), ties)
    elif places > rscale:
        rounded = _half_up(power * 10 ** rscale, 10 ** places, ties)
    else:
        rounded = power * 10 ** (rscale - places)
    return None if rounded is None else (rounded, rscale)


# By PostgreSQL's name, each taking its arguments in numeric.c's order: log(base, x),
# power(base, exponent).
FUNCTIONS = {"sqrt": numeric_sqrt, "exp": numeric_exp, "ln": numeric_ln, "log": numeric_log,
             "power": numeric_power}
