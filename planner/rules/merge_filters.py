"""Merge a filter directly above another filter into one.

    Filter: l.a > 1                   Filter: l.b < 5 AND l.a > 1
      Filter: l.b < 5          =>       Scan: s.t AS l
        Scan: s.t AS l
"""

from __future__ import annotations

from planner.conjuncts import conjunction, split_conjuncts
from planner.logical import Filter, Node, replace
from planner.optimizer import RuleContext
from planner.rules import transform_up


def merge_filters(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if isinstance(node, Filter) and isinstance(node.input, Filter):
            inner = node.input
            condition = conjunction(split_conjuncts(inner.condition) + split_conjuncts(node.condition))
            return replace(inner, condition=condition)
        return node

    return transform_up(plan, rewrite)
