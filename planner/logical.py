"""The logical plan: immutable relational nodes whose expressions are sqlglot trees.

Columns are referenced as `qualifier.name`: a scan's alias, a derived table's alias, or
no qualifier for the outputs of a projection or aggregate. Nodes are frozen; a rule
builds a new node with `replace(node, ...)` (copy-on-write: untouched subtrees and
expressions are shared, never mutated), and returns the very same object when it changes
nothing, which is how the optimizer's fixed-point loop knows to stop.

Explain text (DataFusion's style), one node per line, children indented:

    Limit: fetch=10
      Projection: l.l_orderkey, n.n_name
        Filter: l.l_quantity > 5
          Join: inner on l.l_suppkey = n.n_nationkey
            Scan: demo.lineitem AS l projection=[l_orderkey, l_quantity, l_suppkey]
            Scan: demo.nation AS n
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from dataclasses import replace as _replace
from functools import cached_property
from typing import Any, TypeVar

from sqlglot import exp

from connectors.base import TableInfo

N = TypeVar("N", bound="Node")

Column = tuple[str | None, str]  # (qualifier, name)


def sql(expression: exp.Expression) -> str:
    return expression.sql("postgres")


@dataclass(frozen=True, eq=False)
class Node:
    """Base of all plan nodes. Equality is identity: rules compare with `is`."""

    @property
    def children(self) -> tuple[Node, ...]:
        return ()

    def with_children(self: N, children: tuple[Node, ...]) -> N:
        return self

    @property
    def output(self) -> tuple[Column, ...]:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def explain(self, indent: int = 0) -> list[str]:
        lines = ["  " * indent + self.describe()]
        for child in self.children:
            lines.extend(child.explain(indent + 1))
        return lines

    def __str__(self) -> str:
        return "\n".join(self.explain())


def replace(node: N, **changes: Any) -> N:
    """A copy of `node` with `changes`, or `node` itself when nothing differs."""
    if all(getattr(node, key) is value for key, value in changes.items()):
        return node
    return _replace(node, **changes)


@dataclass(frozen=True, eq=False)
class Unary(Node):
    input: Node

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.input,)

    def with_children(self: N, children: tuple[Node, ...]) -> N:
        return replace(self, input=children[0])

    @property
    def output(self) -> tuple[Column, ...]:
        return self.input.output


@dataclass(frozen=True, eq=False)
class Scan(Node):
    """Rows of one source table; filters, projection and limit may be pushed into it."""

    table: TableInfo
    alias: str
    columns: tuple[str, ...] | None = None  # None: every column
    filters: tuple[exp.Expression, ...] = ()
    limit: int | None = None

    @cached_property
    def all_columns(self) -> tuple[str, ...]:
        return tuple(self.table.schema.names)

    @property
    def output(self) -> tuple[Column, ...]:
        return tuple((self.alias, c) for c in (self.columns if self.columns is not None else self.all_columns))

    def describe(self) -> str:
        ref = self.table.ref
        text = f"Scan: {ref.source}.{ref.name}"
        if self.alias != ref.name:
            text += f" AS {self.alias}"
        if self.columns is not None:
            text += f" projection=[{', '.join(self.columns)}]"
        if self.filters:
            text += f" filters=[{', '.join(sql(f) for f in self.filters)}]"
        if self.limit is not None:
            text += f" fetch={self.limit}"
        return text


@dataclass(frozen=True, eq=False)
class Values(Node):
    """Literal rows: `VALUES (...), (...)` with an alias and column names."""

    rows: exp.Values
    alias: str
    names: tuple[str, ...]

    @property
    def output(self) -> tuple[Column, ...]:
        return tuple((self.alias, n) for n in self.names)

    def describe(self) -> str:
        return f"Values: {self.alias}({', '.join(self.names)}) rows={len(self.rows.expressions)}"


@dataclass(frozen=True, eq=False)
class OneRow(Node):
    """The single empty row a SELECT without FROM reads."""

    @property
    def output(self) -> tuple[Column, ...]:
        return ()

    def describe(self) -> str:
        return "OneRow"


@dataclass(frozen=True, eq=False)
class Filter(Unary):
    condition: exp.Expression = field(default_factory=exp.true)

    def describe(self) -> str:
        return f"Filter: {sql(self.condition)}"


@dataclass(frozen=True, eq=False)
class Project(Unary):
    """Computes output columns; every expression is an `exp.Alias` naming its output."""

    exprs: tuple[exp.Alias, ...] = ()

    @property
    def output(self) -> tuple[Column, ...]:
        return tuple((None, e.alias) for e in self.exprs)

    def describe(self) -> str:
        return "Projection: " + ", ".join(_show_alias(e) for e in self.exprs)


def _show_alias(e: exp.Alias) -> str:
    inner = e.this
    if isinstance(inner, exp.Column) and inner.name == e.alias:
        return sql(inner)
    return f"{sql(inner)} AS {e.alias}"


@dataclass(frozen=True, eq=False)
class Aggregate(Unary):
    """GROUP BY `groups`, computing `exprs` (aliased; may hold aggregates) and HAVING."""

    groups: tuple[exp.Expression, ...] = ()
    exprs: tuple[exp.Alias, ...] = ()
    having: exp.Expression | None = None

    @property
    def output(self) -> tuple[Column, ...]:
        return tuple((None, e.alias) for e in self.exprs)

    def describe(self) -> str:
        text = f"Aggregate: groupBy=[{', '.join(sql(g) for g in self.groups)}] " \
               f"output=[{', '.join(_show_alias(e) for e in self.exprs)}]"
        if self.having is not None:
            text += f" having={sql(self.having)}"
        return text


@dataclass(frozen=True, eq=False)
class Sort(Unary):
    keys: tuple[exp.Ordered, ...] = ()

    def describe(self) -> str:
        return f"Sort: {', '.join(sql(k) for k in self.keys)}"


@dataclass(frozen=True, eq=False)
class Limit(Unary):
    limit: int | None = None  # None: OFFSET only
    offset: int = 0

    def describe(self) -> str:
        parts = [f"fetch={self.limit}"] if self.limit is not None else []
        if self.offset:
            parts.append(f"skip={self.offset}")
        return "Limit: " + " ".join(parts)


@dataclass(frozen=True, eq=False)
class Distinct(Unary):
    def describe(self) -> str:
        return "Distinct"


@dataclass(frozen=True, eq=False)
class SubqueryAlias(Unary):
    """A derived table: the input's columns seen as `alias.name`."""

    alias: str = ""
    names: tuple[str, ...] = ()

    @property
    def output(self) -> tuple[Column, ...]:
        return tuple((self.alias, n) for n in self.names)

    def describe(self) -> str:
        return f"SubqueryAlias: {self.alias}"


JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti", "cross")


@dataclass(frozen=True, eq=False)
class TwoInputs(Node):
    left: Node
    right: Node

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    def with_children(self: N, children: tuple[Node, ...]) -> N:
        return replace(self, left=children[0], right=children[1])


@dataclass(frozen=True, eq=False)
class Join(TwoInputs):
    kind: str = "inner"
    condition: exp.Expression | None = None

    @property
    def output(self) -> tuple[Column, ...]:
        if self.kind in ("semi", "anti"):
            return self.left.output
        return self.left.output + self.right.output

    def describe(self) -> str:
        on = f" on {sql(self.condition)}" if self.condition is not None else ""
        return f"Join: {self.kind}{on}"


@dataclass(frozen=True, eq=False)
class SetOp(TwoInputs):
    kind: str = "union"  # union, intersect, except
    distinct: bool = True

    @property
    def output(self) -> tuple[Column, ...]:
        return tuple((None, name) for _, name in self.left.output)

    def describe(self) -> str:
        return f"{self.kind.capitalize()}{'' if self.distinct else ' All'}"


@dataclass(frozen=True, eq=False)
class Opaque(Node):
    """A query scope the plan does not model (window functions, correlated or expression
    subqueries, LATERAL, recursive CTEs ...). It runs whole in the engine; its base tables
    are `scans`, each referenced in `tree` by a `exp.Table` named after the scan's alias
    placeholder (`__scan_<i>`), so pushdown can still narrow what each scan fetches."""

    tree: exp.Expression
    scans: tuple[Node, ...] = ()
    names: tuple[str, ...] = ()
    reason: str = ""

    @property
    def children(self) -> tuple[Node, ...]:
        return self.scans

    def with_children(self: N, children: tuple[Node, ...]) -> N:
        if len(children) == len(self.scans) and all(a is b for a, b in zip(children, self.scans)):
            return self  # a new tuple of the same scans is no change
        return replace(self, scans=children)

    @property
    def output(self) -> tuple[Column, ...]:
        return tuple((None, n) for n in self.names)

    def describe(self) -> str:
        return f"Opaque: {self.reason}"


def node_fields(node: Node) -> list[str]:
    return [f.name for f in fields(node)]
