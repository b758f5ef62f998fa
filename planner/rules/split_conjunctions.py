"""Flatten filter conditions into conjunctions and pull factors common to every branch of
an OR out of it (Drill's CNF step), so more conjuncts can be pushed on their own.

    Filter: (l.a = 1 AND l.b > 2) OR (l.a = 1 AND l.c < 3)
    =>
    Filter: l.a = 1 AND (l.b > 2 OR l.c < 3)
"""

from __future__ import annotations

from sqlglot import exp

from planner.conjuncts import conjunction, split_conjuncts, split_disjuncts
from planner.logical import Filter, Node, replace
from planner.optimizer import RuleContext
from planner.rules import transform_up


def _pull_common_factors(e: exp.Expression) -> list[exp.Expression]:
    branches = [split_conjuncts(d) for d in split_disjuncts(e)]
    if len(branches) < 2:
        return [e]
    common = [c for c in branches[0] if all(any(c == o for o in b) for b in branches[1:])]
    if not common:
        return [e]
    rests = [[c for c in b if not any(c == x for x in common)] for b in branches]
    if any(not rest for rest in rests):
        return common  # one branch is exactly the common part: the OR adds nothing
    ored = conjunction(rests[0])
    for rest in rests[1:]:
        ored = exp.Or(this=ored, expression=conjunction(rest))
    return common + [exp.Paren(this=ored)]


def _is_flat(condition: exp.Expression) -> bool:
    """A left-deep AND chain of non-AND conjuncts, as `conjunction` builds it."""
    while isinstance(condition, exp.And):
        if isinstance(condition.expression, exp.And) or _is_paren_and(condition.expression):
            return False
        condition = condition.this
    return not _is_paren_and(condition)


def _is_paren_and(e: exp.Expression) -> bool:
    return isinstance(e, exp.Paren) and isinstance(e.this, exp.And)


def split_conjunctions(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if not isinstance(node, Filter):
            return node
        parts = split_conjuncts(node.condition)
        factored = [_pull_common_factors(c) if split_disjuncts(c)[1:] else [c] for c in parts]
        if _is_flat(node.condition) and all(len(f) == 1 and f[0] is c for f, c in zip(factored, parts)):
            return node  # already flat and nothing to factor: no copies, no comparisons
        return replace(node, condition=conjunction([f for group in factored for f in group]))

    return transform_up(plan, rewrite)
