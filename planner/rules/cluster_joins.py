"""Regroup a tree of inner joins so tables of the same source join each other first,
making that join a sub-plan the source can run whole.

    Join: inner on l.k = o.k                     Join: inner on c.k = o.c
      Join: inner on c.k = o.c                     Scan: files.customer AS c
        Scan: files.customer AS c          =>      Join: inner on l.k = o.k
        Scan: pg.orders AS o                         Scan: pg.orders AS o
      Scan: pg.lineitem AS l                         Scan: pg.lineitem AS l

Only inner and cross joins are regrouped (their order does not change the answer). A
source's tables are grouped only when join conditions connect them, so regrouping never
creates a cross product the query did not have.
"""

from __future__ import annotations

from sqlglot import exp

from planner.conjuncts import conjunction, split_conjuncts
from planner.logical import Filter, Join, Node, Scan
from planner.optimizer import RuleContext
from planner.rules import transform_up


def _flatten(node: Node, leaves: list[Node], conds: list[exp.Expression]) -> None:
    if isinstance(node, Join) and node.kind in ("inner", "cross"):
        _flatten(node.left, leaves, conds)
        _flatten(node.right, leaves, conds)
        conds.extend(split_conjuncts(node.condition))
    else:
        leaves.append(node)


def _source(node: Node) -> str | None:
    sources = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Scan):
            sources.add(current.table.ref.source)
        stack.extend(current.children)
    return sources.pop() if len(sources) == 1 else None


def _columns(node: Node) -> set:
    return set(node.output)


def _refs(e: exp.Expression) -> set:
    return {(c.table or None, c.name) for c in e.find_all(exp.Column)}


class _Builder:
    def __init__(self, conds: list[exp.Expression]) -> None:
        self.pending = list(conds)

    def join(self, left: Node, right: Node) -> Node:
        available = _columns(left) | _columns(right)
        usable = [c for c in self.pending if _refs(c) <= available]
        self.pending = [c for c in self.pending if not any(c is u for u in usable)]
        if usable:
            return Join(left, right, "inner", conjunction(usable))
        return Join(left, right, "cross", None)

    def connected(self, a: Node, b: Node) -> bool:
        ca, cb = _columns(a), _columns(b)
        return any(_refs(c) <= ca | cb and _refs(c) & ca and _refs(c) & cb for c in self.pending)


def _group(leaves: list[Node], builder: _Builder) -> list[Node]:
    """Join connected same-source leaves into one input each, keeping first-seen order."""
    result: list[Node] = []
    for leaf in leaves:
        source = _source(leaf)
        for index, done in enumerate(result):
            if source is not None and _source(done) == source and builder.connected(done, leaf):
                result[index] = builder.join(done, leaf)
                break
        else:
            result.append(leaf)
    return result


def _same_shape(a: Node, b: Node) -> bool:
    """Whether regrouping rebuilt the join tree it was given (already clustered)."""
    if a is b:
        return True
    if isinstance(a, Join) and isinstance(b, Join):
        return a.kind == b.kind and a.condition == b.condition and \
            _same_shape(a.left, b.left) and _same_shape(a.right, b.right)
    return False


def cluster_joins(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if not (isinstance(node, Join) and node.kind in ("inner", "cross")):
            return node
        leaves: list[Node] = []
        conds: list[exp.Expression] = []
        _flatten(node, leaves, conds)
        sources = [_source(leaf) for leaf in leaves]
        if len(leaves) < 3 or len({s for s in sources if s}) < 2 or \
                all(sources.count(s) < 2 for s in sources if s):
            return node
        builder = _Builder(conds)
        groups = _group(leaves, builder)
        if len(groups) == len(leaves):
            return node
        joined, remaining = groups[0], groups[1:]
        while remaining:
            # Prefer a group a join condition connects: never invent a cross product.
            pick = next((g for g in remaining if builder.connected(joined, g)), remaining[0])
            remaining = [g for g in remaining if g is not pick]
            joined = builder.join(joined, pick)
        if builder.pending:
            joined = Filter(joined, conjunction(builder.pending))
        return node if _same_shape(joined, node) else joined

    return transform_up(plan, rewrite)
