"""Push a limit below operators that cannot reduce the row count: projections, UNION ALL
(each branch needs at most limit+offset rows) and the preserved side of an outer join.

    Limit: fetch=10 skip=5                    Limit: fetch=10 skip=5
      Union All                         =>      Union All
        Scan: s.a                                 Limit: fetch=15
        Scan: s.b                                   Scan: s.a
                                                  Limit: fetch=15
                                                    Scan: s.b

A projection with a window or volatile expression keeps the limit above it.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import volatile_reason
from planner.logical import Join, Limit, Node, Project, SetOp, replace
from planner.optimizer import RuleContext
from planner.rules import transform_up


def _limited(node: Node, rows: int) -> Node:
    inner = node
    while isinstance(inner, Project):  # a limit this rule already moved below a projection
        inner = inner.input
    if isinstance(inner, Limit) and inner.offset == 0 and inner.limit is not None and inner.limit <= rows:
        return node
    return Limit(node, rows, 0)


def push_limit(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if not isinstance(node, Limit) or node.limit is None:
            return node
        rows = node.limit + node.offset
        child = node.input
        if isinstance(child, Project) and not any(
                e.find(exp.Window) is not None or volatile_reason(e) for e in child.exprs):
            return replace(child, input=replace(node, input=child.input))
        if isinstance(child, SetOp) and child.kind == "union" and not child.distinct:
            new_child = replace(child, left=_limited(child.left, rows), right=_limited(child.right, rows))
            return replace(node, input=new_child)
        if isinstance(child, Join) and child.kind == "left":
            return replace(node, input=replace(child, left=_limited(child.left, rows)))
        if isinstance(child, Join) and child.kind == "right":
            return replace(node, input=replace(child, right=_limited(child.right, rows)))
        return node

    return transform_up(plan, rewrite)
