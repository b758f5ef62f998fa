"""The column types of each fragment's rows, as the catalog tells them: for engine renderers.

The residual reads `frag_<i>` tables whose columns are table columns (their catalog
type) or expressions sqlglot typed while annotating the query. Renderers that need
operand types everywhere (Spark's: integer division, decimal precision, date arithmetic)
annotate the residual over these types (`planner.plan`).

    Projection: c.c_custkey, SUM(c.c_acctbal) AS total     c_custkey BIGINT
      Scan: pg.customer AS c                         =>     total     DECIMAL(38, 2)

A column whose type cannot be told (an opaque scope, a VALUES list, an expression that
was not annotated) is left out: the annotator then treats it as of unknown type, and the
renderers leave expressions over it as they are.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
from sqlglot import exp

from planner.logical import (Aggregate, Column, Distinct, Filter, Join, Limit, Node, Project, Scan,
                             SetOp, Sort, SubqueryAlias)
from planner.numeric_results import numeric
from planner.result_types import pg_type
from planner.enum_values import field_enum
from planner.type_names import pg_type_name, sqlglot_type_of


def fragment_types(node: Node, names: Mapping[Column, str]) -> dict[str, str]:
    """{name the fragment outputs the column under: sqlglot type} for `node`'s columns."""
    found = {}
    for column in node.output:
        known = column_type(node, column)
        if known is not None:
            found[names[column]] = known.sql("duckdb")
    return found


def column_type(node: Node, column: Column) -> exp.DataType | None:
    if isinstance(node, Scan):
        index = node.table.schema.get_field_index(column[1])
        if index < 0:
            return None
        return exp.DataType.build(sqlglot_type_of(node.table.schema.field(index).type), dialect="duckdb")
    if isinstance(node, (Filter, Sort, Limit, Distinct)):
        return column_type(node.input, column)
    if isinstance(node, SubqueryAlias):
        if column[1] not in node.names:
            return None
        return column_type(node.input, node.input.output[node.names.index(column[1])])
    if isinstance(node, Join):
        side = node.left if column in node.left.output else node.right
        return column_type(side, column) if column in side.output else None
    if isinstance(node, (Project, Aggregate)):
        expression = next((e.this for e in node.exprs if e.alias == column[1]), None)
        if expression is None:
            return None
        if isinstance(expression, exp.Column):
            return column_type(node.input, (expression.table or None, expression.name))
        known = expression.type
        return known if known is not None and known.this != exp.DataType.Type.UNKNOWN else None
    if isinstance(node, SetOp):
        position = node.output.index(column)
        return column_type(node.left, node.left.output[position])
    return None  # Values, OneRow, Opaque: nothing the catalog says


def source_texts(node: Node, names: Mapping[Column, str], postgres: bool) -> dict[str, str]:
    """{output name: PostgreSQL type} for `node`'s columns that a source hands over as the
    PostgreSQL text of a type Arrow cannot hold (an unconstrained numeric, a jsonb, an
    array, an enum, a varchar(n): connectors.postgres.types; a decimal beyond 38 digits,
    which the DuckDB engine reads as text), passed through unchanged. `postgres`: the
    fragment runs on PostgreSQL, whose numeric results (`sum(n)`, `n * 2`, `avg(i)`) have
    no precision and scale, so they come as text too."""
    found = {}
    for column in node.output:
        kept = source_text(node, column, postgres)
        if kept is not None:
            found[names[column]] = kept
    return found


def _computed_numeric(node: Project | Aggregate, expression: exp.Expression) -> str | None:
    """"numeric" if PostgreSQL computes `expression` (of `node`) as a numeric of no
    declared precision and scale (only a cast to numeric(p,s) declares them)."""
    if isinstance(expression, exp.Cast) and expression.to.expressions:
        return None

    def input_type(reference: exp.Expression) -> str | None:
        if not isinstance(reference, exp.Column):
            return None
        known = column_type(node.input, (reference.table or None, reference.name))
        if known is not None and known.this == exp.DataType.Type.DECIMAL and len(known.expressions) == 2:
            return numeric(int(known.expressions[1].name))
        return pg_type_name(known) if known is not None else None

    found = pg_type(expression, input_type)
    return "numeric" if found is not None and found.split("(")[0] == "numeric" else None


def source_text(node: Node, column: Column, postgres: bool = False) -> str | None:
    if isinstance(node, Scan):
        index = node.table.schema.get_field_index(column[1])
        if index < 0:
            return None
        field = node.table.schema.field(index)
        if pa.types.is_decimal256(field.type):  # the engine reads it as text
            return f"numeric({field.type.precision},{field.type.scale})"
        meta = field.metadata or {}
        kept = meta.get(b"pg_type", meta.get(b"source_type", b"")).decode()
        if not kept or not pa.types.is_string(field.type):
            return None
        # an enum: ordered by its labels (planner.source_enums)
        return field_enum(meta, node.table.ref.source) or kept
    if isinstance(node, (Filter, Sort, Limit, Distinct)):
        return source_text(node.input, column, postgres)
    if isinstance(node, SubqueryAlias):
        if column[1] not in node.names:
            return None
        return source_text(node.input, node.input.output[node.names.index(column[1])], postgres)
    if isinstance(node, Join):
        side = node.left if column in node.left.output else node.right
        return source_text(side, column, postgres) if column in side.output else None
    if isinstance(node, (Project, Aggregate)):
        expression = next((e.this for e in node.exprs if e.alias == column[1]), None)
        inner = expression.this if isinstance(expression, (exp.Max, exp.Min)) else expression
        if isinstance(inner, exp.Column):  # the source's own max: the same type
            kept = source_text(node.input, (inner.table or None, inner.name), postgres)
            if kept is not None or inner is expression:
                return kept
        if postgres and expression is not None:
            return _computed_numeric(node, expression)
    return None  # computed at the source into a type of its own, or a set operation's
