"""A value of a PostgreSQL source's enum that is no column: a bind parameter compared with
one (`st = $1`, `st IN ($1, $2)`), as PostgreSQL's parser types it.

PostgreSQL infers such a parameter's type as the enum (its ParameterDescription names the
enum), reads an untyped value into it, and refuses a value that is no label with 22P02.
The planner does the same: the parameter is typed as the enum (planner.params, from the
catalog's column: `enum_labels` in its metadata, connectors.postgres.types), cast to the
enum's PostgreSQL name where a PostgreSQL source runs the comparison, and its value is
checked against the labels when it is bound (QueryPlan.param_enums). In the residual the
engine holds an enum as its label's text, so there the cast is to text, marked as a value
of the enum (planner.source_values orders it by its label's position, as a column).

    WHERE e.st = $1     ->  frag_0 on PostgreSQL: WHERE e.st = CAST($1 AS status)
    WHERE e.st < $1 OR c.name = 'Dee'
                        ->  residual: <position of frag_0.st> < <position of CAST($1 AS TEXT)>
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from planner.params import cast_parameters, infer_param_types
from planner.source_values import ENUM_VALUE, EnumText
from planner.type_names import pg_type_name

LABELS_META = b"enum_labels"


def field_enum(metadata: Mapping[bytes, bytes] | None, source: str) -> EnumText | None:
    """The enum a source column's Arrow metadata says it holds the labels of, if any."""
    meta = metadata or {}
    if LABELS_META not in meta:
        return None
    kept = meta.get(b"pg_type", meta.get(b"source_type", b"")).decode()
    oid = meta.get(b"source_type_oid")
    return EnumText(kept, json.loads(meta[LABELS_META]), source, int(oid) if oid is not None else None,
                    meta.get(b"source_typname", b"").decode())


def enum_columns(tree: exp.Expression, tables: Callable[[str, str], object | None]
                 ) -> Callable[[exp.Expression], EnumText | None]:
    """For a qualified `tree` whose tables are pinned to their sources: the enum a column
    of a catalog table holds, if it is one. `tables(source, name)`: its TableInfo."""
    found: dict[int, EnumText] = {}
    for scope in traverse_scope(tree):
        for column in scope.columns:
            table = scope.sources.get(column.table)
            if not isinstance(table, exp.Table) or not table.db:
                continue
            info = tables(table.db, table.name)
            schema = getattr(info, "schema", None)
            index = schema.get_field_index(column.name) if schema is not None else -1
            kept = field_enum(schema.field(index).metadata, table.db) if index >= 0 else None
            if kept is not None:
                found[id(column)] = kept
    return lambda node: found.get(id(node))


def enum_type(kept: EnumText) -> exp.DataType:
    """The enum as a type of the tree: its PostgreSQL name, the enum in its meta."""
    made = exp.DataType.build(str(kept), dialect="postgres", udt=True)
    made.meta[ENUM_VALUE] = kept
    return made


def enum_of_type(datatype: exp.DataType | None) -> EnumText | None:
    found = datatype.meta.get(ENUM_VALUE) if datatype is not None else None
    return found if isinstance(found, EnumText) else None


def parameter_enums(types: list[exp.DataType]) -> tuple[tuple[int, EnumText], ...]:
    """(0-based index, enum) of the parameters typed as an enum."""
    return tuple((i, kept) for i, t in enumerate(types) if (kept := enum_of_type(t)) is not None)


def enum_casts_as_text(residual: exp.Expression) -> None:
    """In the residual, a cast to an enum is its label's text (the value was checked when
    bound), marked as a value of the enum."""
    for cast in list(residual.find_all(exp.Cast)):
        kept = enum_of_type(cast.to)
        if kept is not None:
            cast.set("to", exp.DataType.build("TEXT"))
            cast.meta[ENUM_VALUE] = kept


def column_enum_types(tree: exp.Expression, tables: Callable[[str, str], object | None]
                      ) -> Callable[[exp.Expression], exp.DataType | None]:
    """`enum_columns`' enums as types, for planner.params' inference."""
    columns: list[Callable[[exp.Expression], EnumText | None]] = []  # read when first asked

    def enum_of(node: exp.Expression) -> exp.DataType | None:
        if not columns:
            columns.append(enum_columns(tree, tables))
        kept = columns[0](node)
        return enum_type(kept) if kept is not None else None
    return enum_of


def catalog_tables(catalog: object) -> Callable[[str, str], object | None]:
    """A catalog snapshot's table of a source by its name (None: no such)."""
    def table(source: str, name: str) -> object | None:
        entry = catalog.sources.get(source)  # type: ignore[attr-defined]
        return entry.tables.get(name) if entry is not None else None
    return table


def typed_parameters(tree: exp.Expression, declared: Sequence[exp.DataType | None],
                     catalog: object) -> list[exp.DataType]:
    """The types of $1..$n (planner.params), an enum's where one is compared with a column
    of it; each $n of `tree` is cast to its type."""
    types = infer_param_types(tree, declared, column_enum_types(tree, catalog_tables(catalog)))
    cast_parameters(tree, types)
    return types


def param_type_names(types: Sequence[exp.DataType]) -> tuple[str, ...]:
    """The PostgreSQL names of `types` (QueryPlan.param_types); an enum's is its EnumText,
    by which the session finds its OID and labels (gateway.session.enum_params)."""
    return tuple(enum_of_type(t) or pg_type_name(t) or "text" for t in types)
