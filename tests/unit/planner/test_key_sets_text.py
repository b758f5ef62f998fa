"""The integer array literal and the remembered shape of planner.key_sets.

The BIGINT array text is written by Arrow (`_joined_integers`): it must be exactly what
Python's `str` gives, for every int64 (signs, zero, both extremes). `shape_for` keeps its
last answer for the same list object: another list, or another dialect, is decided anew.
"""

from __future__ import annotations

import random

from planner.key_sets import (
    IN_LIST_LIMIT,
    INT64,
    _joined_integers,
    key_condition,
    shape_for,
)


def test_integer_text_is_python_decimal_text() -> None:
    rng = random.Random(7)
    values = [INT64[0], INT64[1], 0, -1, 1, 10, -10] + \
        [rng.randint(INT64[0], INT64[1]) for _ in range(5000)]
    assert _joined_integers(values) == ",".join(map(str, values))
    assert _joined_integers([42]) == "42"


def test_array_literal_of_large_integer_sets() -> None:
    values = list(range(-3, IN_LIST_LIMIT * 3))
    sql = key_condition((None, "k"), values, "postgres").sql("postgres")
    assert sql == "\"k\" = ANY(CAST('{" + ",".join(map(str, values)) + "}' AS BIGINT[]))"


def test_the_remembered_shape_is_for_that_list_and_dialect_only() -> None:
    many = list(range(IN_LIST_LIMIT + 5))
    assert shape_for("postgres", many).kind == "array"
    assert shape_for("postgres", many).kind == "array"  # the same list: remembered
    assert shape_for("mysql", many).kind == "range"  # another dialect: decided anew
    assert shape_for("postgres", list(range(3))).kind == "in"  # another list
    texts = [f"k{i}" for i in range(IN_LIST_LIMIT + 5)]
    assert shape_for("postgres", texts).element == "TEXT"
    assert shape_for("duckdb", texts).kind == "none"
