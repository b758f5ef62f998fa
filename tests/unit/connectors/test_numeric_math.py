"""sqrt(), exp(), ln() and log() of numerics at numeric.c's scale
(connectors/dialects/numeric_math.py). The expected texts are PostgreSQL 15's answers;
tests/conformance compares the engine's answers with a running PostgreSQL."""

from __future__ import annotations

from decimal import Decimal

import pytest

from connectors.dialects.numeric_math import (base_digits, estimate_ln_dweight, numeric_exp,
                                              numeric_ln, numeric_log, numeric_power, numeric_sqrt)
from connectors.dialects.duckdb.constant_numerics import numeric_text


def v(text: str) -> tuple[int, int]:
    d = Decimal(text)
    scale = max(-d.as_tuple().exponent, 0)
    return int(d.scaleb(scale)), scale


def shown(value: tuple[int, int] | None) -> str | None:
    return None if value is None else numeric_text((*value, "numeric"))


@pytest.mark.parametrize(("text", "expected"), [
    ("2.5", (0, [2, 5000])), ("0.000001", (-2, [100])), ("12345.6789", (1, [1, 2345, 6789])),
    ("100000000", (2, [1])), ("0", (0, [])), ("-0.5", (-1, [5000])),
])
def test_base_digits_are_numeric_c_s(text: str, expected: tuple[int, list[int]]) -> None:
    assert base_digits(v(text)) == expected


@pytest.mark.parametrize(("text", "expected"), [("2.5", 0), ("1.0001", -4), ("1", 0), ("0.000001", 1),
                                                ("1e300", 2), ("0.95", -2)])
def test_estimated_weight_of_the_logarithm(text: str, expected: int) -> None:
    assert estimate_ln_dweight(v(text)) == expected


@pytest.mark.parametrize(("call", "expected"), [
    (lambda: numeric_sqrt(v("2.0")), "1.414213562373095"),
    (lambda: numeric_sqrt(v("0.000001")), "0.0010000000000000000"),
    (lambda: numeric_sqrt(v("0.0")), "0.000000000000000"),
    (lambda: numeric_sqrt(v("1e20")), "10000000000.00000"),
    (lambda: numeric_exp(v("2.5")), "12.182493960703473"),
    (lambda: numeric_exp((-25, 1)), "0.08208499862389880"),
    (lambda: numeric_exp(v("0.000001")), "1.0000010000005000"),
    (lambda: numeric_ln(v("2.5")), "0.9162907318741551"),
    (lambda: numeric_ln(v("0.000001")), "-13.815510557964274"),
    (lambda: numeric_ln(v("1.0")), "0.0000000000000000"),
    (lambda: numeric_log((10, 0), v("2.5")), "0.3979400086720376"),
    (lambda: numeric_log((2, 0), (8, 0)), "3.0000000000000000"),
    (lambda: numeric_log((2, 0), v("2.5")), "1.3219280948873623"),
    (lambda: numeric_log((10, 0), v("0.000001")), "-6.000000000000000"),
    (lambda: numeric_power(v("2.5"), (3, 0)), "15.6250000000000000"),
    (lambda: numeric_power((2, 0), v("2.5")), "5.6568542494923802"),
    (lambda: numeric_power(v("0.000001"), (2, 0)), "0.0000000000010000"),
    (lambda: numeric_power((2, 0), v("-2.5")), "0.1767766952966369"),
    (lambda: numeric_power(v("-2.5"), (3, 0)), "-15.6250000000000000"),
    (lambda: numeric_power(v("1.5"), (-1, 0)), "0.6666666666666667"),
    (lambda: numeric_power((0, 0), v("2.5")), "0.0000000000000000"),
    (lambda: numeric_power(v("2.5"), (0, 0)), "1.0000000000000000"),
    (lambda: numeric_power(v("0.5"), (2, 0)), "0.2500000000000000"),
])
def test_values_as_postgresql_computes_them(call, expected: str) -> None:
    assert shown(call()) == expected


@pytest.mark.parametrize("call", [lambda: numeric_sqrt(v("-1.5")), lambda: numeric_ln(v("0.0")),
                                  lambda: numeric_ln((-25, 1)), lambda: numeric_log((1, 0), v("2.5")),
                                  lambda: numeric_log(v("1.00"), v("2.5")), lambda: numeric_log((0, 0), v("2.5")),
                                  lambda: numeric_exp(v("1001")), lambda: numeric_power(v("-8"), v("0.5")),
                                  lambda: numeric_power((0, 0), v("-1.5")),
                                  # exactly between two values at scale 16: numeric.c's
                                  # approximate products might round either way
                                  lambda: numeric_power(v("0.5"), (17, 0)), lambda: numeric_power(v("2.0"), (-17, 0))])
def test_what_postgresql_raises_on_is_left_to_the_engine(call) -> None:
    assert call() is None
