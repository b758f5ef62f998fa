"""The fraction of a table's rows a pushed filter keeps, from the source's column statistics.

`selectivity` — estimate the fraction of rows `predicate` keeps on `table`.

    before: orders (1,500,000 rows), filter o_orderstatus = 'F'        -> 1,500,000 // 3
    after:  pg_stats' most common values say 'F' is 48.7% of the rows -> 730,500

The rules are PostgreSQL's (selfuncs.c) in small:
- equality is the literal's most-common-value frequency, else what the common values and
  the nulls leave, spread evenly over the other distinct values;
- a range is the frequencies of the common values it holds plus, for the rest, the share
  of the histogram's buckets it covers (PostgreSQL's histogram leaves the common values
  out), or of min..max when a source keeps only those;
- IS NULL is the null fraction; IN adds its values' equalities; AND multiplies (columns
  taken as independent); OR adds less the overlap; NOT is the complement.
A predicate the statistics cannot read (no statistics for its column, no literal, a
function), and an AND, OR or NOT made only of such predicates, keeps the textbook third
(UNKNOWN), as every filter did before statistics.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from sqlglot import exp

from connectors.base import ColumnStats, TableInfo

# Textbook selectivity of a predicate the statistics say nothing about.
UNKNOWN = 1 / 3
_RANGES = (exp.GT, exp.GTE, exp.LT, exp.LTE)
_FLIPPED = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE}


def selectivity(predicate: exp.Expression, table: TableInfo) -> float:
    """The fraction (0..1) of `table`'s rows `predicate` keeps, from its column statistics
    (UNKNOWN when they cannot say)."""
    found = _kept(predicate, table)
    return UNKNOWN if found is None else found


def _kept(predicate: exp.Expression, table: TableInfo) -> float | None:
    """The fraction `predicate` keeps; None when the statistics say nothing of it. An AND,
    OR or NOT of which no part is known stays unknown: without statistics every filter
    keeps the third it kept before, whatever its shape."""
    if isinstance(predicate, exp.Paren):
        return _kept(predicate.this, table)
    if isinstance(predicate, (exp.And, exp.Or)):
        a, b = _kept(predicate.this, table), _kept(predicate.expression, table)
        if a is None and b is None:
            return None
        a, b = UNKNOWN if a is None else a, UNKNOWN if b is None else b
        return a * b if isinstance(predicate, exp.And) else _clamp(a + b - a * b)
    if isinstance(predicate, exp.Not):
        inner = _kept(predicate.this, table)
        return None if inner is None else _clamp(1 - inner)
    if isinstance(predicate, exp.Is) and isinstance(predicate.expression, exp.Null):
        stats = _stats(predicate.this, table)
        nulls = stats.null_frac if stats is not None else None
        if nulls is None:
            return None
        return 1 - nulls if predicate.args.get("negate") else nulls  # IS NOT NULL: negate
    if isinstance(predicate, exp.In):
        return _in(predicate, table)
    if isinstance(predicate, exp.Between):
        stats = _stats(predicate.this, table)
        low, high = _literal(predicate.args["low"]), _literal(predicate.args["high"])
        if stats is None or low is None or high is None or predicate.args.get("symmetric"):
            return None
        return _range(stats, low, True, high, True)
    if isinstance(predicate, (exp.EQ, exp.NEQ, *_RANGES)):
        return _comparison(predicate, table)
    return None


def _comparison(predicate: exp.Expression, table: TableInfo) -> float | None:
    kind, column, value = type(predicate), predicate.this, _literal(predicate.expression)
    if value is None:  # literal on the left: `5 < x` is `x > 5`
        kind, column, value = _FLIPPED.get(kind, kind), predicate.expression, _literal(predicate.this)
    stats = _stats(column, table)
    if stats is None or value is None:
        return None
    if kind in (exp.EQ, exp.NEQ):
        equal = _equal(stats, value)
        if equal is None:
            return None
        return equal if kind is exp.EQ else _clamp(_not_null(stats) - equal)
    if kind in (exp.LT, exp.LTE):
        return _range(stats, None, False, value, kind is exp.LTE)
    return _range(stats, value, kind is exp.GTE, None, False)


def _in(predicate: exp.In, table: TableInfo) -> float | None:
    """`x IN (a, b, ...)`: the sum of each distinct value's equality."""
    if any(predicate.args.get(k) for k in ("query", "unnest", "field")):
        return None
    stats = _stats(predicate.this, table)
    values = [_literal(v) for v in predicate.expressions]
    if stats is None or not values or any(v is None for v in values):
        return None
    found = [_equal(stats, v) for v in dict.fromkeys(values)]
    if any(f is None for f in found):
        return None
    return _clamp(sum(f for f in found if f is not None))


def _stats(column: exp.Expression, table: TableInfo) -> ColumnStats | None:
    return table.stats(column.name) if isinstance(column, exp.Column) else None


def _literal(e: exp.Expression) -> str | None:
    """A literal's text (a negative number keeps its sign, a typed literal `DATE '...'` its
    text, a boolean PostgreSQL's t/f); None for anything else."""
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        return "-" + e.this.name
    if isinstance(e, exp.Literal):
        return e.name
    if isinstance(e, exp.Boolean):
        return "t" if e.this else "f"
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal):
        return e.this.name
    return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _compare(a: str, b: str) -> int:
    """-1, 0 or 1: as numbers when both parse as numbers, else as text."""
    x, y = _number(a), _number(b)
    if x is None or y is None:
        x, y = a, b  # type: ignore[assignment]
    return (x > y) - (x < y)  # type: ignore[operator]


def _not_null(stats: ColumnStats) -> float:
    return 1 - (stats.null_frac or 0.0)


def _common(stats: ColumnStats) -> float:
    return sum(f for _, f in stats.most_common)


def _equal(stats: ColumnStats, value: str) -> float | None:
    """The fraction of rows equal to `value`: its most-common frequency, else what the common
    values leave spread over the other distinct values; None without a distinct count."""
    for common, frequency in stats.most_common:
        if _compare(common, value) == 0:
            return frequency
    if not stats.n_distinct:
        return None
    rest = max(stats.n_distinct - len(stats.most_common), 1.0)
    return _clamp(max(_not_null(stats) - _common(stats), 0.0) / rest)


def _range(stats: ColumnStats, low: str | None, low_in: bool, high: str | None,
           high_in: bool) -> float | None:
    """The fraction of rows between `low` and `high` (None: unbounded; `*_in`: inclusive).
    None when the statistics hold nothing to place the bounds in."""

    def inside(value: str) -> bool:
        above = low is None or _compare(value, low) >= (0 if low_in else 1)
        return above and (high is None or _compare(value, high) <= (0 if high_in else -1))

    common = sum(f for v, f in stats.most_common if inside(v))
    bounds = stats.histogram or tuple(b for b in (stats.low, stats.high) if b is not None)
    # The rows the common values leave: what the histogram (or min..max) spreads over.
    rest = max(_not_null(stats) - _common(stats), 0.0)
    if len(bounds) < 2:
        if not stats.most_common:
            return None
        # Only common values kept (a column of few values): the rest is not placed.
        return _clamp(common + rest * UNKNOWN) if rest > 0.001 else _clamp(common)
    share = (1.0 if high is None else _below(bounds, high)) - (0.0 if low is None else _below(bounds, low))
    return _clamp(common + max(share, 0.0) * rest)


def _below(bounds: tuple[str, ...], value: str) -> float:
    """The share of the equi-depth buckets `bounds` below `value`, interpolated inside its
    bucket for numbers (half a bucket for text)."""
    numbers = [_number(b) for b in bounds]
    target = _number(value)
    if target is not None and all(n is not None for n in numbers):
        keys: list = numbers
    else:
        keys, target = list(bounds), value
    if target <= keys[0]:
        return 0.0
    if target >= keys[-1]:
        return 1.0
    i = bisect_right(keys, target) - 1
    within = 0.5
    if isinstance(target, float) and keys[i + 1] != keys[i]:
        within = (target - keys[i]) / (keys[i + 1] - keys[i])
    if bisect_left(keys, target) != bisect_right(keys, target):
        within = 0.0  # on a bound
    return (i + within) / (len(keys) - 1)


def _clamp(fraction: float) -> float:
    return min(max(fraction, 0.0), 1.0)
