"""Compare a query's answer from the gateway with the reference answer from DuckDB.

- Same number of rows, same number of columns.
- Numbers (integers, decimals, floats) equal within a relative tolerance: engines sum
  money as floats in a different order (and SQLite stores money as REAL), so exact decimal
  equality is not the contract; 1e-6 relative is far tighter than any wrong answer.
- Dates, strings and NULLs exactly.
- Without ORDER BY the rows are compared as multisets (both sides sorted the same way).
  With ORDER BY the rows must come in the reference's order as far as the sort keys go:
  the sequence of sort-key values must match row by row, and the rows themselves match as
  multisets (rows tied on the keys may come in any order).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp

REL_TOL = 1e-6
ABS_TOL = 1e-9


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def same_value(got: Any, want: Any) -> bool:
    if got is None or want is None:
        return got is None and want is None
    if _is_number(got) and _is_number(want):
        if isinstance(got, int) and isinstance(want, int):
            return got == want
        return math.isclose(float(got), float(want), rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(got, dt.datetime) or isinstance(want, dt.datetime):
        return got == want
    return type(got) is type(want) and got == want


def _sort_key(row: tuple) -> tuple:
    """Orders rows the same way on both sides despite float noise and mixed types."""
    key = []
    for value in row:
        if value is None:
            key.append((0, ""))
        elif _is_number(value):
            key.append((1, float(f"{float(value):.5g}")))
        else:
            key.append((2, str(value)))
    return tuple(key)


def order_columns(sql: str, names: list[str]) -> list[int] | None:
    """Output positions of the top-level ORDER BY keys, or None when there is no ORDER BY."""
    tree = sqlglot.parse_one(sql, read="postgres")
    order = tree.args.get("order")
    if order is None:
        return None
    positions = []
    for key in order.expressions:
        target = key.this
        if isinstance(target, exp.Literal) and not target.is_string:
            positions.append(int(target.this) - 1)
            continue
        name = target.alias_or_name if isinstance(target, exp.Column) else target.sql("postgres")
        if name not in names:
            raise AssertionError(f"ORDER BY key {name!r} is not an output column of the query")
        positions.append(names.index(name))
    return positions


def mismatch(got: list[tuple], want: list[tuple], order: list[int] | None) -> str | None:
    """None when the answers agree, else a short description of the first difference."""
    if len(got) != len(want):
        return f"{len(got)} rows, want {len(want)}"
    if got and len(got[0]) != len(want[0]):
        return f"{len(got[0])} columns, want {len(want[0])}"
    if order is not None:
        for index, (g, w) in enumerate(zip(got, want)):
            if not all(same_value(g[i], w[i]) for i in order):
                return f"row {index} sort keys {[g[i] for i in order]}, want {[w[i] for i in order]}"
    for g, w in zip(sorted(got, key=_sort_key), sorted(want, key=_sort_key)):
        if len(g) != len(w) or not all(same_value(a, b) for a, b in zip(g, w)):
            return f"row {g!r}, want {w!r}"
    return None
