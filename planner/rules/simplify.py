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


_CONSTANT = (exp.Literal, exp.Boolean, exp.Null)


def _foldable(condition: exp.Expression) -> bool:
    """Whether there is anything to fold: a boolean constant inside the condition, or an
    operator over constants only. sqlglot's simplifier is costly, so it runs only then."""
    for node in condition.walk():
        if isinstance(node, exp.Boolean) and node is not condition:
            return True
        if isinstance(node, (exp.Binary, exp.Not, exp.Neg)) and not isinstance(node, exp.Dot):
            operands = [v for v in node.args.values() if isinstance(v, exp.Expression)]
            if operands and all(isinstance(o, _CONSTANT) for o in operands):
                return True
    return False


def _simplified(condition: exp.Expression) -> exp.Expression:
    if isinstance(condition, (exp.Column, exp.Boolean)) or not _foldable(condition):
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
