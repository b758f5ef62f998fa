"""numeric text (an unconstrained PostgreSQL numeric kept as its text) in binary format.

The vectorized encoder must give exactly what `numeric_send` gives value by value (the
integration suite checks `numeric_send` itself against a live PostgreSQL, in
tests/integration/test_pg_numeric.py): random values of many shapes, sliced arrays, NULLs,
the special values, and values too long for the vectorized path mixed in.
"""

from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pytest

from pgwire.errors import PgError
from pgwire.types.numeric import numeric_send, numeric_text_binary


def _expected(values: list[str | None]) -> list[bytes | None]:
    return [None if v is None else numeric_send(Decimal(v)) for v in values]


def _encoded(arr: pa.Array) -> list[bytes | None]:
    encoded = numeric_text_binary(arr)
    (piece,) = encoded.pieces
    got = piece.to_pylist()
    assert [-1 if g is None else len(g) for g in got] == list(encoded.lengths)
    return got


def _random_numeric(rng: random.Random) -> str:
    sign = "-" if rng.random() < 0.4 else ""
    whole = str(rng.randrange(10 ** rng.randrange(1, 30)))
    if rng.random() < 0.3:
        return sign + whole
    return f"{sign}{whole}.{''.join(rng.choice('0123456789') for _ in range(rng.randrange(1, 25)))}"


def test_random_text_matches_numeric_send() -> None:
    rng = random.Random(7)
    values: list[str | None] = [_random_numeric(rng) for _ in range(3000)]
    values += ["0", "0.000", "NaN", "Infinity", "-Infinity", None, "10000", "0.0001",
               "-0.5", "99999999.99999999", "1" + "0" * 100, "0." + "0" * 99 + "1"]
    rng.shuffle(values)
    arr = pa.array(values, pa.string())
    assert _encoded(arr) == _expected(values)
    assert _encoded(arr.slice(1001, 777)) == _expected(values[1001:1778])
    assert _encoded(arr.cast(pa.large_string())) == _expected(values)


def test_long_values_take_the_slow_path_in_place() -> None:
    values = ["1.5", "-" + "9" * 200 + ".25", None, "0." + "0" * 300 + "7", "NaN", "-2"]
    assert _encoded(pa.array(values)) == _expected(values)


def test_all_null_and_empty() -> None:
    assert _encoded(pa.array([None, None], pa.string())) == [None, None]
    assert _encoded(pa.array([], pa.string())) == []


@pytest.mark.parametrize("bad", ["1e5", " 1", "", "1.2.3", "nan", "--1", "+1", ".5", "1,5"])
def test_text_that_is_not_numeric_out_is_an_error(bad: str) -> None:
    with pytest.raises(PgError) as caught:
        numeric_text_binary(pa.array(["1", bad]))
    assert caught.value.sqlstate == "22P02"
