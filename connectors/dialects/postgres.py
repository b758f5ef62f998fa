"""PostgreSQL as a source: its answers are PostgreSQL's by definition.

Everything ships EXACT except volatile functions (`now()`, `random()`, ...), which are
evaluated once by the gateway, never per source (docs/design.md §4). The remote session runs in
UTC with ISO DateStyle and `extra_float_digits = 3` (connectors.postgres.source sets them), so
rendered literals and fetched text mean the same on both sides. Text ordering follows the
remote database's collation, which is the PostgreSQL answer for that data.
"""

from __future__ import annotations

import re

from sqlglot import exp

from connectors.base import (EXACT, VARIADIC_CALL, Classification, Dialect, Pushdown, TableInfo,
                             volatile_reason)
from connectors.dialects.rules import rewrite_bottom_up

NAME = "postgres"


def classify(expression: exp.Expression, table: TableInfo | None = None) -> Classification:
    reason = volatile_reason(expression)
    if reason is not None:
        return Classification(Pushdown.UNSUPPORTED, reason)
    return EXACT


def _to_hex(node: exp.Expression) -> exp.Expression:
    # sqlglot reads PostgreSQL's to_hex() as its Hex node and writes it back as hex(),
    # which PostgreSQL does not have.
    if isinstance(node, exp.Hex):
        return exp.Anonymous(this="to_hex", expressions=[node.this])
    return node


def _standard_string(node: exp.Expression) -> exp.Expression:
    # sqlglot reads an E'' string into a ByteString holding its characters, and writes it
    # back with escapes of its own, some of which PostgreSQL reads otherwise (a vertical
    # tab becomes \v, which PostgreSQL reads as "v"). A standard string needs no escapes
    # but a doubled quote, and the remote sessions run with standard_conforming_strings =
    # on (connectors.postgres.source), so every character reads back as itself.
    if isinstance(node, exp.ByteString):
        return exp.Literal.string(node.this)
    return node


def _date_part(node: exp.Expression) -> exp.Expression:
    # sqlglot reads date_part('year', d) as its Extract node and writes EXTRACT(YEAR FROM d),
    # which PostgreSQL names "extract" and types numeric; date_part() is named date_part
    # and is float8 (planner.parse records which of the two the statement wrote).
    if isinstance(node, exp.Extract) and node.meta.get("spelled") == "date_part":
        return exp.Anonymous(this="date_part", expressions=[
            exp.Literal.string(node.this.name.lower()), node.expression])
    return node


def _log10(node: exp.Expression) -> exp.Expression:
    """log10(x), which sqlglot reads as log(10, x), written as the statement wrote it
    (planner.parse): PostgreSQL's log(10, x) takes numerics only."""
    if isinstance(node, exp.Log) and node.meta.get("spelled") == "log10" and node.expression is not None:
        return exp.Anonymous(this="log10", expressions=[node.expression.copy()])
    return node


def _variadic(node: exp.Expression) -> exp.Expression:
    """`fedgate_variadic(arr)` written back as PostgreSQL's `VARIADIC (arr)` (the keyword
    before a parenthesised argument, which sqlglot writes as a call)."""
    if isinstance(node, exp.Anonymous) and node.name.lower() == VARIADIC_CALL:
        return exp.Anonymous(this="VARIADIC", expressions=node.expressions)
    return node


# The reg* look-ups planner.pgcompat writes for the gateway's catalog (`'t'::regclass` is
# regclass_in('t'), shown through regclass_out) and its `::oid` (an unsigned integer).
_REG_CALL = re.compile(r"^(regclass|regtype|regprocedure|regproc|regnamespace|regrole)_(in|out)$")


def _reg_cast(node: exp.Expression) -> exp.Expression:
    """The catalog's reg* look-ups as the casts they were: PostgreSQL looks the name up in
    its own catalog, whose OIDs are the source's (children are rewritten first)."""
    if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.UINT:
        return exp.Cast(this=node.this, to=exp.DataType.build("oid", dialect="postgres"))
    if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.UINT:
        return exp.DataType.build("oid", dialect="postgres")  # (::oid[], planner.pgcompat)
    if not isinstance(node, exp.Anonymous):
        return node
    found = _REG_CALL.match(str(node.this).lower())
    if found is None or len(node.expressions) != 1:
        return node
    kind, operand = found.group(1), node.expressions[0]
    reg = exp.DataType.build(kind, dialect="postgres", udt=True)
    if found.group(2) == "out" and isinstance(operand, exp.Cast) and operand.to == reg:
        return operand  # regclass_out(regclass_in('t')): the cast of the name, shown
    return exp.Cast(this=operand, to=reg)


def to_postgres(tree: exp.Expression) -> str:
    if tree.find(exp.Anonymous, exp.DataType) is not None:
        tree = rewrite_bottom_up(tree, _reg_cast)
    if tree.find(exp.Anonymous) is not None:
        tree = tree.transform(_variadic)
    if tree.find(exp.Log) is not None:
        tree = tree.transform(_log10)
    if tree.find(exp.Extract) is not None:
        tree = tree.transform(_date_part)
    if tree.find(exp.Hex) is not None:
        tree = tree.transform(_to_hex)
    if tree.find(exp.ByteString) is not None:
        tree = tree.transform(_standard_string)
    return tree.sql("postgres")


DIALECT = Dialect(name=NAME, sqlglot="postgres", paramstyle="$n", classify=classify,
                  render=to_postgres,
                  ships=frozenset({"join", "aggregate", "sort", "limit", "distinct", "union",
                                   "window", "subquery"}))
