"""The catalog source's dialect: PostgreSQL catalog SQL rendered for the in-memory DuckDB.

Runs after `planner.pgcompat` has made PostgreSQL-only syntax plain. What is left is
specific to where the catalog lives:
- calls of catalog functions go to our macros (schema `fg_fn`), never to DuckDB's own
  pg_catalog look-alikes;
- casts to PostgreSQL's catalog types (name, "char", oid, regproc ...) become the DuckDB
  types the catalog stores them as;
- the DuckDB dialect's PostgreSQL-semantics rewrites (division) still apply.
"""

from __future__ import annotations

import re

from sqlglot import exp

from connectors.base import EXACT, Classification, Dialect, TableInfo
from connectors.dialects.duckdb import to_duckdb
from connectors.dialects.rules import rewrite_bottom_up
from gateway.pg_catalog.functions import MACROS

MACRO_SCHEMA = "fg_fn"

# PostgreSQL type name -> DuckDB type, for casts in catalog queries.
_CAST_TYPES = {
    "name": "VARCHAR", "char": "VARCHAR", '"char"': "VARCHAR", "oid": "UINTEGER",
    "regproc": "UINTEGER", "regprocedure": "UINTEGER", "regclass": "UINTEGER",
    "regtype": "UINTEGER", "regnamespace": "UINTEGER", "regrole": "UINTEGER",
    "xid": "BIGINT", "cid": "BIGINT", "int2vector": "SMALLINT[]", "oidvector": "UINTEGER[]",
    "pg_node_tree": "VARCHAR", "aclitem": "VARCHAR", "information_schema.sql_identifier": "VARCHAR",
    "sql_identifier": "VARCHAR", "character_data": "VARCHAR", "cardinal_number": "INTEGER",
    "yes_or_no": "VARCHAR",
}


def _type_key(datatype: exp.DataType) -> str | None:
    if isinstance(datatype, exp.ObjectIdentifier):
        return datatype.name.lower()
    if datatype.this == exp.DataType.Type.NAME:
        return "name"
    if datatype.this == exp.DataType.Type.USERDEFINED:
        kind = datatype.args.get("kind")
        text = kind.sql("postgres") if isinstance(kind, exp.Expression) else str(kind or "")
        text = text.lower()
        return text.removeprefix("pg_catalog.").strip() if text else None
    return None


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    return node.sql_name().lower()


def _arguments(node: exp.Func) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    args: list[exp.Expression] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if isinstance(value, list):
            args.extend(value)
        elif isinstance(value, exp.Expression):
            args.append(value)
    return args


def _json_object(args: list[exp.Expression]) -> exp.Expression:
    """json_build_object(k1, v1, ...): DuckDB's json_object wants VARCHAR keys."""
    pairs = [exp.cast(a, "VARCHAR") if i % 2 == 0 else a for i, a in enumerate(args)]
    return exp.Anonymous(this="json_object", expressions=pairs)


def _format(args: list[exp.Expression]) -> exp.Expression | None:
    """PostgreSQL's format('%I.%I', a, b) as a concatenation (DuckDB's format differs)."""
    if not args or not (isinstance(args[0], exp.Literal) and args[0].is_string):
        return None
    parts: list[exp.Expression] = []
    values = iter(args[1:])
    for piece in re.split(r"(%[%ILs])", args[0].this):
        if piece == "%%":
            parts.append(exp.Literal.string("%"))
        elif piece in ("%I", "%L", "%s"):
            value = exp.cast(next(values, exp.null()), "VARCHAR")
            if piece == "%I":
                value = exp.Dot(this=exp.to_identifier(MACRO_SCHEMA),
                                expression=exp.Anonymous(this="quote_ident", expressions=[value]))
            elif piece == "%L":  # NULL is written NULL (connectors.dialects.duckdb.quoting)
                value = exp.Anonymous(this="quote_nullable", expressions=[value])
            parts.append(value)
        elif piece:
            parts.append(exp.Literal.string(piece))
    return exp.Concat(expressions=parts) if parts else exp.Literal.string("")


def _catalog_node(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Column) and node.args.get("db") is not None:
        # pg_catalog.pg_class.oid: the planner aliases each table by its name, and DuckDB
        # would look the schema part up among its own schemas.
        node.set("db", None)
        node.set("catalog", None)
        return node
    if isinstance(node, exp.Func) and not isinstance(node.parent, exp.Dot):
        name = _function_name(node)
        if name in ("json_build_object", "jsonb_build_object"):
            return _json_object(_arguments(node))
        if name == "format":
            formatted = _format(_arguments(node))
            if formatted is not None:
                return formatted
        if name in MACROS:
            call = exp.Anonymous(this=name, expressions=_arguments(node))
            return exp.Dot(this=exp.to_identifier(MACRO_SCHEMA), expression=call)
    if isinstance(node, exp.DataType) and isinstance(node.parent, exp.Cast):
        key = _type_key(node)
        if key in _CAST_TYPES:
            return exp.DataType.build(_CAST_TYPES[key], dialect="duckdb")
    return node


def _series_table(table: exp.Table) -> exp.Expression:
    """FROM generate_series(a, b) AS s(r) -> FROM (SELECT unnest(generate_series(a, b)) AS r) s.

    DuckDB refuses subqueries in a table function's arguments, and pgJDBC passes one
    (`array_upper(current_schemas(false), 1)`, a macro over the session's table)."""
    series = table.this
    alias = table.args.get("alias")
    name = alias.name if alias is not None else "generate_series"
    columns = alias.columns if alias is not None else []
    column = columns[0].name if columns else name
    args = [series.args.get(k) for k in ("start", "end", "step") if series.args.get(k)]
    call = exp.Anonymous(this="generate_series", expressions=args)
    select = exp.select(exp.alias_(exp.Anonymous(this="unnest", expressions=[call]), column,
                                   quoted=True))
    return exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(name)))


def render(tree: exp.Expression) -> str:
    tree = tree.copy()
    for table in list(tree.find_all(exp.Table)):
        if isinstance(table.this, exp.ExplodingGenerateSeries):
            table.replace(_series_table(table))
    # Children before parents: sqlglot's transform does not descend into a replacement,
    # and a macro call's arguments may hold macro calls too.
    return to_duckdb(rewrite_bottom_up(tree, _catalog_node))


def classify(expression: exp.Expression, table: TableInfo | None = None) -> Classification:
    return EXACT  # the catalog answers everything it is sent, locally


DIALECT = Dialect(name="pg_catalog", sqlglot="duckdb", paramstyle="$n", classify=classify,
                  render=render,
                  ships=frozenset({"join", "aggregate", "sort", "limit", "distinct", "union",
                                   "window"}))
