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
from planner import dynamic_filters
from planner.fragment_types import fragment_types
from planner.logical import Column, Filter, Node, Scan, replace
from planner.query_plan import RemoteFragment
from planner.unparse import Unparser, _flat


def remote_table(scan: Scan) -> exp.Expression:
    schema, name = scan.table.ref.remote
    return exp.Table(this=exp.to_identifier(name, quoted=True),
                     db=exp.to_identifier(schema, quoted=True) if schema else None,
                     alias=exp.TableAlias(this=exp.to_identifier(scan.alias)))


def describe_tree(tree: exp.Expression) -> exp.Expression:
    if isinstance(tree, exp.Select) and tree.args.get("limit") is None:  # LIMIT $n stays bound
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
    assert isinstance(tree, exp.Select) and len(tree.expressions) == len(node.output)
    # Rename, do not rebuild: the unparser may have wrapped a join input in a derived table
    # (`_q0`), and its select list already refers to the columns through it.
    tree.set("expressions", [exp.alias_(e.this if isinstance(e, exp.Alias) else e, _flat(c), quoted=True)
                             for e, c in zip(tree.expressions, node.output)])
    return tree, {c: (None, _flat(c)) for c in node.output}


IN_LIST_LIMIT = 1000  # more keys than this narrow by their range instead


def key_condition(column: Column, values: list) -> exp.Expression:
    """`col IN (v, ...)`, or `col BETWEEN min AND max` for many keys: literals made by
    sqlglot from the values, never spliced into SQL text."""
    target = exp.column(column[1], table=column[0], quoted=True)
    if len(values) <= IN_LIST_LIMIT:
        return exp.In(this=target, expressions=[exp.convert(v) for v in values])
    return exp.Between(this=target, low=exp.convert(min(values)), high=exp.convert(max(values)))


def _narrowed(node: Node, condition: exp.Expression) -> Node:
    if isinstance(node, Scan) and node.limit is None:
        return replace(node, filters=node.filters + (condition,))
    return Filter(node, condition)


def render_fragment(index: int, node: Node, source: str, dialect: Dialect) -> tuple[RemoteFragment, dict]:
    tree, renamed = _output_columns(node)
    params = renumber_parameters(tree)

    def narrow(column: Column, values: list) -> str:
        narrowed, _ = _output_columns(_narrowed(node, key_condition(column, values)))
        renumber_parameters(narrowed)  # the key condition comes last: numbering is unchanged
        return dialect.to_sql(narrowed)

    fragment = RemoteFragment(f"frag_{index}", source, dialect.to_sql(tree),
                              lambda: dialect.to_sql(describe_tree(tree)), bool(params), params,
                              narrow=narrow)
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
    """(fragments, residual tree or None, residual params, dynamic filters, fragment column
    types) for the plan. The types are what the residual reads from each `frag_<i>`, as
    far as the catalog tells them (a sqlglot schema: fragment -> column -> type), worked
    out on first call: only engines other than DuckDB need them."""
    fragments = []
    replacements = {}
    names, fields = {}, {}
    for index, node in enumerate(found):
        source = _source_of(node)
        fragment, replacement = render_fragment(index, node, source, catalog.sources[source].dialect)
        fragments.append(fragment)
        replacements[id(node)] = replacement
        names[id(node)] = fragment.name
        # How each of the fragment's columns is named in the rows it returns.
        fields[id(node)] = {c: replacement[1].get(c, (None, c[1]))[1] for c in node.output}

    def types() -> dict[str, dict[str, str]]:
        return {names[id(node)]: fragment_types(node, fields[id(node)]) for node in found}

    if len(found) == 1 and found[0] is plan:
        return fragments, None, (), (), types
    residual = Unparser(lambda scan: remote_table(scan), replacements).query(plan)
    params = renumber_parameters(residual)
    return fragments, residual, params, dynamic_filters.find(plan, names, fields), types


def _source_of(node: Node) -> str:
    if isinstance(node, Scan):
        return node.table.ref.source
    for child in node.children:
        found = _source_of(child)
        if found:
            return found
    return ""
