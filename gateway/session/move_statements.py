"""The statements a move sends besides its rows, built from the client's (docs/design.md
§5, "Moves"): its query (`move_query`), the final INSERT of a move with RETURNING or ON
CONFLICT that reads the stage (`staged_insert`), the probes by which PostgreSQL describes
that INSERT and types a move's parameters (`final_probe`, `target_probe`), and the
numbering of the parameters beyond the query, which are the final INSERT's own
(`outside_params`, `final_params`). Every one is a sqlglot tree, generated per dialect.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
from sqlglot import exp

from connectors.postgres.link_bulk_write import FinalParams
from connectors.writes import param_number
from gateway.relay.routing import move_target
from gateway.state.portals import Portal
from pgwire.types.from_arrow import pg_type_for_field
from pgwire.types.pg_type import FIRST_NORMAL_OID
from pgwire.types.rows import resolve_formats


def unknown_outputs(query: exp.Expression) -> frozenset[int]:
    """The select list's positions that are string literals or NULL: PostgreSQL's
    `unknown`, which the target column's type reads (gateway.executor.assignment)."""
    if not isinstance(query, exp.Select) or any(isinstance(e, exp.Star) or
                                                isinstance(getattr(e, "this", None), exp.Star)
                                                for e in query.expressions):
        return frozenset()
    found = set()
    for i, expression in enumerate(query.expressions):
        value = expression.this if isinstance(expression, exp.Alias) else expression
        if isinstance(value, exp.Null) or (isinstance(value, exp.Literal) and value.is_string):
            found.add(i)
    return frozenset(found)


def move_query(tree: exp.Expression) -> exp.Expression:
    """The query whose rows a move writes, with the statement's own WITH (`WITH x AS
    (...) INSERT INTO t SELECT ... FROM x`) put on it."""
    query = tree.expression
    outer = tree.args.get("with_")
    if outer is None:
        return query
    query = query.copy()
    inner = query.args.get("with_")
    if inner is not None:
        outer = outer.copy()
        outer.set("expressions", [*outer.expressions, *inner.expressions])
    query.set("with_", outer.copy())
    return query


def folded(identifier: exp.Expression | None) -> str:
    if not isinstance(identifier, exp.Identifier):
        return ""
    return identifier.this if identifier.quoted else identifier.this.lower()


def staged_insert(tree: exp.Expression, table: str, schema: str | None
                  ) -> Callable[[exp.Table, list[str]], exp.Expression] | None:
    """For an INSERT with RETURNING or ON CONFLICT: the INSERT that moves the staged rows
    into the target (`table` in `schema`, if the target has schemas) with the client's
    clauses, given the stage and the written columns; None for a plain INSERT, which
    writes straight into the target."""
    if tree.args.get("returning") is None and tree.args.get("conflict") is None:
        return None
    target = move_target(tree)
    assert target is not None
    into = exp.table_(table, db=schema, quoted=True)
    if target.alias:
        into.set("alias", target.args["alias"].copy())

    def final(stage: exp.Table, written: list[str]) -> exp.Expression:
        insert = tree.copy()
        insert.set("with_", None)
        names = [exp.to_identifier(n, quoted=True) for n in written]
        insert.set("this", exp.Schema(this=into.copy(), expressions=names))
        # (WHERE TRUE: SQLite reads an ON CONFLICT right after FROM as a join's ON)
        insert.set("expression", exp.select(*(exp.column(n.copy()) for n in names))
                   .from_(stage).where(exp.true()))
        return renumbered(insert, outside)
    outside = outside_params(tree)
    return final


def outside_params(tree: exp.Expression) -> list[int]:
    """The numbers of the `$n` a move holds beyond its query (ON CONFLICT's SET and WHERE,
    RETURNING), in order: they are the final INSERT's own parameters, `$1`... there."""
    inside = {id(node) for part in (tree.expression, tree.args.get("with_")) if part is not None
              for node in part.find_all(exp.Placeholder, exp.Parameter)}
    return sorted({n for node in tree.find_all(exp.Placeholder, exp.Parameter)
                   if id(node) not in inside and (n := param_number(node)) is not None})


def renumbered(tree: exp.Expression, outside: list[int]) -> exp.Expression:
    """`tree` with each `$n` of `outside` as its place there, from `$1`."""
    place = {n: i for i, n in enumerate(outside, 1)}

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Placeholder, exp.Parameter)) and param_number(node) in place:
            return exp.Parameter(this=exp.Literal.number(place[param_number(node)]))
        return node
    return tree.transform(swap) if place else tree


def result_columns(schema: pa.Schema) -> list[tuple[str, str, int]]:
    """Each of a query's result columns as a table's: its name, type name and typmod."""
    columns = []
    for field in schema:
        pg = pg_type_for_field(field)
        # a source's enum (a type of the gateway's catalog, gateway.pg_catalog.enums)
        # exists in its own source only: a new table holds its labels as text
        name = "text" if pg.oid >= FIRST_NORMAL_OID and pa.types.is_string(field.type) else pg.name
        columns.append((field.name, name, pg.typmod))
    return columns


def final_probe(tree: exp.Expression, schema: str) -> str:
    """The INSERT by which PostgreSQL describes a move's RETURNING and types the
    parameters beyond its query (its target a table in `schema`): the same ON CONFLICT
    and RETURNING on an INSERT of no rows (a SELECT of no columns: the target's defaults),
    only parsed."""
    clauses = {k: tree.args[k].copy() for k in ("conflict", "returning") if tree.args.get(k)}
    probe = exp.Insert(this=_probed(tree, schema, named=False),
                       expression=exp.Select().where(exp.false()), **clauses)
    return renumbered(probe, outside_params(tree)).sql(dialect="postgres")


def bare_outputs(query: exp.Expression) -> list[tuple[int, int]]:
    """The outputs of a move's query that are a parameter alone (`SELECT id, $1 FROM ...`):
    (position, parameter number). PostgreSQL types such a parameter as its target column."""
    if not isinstance(query, exp.Select):
        return []
    found = []
    for i, output in enumerate(query.expressions):
        node = output.this if isinstance(output, exp.Alias) else output
        if isinstance(node, (exp.Placeholder, exp.Parameter)) and param_number(node) is not None:
            found.append((i, param_number(node)))
    return found


def target_probe(tree: exp.Expression, schema: str, bare: list[tuple[int, int]]) -> str:
    """The INSERT by which PostgreSQL types the `bare` outputs' parameters as the target's
    columns: the query's outputs as NULL but those, renumbered `$1`..., only parsed."""
    query = move_query(tree)
    assert isinstance(query, exp.Select)
    place = {n: i for i, n in enumerate(sorted({n for _, n in bare}), 1)}
    at = dict(bare)
    outputs = [exp.Parameter(this=exp.Literal.number(place[at[i]])) if i in at else exp.null()
               for i in range(len(query.expressions))]
    probe = exp.Insert(this=_probed(tree, schema, named=True),
                       expression=exp.select(*outputs).where(exp.false()))
    return probe.sql(dialect="postgres")


def _probed(tree: exp.Expression, schema: str, named: bool) -> exp.Expression:
    """A probe's target: the move's table in `schema`, its alias and (`named`) its columns."""
    target = move_target(tree)
    assert target is not None
    into = exp.table_(folded(target.this), db=schema, quoted=True)
    if target.alias:
        into.set("alias", target.args["alias"].copy())
    if named and isinstance(tree.this, exp.Schema):
        return exp.Schema(this=into, expressions=[c.copy() for c in tree.this.expressions])
    return into


def last_param(tree: exp.Expression) -> int:
    """The highest `$n` in `tree` (0: none): how many parameters it takes."""
    return max((n for n in map(param_number, tree.find_all(exp.Placeholder, exp.Parameter))
                if n is not None), default=0)


def parameters(tree: exp.Expression) -> int:
    return sum(1 for _ in tree.find_all(exp.Placeholder, exp.Parameter))


def final_params(tree: exp.Expression, bound: Portal | None) -> FinalParams | None:
    """The client's values of the parameters beyond a move's query, as its final INSERT
    binds them: their types, formats and bytes, as the client sent them."""
    outside = outside_params(tree)
    if not outside:
        return None
    assert bound is not None and bound.raw_params is not None
    formats = resolve_formats(bound.param_formats, len(bound.raw_params))
    return FinalParams(tuple(bound.statement.param_oids[n - 1] for n in outside),
                       tuple(formats[n - 1] for n in outside),
                       [bound.raw_params[n - 1] for n in outside])
