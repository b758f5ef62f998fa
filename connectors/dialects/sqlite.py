"""SQLite as a target of PostgreSQL SQL: its capability table and a PG-semantics renderer.

What differs from PostgreSQL, each checked against the real library in
tests/sources/test_traps.py:
- LIKE ignores ASCII case and has no default escape: LIKE ships as INEXACT (the source
  returns a superset, the gateway re-checks) with `ESCAPE '\\'` spelled out;
- `x / 0` and `x % 0` give NULL where PostgreSQL raises: the renderer guards the divisor
  with `fedgate_raise()`, a function the SQLite source registers on every connection, so
  the error is PostgreSQL's 22012;
- integer / integer truncates as in PostgreSQL, but numeric values are IEEE doubles in
  SQLite, so arithmetic on numeric (decimal) operands does not ship;
- CAST never fails in SQLite ('abc' becomes 0), `#`/`^` mean different things, dates and
  timestamps are plain text: none of these ship;
- identifiers are `backquoted`: a double-quoted unknown column would be a string;
- NULL ordering: sqlglot spells out PostgreSQL's NULLS LAST/FIRST (SQLite ≥ 3.30);
- the planner types each bind parameter as `CAST($n AS type)`. For integers, booleans
  and unsized text that cast only restates the type the gateway decoded the value as, and
  sqlite3 binds the Python value with that type, so the cast is dropped (`?n`). Floats
  stay local (SQLite binds NaN as NULL), so do numerics (sqlite3 cannot bind Decimal).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.sqlite import SQLite

from connectors.base import Classification, Dialect, TableInfo
from connectors.dialects import rules
from connectors.dialects.rules import Checker, inexact, ok, unsupported

NAME = "sqlite"
RAISE_FUNCTION = "fedgate_raise"  # registered by connectors.sqlite.source on each connection
DIVISION_BY_ZERO = "division by zero"


def _compare(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    kinds = {rules.operand_kind(side, table) for side in (node.this, node.expression)}
    if "temporal" in kinds:
        return unsupported("dates and timestamps are text on sqlite")
    if "unknown" in kinds or "other" in kinds:
        return unsupported("operand types unknown: sqlite's type affinity may convert them")
    if "text" in kinds and len(kinds) > 1:
        return unsupported("text compared with a non-text value converts by affinity on sqlite")
    for side in (node.this, node.expression):
        field = rules.column_field(side, table)
        if field is not None and rules.column_collation(field) not in (None, "BINARY"):
            return unsupported(f"collation {rules.column_collation(field)} on sqlite")
    return None


# CAST($n AS type) ships for these: the bound value has the type (see the docstring).
PARAM_TYPES = rules.PARAM_INTEGERS | rules.PARAM_TEXT | {exp.DataType.Type.BOOLEAN}


def _cast(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if rules.param_type(node) in PARAM_TYPES:
        return None
    if rules.is_param_cast(node):
        return unsupported(f"sqlite binds a {node.to.sql('postgres').lower()} parameter "
                           "differently (NaN as NULL, no decimals, dates as text)")
    return unsupported("casts never fail on sqlite ('abc' becomes 0)")


def _arithmetic(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    kinds = {rules.operand_kind(side, table) for side in (node.this, node.expression)}
    if "decimal" in kinds:
        return unsupported("numeric arithmetic is floating point on sqlite")
    if not kinds <= {"int", "float"}:
        return unsupported("arithmetic on non-numeric or unknown operands on sqlite")
    return None


def _like(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    return inexact("LIKE is case-insensitive on sqlite")


def _text_function(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if rules.operand_kind(node.this, table) != "text":
        return unsupported(f"{node.sql_name().lower()}() of a non-text value on sqlite")
    return None


def _aggregate(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if isinstance(node, exp.Avg):
        return unsupported("avg() is floating point on sqlite, numeric in PostgreSQL")
    if isinstance(node, exp.Sum) and rules.operand_kind(node.this, table) != "float":
        return unsupported("sum() of integers wraps to float on sqlite, numeric in PostgreSQL")
    return None


CAPABILITIES: dict[type[exp.Expression], Checker] = {
    **rules.STRUCTURAL,
    exp.Literal: ok,
    exp.EQ: _compare, exp.NEQ: _compare, exp.GT: _compare, exp.GTE: _compare,
    exp.LT: _compare, exp.LTE: _compare,
    exp.Add: _arithmetic, exp.Sub: _arithmetic, exp.Mul: _arithmetic,
    exp.Div: _arithmetic, exp.Mod: _arithmetic,
    exp.Like: _like, exp.ILike: _like, exp.Escape: ok,
    exp.Lower: _text_function, exp.Upper: _text_function, exp.Length: _text_function,
    exp.DPipe: ok, exp.Abs: ok,
    exp.Count: ok, exp.Min: ok, exp.Max: ok, exp.Sum: _aggregate, exp.Avg: _aggregate,
    exp.Cast: _cast,
    exp.BitwiseXor: rules.never("sqlite has no XOR operator"),
    exp.Pow: rules.never("power() is optional in sqlite builds"),
}


def classify(expression: exp.Expression, table: TableInfo | None = None) -> Classification:
    return rules.classify_with(CAPABILITIES, NAME, expression, table)


def _guard(divisor: exp.Expression) -> exp.Expression:
    fail = exp.Anonymous(this=RAISE_FUNCTION, expressions=[exp.Literal.string(DIVISION_BY_ZERO)])
    zero = exp.EQ(this=divisor.copy(), expression=exp.Literal.number(0))
    return exp.Case(ifs=[exp.If(this=zero, true=fail)], default=divisor.copy())


def _parameters(node: exp.Expression) -> exp.Expression:
    node = rules.drop_param_casts(node, PARAM_TYPES)
    if isinstance(node, exp.Parameter):
        return exp.Var(this=f"?{node.name}")  # $1 -> ?1: numbered, so reusable
    return node


def _postgres_semantics(node: exp.Expression) -> exp.Expression:
    if isinstance(node, (exp.Div, exp.Mod)) and not rules.is_nonzero_number(node.expression):
        # sqlglot keeps `typed` on the copy: integer / integer stays integer division,
        # which SQLite truncates toward zero as PostgreSQL does.
        node = node.copy()
        node.set("expression", _guard(node.expression))
        return node
    if isinstance(node, exp.ILike):
        # SQLite's LIKE already folds ASCII case, which is ILIKE under the C locale.
        return rules.with_escape(exp.Like(this=node.this.copy(), expression=node.expression.copy()))
    return rules.with_escape(node)


class _Backquoted(SQLite):
    """SQLite with `backquoted` identifiers: a double-quoted name that matches no column
    is read as a string literal by SQLite (its "DQS" misfeature), so a misspelt column
    would quietly become text; a backquoted one is always an identifier."""

    class Tokenizer(SQLite.Tokenizer):
        IDENTIFIERS = ["`", '"', ("[", "]")]  # the first one is what the generator writes


def to_sqlite(tree: exp.Expression) -> str:
    tree = tree.transform(_parameters).transform(_postgres_semantics)
    return tree.sql(dialect=_Backquoted, identify=True)


DIALECT = Dialect(name=NAME, sqlglot="sqlite", paramstyle="?", classify=classify,
                  render=to_sqlite,
                  ships=frozenset({"join", "aggregate", "sort", "limit", "distinct", "union"}),
                  wants_types=True)
