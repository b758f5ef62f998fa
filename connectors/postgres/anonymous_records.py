"""A row constructor's value (`SELECT ROW(1, 'a')`, `array_agg((id, s))`) read from a
PostgreSQL source as a struct, presented as PostgreSQL presents it: `record`, `record[]`.

PostgreSQL describes such a column only as `record` (or `record[]`): the fields' types
are in each value's binary form (record_send writes every field's OID), not in the
description, and the COPY gives record_out's text, which carries no types at all. So the
fields' types are asked of the source before the statement runs: the same statement,
prepared (never run) with the constructor's arguments as columns of their own in its
place, gives each field's type as PostgreSQL resolves it. A quoted literal or a NULL is
not asked: inside a row it stays of type unknown (record_send says 705), where as a
column of its own it would become text.

    SELECT id, ROW(k, s) AS r FROM t            ->  SELECT id, k, s FROM t
    SELECT array_agg(ROW(k, s) ORDER BY k) ...  ->  SELECT (array_agg(k ORDER BY k))[1],
                                                           (array_agg(s ORDER BY k))[1] ...

The values are then read as a table's whole row is (connectors.postgres.records: the
text split by record_in's rules, each field read as its own column would be).

Only a row constructor written in the statement's own select list, or aggregated there
by array_agg, with fields of built-in types the gateway describes with the source's own
OIDs, is read so; a record from anywhere else (a subquery, a function, a set operation,
a row inside a row) stays refused (0A000): its fields' types cannot be learnt this way.
"""

from __future__ import annotations

import asyncpg
import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from connectors.postgres.records import record_array, rows_array
from connectors.postgres.types import ColumnType, column_type
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.pg_type import FIRST_NORMAL_OID
from pgwire.types.table import pg_type_for_field

RECORD_OID, RECORD_ARRAY_OID, UNKNOWN_OID = 2249, 2287, 705


def is_anonymous_record(type_oid: int) -> bool:
    return type_oid in (RECORD_OID, RECORD_ARRAY_OID)


def _refused(what: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, f"a result column of type {what} is supported by "
                   "fedgate only for a row constructor (ROW(...), or array_agg of one) in the "
                   "select list, of fields of built-in types")


def _row_arguments(node: exp.Expression) -> list[exp.Expression] | None:
    if isinstance(node, exp.Tuple) or (isinstance(node, exp.Anonymous) and node.name.upper() == "ROW"):
        return list(node.expressions)
    return None


def _aggregated_row(node: exp.Expression) -> exp.Expression | None:
    """The row constructor array_agg aggregates in `node` (under FILTER, ORDER BY or
    DISTINCT), or None."""
    call = node.this if isinstance(node, exp.Filter) else node
    if not isinstance(call, exp.ArrayAgg):
        return None
    inner = call.this
    if isinstance(inner, exp.Order):
        inner = inner.this
    if isinstance(inner, exp.Distinct) and len(inner.expressions) == 1:
        inner = inner.expressions[0]
    return inner if _row_arguments(inner) is not None else None


def _unknown(argument: exp.Expression) -> bool:
    """A quoted literal or a NULL, which PostgreSQL leaves of type unknown inside a row
    (and record_send says so), but makes text as a column of its own."""
    return isinstance(argument, exp.Null) or isinstance(argument, exp.Literal) and argument.is_string


def _described(argument: exp.Expression) -> exp.Expression:
    """The column that describes one field: the argument, or for an unknown one (whose
    type needs no asking) a NULL of any type."""
    return exp.cast(exp.null(), "text") if _unknown(argument) else argument.copy()


def fields_statement(sql: str, index: int) -> tuple[str, list[bool]] | None:
    """The statement that describes the fields of output `index` as columns of their own,
    and for each field whether it is of type unknown; None when that output is not a row
    constructor (or array_agg of one) in the select list."""
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except ParseError:
        return None
    if not isinstance(tree, exp.Select) or index >= len(tree.expressions) \
            or any(isinstance(e, exp.Star) for e in tree.expressions):
        return None
    output = tree.expressions[index].unalias()
    arguments = _row_arguments(output)
    if arguments is not None:
        columns = [_described(a) for a in arguments]
    else:
        row = _aggregated_row(output)
        if row is None:
            return None
        arguments = _row_arguments(row) or []
        columns = []
        for argument in arguments:
            if _unknown(argument):  # its type is known; array_agg('x') would be ambiguous
                columns.append(_described(argument))
                continue
            aggregate = output.copy()
            next(n for n in aggregate.walk() if n == row).replace(argument.copy())
            # (sqlglot keeps subscripts 0-based: this one is written `[1]`)
            columns.append(exp.Bracket(this=exp.Paren(this=aggregate),
                                       expressions=[exp.Literal.number(0)]))
    if not arguments or any(_row_arguments(a) is not None for a in arguments):
        return None  # ROW() has no fields to learn; a row inside a row is not read
    tree.expressions[index:index + 1] = columns
    return tree.sql("postgres"), [_unknown(a) for a in arguments]


def without_records(sql: str, indices: list[int]) -> str | None:
    """`sql` with the outputs at `indices` (records) made NULLs of a plain type, for the
    temporary view that learns the other columns' typmods (a view cannot have a column
    of type record); None when `sql` is not one select."""
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except ParseError:
        return None
    if not isinstance(tree, exp.Select) or any(i >= len(tree.expressions) for i in indices):
        return None
    for i in indices:
        tree.expressions[i] = exp.alias_(exp.cast(exp.null(), "int4"), f"fedgate_record_{i}")
    return tree.sql("postgres")


async def anonymous_record_column(conn: asyncpg.Connection, sql: str, index: int, name: str,
                                  type_oid: int) -> ColumnType:
    """Output `index` of `sql`, of type record or record[], as a struct (or a list of
    them) of the fields' types the source resolves; 0A000 when they cannot be learnt."""
    what = "record" if type_oid == RECORD_OID else "record[]"
    found = fields_statement(sql, index)
    if found is None:
        raise _refused(what)
    fields_sql, unknown = found
    try:
        attributes = (await conn.prepare(fields_sql)).get_attributes()[index:index + len(unknown)]
    except asyncpg.PostgresError as exc:
        raise _refused(f"{what} ({exc})") from exc
    fields = []
    for number, (attribute, is_unknown) in enumerate(zip(attributes, unknown), 1):
        oid, typname = (UNKNOWN_OID, "unknown") if is_unknown \
            else (attribute.type.oid, attribute.type.name)
        ctype = column_type(f"f{number}", typname, -1)
        if oid >= FIRST_NORMAL_OID or pg_type_for_field(ctype.field).oid != oid:
            raise _refused(f"{what} (its field {number} of type {typname})")
        fields.append(ctype)
    struct = pa.struct([c.field for c in fields])
    element = ColumnType(pa.field(name, struct, metadata={"pg_type_oid": str(RECORD_OID)}),
                         pa.string(), lambda texts: record_array(texts, fields, struct))
    if type_oid == RECORD_OID:
        return element
    list_type = pa.list_(struct)
    field = pa.field(name, list_type, metadata={"pg_type_oid": str(RECORD_ARRAY_OID),
                                                "pg_elem_oid": str(RECORD_OID)})
    return ColumnType(field, pa.string(), lambda texts: rows_array(texts, element, list_type))
