"""Helpers for predicates as lists of conjuncts."""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp


def split_conjuncts(predicate: exp.Expression | None) -> list[exp.Expression]:
    """`a AND (b AND c)` -> [a, b, c]; parentheses around a conjunction are looked through."""
    if predicate is None:
        return []
    if isinstance(predicate, exp.Paren):
        return split_conjuncts(predicate.this)
    if isinstance(predicate, exp.And):
        return split_conjuncts(predicate.this) + split_conjuncts(predicate.expression)
    return [predicate]


def split_disjuncts(e: exp.Expression) -> list[exp.Expression]:
    """The branches of an OR (through parentheses); `[e]` when it is not one."""
    if isinstance(e, exp.Paren):
        return split_disjuncts(e.this)
    if isinstance(e, exp.Or):
        return split_disjuncts(e.this) + split_disjuncts(e.expression)
    return [e]


def conjunction(conjuncts: Iterable[exp.Expression]) -> exp.Expression:
    """[a, b, c] -> `a AND b AND c` (TRUE for none). OR operands get parentheses."""
    items = [c.copy() if c.parent is not None else c for c in conjuncts]
    if not items:
        return exp.true()
    result = _wrap(items[0])
    for item in items[1:]:
        result = exp.And(this=result, expression=_wrap(item))
    return result


def _wrap(e: exp.Expression) -> exp.Expression:
    return exp.Paren(this=e) if isinstance(e, exp.Or) else e


def qualifiers(expression: exp.Expression) -> set[str | None]:
    """The table qualifiers of every column `expression` references."""
    return {c.table or None for c in expression.find_all(exp.Column)}
