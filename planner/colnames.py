"""Output column names as PostgreSQL chooses them (its FigureColname rules).

Clients read these names (psql headers, SQLAlchemy row keys), and every source names
unaliased expressions its own way, so the planner fixes the name of every output column
of the top-level query and renders it as an explicit alias.

>>> import sqlglot
>>> [figure_colname(e) for e in sqlglot.parse_one("select a, t.b, 1, 1::int, x::text, count(*), version()", read="postgres").expressions]
['a', 'b', '?column?', 'int4', 'x', 'count', 'version']

sqlglot parses many functions into classes of its own (`substr` and `substring` are both
Substring, `lpad` is Pad, `now()` is CurrentTimestamp), so the class alone does not say how
the client spelled the call. Given the statement's text, the name is read from it: sqlglot
records where a function's name token starts and ends (`meta`).

>>> sql = "select substr(a, 1, 2), lpad(a, 3), now(), string_agg(a, ','), trim(a)"
>>> [figure_colname(e, sql) for e in sqlglot.parse_one(sql, read="postgres").expressions]
['substr', 'lpad', 'now', 'string_agg', 'btrim']
"""


from __future__ import annotations

import re

from sqlglot import exp

from planner.type_names import pg_type_name

UNNAMED = "?column?"
# Marks an ARRAY[...] that pgcompat wrote for an array literal ('{1,2}'::int[]): a
# literal, which gives its cast no name of its own.
ARRAY_LITERAL = "array_literal"
CAST_NAME = "cast_name"  # (strong name or None, the name of the cast) of a rewritten cast

# sqlglot classes whose PostgreSQL spelling differs from their sql_name().
_FUNCTION_NAMES: dict[type[exp.Expression], str] = {
    exp.CurrentVersion: "version",
    exp.CurrentDatabase: "current_database",
    exp.CurrentSchema: "current_schema",
    exp.CurrentSchemas: "current_schemas",
    exp.CurrentUser: "current_user",
    exp.SessionUser: "session_user",
    exp.CurrentCatalog: "current_catalog",
    exp.CurrentTimestamp: "current_timestamp",
    exp.CurrentDate: "current_date",
    exp.CurrentTime: "current_time",
    exp.If: "case",
    exp.Exists: "exists",
    exp.Overlaps: "overlaps",
    exp.Array: "array",
    exp.Coalesce: "coalesce",
    exp.Greatest: "greatest",
    exp.Least: "least",
    exp.Nullif: "nullif",
    exp.Count: "count",
    exp.Avg: "avg",
    exp.Sum: "sum",
    exp.Min: "min",
    exp.Max: "max",
    # Parsed without a name token to read (keyword syntax or special-cased by sqlglot).
    exp.StrPosition: "position",
    exp.AtTimeZone: "timezone",
    exp.GroupConcat: "string_agg",
    exp.JSONArrayAgg: "json_agg",
    exp.JSONBObjectAgg: "jsonb_object_agg",
    exp.JSONObjectAgg: "json_object_agg",
}
_TRIM_NAMES = {"LEADING": "ltrim", "TRAILING": "rtrim"}  # else btrim, as PostgreSQL names it
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_NOT_CALLS = (exp.Column, exp.Identifier, exp.Literal, exp.Alias, exp.Star)


def _written_name(node: exp.Expression, sql: str | None) -> str | None:
    """The function name as the statement spells it, when sqlglot recorded where it is."""
    start, end = node.meta.get("start"), node.meta.get("end")
    if sql is None or start is None or end is None or isinstance(node, _NOT_CALLS):
        return None
    if not sql[end + 1:].lstrip().startswith("("):
        return None  # a keyword (CURRENT_DATE) or an operator, not a call
    word = sql[start:end + 1]
    if _WORD.fullmatch(word):
        return word.lower()
    if len(word) > 2 and word[0] == word[-1] == '"':
        return word[1:-1].replace('""', '"')
    return None


def strong_name(node: exp.Expression, sql: str | None = None) -> str | None:
    """A name PostgreSQL takes from the expression itself (strength 2 in its source)."""
    return _strong_name(node, sql)


def _strong_name(node: exp.Expression, sql: str | None = None) -> str | None:
    if CAST_NAME in node.meta:  # a reg* or ::oid cast written otherwise (planner.pgcompat)
        return node.meta[CAST_NAME][0]
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            return None
        return node.name if node.this.quoted else fold_identifier(node.name)
    if isinstance(node, (exp.Paren, exp.Bracket)):
        return _strong_name(node.this, sql)  # (ARRAY[1, 2])[1] is "array"
    if isinstance(node, exp.Array) and node.meta.get(ARRAY_LITERAL):
        return None
    if isinstance(node, exp.Extract) and "spelled" in node.meta:
        return node.meta["spelled"]  # date_part(...) or extract(...) (planner.parse)
    if isinstance(node, exp.Cast) and _written_name(node, sql) is None:
        return _strong_name(node.this, sql)  # 4::int4::int2 is named by its last type
    if isinstance(node, exp.Case) and node.args.get("default") is not None:
        # named by its ELSE where that has a name of its own (ELSE id::bit(32) is "id")
        strong = _strong_name(node.args["default"], sql)
        if strong is not None:
            return strong
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        first = node.this.expressions[0] if node.this.expressions else None
        return figure_colname(first, sql) if first is not None else None
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, (exp.Window, exp.WithinGroup, exp.Filter)):
        return _strong_name(node.this, sql)  # row_number() OVER (...) is "row_number"
    if isinstance(node, exp.Dot):
        if isinstance(node.expression, exp.Identifier):  # a field: (t).id is "id"
            field = node.expression
            return field.name if field.quoted else fold_identifier(field.name)
        return _strong_name(node.expression, sql)  # pg_catalog.upper(x) is "upper"
    if isinstance(node, exp.Case):
        # named by its ELSE where that has a name of its own (ELSE g::text is "g"), else
        # weakly "case": a cast of it is named by the type
        default = node.args.get("default")
        return _strong_name(default, sql) if default is not None else None
    written = _written_name(node, sql)  # mod(a, b) is a Mod, div(a, b) a Cast
    if written is not None:
        return written
    if isinstance(node, exp.Trim):
        return _TRIM_NAMES.get(str(node.args.get("position") or "").upper(), "btrim")
    if isinstance(node, exp.Interval):
        return "interval"  # a typed literal is a cast in PostgreSQL's grammar
    for cls, name in _FUNCTION_NAMES.items():
        if type(node) is cls:
            return name
    if isinstance(node, exp.Func) and not isinstance(node, exp.Binary):
        return node.sql_name().lower()
    return None


def figure_colname(node: exp.Expression, sql: str | None = None) -> str:
    """The output name of select-list item `node`; `sql` is the text it was parsed from."""
    if isinstance(node, exp.Alias):
        alias = node.args.get("alias")
        if isinstance(alias, exp.Identifier) and not alias.quoted:
            return fold_identifier(alias.name)
        return node.alias
    while isinstance(node, (exp.Paren, exp.Bracket)):
        node = node.this  # PostgreSQL's parser keeps no parentheses; a subscript takes its
        # operand's name, even a cast's type name ((NULL::int[])[1] is "int4")
    if CAST_NAME in node.meta:  # a reg* or ::oid cast written otherwise (planner.pgcompat)
        strong, cast = node.meta[CAST_NAME]
        return strong or cast
    if isinstance(node, exp.Cast) and _written_name(node, sql) is None:
        # a typed literal cast on (interval '1 day'::text) is named by the last type
        operand = node.this
        while isinstance(operand, exp.Paren):
            operand = operand.this
        literal = isinstance(operand, exp.Interval) and isinstance(operand.this, exp.Literal)
        inner = None if literal else _strong_name(node.this, sql)
        if inner is not None:
            return inner
        to = node.to
        while to.is_type(exp.DataType.Type.ARRAY) and to.expressions:
            to = to.expressions[0]  # the type's last name: int[][] is "int4", its bounds aside
        if to.this == exp.DataType.Type.NAME:
            return "name"  # (typed as text elsewhere in the planner)
        # the type's name without its modifiers: bit(3) is "bit"; a quoted one ("char")
        # without its quotes
        name = pg_type_name(to) or to.sql("postgres").lower().split("(")[0]
        return name[1:-1] if len(name) > 2 and name[0] == name[-1] == '"' else name
    return _strong_name(node, sql) or ("case" if isinstance(node, exp.Case) else UNNAMED)


_ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold_identifier(name: str) -> str:
    """An unquoted identifier as PostgreSQL stores it: ASCII letters in lower case, the
    rest as written (its downcase_identifier)."""
    return name.translate(_ASCII_UPPER)
