"""Push filter conjuncts below a projection or a derived table's alias, rewriting output
columns into the expressions that compute them.

    Filter: x.total > 10                      SubqueryAlias: x
      SubqueryAlias: x                 =>       Projection: o.a AS total
        Projection: o.a AS total                  Filter: o.a > 10
          Scan: s.o AS o                            Scan: s.o AS o

A conjunct stays above when moving it would change its meaning: when it references an
aggregate, a window or a volatile expression of the projection, or is itself volatile.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import volatile_reason
from planner.conjuncts import conjunction, split_conjuncts
from planner.logical import Column, Filter, Node, Project, SubqueryAlias, replace
from planner.optimizer import RuleContext
from planner.rules import transform_up


def _substitute(conjunct: exp.Expression, mapping: dict[Column, exp.Expression]) -> exp.Expression | None:
    """`conjunct` with output columns replaced by their definitions, or None if unsafe."""
    if volatile_reason(conjunct) or any(isinstance(n, (exp.Subquery, exp.Exists)) for n in conjunct.walk()):
        return None
    unsafe = False

    def substitute(node: exp.Expression) -> exp.Expression:
        nonlocal unsafe
        if not isinstance(node, exp.Column):
            return node
        definition = mapping.get((node.table or None, node.name))
        if definition is None or definition.find(exp.AggFunc, exp.Window) is not None \
                or volatile_reason(definition):
            unsafe = True
            return node
        replacement = definition.copy()
        return replacement if isinstance(replacement, (exp.Column, exp.Literal)) else exp.Paren(this=replacement)

    result = conjunct.transform(substitute)
    return None if unsafe else result


def _definitions(node: Project | SubqueryAlias) -> tuple[Node, dict[Column, exp.Expression]] | None:
    if isinstance(node, Project):
        return node.input, {(None, e.alias): e.this for e in node.exprs}
    inner = node.input
    if not isinstance(inner, Project):
        # Columns of the derived table are the input's columns, position by position.
        return inner, {(node.alias, name): exp.column(col, table=qual, quoted=True)
                       for name, (qual, col) in zip(node.names, inner.output)}
    return None


def push_filter_through_project(plan: Node, context: RuleContext) -> Node:
    def rewrite(node: Node) -> Node:
        if not isinstance(node, Filter) or not isinstance(node.input, (Project, SubqueryAlias)):
            return node
        middle = node.input
        if isinstance(middle, SubqueryAlias) and isinstance(middle.input, Project):
            # Through the alias and the projection under it in one step.
            project = middle.input
            mapping = {(middle.alias, name): e.this for name, e in zip(middle.names, project.exprs)}
            moved, kept = _split(node.condition, mapping)
            if not moved:
                return node
            pushed = replace(project, input=Filter(project.input, conjunction(moved)))
            result: Node = replace(middle, input=pushed)
            return Filter(result, conjunction(kept)) if kept else result
        found = _definitions(middle)
        if found is None:
            return node
        below, mapping = found
        moved, kept = _split(node.condition, mapping)
        if not moved:
            return node
        result = middle.with_children((Filter(below, conjunction(moved)),))
        return Filter(result, conjunction(kept)) if kept else result

    return transform_up(plan, rewrite)


def _split(condition: exp.Expression, mapping: dict[Column, exp.Expression]):
    moved, kept = [], []
    for conjunct in split_conjuncts(condition):
        substituted = _substitute(conjunct, mapping)
        (moved if substituted is not None else kept).append(substituted if substituted is not None else conjunct)
    return moved, kept
