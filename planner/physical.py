"""Optimized plan + its fragments -> QueryPlan: remote SQL per fragment, residual SQL.

Each fragment renders against its source's tables in the source's dialect. The residual
renders the rest of the plan for the engine (DuckDB dialect), reading each fragment's
rows from a table named `frag_<i>`. A fragment whose rows come from one table alias keeps
that alias (`frag_0 AS l`); one that joins several tables outputs its columns as
"alias.column", and the residual refers to them by those names. Bind parameters are
renumbered per query text, and each piece records which statement parameters it takes.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.base import Dialect
from planner.catalog import CatalogSnapshot
from planner.logical import Column, Node, Scan
from planner.query_plan import RemoteFragment
from planner.unparse import Unparser, _flat


def remote_table(scan: Scan) -> exp.Expression:
    schema, name = scan.table.ref.remote
    return exp.Table(this=exp.to_identifier(name, quoted=True),
                     db=exp.to_identifier(schema, quoted=True) if schema else None,
                     alias=exp.TableAlias(this=exp.to_identifier(scan.alias)))


def describe_tree(tree: exp.Expression) -> exp.Expression:
    if isinstance(tree, exp.Select):
        return tree.copy().limit(0)
    return exp.select("*").from_(tree.copy().subquery("described")).limit(0)


def renumber_parameters(tree: exp.Expression) -> tuple[int, ...]:
    """Number the tree's $n from 1 in order of appearance; return the original numbers."""
    order: list[int] = []
    for param in tree.find_all(exp.Parameter):
        if not isinstance(param.this, exp.Literal):
            continue
        original = int(param.this.this)
        if original not in order:
            order.append(original)
        param.set("this", exp.Literal.number(order.index(original) + 1))
    return tuple(order)


def _output_columns(node: Node) -> tuple[exp.Query, dict[Column, Column] | None]:
    """Explicit names for a fragment's output when it mixes several table aliases."""
    qualifiers = {q for q, _ in node.output}
    if len(qualifiers) <= 1:
        return Unparser(remote_table).query(node), None
    tree = Unparser(remote_table).query(node)
    assert isinstance(tree, exp.Select)
    tree.set("expressions", [exp.alias_(exp.column(name, table=q, quoted=True), _flat((q, name)), quoted=True)
                             for q, name in node.output])
    return tree, {c: (None, _flat(c)) for c in node.output}


def render_fragment(index: int, node: Node, source: str, dialect: Dialect) -> tuple[RemoteFragment, dict]:
    tree, renamed = _output_columns(node)
    params = renumber_parameters(tree)
    fragment = RemoteFragment(f"frag_{index}", source, dialect.to_sql(tree),
                              lambda: dialect.to_sql(describe_tree(tree)), bool(params), params)
    qualifiers = {q for q, _ in node.output}
    name = exp.to_identifier(fragment.name, quoted=True)
    if renamed is not None:
        columns = {c: (fragment.name, new) for c, (_, new) in renamed.items()}
        return fragment, (exp.Table(this=name), columns)
    alias = next(iter(qualifiers)) if qualifiers else None
    table = exp.Table(this=name, alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))
                      if alias else None)
    return fragment, (table, {})


def render(plan: Node, found: list[Node], catalog: CatalogSnapshot, engine: Dialect):
    """(fragments, residual tree or None, residual params) for the plan."""
    fragments = []
    replacements = {}
    for index, node in enumerate(found):
        source = _source_of(node)
        fragment, replacement = render_fragment(index, node, source, catalog.sources[source].dialect)
        fragments.append(fragment)
        replacements[id(node)] = replacement
    if len(found) == 1 and found[0] is plan:
        return fragments, None, ()
    residual = Unparser(lambda scan: remote_table(scan), replacements).query(plan)
    params = renumber_parameters(residual)
    return fragments, residual, params


def _source_of(node: Node) -> str:
    if isinstance(node, Scan):
        return node.table.ref.source
    for child in node.children:
        found = _source_of(child)
        if found:
            return found
    return ""
