"""A fragment's conjuncts as a pyiceberg row filter, for the scan to plan its files by.

A conjunct converts only when Iceberg evaluates it as PostgreSQL does, by the same rule
as the pyarrow filters of the file sources (connectors.files.filters): a column of an
integer, string, boolean, date or decimal type against literals, with comparisons, IN,
IS NULL and AND/OR/NOT of those. A conjunct that does not convert is left out of the
filter (it reads more, never less): the fragment's SQL applies every conjunct again over
the scan's rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyiceberg.expressions import (AlwaysTrue, And, BooleanExpression, EqualTo, GreaterThan,
                                   GreaterThanOrEqual, In, IsNull, LessThan, LessThanOrEqual,
                                   Not, NotEqualTo, Or)
from sqlglot import exp

from connectors.files.filters import to_arrow_filter

_COMPARE = {exp.EQ: EqualTo, exp.NEQ: NotEqualTo, exp.GT: GreaterThan,
            exp.GTE: GreaterThanOrEqual, exp.LT: LessThan, exp.LTE: LessThanOrEqual}


def to_iceberg(conjuncts: Sequence[exp.Expression], schema: pa.Schema) -> BooleanExpression:
    """The AND of the conjuncts that convert (AlwaysTrue when none does)."""
    result: BooleanExpression = AlwaysTrue()
    for conjunct in conjuncts:
        # The pyarrow conversion decides which conjuncts are exact (same types, same forms).
        if to_arrow_filter([conjunct], schema) is None:
            continue
        part = _convert(conjunct)
        result = part if isinstance(result, AlwaysTrue) else And(result, part)
    return result


def _value(node: exp.Expression) -> object:
    if isinstance(node, exp.Neg):
        value = _value(node.this)
        assert isinstance(value, int)
        return -value
    assert isinstance(node, exp.Literal)
    return node.this if node.is_string else int(node.this)


def _convert(node: exp.Expression) -> BooleanExpression:
    """`node`, which connectors.files.filters has accepted, in Iceberg's words."""
    if isinstance(node, exp.Paren):
        return _convert(node.this)
    if isinstance(node, exp.And):
        return And(_convert(node.this), _convert(node.expression))
    if isinstance(node, exp.Or):
        return Or(_convert(node.this), _convert(node.expression))
    if isinstance(node, exp.Not):
        return Not(_convert(node.this))
    if isinstance(node, exp.Is):
        return IsNull(node.this.name)
    if isinstance(node, exp.In):
        return In(node.this.name, {_value(v) for v in node.expressions})
    return _COMPARE[type(node)](node.this.name, _value(node.expression))
