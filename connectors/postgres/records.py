"""A whole-row reference (`SELECT t FROM t`) read from a PostgreSQL source as a struct.

PostgreSQL types the value as the table's row type; the COPY gives its record_out text,
`(1,apple,"2024-01-01 10:00:00",)`. The gateway presents it as the row type of the same
table in its own catalog, so it is read only when that row type is the gateway's too:
the row type of a relation of the source's schema (the gateway mounts those) whose every
field is a built-in type the gateway describes with the source's own OID (record_send
writes each field's OID, and a binary client checks them against pg_attribute). Anything
else (a composite type made by CREATE TYPE, a table of another schema, a field of an
enum, a domain or a composite type) stays refused (0A000).

The fields are read as the COPY's own columns are: their texts, split by record_in's
rules, become one CSV text read with the fields' column types, so a field's value is
exactly what the same column would be. An array of such rows (`array_agg(t)`) is split
by array_in's rules first, and its elements read as rows: a list of the structs.
"""

from __future__ import annotations

import asyncpg
import pyarrow as pa
import pyarrow.csv as pacsv

from connectors.postgres.csv_text import read_csv
from connectors.postgres.types import ColumnType, column_type
from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, PgError
from pgwire.types.pg_type import FIRST_NORMAL_OID
from pgwire.types.table import pg_type_for_field


_ROW_FIELDS = """
SELECT c.relname, n.nspname, c.relkind::text AS relkind, a.attname, a.atttypid::int8 AS atttypid, t.typname,
       a.atttypmod, format_type(a.atttypid, a.atttypmod) AS formatted
FROM pg_type rt JOIN pg_class c ON c.oid = rt.typrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
WHERE rt.oid = $1 ORDER BY a.attnum
"""
_MOUNTED_KINDS = ("r", "v", "m", "p", "f")  # what the source's discovery mounts


_ARRAY_OF_ROWS = """
SELECT e.oid::int8, e.typname FROM pg_type a JOIN pg_type e ON e.oid = a.typelem
WHERE a.oid = $1 AND e.typtype = 'c'
"""


async def rows_array_column(conn: asyncpg.Connection, name: str, array_oid: int,
                            schema: str) -> ColumnType | None:
    """The column `name` of the array type `array_oid` as a list of structs when its
    elements are a table's rows (`array_agg(t)`), as `row_column` reads one; None for an
    array of anything else. Only one-dimensional arrays with the default lower bound
    (what array_agg gives) are read; any other is refused (0A000) when a value comes."""
    found = await conn.fetchrow(_ARRAY_OF_ROWS, array_oid)
    if found is None:
        return None
    element = await row_column(conn, name, found[0], found[1], schema)
    list_type = pa.list_(element.field.type)
    field = pa.field(name, list_type, metadata={**(element.field.metadata or {}),
                                                b"pg_source_array": str(array_oid).encode()})
    return ColumnType(field, pa.string(), lambda texts: rows_array(texts, element, list_type))


def rows_array(texts: pa.Array, element: ColumnType, list_type: pa.ListType) -> pa.Array:
    """Each array_out text of `texts` (`{"(1,a)",NULL}`) as a list of the rows' structs."""
    offsets, items, mask = [0], [], []
    for text in texts.to_pylist():
        split = [] if text is None else split_array(text)
        items.extend(split)
        offsets.append(offsets[-1] + len(split))
        mask.append(text is None)
    assert element.convert is not None  # row_column's: record_array
    rows = element.convert(pa.array(items, pa.string()))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), rows, type=list_type,
                                    mask=pa.array(mask, pa.bool_()))


def split_array(text: str) -> list[str | None]:
    """array_in's reading of a one-dimensional array's text: each element's text with
    quotes removed and backslash escapes applied, None for an unquoted NULL."""
    if text.startswith("[") or text.startswith("{{"):
        raise PgError(FEATURE_NOT_SUPPORTED, "an array of rows with more than one dimension "
                      "or another lower bound is not supported by fedgate")
    if not (text.startswith("{") and text.endswith("}")):
        raise PgError(INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{text}"')
    items: list[str | None] = []
    pos, end = 1, len(text) - 1
    while pos < end:
        chars, quoted = [], text[pos] == '"'
        if quoted:
            pos += 1
            while pos < end and text[pos] != '"':
                if text[pos] == "\\":
                    pos += 1
                chars.append(text[pos])
                pos += 1
            pos += 1  # the closing quote
            item: str | None = "".join(chars)
        else:
            stop = text.find(",", pos, end)
            stop = end if stop < 0 else stop
            word = text[pos:stop].strip()
            item = None if word.upper() == "NULL" else word
            pos = stop
        items.append(item)
        if pos < end and text[pos] != ",":
            raise PgError(INVALID_TEXT_REPRESENTATION, f'malformed array literal: "{text}"')
        pos += 1
    return items


def _refused(what: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, f"a whole-row reference of {what} is not supported by "
                   "fedgate: only the row type of a table of the source, of built-in types, is")


async def row_column(conn: asyncpg.Connection, name: str, type_oid: int, type_name: str,
                     schema: str) -> ColumnType:
    """The column `name` of the composite type `type_oid`, as a struct of its fields."""
    rows = await conn.fetch(_ROW_FIELDS, type_oid)
    if not rows or rows[0]["nspname"] != schema or rows[0]["relkind"] not in _MOUNTED_KINDS:
        raise _refused(f"the type {type_name}")
    fields = []
    for r in rows:
        ctype = column_type(r["attname"], r["typname"], r["atttypmod"], r["formatted"])
        if r["atttypid"] >= FIRST_NORMAL_OID or pg_type_for_field(ctype.field).oid != r["atttypid"]:
            raise _refused(f"{type_name} (its field {r['attname']} of type {r['formatted']})")
        fields.append(ctype)
    struct = pa.struct([c.field for c in fields])
    field = pa.field(name, struct, metadata={"pg_row_of": rows[0]["relname"],
                                             "pg_source_type": str(type_oid)})
    return ColumnType(field, pa.string(), lambda texts: record_array(texts, fields, struct))


def record_array(texts: pa.Array, fields: list[ColumnType], struct: pa.StructType) -> pa.Array:
    """Each record_out text of `texts` as the struct of its fields."""
    values = texts.to_pylist()
    split = [None if v is None else split_record(v, len(fields)) for v in values]
    lines = []
    for record in split:
        items = record if record is not None else [None] * len(fields)
        lines.append(",".join("" if v is None else '"' + v.replace('"', '""') + '"' for v in items))
    if not values:
        return pa.array([], struct)
    names = [f"c{i}" for i in range(len(fields))]
    table = read_csv(pa.py_buffer(("\n".join(lines) + "\n").encode()),
                     pacsv.ReadOptions(column_names=names),
                     pacsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
                     pacsv.ConvertOptions(column_types={n: c.parse_as for n, c in zip(names, fields)},
                                          true_values=["t"], false_values=["f"], null_values=[""],
                                          strings_can_be_null=True, quoted_strings_can_be_null=False))
    children = []
    for column, ctype in zip(table.columns, fields):
        array = column.combine_chunks()
        children.append(ctype.convert(array) if ctype.convert else array)
    mask = pa.array([record is None for record in split], pa.bool_())
    return pa.StructArray.from_arrays(children, fields=list(struct), mask=mask)


def split_record(text: str, count: int) -> list[str | None]:
    """record_in's reading of a record's text: `count` fields, each NULL (nothing between
    the commas), or its text with quotes removed and backslash escapes applied."""
    if not text.startswith("("):
        raise _malformed(text)
    fields: list[str | None] = []
    pos = 1
    while True:
        if text[pos:pos + 1] in (",", ")"):
            fields.append(None)
        else:
            chars, inquote = [], False
            while inquote or text[pos:pos + 1] not in (",", ")"):
                if pos >= len(text):
                    raise _malformed(text)
                ch = text[pos]
                pos += 1
                if ch == "\\":
                    if pos >= len(text):
                        raise _malformed(text)
                    chars.append(text[pos])
                    pos += 1
                elif ch == '"':
                    if inquote and text[pos:pos + 1] == '"':
                        chars.append('"')
                        pos += 1
                    else:
                        inquote = not inquote
                else:
                    chars.append(ch)
            fields.append("".join(chars))
        end = text[pos]
        pos += 1
        if end == ")":
            break
    if len(fields) != count or text[pos:]:
        raise _malformed(text)
    return fields


def _malformed(text: str) -> PgError:
    return PgError(INVALID_TEXT_REPRESENTATION, f'malformed record literal: "{text}"')
