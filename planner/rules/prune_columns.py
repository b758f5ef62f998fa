"""Fetch only the columns the query uses: narrow every scan's projection.

    Projection: l.a                          Projection: l.a
      Filter: l.b > 1                 =>       Filter: l.b > 1
        Scan: s.t AS l                           Scan: s.t AS l projection=[a, b]

    Projection: l.a                          Projection: l.a
      Scan: s.t AS l filters=[l.b > 1] =>      Scan: s.t AS l projection=[a] filters=[l.b > 1]

Required columns flow top-down: each node asks its inputs for what it outputs and what
its own expressions reference. A scope the plan does not model (Opaque) asks its scans
for every column its SQL names with the scan's alias. Filters already pushed into a scan
run at the source, so their columns are not fetched for them.
"""

from __future__ import annotations

from sqlglot import exp

from planner.logical import (Aggregate, Column, Distinct, Filter, Join, Limit, Node, Opaque,
                             Project, Scan, SetOp, Sort, SubqueryAlias, replace)
from planner.optimizer import RuleContext


def _refs(*expressions: exp.Expression | None) -> set[Column]:
    found: set[Column] = set()
    for e in expressions:
        if e is not None:
            found |= {(c.table or None, c.name) for c in e.find_all(exp.Column)}
    return found


def _prune(node: Node, required: set[Column]) -> Node:
    if isinstance(node, Scan):
        # A pushed filter runs at the source, before the projection: its columns need not
        # travel (an INEXACT one is re-checked by a Filter above, which requires them).
        needed = {name for qualifier, name in required if qualifier == node.alias}
        columns = tuple(c for c in node.all_columns if c in needed)
        if not columns:
            columns = node.all_columns[:1]  # COUNT(*) still needs rows: fetch the narrowest thing
        if node.columns is not None and set(columns) >= set(node.columns):
            return node
        return replace(node, columns=columns)
    if isinstance(node, Project):
        return replace(node, input=_prune(node.input, _refs(*node.exprs)))
    if isinstance(node, Aggregate):
        return replace(node, input=_prune(node.input, _refs(*node.groups, *node.exprs, node.having)))
    if isinstance(node, Filter):
        return replace(node, input=_prune(node.input, required | _refs(node.condition)))
    if isinstance(node, Sort):
        return replace(node, input=_prune(node.input, required | _refs(*node.keys)))
    if isinstance(node, Limit):
        return replace(node, input=_prune(node.input, required))
    if isinstance(node, (Distinct, SetOp)):
        # Every column takes part in duplicate elimination / set semantics.
        return node.with_children(tuple(_prune(c, set(c.output)) for c in node.children))
    if isinstance(node, SubqueryAlias):
        inner = node.input
        wanted = {i for i, name in enumerate(node.names) if (node.alias, name) in required}
        inner_required = {inner.output[i] for i in wanted} if not isinstance(inner, Project) \
            else set(inner.output)
        return replace(node, input=_prune(inner, inner_required or set(inner.output[:1])))
    if isinstance(node, Join):
        needed = required | _refs(node.condition)
        return replace(node, left=_prune(node.left, needed), right=_prune(node.right, needed))
    if isinstance(node, Opaque):
        needed = _refs(node.tree)
        return node.with_children(tuple(_prune(c, needed) for c in node.scans))
    return node


def prune_columns(plan: Node, context: RuleContext) -> Node:
    return _prune(plan, set(plan.output))
