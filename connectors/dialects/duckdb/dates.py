"""Date/time literals and BC dates in DuckDB, read and written as PostgreSQL does.

PostgreSQL reads `DATE '0044-03-15 BC'` and writes it back the same way. DuckDB reads a
`BC` date as an error and, worse, a `BC` timestamp as the same day AD (it drops the word);
it writes a BC date as `0044-03-15 (BC)`. So:

- a date/time literal ending in `BC` is given to DuckDB with its astronomical year, the
  year before 1 being 0 (`0044-03-15 BC` → `-0043-03-15`); one naming BC any other way
  is refused (0A000), never read as AD;
- a date or timestamp cast to text puts the era where PostgreSQL does, at the end:

    CAST(d AS TEXT)  →  REGEXP_REPLACE(CAST(d AS TEXT), ' \\(BC\\)(.*)$', '\\1 BC')

  (`0044-03-15 (BC) 10:00:00` → `0044-03-15 10:00:00 BC`). Only where the operand's
  type is known to be a date or timestamp (`needs_types`): a text value is left as it is;
- an interval literal with a sign apart from its number (`'1 month - 1 day'`, which
  PostgreSQL reads as 1 month -1 day) is given to DuckDB with the sign joined to it; a
  string cast to interval is read by PostgreSQL's rules (pgwire.types.interval) and given
  to DuckDB as its three fields (`'-1 day +02:00'`, which DuckDB cannot read);
- the year of a BC date counts as PostgreSQL counts it, without a year 0 (44 BC is -44,
  DuckDB's -43): `extract(year FROM d)` → `y - CAST(y <= 0 AS INT)`;
- an interval cast to text names months `mon`/`mons`, puts a unit in the plural for any
  count but 1 (`-1 days`) and signs a positive part right after a negative one
  (`-1 days +02:00:00`), as interval_out writes it in IntervalStyle postgres; DuckDB
  writes `month`, `-1 day` and `02:00:00`;
- avg() of intervals: DuckDB's mean is rounded otherwise (to 100 microseconds): refused.
"""

from __future__ import annotations

import re

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.interval import parse_interval
from pgwire.types.pg_type import INTERVAL

T = exp.DataType.Type
_TEMPORAL = {T.DATE, T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMPLTZ, T.TIMESTAMPNTZ, T.DATETIME}
_TEXT = {T.TEXT, T.VARCHAR}
# An ISO date (and what follows it) with the era last: `0044-03-15 10:00 BC`.
_ISO_BC = re.compile(r"^\s*(\d{1,7})(-\d{1,2}-\d{1,2}(?:[ T].*?)?)\s+BC\s*$", re.IGNORECASE | re.DOTALL)
_COUNTED = "bc_year_counted"  # an extract() already counted (inside its `y - ...`)
_NAMES_BC = re.compile(r"\bBC\b", re.IGNORECASE)


def _temporal_literal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Cast) and node.to.this in _TEMPORAL and \
        isinstance(node.this, exp.Literal) and node.this.is_string


def _text_of_value(node: exp.Expression) -> bool:
    return isinstance(node, exp.Cast) and node.to.this in _TEXT and \
        not (isinstance(node.this, exp.Literal) or node.this.is_type(*_TEXT))


def needs_types(tree: exp.Expression) -> bool:
    """A cast to text of something not text: whether it is a date takes its type; so does
    whether an avg() is of intervals."""
    return any(_text_of_value(cast) for cast in tree.find_all(exp.Cast)) or \
        tree.find(exp.Avg) is not None


def _year(node: exp.Expression) -> bool:
    return isinstance(node, exp.Extract) and node.this.name.upper() in ("YEAR", "YEARS") \
        and not node.meta.get(_COUNTED)


_SIGN_APART = re.compile(r"([+-])\s+(?=[0-9.])")


def _interval_text(node: exp.Expression) -> exp.Literal | None:
    """The string literal of an interval literal (`INTERVAL '1 day'`, `'1 day'::interval`)."""
    value = node.this if isinstance(node, exp.Interval) else \
        node.this if isinstance(node, exp.Cast) and node.to.this == T.INTERVAL else None
    return value if isinstance(value, exp.Literal) and value.is_string else None


def _interval_valued(node: exp.Expression) -> bool:
    """An interval operand: typed so, or a timestamp minus a timestamp (sqlglot types that
    a timestamp)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Sub) and all(side.type is not None and side.type.this in _TEMPORAL - {T.DATE}
                                         for side in (node.this, node.expression)):
        return True
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)) and \
            any(_interval_valued(side) for side in (node.this, node.expression)) and \
            not any(side.type is not None and side.type.this in _TEMPORAL
                    for side in (node.this, node.expression)):
        return True  # interval arithmetic (an interval times a number, minus an interval)
    return isinstance(node, exp.Interval) or (node.type is not None and node.type.this == T.INTERVAL)


def _replaced(text: exp.Expression, pattern: str, replacement: str) -> exp.Expression:
    return exp.Anonymous(this="regexp_replace", expressions=[
        text, exp.Literal.string(pattern), exp.Literal.string(replacement), exp.Literal.string("g")])


def _interval_out(node: exp.Cast) -> exp.Expression:
    text = _replaced(node.copy(), "month", "mon")
    text = _replaced(text, r"(^|\s)-1 (year|mon|day)\b", r"\1-1 \2s")
    # a positive part right after a negative one is signed (`-1 days +02:00:00`, but
    # `-1 mons +3 days 04:00:00`): interval_out's is_before
    return _replaced(text, r"((?:^|\s)-\d\S* \S+) (\d)", r"\1 +\2")


def _interval_cast(node: exp.Expression) -> bool:
    """A string cast to interval (`'1 day 02:00'::interval`; sqlglot keeps the ones it
    cannot split into a number and a unit so, planner.pgcompat), or an interval literal
    without a unit (`interval 'P1D'`, `interval '90'`)."""
    if _interval_text(node) is None:
        return False
    return node.args.get("unit") is None if isinstance(node, exp.Interval) else not node.to.expressions


def _interval_fields(node: exp.Cast | exp.Interval) -> str | None:
    """The interval's months, days and microseconds as DuckDB reads them; None where the
    gateway's reading is not PostgreSQL's (an error; a lower-case ISO 8601 `p1d`, which
    PostgreSQL refuses): the text then goes to DuckDB as it is."""
    text = node.this.this
    if text.strip().lstrip("-").startswith("p"):
        return None
    try:
        return str(parse_interval(INTERVAL.oid, text, "UTC"))
    except PgError:
        return None


def needs_rewrite(tree: exp.Expression) -> bool:
    if any(map(_year, tree.find_all(exp.Extract))):
        return True
    if any(map(_interval_cast, tree.find_all(exp.Cast, exp.Interval))):
        return True
    if any((text := _interval_text(node)) is not None and _SIGN_APART.search(text.this)
           for node in tree.find_all(exp.Interval, exp.Cast)):
        return True
    if any(_interval_valued(avg.this) for avg in tree.find_all(exp.Avg)):
        return True
    return any((_temporal_literal(cast) and _NAMES_BC.search(cast.this.this))
               or (_text_of_value(cast) and cast.this.type is not None and cast.this.type.this in _TEMPORAL)
               or (_text_of_value(cast) and _interval_valued(cast.this))
               for cast in tree.find_all(exp.Cast))


def postgres_dates(node: exp.Expression) -> exp.Expression:
    """`node` with a BC literal's year made astronomical, or a date's text ending in BC."""
    if _temporal_literal(node) and _NAMES_BC.search(node.this.this):
        found = _ISO_BC.match(node.this.this)
        if found is None:
            raise PgError(FEATURE_NOT_SUPPORTED, f'the date/time input "{node.this.this}" (BC other '
                          "than after an ISO date) is not supported by fedgate outside PostgreSQL sources")
        year = 1 - int(found.group(1))
        text = f"{year:05d}{found.group(2)}" if year < 0 else f"{year:04d}{found.group(2)}"
        return exp.Cast(this=exp.Literal.string(text), to=node.to.copy())
    if _text_of_value(node) and _interval_valued(node.this):
        return _interval_out(node)
    if isinstance(node, exp.Avg) and _interval_valued(node.this):
        # DuckDB rounds the mean to 100 microseconds where PostgreSQL keeps each one
        raise PgError(FEATURE_NOT_SUPPORTED, "avg() of intervals is not supported by fedgate "
                      "outside PostgreSQL sources")
    if _text_of_value(node) and node.this.type is not None and node.this.type.this in _TEMPORAL:
        return exp.Anonymous(this="regexp_replace", expressions=[
            node.copy(), exp.Literal.string(r" \(BC\)(.*)$"), exp.Literal.string(r"\1 BC")])
    fields = _interval_fields(node) if _interval_cast(node) else None
    if fields is not None:
        # read by PostgreSQL's own rules (`'-1 day +02:00'`, `'1 day ago'`, `'P1D'`, a bare
        # number of seconds), written as the three fields, which DuckDB reads exactly
        return exp.Cast(this=exp.Literal.string(fields), to=exp.DataType.build("INTERVAL"))
    text = _interval_text(node)
    if text is not None and _SIGN_APART.search(text.this):
        joined = node.copy()
        joined.set("this", exp.Literal.string(_SIGN_APART.sub(r"\1", text.this)))
        return joined
    if _year(node):
        year = node.copy()
        year.meta[_COUNTED] = True
        before_one = exp.LTE(this=year.copy(), expression=exp.Literal.number(0))
        return exp.Sub(this=year, expression=exp.Cast(this=before_one, to=exp.DataType.build("INT")))
    return node
