"""How a dynamic filter's join keys reach the probed source, per dialect.

The executor reads the build side of a cross-source join first and narrows the other
fragment with its distinct keys (planner.dynamic_filters). What a source can take cheaply
differs, so the shape of that condition is decided here, from the source's dialect name,
the number of keys and their Python types:

    shape  condition sent                                   used for
    in     col IN (v1, v2, ...)                             up to `in_list` keys, any key type
    array  col = ANY(CAST('{v1,v2,...}' AS BIGINT[]))       PostgreSQL, up to `array` keys
    range  col BETWEEN min AND max                          integers and dates beyond those
    none   (the fragment is read whole)                     text keys beyond those

- PostgreSQL parses one array literal far faster than 100,000 IN elements (and so does
  sqlglot, when the executor splits a scan into page ranges), and hashes a constant
  `= ANY(array)` (PostgreSQL 14+), so it takes large key sets as one array. It hashes
  only when both sides have the same hash function: an `integer` column against a
  BIGINT[] (int48eq: hashint4 vs hashint8) falls back to a linear search of the array
  for every row (27,000 keys on a 1.5M-row fact: 164 s instead of 0.3 s), so integer
  keys take the probe column's width (`int_type`: INTEGER[] or SMALLINT[] when every key
  fits, else BIGINT[]). Its array
  text is unambiguous for integers and ISO dates; text elements are always double-quoted
  with `\\` and `"` escaped, the array-literal rules of PostgreSQL's `array_in`.
- DuckDB (DuckDB files, and Parquet/CSV files, which it reads itself or through pyarrow
  datasets) is slow with a long IN list (at SF 1 lineitem, 100,000 keys took longer than
  reading the file whole; DuckDB 2.0 spends about 250 ms planning 1,000 integer keys,
  five times what reading the 200,000 rows of part.parquet whole takes), and it reads
  local files, so only short lists pay.
- MySQL/MariaDB, SQLite and Spark keep the short IN list, then the range.
- A range over text is never sent: its bounds are pyarrow's byte order, while the source
  may compare text under a collation that orders differently and would drop joinable rows.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

IN_LIST_LIMIT = 1000  # more keys than this: an array, a range, or nothing
ARRAY_LIMIT = 100_000  # PostgreSQL: keys sent as one array literal
INT64 = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class KeySetRule:
    in_list: int = IN_LIST_LIMIT  # up to this many keys: `col IN (...)`
    array: int = 0  # up to this many: one array literal (0: the dialect has no such form)


# Keyed by `connectors.base.Dialect.name`; a dialect not listed gets DEFAULT.
RULES: dict[str, KeySetRule] = {
    "postgres": KeySetRule(in_list=IN_LIST_LIMIT, array=ARRAY_LIMIT),
    "duckdb": KeySetRule(in_list=IN_LIST_LIMIT),
    "duckdb-over-files": KeySetRule(in_list=IN_LIST_LIMIT),
    "mysql": KeySetRule(in_list=IN_LIST_LIMIT),
    "sqlite": KeySetRule(in_list=IN_LIST_LIMIT),
    "spark": KeySetRule(in_list=IN_LIST_LIMIT),
}
DEFAULT = KeySetRule()


@dataclass(frozen=True)
class KeyShape:
    kind: str  # "in", "array", "range" or "none"
    keys: int
    element: str | None = None  # the array's element type (BIGINT, DATE, TEXT)

    def describe(self) -> str:
        """EXPLAIN ANALYZE's words for the condition sent."""
        if self.kind == "in":
            return "IN list"
        if self.kind == "array":
            return f"one {self.element}[] array literal"
        if self.kind == "range":
            return "min/max range"
        return "read whole: too many text keys for a list, and a text range is unsafe"


_KINDS = {int: "int", dt.date: "date", str: "text"}
# The array element for integer keys by the probe column's Arrow type, with its range.
INT_ELEMENTS = {"int16": ("SMALLINT", -(1 << 15), (1 << 15) - 1),
                "int32": ("INT", -(1 << 31), (1 << 31) - 1)}


def _kind(values: list) -> str | None:
    """"int", "date" or "text" when every value has exactly that type (no bool, no
    datetime), else None. One pass over the types at C speed: key sets run to 100,000
    values and are checked while the probe waits."""
    types = set(map(type, values))
    return _KINDS.get(types.pop()) if len(types) == 1 else None


# The executor asks for a key set's shape (for EXPLAIN ANALYZE), then for its condition,
# which needs the shape again: the last answer is kept with the list it was for (held,
# so its id cannot be reused; key lists are built per probe and never changed after).
_last_shape: tuple[list, str, str | None, KeyShape] | None = None


def shape_for(dialect: str, values: list, int_type: str | None = None) -> KeyShape:
    """The condition `values` (distinct, non-null, or `[None]` for no key) become on
    a source of dialect `dialect`, for a probe column of Arrow type `int_type` (its
    width picks an integer array's element type; None: BIGINT)."""
    global _last_shape
    last = _last_shape
    if last is not None and last[0] is values and last[1] == dialect and last[2] == int_type \
            and last[3].keys == len(values):
        return last[3]
    shape = _shape_for(dialect, values, int_type)
    _last_shape = (values, dialect, int_type, shape)
    return shape


def _shape_for(dialect: str, values: list, int_type: str | None = None) -> KeyShape:
    rule = RULES.get(dialect, DEFAULT)
    if values == [None]:
        return KeyShape("in", 0)  # `col IN (NULL)`: no row joins
    count = len(values)
    if count <= rule.in_list:
        return KeyShape("in", count)
    kind = _kind(values)
    if kind is not None and count <= rule.array:
        if kind == "int" and INT64[0] <= min(values) and max(values) <= INT64[1]:
            narrow = INT_ELEMENTS.get(int_type or "")
            if narrow is not None and narrow[1] <= min(values) and max(values) <= narrow[2]:
                return KeyShape("array", count, narrow[0])
            return KeyShape("array", count, "BIGINT")
        if kind in ("date", "text"):
            return KeyShape("array", count, "DATE" if kind == "date" else "TEXT")
    if kind in ("int", "date"):
        return KeyShape("range", count)
    return KeyShape("none", count)


def _array_element(value: object) -> str:
    if isinstance(value, str):
        # PostgreSQL array_in: inside double quotes, `\` escapes the next character.
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dt.date):
        return value.isoformat()  # YYYY-MM-DD is read as such under any DateStyle
    return str(value)


def _joined_integers(values: list[int]) -> str:
    """`v1,v2,...` in decimal, written by Arrow's C code (about three times faster than
    `",".join(map(str, values))` over 40,000 keys: it is on the probe's critical path)."""
    digits = pa.array(values, pa.int64()).cast(pa.string())
    whole = pa.ListArray.from_arrays(pa.array([0, len(digits)], pa.int32()), digits)
    return pc.binary_join(whole, ",")[0].as_py()


def key_condition(column: tuple[str | None, str], values: list, dialect: str,
                  int_type: str | None = None) -> exp.Expression | None:
    """The condition narrowing `column` (of Arrow type `int_type`, when known) to `values`
    on a `dialect` source, built from sqlglot expressions (values are literals, never
    spliced into SQL text); None when the fragment is to be read whole
    (`shape_for(...).kind == "none"`)."""
    target = exp.column(column[1], table=column[0], quoted=True)
    shape = shape_for(dialect, values, int_type)
    if shape.kind == "in":
        return exp.In(this=target, expressions=[exp.convert(v) for v in values])
    if shape.kind == "array":
        if shape.element == "TEXT":
            # No PostgreSQL text holds a NUL character, so such a key matches nothing
            # there (and the literal could not carry it).
            values = [v for v in values if "\x00" not in v]
        if shape.element in ("BIGINT", "INT", "SMALLINT"):  # the common case, no call per key
            text = "{" + _joined_integers(values) + "}"
        else:
            text = "{" + ",".join(_array_element(v) for v in values) + "}"
        array_type = exp.DataType.build(f"{shape.element}[]", dialect="postgres")
        return exp.EQ(this=target, expression=exp.Any(this=exp.Paren(
            this=exp.Cast(this=exp.Literal.string(text), to=array_type))))
    if shape.kind == "range":
        return exp.Between(this=target, low=exp.convert(min(values)), high=exp.convert(max(values)))
    return None
