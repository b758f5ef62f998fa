"""Remove limits that limit nothing, merge stacked limits, and drop projections that only
repeat their input's columns.

    Limit: fetch=5                  Limit: fetch=3 skip=2
      Limit: fetch=10 skip=2   =>     Scan: s.t
        Scan: s.t

A projection is dropped only when its input already outputs unqualified columns with the
same names (a projection or aggregate), so no reference above it changes.
"""

from __future__ import annotations

from sqlglot import exp

from planner.logical import Aggregate, Limit, Node, Project, SetOp
from planner.optimizer import RuleContext
from planner.rules import transform_up


def _merge(outer: Limit, inner: Limit) -> Limit:
    available = None if inner.limit is None else max(inner.limit - outer.offset, 0)
    if outer.limit is None:
        limit = available
    elif available is None:
        limit = outer.limit
    else:
        limit = min(outer.limit, available)
    return Limit(inner.input, limit, inner.offset + outer.offset)


def remove_redundant(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if isinstance(node, Limit):
            if node.limit is None and node.offset == 0:
                return node.input
            if isinstance(node.input, Limit):
                return _merge(node, node.input)
            return node
        if isinstance(node, Project) and isinstance(node.input, (Project, Aggregate, SetOp)):
            names = [name for _, name in node.input.output]
            identity = [e.alias for e in node.exprs] == names and all(
                isinstance(e.this, exp.Column) and not e.this.table and e.this.name == e.alias
                for e in node.exprs)
            return node.input if identity else node
        return node

    return transform_up(plan, rewrite)
