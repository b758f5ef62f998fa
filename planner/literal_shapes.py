"""Whether a statement's lifted numbers may be bound as parameters of one shared plan.

A statement that differs from a planned one only in its numbers can reuse that plan when
each number, made a parameter (`$n`, declared with the literal's own type), reaches the
plan only where another value cannot change the plan: as the constant of a comparison
with a column, in a filter (WHERE, or a join's ON). There the planner pushes the
comparison to a source as it is, with the value bound when the statement runs, and the
result's columns and types do not depend on it. A number anywhere else (a select list,
where it sets a column's type and name; a function's argument; CASE; GROUP BY; LIMIT and
OFFSET, which the lifting never takes) keeps the statement's own text as its key.
"""

from __future__ import annotations

from sqlglot import exp

from pgwire.errors import PgError
from planner.parse import parse_query

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_CONNECTIVES = (exp.And, exp.Or, exp.Not, exp.Paren)


def bindable(sql: str) -> bool:
    """Whether every parameter of the SELECT `sql` is a filter's comparison constant."""
    try:
        tree = parse_query(sql)
    except PgError:
        return False  # the statement's own text then plans, and reports the error as written
    if not isinstance(tree, exp.Select):
        return False
    params = list(tree.find_all(exp.Parameter, exp.Placeholder))
    return bool(params) and all(_in_filter(param) for param in params)


def _in_filter(param: exp.Expression) -> bool:
    comparison = param.parent
    if not isinstance(comparison, _COMPARISONS):
        return False
    other = comparison.left if comparison.right is param else comparison.right
    if not isinstance(other, exp.Column):
        return False
    node = comparison.parent
    while isinstance(node, _CONNECTIVES):
        node = node.parent
    # WHERE, or a join's ON (the only argument of a join a comparison stands in).
    return isinstance(node, (exp.Where, exp.Join))
