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
- `^` is XOR and bitwise operators are unsigned 64-bit in MySQL: none of them ship; nor
  does arithmetic with an unsigned integer column, which MySQL computes unsigned (`u - 5`
  below zero is an error; the engine reads such a column as a signed type);
- `\\` escapes in string literals: sqlglot doubles backslashes, and LIKE gets its escape
  spelled out; identifiers are always backquoted, so ANSI_QUOTES does not matter; a name
  with a character beyond the BMP (only a client's alias can have one: MySQL keeps names
  in utf8mb3) ships as a stand-in, the gateway names the result columns itself;
- `$n` parameters are rendered as markers the source replaces by literals (MySQL's
  text protocol has no numbered parameters). The planner types each parameter as
  `CAST($n AS type)`; MySQL's own casts convert where PostgreSQL raises, but these casts
  only restate the type the gateway already decoded the value as, so for integers,
  booleans, unsized text and bare numeric (dates and timestamps when compared with a
  value of the very same type) the cast is dropped and the bound literal carries the
  type. Floats stay local: a NaN parameter has no MySQL literal;
- date/time text is read by MySQL's rules (offsets ignored): a string literal compared
  with a date or timestamp ships only as zone-free ISO text, never against timestamptz;
- results: MySQL has no boolean type, so the SQL carries a comment naming the columns
  that are boolean in PostgreSQL (BOOL_HINT).
"""

from __future__ import annotations

import hashlib
import re

import pyarrow as pa
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


T = exp.DataType.Type
# CAST($n AS type) ships for these (the bound literal has the type); see the docstring.
PARAM_TYPES = rules.PARAM_INTEGERS | rules.PARAM_TEXT | {T.BOOLEAN, T.DECIMAL}
PARAM_TEMPORAL = frozenset({T.DATE, T.TIMESTAMP, T.TIMESTAMPTZ})


def _is_literal(node: exp.Expression) -> bool:
    """A literal, or a parameter the source binds as one (a coercible constant in MySQL)."""
    return isinstance(node, exp.Literal) or rules.is_param_cast(node)


def _text_problem(node: exp.Expression, table: TableInfo | None) -> str | None:
    """The collation problem of the text operands of `node`, if any."""
    for side in (node.this, node.args.get("expression")):
        if side is None or rules.operand_kind(side, table) != "text":
            continue
        if _is_literal(side):
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


# The only date/time text both systems read alike: ISO dates and times without a zone.
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?")


def _temporal_literal_problem(value: exp.Expression, other: exp.Expression,
                              table: TableInfo | None) -> str | None:
    """Why a text literal compared with a date/time operand reads differently on MySQL.

    PostgreSQL reads the literal as the operand's type (timestamptz: with its UTC offset,
    or in the session's zone); MySQL compares it as a DATETIME string in its own rules,
    ignoring offsets. Only zone-free ISO text against date/timestamp columns is exact."""
    if not (isinstance(value, exp.Literal) and value.is_string):
        return None
    if rules.operand_kind(other, table) != "temporal":
        return None
    kind = _temporal_type(other, table)
    if kind == T.TIMESTAMPTZ:
        return "mysql ignores the UTC offset (or session zone) of timestamptz text"
    pattern = _ISO_DATE if kind == T.DATE else _ISO_TIMESTAMP if kind == T.TIMESTAMP else None
    if pattern is None or not pattern.fullmatch(value.this):
        return f"mysql reads the date/time text {value.sql('postgres')} differently"
    return None


def _temporal_problem(operand: exp.Expression, values: list[exp.Expression],
                      table: TableInfo | None) -> Classification | None:
    for value in values:
        problem = (_temporal_literal_problem(value, operand, table)
                   or _temporal_literal_problem(operand, value, table))
        if problem:
            return unsupported(problem)
    return None


def _equality(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if "unknown" in _kinds(node, table):
        return unsupported("operand types unknown: mysql converts mixed types implicitly")
    temporal = _temporal_problem(node.this, [node.expression], table)
    if temporal:
        return temporal
    problem = _text_problem(node, table)
    return inexact(problem) if problem else None


def _in(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    temporal = _temporal_problem(node.this, list(node.expressions), table)
    if temporal:
        return temporal
    if rules.operand_kind(node.this, table) != "text" or _is_literal(node.this):
        return None
    field = rules.column_field(node.this, table)
    if field is None:
        return unsupported("text operand whose mysql collation is unknown")
    problem = collation_problem(rules.column_collation(field))
    return inexact(problem) if problem else None


def _ordering(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if "unknown" in _kinds(node, table):
        return unsupported("operand types unknown: mysql converts mixed types implicitly")
    temporal = _temporal_problem(node.this, [node.expression], table)
    if temporal:
        return temporal
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


def _unsigned(node: exp.Expression, table: TableInfo | None) -> bool:
    """Whether an operand is an unsigned integer column: MySQL computes in unsigned 64
    bits with it, so `u - 5` below zero and `u + 1` beyond 2^64 - 1 are errors."""
    fields = (rules.column_field(operand, table) for operand in (node.this, node.expression))
    return any(f is not None and pa.types.is_unsigned_integer(f.type) for f in fields)


def _arithmetic(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    if not _kinds(node, table) <= {"int", "float", "decimal"}:
        return unsupported("arithmetic on non-numeric or unknown operands on mysql")
    if _unsigned(node, table):
        return unsupported("arithmetic on unsigned integers is unsigned on mysql")
    return None


def _division(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    kinds = _kinds(node, table)
    if not kinds <= {"int", "float", "decimal"}:
        return unsupported("division of non-numeric or unknown operands on mysql")
    if _unsigned(node, table):
        return unsupported("arithmetic on unsigned integers is unsigned on mysql")
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


def _temporal_type(node: exp.Expression, table: TableInfo | None) -> exp.DataType.Type | None:
    field = rules.column_field(node, table)
    if field is not None:
        t = field.type
        if pa.types.is_timestamp(t):
            return T.TIMESTAMPTZ if t.tz else T.TIMESTAMP
        return T.DATE if pa.types.is_date(t) else None
    if node.type is not None and node.type.this in (T.TIMESTAMP, T.TIMESTAMPTZ, T.DATE):
        return node.type.this
    return None


def _cast(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    kind = rules.param_type(node)
    if kind in PARAM_TYPES:
        return None
    if kind in PARAM_TEMPORAL:
        # Only against an operand of the same type: PostgreSQL converts date or timestamp
        # to timestamptz in the gateway session's zone, MySQL in its own (UTC).
        parent = node.parent
        others = [v for v in (parent.args.values() if parent is not None else ())
                  if isinstance(v, exp.Expression) and v is not node]
        if others and all(_temporal_type(o, table) == kind or rules.is_param_cast(o)
                          for o in others):
            return None
        return unsupported("a date/time parameter compared with a value of another type")
    if rules.is_param_cast(node):
        return unsupported(f"a {node.to.sql('postgres').lower()} parameter has no exact mysql "
                           "literal (NaN, sized types)")
    return unsupported("mysql casts truncate and convert where PostgreSQL raises")


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
    exp.Cast: _cast,
    exp.BitwiseXor: rules.never("`^` is XOR and bitwise operators are unsigned on mysql"),
    exp.BitwiseAnd: rules.never("bitwise operators are unsigned 64-bit on mysql"),
    exp.BitwiseOr: rules.never("bitwise operators are unsigned 64-bit on mysql"),
    exp.Pow: rules.never("power() is floating point on mysql"),
}
# Between is a range: the same collation rules as <, >.
CAPABILITIES[exp.Between] = lambda node, table: _between(node, table)


def _between(node: exp.Expression, table: TableInfo | None) -> Classification | None:
    for bound in (node.args["low"], node.args["high"]):
        # Copies: building a node re-parents its children, and checkers read parents.
        answer = _ordering(exp.GTE(this=node.this.copy(), expression=bound.copy()), table)
        if answer is not None:
            return answer
    return None


def classify(expression: exp.Expression, table: TableInfo | None = None) -> Classification:
    return rules.classify_with(CAPABILITIES, NAME, expression, table)


def _param_marker(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Parameter):
        return exp.Var(this=PARAM_MARKER.format(node.name))
    return node


def _postgres_semantics(node: exp.Expression) -> exp.Expression:
    # sqlglot's transform does not descend into a node a function returned: the nodes
    # rebuilt here (LIKE ... ESCAPE, DIV) keep their operands as they are, so parameter
    # markers are placed by a pass of their own first (`s LIKE $1` went out as @1).
    if isinstance(node, exp.Div) and all(
            rules.operand_kind(side, None) == "int" for side in (node.this, node.expression)):
        # Needs a type-annotated tree for columns (see duckdb.needs_types).
        return exp.IntDiv(this=node.this.copy(), expression=node.expression.copy())
    return rules.with_escape(node)


def _drop_param_casts(node: exp.Expression) -> exp.Expression:
    return rules.drop_param_casts(node, PARAM_TYPES | PARAM_TEMPORAL)


# MySQL has no boolean result type: `a = b` comes back as an integer, like `1` does, so
# the rendered SQL starts with a comment naming the result columns that are boolean in
# PostgreSQL (0-based); connectors.mysql.source reads it and returns those columns as bool.
BOOL_HINT = "/* fedgate-bool: {} */ "


def _outer_selects(tree: exp.Expression) -> list[exp.Expression]:
    """The expressions that name a query's result columns (a union's: its first branch)."""
    while True:
        if isinstance(tree, (exp.SetOperation, exp.Subquery)):
            tree = tree.this
            continue
        if not isinstance(tree, exp.Select):
            return []
        from_ = tree.args.get("from_")
        if (len(tree.expressions) == 1 and isinstance(tree.expressions[0], exp.Star)
                and from_ is not None and isinstance(from_.this, exp.Subquery)
                and not tree.args.get("joins")):
            tree = from_.this  # SELECT * FROM (query) AS described: the inner query's columns
            continue
        return tree.expressions


def is_boolean(node: exp.Expression) -> bool:
    node = node.unalias()
    while isinstance(node, exp.Paren):
        node = node.this
    if node.type is not None and node.type.this == T.BOOLEAN:
        return True
    if isinstance(node, exp.Coalesce):  # every branch has one type: a boolean one tells
        return any(is_boolean(e) for e in (node.this, *node.expressions))
    if isinstance(node, exp.Case):
        return any(is_boolean(e) for e in (*(i.args["true"] for i in node.args["ifs"]),
                                           node.args.get("default")) if e is not None)
    return isinstance(node, (exp.Predicate, exp.Connector, exp.Not, exp.Boolean))


def bool_hint(tree: exp.Expression) -> str:
    positions = [str(i) for i, e in enumerate(_outer_selects(tree)) if is_boolean(e)]
    return BOOL_HINT.format(",".join(positions)) if positions else ""


def _bmp_name(node: exp.Expression) -> exp.Expression:
    # MySQL keeps names in utf8mb3 and refuses a character beyond the BMP. Its own tables
    # and columns cannot have one, so such a name is the client's (an alias, a CTE's
    # name): a stand-in derived from it, the same at each use, means the same there.
    if isinstance(node, exp.Identifier) and any(ord(c) > 0xFFFF for c in node.name):
        digest = hashlib.sha256(node.name.encode()).hexdigest()[:32]
        return exp.Identifier(this=f"fedgate_name_{digest}", quoted=True)
    return node


def to_mysql(tree: exp.Expression) -> str:
    hint = bool_hint(tree)
    tree = tree.transform(_drop_param_casts).transform(_param_marker).transform(_bmp_name)
    return hint + tree.transform(_postgres_semantics).sql("mysql", identify=True)


DIALECT = Dialect(name=NAME, sqlglot="mysql", paramstyle="$n", classify=classify,
                  render=to_mysql,
                  ships=frozenset({"join", "aggregate", "sort", "limit", "distinct", "union"}),
                  wants_types=True)
