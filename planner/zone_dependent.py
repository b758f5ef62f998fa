"""Keep expressions that depend on the session TimeZone away from the sources.

PostgreSQL computes `timestamptz::text`, `::date`, `extract(hour from ts)`,
`date_trunc('day', ts)`, `ts + interval '1 day'`, `to_char(ts, ...)`,
`to_timestamp(text, template)`, `timestamp -> timestamptz` casts (and the comparisons that make them implicitly, e.g. `ts > '2024-03-10'`)
and `current_date` in the client's TimeZone. The sources run their sessions in UTC (the
PostgreSQL source sets it; DuckDB, SQLite, MySQL and files have none of the client's), while
the residual engine runs in the client's zone (connectors.time_zone). So when the
session's zone is not UTC, such expressions are UNSUPPORTED for every source and are
computed by the engine instead. The check wraps each source's capability table, so every
place that asks one (the whole-statement fast path, filter pushdown, sub-plan shipping,
EXPLAIN) gets the same answer.

It needs operand types (sqlglot's annotate_types): the planner annotates every query
planned in a zone other than UTC.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pyarrow as pa
from sqlglot import exp

from connectors.base import Classification, Dialect, Pushdown, TableInfo, is_utc
from planner.catalog import CatalogSnapshot, SourceEntry

REASON = "depends on the session TimeZone"

_ZONED = (exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPLTZ)
# What a timestamptz becomes through the session zone when cast (or compared) to it.
_LOCAL = (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPNTZ, exp.DataType.Type.DATE,
          exp.DataType.Type.TIME, exp.DataType.Type.TIMETZ, exp.DataType.Type.DATETIME,
          *exp.DataType.TEXT_TYPES)
# Always in the session's zone, whatever the operands.
_ALWAYS = (exp.CurrentDate, exp.CurrentTime, exp.Localtime, exp.Localtimestamp)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ,
                exp.NullSafeNEQ)


def _zoned(node: exp.Expression | None) -> bool:
    """Is `node` a timestamptz value (now() and current_timestamp are, whatever sqlglot says)?"""
    if node is None:
        return False
    if isinstance(node, exp.CurrentTimestamp):
        return True
    return node.type is not None and node.type.this in _ZONED


def _local(node: exp.Expression | None) -> bool:
    """A value PostgreSQL turns into a timestamptz through the session zone when compared."""
    if node is None or _zoned(node):
        return False
    if isinstance(node, exp.Literal) and node.is_string:
        return True
    return node.type is not None and node.type.this in _LOCAL


def _dependent(node: exp.Expression) -> bool:
    if isinstance(node, _ALWAYS):
        return True
    if isinstance(node, (exp.Cast, exp.TryCast)):
        if isinstance(node.this, exp.Parameter):
            return False  # the gateway decodes parameters in the session's zone
        target = node.to.this
        if _zoned(node.this):
            return target in _LOCAL
        return target in _ZONED
    if isinstance(node, exp.Extract):
        return _zoned(node.expression)
    if isinstance(node, exp.StrToTime):
        return True  # to_timestamp(text, template) reads the text in the session's zone
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)) and node.this.type is not None \
            and node.this.type.this == exp.DataType.Type.DATE:
        return True  # a date's midnight in the session's zone, as a timestamptz
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc, exp.TimeToStr, exp.ToChar)):
        return _zoned(node.this)
    if isinstance(node, (exp.Add, exp.Sub)):
        # A day or a month is not always 24 hours in the session's zone (DST).
        return (_zoned(node.left) and not _zoned(node.right)) or \
            (_zoned(node.right) and isinstance(node, exp.Add) and not _zoned(node.left))
    if isinstance(node, (exp.DateAdd, exp.DateSub, exp.TimestampAdd, exp.TimestampSub)):
        return _zoned(node.this)
    if isinstance(node, _COMPARISONS):
        return (_zoned(node.left) and _local(node.right)) or \
            (_zoned(node.right) and _local(node.left))
    if isinstance(node, exp.Between):
        if _zoned(node.this):
            return _local(node.args.get("low")) or _local(node.args.get("high"))
        return _local(node.this) and (_zoned(node.args.get("low")) or _zoned(node.args.get("high")))
    if isinstance(node, exp.In):
        return _zoned(node.this) and any(_local(e) for e in node.expressions)
    return False


def zone_dependent(expression: exp.Expression) -> exp.Expression | None:
    """The first sub-expression whose value depends on the session TimeZone, if any."""
    return next((node for node in expression.walk() if _dependent(node)), None)


# Nodes that make (or may make) a timestamptz, or are zone-dependent by themselves; a
# statement with none of them and no timestamptz column cannot depend on the zone.
_ZONE_SOURCES = (*_ALWAYS, exp.CurrentTimestamp, exp.UnixToTime, exp.StrToTime,
                 exp.TimeStrToTime, exp.Anonymous, exp.AtTimeZone, exp.ConvertTimezone)


def needs_check(tree: exp.Expression, tables: Iterable[TableInfo]) -> bool:
    """Could `tree` hold a zone-dependent expression? Cheap (no types): when it cannot,
    the planner skips the type annotation the check needs."""
    for info in tables:
        if any(pa.types.is_timestamp(f.type) and f.type.tz is not None for f in info.schema):
            return True
    for node in tree.walk():
        if isinstance(node, (*_ZONE_SOURCES, exp.TimestampTrunc, exp.DateTrunc)):
            return True  # date_trunc of a date is zoned too
        if isinstance(node, exp.DataType) and node.this in _ZONED:
            return True
    return False


def _zone_aware(dialect: Dialect) -> Dialect:
    inner = dialect.classify

    def classify(expression: exp.Expression, table: TableInfo | None) -> Classification:
        found = zone_dependent(expression)
        if found is not None:
            return Classification(Pushdown.UNSUPPORTED, f"{found.sql('postgres')} {REASON}")
        return inner(expression, table)

    return dataclasses.replace(dialect, classify=classify)


# The last catalog wrapped: the wrapping is the same for every zone but UTC, and the
# snapshot's sqlglot schema is worth reusing rather than rebuilding per statement.
_last: tuple[CatalogSnapshot, CatalogSnapshot] | None = None


def for_zone(catalog: CatalogSnapshot, timezone: str) -> CatalogSnapshot:
    """`catalog` as seen from a session in `timezone`: itself in UTC, else zone-aware."""
    global _last
    if is_utc(timezone):
        return catalog
    last = _last
    if last is not None and last[0] is catalog:
        return last[1]
    # Only the sources: the residual engines compute in the session's zone.
    wrapped = dataclasses.replace(catalog, sources={
        name: SourceEntry(entry.name, _zone_aware(entry.dialect), entry.tables)
        for name, entry in catalog.sources.items()})
    # Same tables, same column types: share the (costly) sqlglot schema.
    wrapped.__dict__["sqlglot_schema"] = catalog.sqlglot_schema
    _last = (catalog, wrapped)
    return wrapped
