"""Constant-fold and simplify filter and join conditions with sqlglot's simplifier.

    Filter: l.a > 1 + 2 AND TRUE          Filter: l.a > 3
      Scan: s.t AS l                 =>     Scan: s.t AS l

A filter that folds to TRUE disappears; one that folds to FALSE stays (the engine or
source returns no rows).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.simplify import simplify as simplify_expression

from planner.logical import Filter, Join, Node, replace
from planner.optimizer import RuleContext
from planner.rules import transform_up


def _simplified(condition: exp.Expression) -> exp.Expression:
    if isinstance(condition, (exp.Column, exp.Boolean)):
        return condition
    result = simplify_expression(condition.copy(), dialect="postgres")
    return condition if result == condition else result


def simplify(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if isinstance(node, Filter):
            condition = _simplified(node.condition)
            if isinstance(condition, exp.Boolean) and condition.this is True:
                return node.input
            return replace(node, condition=condition)
        if isinstance(node, Join) and node.condition is not None:
            return replace(node, condition=_simplified(node.condition))
        return node

    return transform_up(plan, rewrite)
