"""Push filter conjuncts into the join inputs the join type preserves, and join-spanning
conjuncts into the join condition.

    Filter: l.a > 1 AND r.b < 2 AND l.k = r.k        Join: inner on l.k = r.k
      Join: cross                              =>      Filter: l.a > 1
        Scan: s.l AS l                                   Scan: s.l AS l
        Scan: s.r AS r                                 Filter: r.b < 2
                                                         Scan: s.r AS r

Which side a WHERE conjunct may move to: inner and cross both sides; left join the left
side only; right join the right side only; full join neither. An ON conjunct of an outer
join that names only the null-supplying side filters that side before the join.
Volatile conjuncts do not move.

A WHERE disjunction over both sides moves into the join, and also implies a filter on
each side it may move to: the OR of what each disjunct says about that side alone, when
every disjunct says something (TPC-H Q19, where it leaves a few hundred parts to join):

    Filter: (p.brand = 'a' AND l.qty < 5 AND p.k = l.k) OR (p.brand = 'b' AND l.qty > 9 AND p.k = l.k)
      => join condition unchanged, plus  p.brand = 'a' OR p.brand = 'b'  on p
                                         l.qty < 5 OR l.qty > 9          on l
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import volatile_reason
from planner.conjuncts import conjunction, split_conjuncts, split_disjuncts
from planner.logical import Filter, Join, Node, replace
from planner.optimizer import RuleContext
from planner.rules import transform_up

WHERE_TO_LEFT = {"inner", "cross", "left", "semi", "anti"}
WHERE_TO_RIGHT = {"inner", "cross", "right"}


def _side(conjunct: exp.Expression, left: set, right: set) -> str | None:
    refs = {(c.table or None, c.name) for c in conjunct.find_all(exp.Column)}
    if not refs or volatile_reason(conjunct) or any(
            isinstance(n, (exp.Subquery, exp.Exists)) for n in conjunct.walk()):
        return None
    if refs <= left:
        return "left"
    if refs <= right:
        return "right"
    if refs <= left | right:
        return "both"
    return None


def _with_filter(node: Node, conjuncts: list[exp.Expression]) -> Node:
    return Filter(node, conjunction(conjuncts)) if conjuncts else node


def push_filter_through_join(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if isinstance(node, Filter) and isinstance(node.input, Join):
            return _from_where(node, node.input)
        if isinstance(node, Join) and node.condition is not None:
            return _from_on(node)
        return node

    return transform_up(plan, rewrite)


def _from_where(node: Filter, join: Join) -> Node:
    left_cols, right_cols = set(join.left.output), set(join.right.output)
    to_left, to_right, to_join, kept = [], [], [], []
    for conjunct in split_conjuncts(node.condition):
        side = _side(conjunct, left_cols, right_cols)
        if side == "left" and join.kind in WHERE_TO_LEFT:
            to_left.append(conjunct)
        elif side == "right" and join.kind in WHERE_TO_RIGHT:
            to_right.append(conjunct)
        elif side == "both" and join.kind in ("inner", "cross"):
            to_join.append(conjunct)
            for implied, target in ((_implied(conjunct, left_cols), to_left),
                                    (_implied(conjunct, right_cols), to_right)):
                if implied is not None:
                    target.append(implied)
        else:
            kept.append(conjunct)
    if not (to_left or to_right or to_join):
        return node
    condition = join.condition
    if to_join:
        condition = conjunction(split_conjuncts(condition) + to_join) if condition is not None \
            else conjunction(to_join)
    kind = "inner" if join.kind == "cross" and condition is not None else join.kind
    new_join = replace(join, left=_with_filter(join.left, to_left),
                       right=_with_filter(join.right, to_right), kind=kind, condition=condition)
    return _with_filter(new_join, kept)


def _implied(conjunct: exp.Expression, columns: set) -> exp.Expression | None:
    """The OR, over the disjuncts of `conjunct`, of each one's conjuncts that name only
    `columns` (None unless every disjunct has some: a disjunct saying nothing about these
    columns lets any row of theirs through)."""
    disjuncts = split_disjuncts(conjunct)
    if len(disjuncts) < 2:
        return None
    parts = []
    for disjunct in disjuncts:
        own = [c for c in split_conjuncts(disjunct) if _side(c, columns, set()) == "left"]
        if not own:
            return None
        parts.append(conjunction(own))
    return exp.or_(*parts, copy=True)


def _from_on(join: Join) -> Node:
    left_cols, right_cols = set(join.left.output), set(join.right.output)
    to_left, to_right, kept = [], [], []
    for conjunct in split_conjuncts(join.condition):
        side = _side(conjunct, left_cols, right_cols)
        if side == "left" and join.kind in ("inner", "right"):
            to_left.append(conjunct)
        elif side == "right" and join.kind in ("inner", "left", "semi", "anti"):
            to_right.append(conjunct)
        else:
            kept.append(conjunct)
    if not (to_left or to_right):
        return join
    return replace(join, left=_with_filter(join.left, to_left), right=_with_filter(join.right, to_right),
                   condition=conjunction(kept) if kept else (exp.true() if join.kind != "cross" else None))
