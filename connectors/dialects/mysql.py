"""MySQL/MariaDB as a target of PostgreSQL SQL: capability table and PG-semantics renderer.

What differs from PostgreSQL (each trap is checked against a real MariaDB in
tests/sources/test_traps.py):
- text comparisons follow the column's collation, read per column from
  information_schema (Arrow field metadata `collation`). Case-insensitive (`_ci`) and
  PAD SPACE collations make `=`/`IN`/`LIKE` match a superset of PostgreSQL's rows, so
  those ship as INEXACT (re-checked by the gateway); `<>`, ranges, ORDER BY and min/max
  on such columns do not ship. Literal-only comparisons use the connection collation,
  which the source sets to a binary NO PAD one, so they are exact;
- `/` always divides as decimal or float (`7/2` is 3.5000): integer division renders as
  `DIV`, which truncates like PostgreSQL; a divisor that may be zero does not ship
  because MySQL answers NULL where PostgreSQL raises 22012; decimal division stops at
  `div_precision_increment` digits, so it does not ship either;
- `^` is XOR and bitwise operators are unsigned 64-bit in MySQL: none of them ship;
- `\\` escapes in string literals: sqlglot doubles backslashes, and LIKE gets its escape
  spelled out; identifiers are always backquoted, so ANSI_QUOTES does not matter;
- `$n` parameters are rendered as markers the source replaces by literals (MySQL's
  text protocol has no numbered parameters).
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import Classification, Dialect, TableInfo
from connectors.dialects import rules
from connectors.dialects.rules import Checker, inexact, ok, unsupported

NAME = "mysql"
PARAM_MARKER = "__fedgate_param_{}__"
# Collations that compare UTF-8 text by code point with no padding: PostgreSQL's "C".
BINARY_NOPAD = frozenset({"binary", "utf8mb4_nopad_bin", "utf8mb3_nopad_bin",
                          "utf8mb4_0900_bin", "utf8_nopad_bin"})


def collation_problem(collation: str | None) -> str | None:
    """Why comparisons under `collation` differ from PostgreSQL's, or None if they do not."""
    if collation is None or collation in BINARY_NOPAD:
        return None
    if collation.endswith("_bin"):
        return f"collation {collation} ignores trailing spaces (PAD SPACE)"
    return f"collation {collation} compares case-insensitively"


def _text_problem(node: exp.Expression, table: TableInfo | None) -> str | None:
    """The collation problem of the text operands of `node`, if any."""
    for side in (node.this, node.args.get("expression")):
        if side is None or rules.operand_kind(side, table) != "text":
            continue
        if isinstance(side, exp.Literal):
            continue  # literals take the column's collation, or the connection's (binary)
        field = rules.column_field(side, table)
        if field is None:
            return "text operand whose mysql collation is unknown"
        problem = collation_problem(rules.column_collation(field))
        if problem is not None:
            return problem
    return None


def _kinds(node: exp.Expression, table: TableInfo | None) -> set[str]:
    return {rules.operand_kind(side, table) for side in (node.this, node.expression)}


def _equality(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if "unknown" in _kinds(node, table):
        return unsupported("operand types unknown: mysql converts mixed types implicitly")
    problem = _text_problem(node, table)
    return inexact(problem) if problem else None


def _in(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if rules.operand_kind(node.this, table) != "text" or isinstance(node.this, exp.Literal):
        return None
    field = rules.column_field(node.this, table)
    if field is None:
        return unsupported("text operand whose mysql collation is unknown")
    problem = collation_problem(rules.column_collation(field))
    return inexact(problem) if problem else None


def _ordering(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if "unknown" in _kinds(node, table):
        return unsupported("operand types unknown: mysql converts mixed types implicitly")
    problem = _text_problem(node, table)
    return unsupported(problem) if problem else None


def _ordered(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if rules.operand_kind(node.this, table) == "text":
        field = rules.column_field(node.this, table)
        problem = (collation_problem(rules.column_collation(field)) if field is not None
                   else "text ordering under an unknown mysql collation")
        if problem:
            return unsupported(problem)
    return None


def _like(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    problem = _text_problem(node, table)
    if isinstance(node, exp.ILike):
        return inexact("ILIKE folds non-ASCII letters on mysql")
    return inexact(problem) if problem else None


def _arithmetic(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if not _kinds(node, table) <= {"int", "float", "decimal"}:
        return unsupported("arithmetic on non-numeric or unknown operands on mysql")
    return None


def _division(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    kinds = _kinds(node, table)
    if not kinds <= {"int", "float", "decimal"}:
        return unsupported("division of non-numeric or unknown operands on mysql")
    if not rules.is_nonzero_number(node.expression):
        return unsupported("division by zero returns NULL on mysql")
    if "decimal" in kinds:
        return unsupported("mysql divides decimals to div_precision_increment digits")
    return None


def _aggregate(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    kind = rules.operand_kind(node.this, table)
    if isinstance(node, exp.Avg):
        return unsupported("avg() rounds to div_precision_increment digits on mysql")
    if isinstance(node, exp.Sum) and kind not in ("float", "decimal"):
        return unsupported("sum() of integers is DECIMAL on mysql")
    if isinstance(node, (exp.Min, exp.Max)) and kind == "text":
        return _ordered(node, table)
    return None


CAPABILITIES: dict[type[exp.Expression], Checker] = {
    **rules.STRUCTURAL,
    exp.Literal: ok, exp.Ordered: _ordered,
    exp.EQ: _equality, exp.NEQ: _ordering, exp.GT: _ordering, exp.GTE: _ordering,
    exp.LT: _ordering, exp.LTE: _ordering, exp.In: _in,
    exp.Add: _arithmetic, exp.Sub: _arithmetic, exp.Mul: _arithmetic,
    exp.Div: _division, exp.Mod: _division,
    exp.Like: _like, exp.ILike: _like, exp.Escape: ok,
    exp.DPipe: ok, exp.Abs: ok,
    exp.Count: ok, exp.Min: _aggregate, exp.Max: _aggregate, exp.Sum: _aggregate,
    exp.Avg: _aggregate,
    exp.Lower: rules.never("lower() folds non-ASCII letters on mysql"),
    exp.Upper: rules.never("upper() folds non-ASCII letters on mysql"),
    exp.Cast: rules.never("mysql casts truncate and convert where PostgreSQL raises"),
    exp.BitwiseXor: rules.never("`^` is XOR and bitwise operators are unsigned on mysql"),
    exp.BitwiseAnd: rules.never("bitwise operators are unsigned 64-bit on mysql"),
    exp.BitwiseOr: rules.never("bitwise operators are unsigned 64-bit on mysql"),
    exp.Pow: rules.never("power() is floating point on mysql"),
}
# Between is a range: the same collation rules as <, >.
CAPABILITIES[exp.Between] = lambda node, table: _between(node, table)


def _between(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    low = exp.GTE(this=node.this, expression=node.args["low"])
    return _ordering(low, table)


def classify(expression: exp.Expression, table: TableInfo | None = None) -> Classification:
    return rules.classify_with(CAPABILITIES, NAME, expression, table)


def _postgres_semantics(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Parameter):
        return exp.Var(this=PARAM_MARKER.format(node.name))
    if isinstance(node, exp.Div) and all(
            rules.operand_kind(side, None) == "int" for side in (node.this, node.expression)):
        # Needs a type-annotated tree for columns (see duckdb.needs_types).
        return exp.IntDiv(this=node.this.copy(), expression=node.expression.copy())
    return rules.with_escape(node)


def to_mysql(tree: exp.Expression) -> str:
    return tree.transform(_postgres_semantics).sql("mysql", identify=True)


DIALECT = Dialect(name=NAME, sqlglot="mysql", paramstyle="$n", classify=classify,
                  render=to_mysql,
                  ships=frozenset({"join", "aggregate", "sort", "limit", "distinct", "union"}),
                  wants_types=True)
