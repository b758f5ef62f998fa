"""A check of constants that cannot fail is left out of the DuckDB SQL.

The rewrites answer PostgreSQL's errors with a guard around the call (`substring(s FROM 1
FOR 0)`: a negative length is 22011):

    before: CASE WHEN 0 < 0 THEN error('negative substring length not allowed') ELSE substring(...) END
    after:  substring(...)

A condition false of its constants alone (`0 < 0`, `0 < 0 AND s IS NOT NULL`: false, or
NULL, whatever the column holds; either way the branch is never taken) is decided here.
DuckDB holds error() volatile, so the guard left in would have a window's PARTITION BY or
ORDER BY refused ("PARTITION BY window expressions cannot be volatile") where PostgreSQL
answers. Any other condition stays as it was: the error is raised when the statement runs,
as PostgreSQL raises it.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.simplify import simplify

# What a decided condition may hold: constants, columns and the operators between them
# (sqlglot's simplify reads these exactly; a call or a subquery is left to the engine).
_DECIDABLE = (exp.Literal, exp.Null, exp.Boolean, exp.Paren, exp.Neg, exp.Not, exp.Is,
              exp.And, exp.Or, exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Add,
              exp.Sub, exp.Mul, exp.Column, exp.Identifier)


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(_is_error(call) for call in tree.find_all(exp.Anonymous))


def constant_checks(node: exp.Expression) -> exp.Expression:
    """A CASE without its error branches whose condition is false of constants (for
    `tree.transform`)."""
    if not isinstance(node, exp.Case) or node.this is not None:
        return node
    kept = [branch for branch in node.args.get("ifs") or () if not _never(branch)]
    if len(kept) == len(node.args.get("ifs") or ()):
        return node
    if not kept:
        default = node.args.get("default")
        return default.copy() if default is not None else exp.Null()
    return exp.Case(ifs=[b.copy() for b in kept], default=node.args.get("default"))


def _never(branch: exp.Expression) -> bool:
    """Whether an `error()` branch's condition is never true, by its constants alone."""
    if not isinstance(branch, exp.If) or not _is_error(branch.args.get("true")):
        return False
    condition = branch.this
    if not all(isinstance(part, _DECIDABLE) for part in condition.walk()):
        return False
    decided = simplify(condition.copy())
    return isinstance(decided, exp.Null) or (isinstance(decided, exp.Boolean) and decided.this is False)


def _is_error(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "error"
