"""json_build_array(), json_build_object() and their jsonb forms, as PostgreSQL writes them, on DuckDB.

PostgreSQL writes json_build_array(1, 'a', NULL) as `[1, "a", null]` and
json_build_object('a', 1, 'b', NULL) as `{"a" : 1, "b" : null}` (a space each side of
the colon), each value as to_json() writes it; DuckDB has neither function. They are
written as text, each value by connectors.dialects.duckdb.json_agg's rules (integers,
booleans, text, numerics at their display scale; anything else refused):

    json_build_object('a', n, 'b', NULL)
    →  CAST('{' || '"a"' || ' : ' || coalesce(<n as json>, 'null') || ', ' || '"b"' || ' : '
            || 'null' || '}' AS JSON)

The jsonb forms are the same text, which the planner types jsonb, so the gateway lays it
out as PostgreSQL prints a jsonb (keys ordered, a repeated key once:
gateway.executor.presented). A key must be a string constant (PostgreSQL converts any
other to text, which is not followed here: refused); an odd number of arguments to the
object forms is PostgreSQL's 22023.
"""

from __future__ import annotations

import json

from sqlglot import exp

from connectors.dialects.duckdb.json_agg import as_json
from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

ARRAYS = ("json_build_array", "jsonb_build_array")
OBJECTS = ("json_build_object", "jsonb_build_object")


def needs_rewrite(tree: exp.Expression) -> bool:
    return any(call.name.lower() in ARRAYS + OBJECTS for call in tree.find_all(exp.Anonymous))


def _value(value: exp.Expression, function: str) -> exp.Expression:
    if isinstance(value, exp.Null):
        return exp.Literal.string("null")
    return exp.Coalesce(this=as_json(value, function), expressions=[exp.Literal.string("null")])


def _key(key: exp.Expression, function: str) -> exp.Expression:
    if not (isinstance(key, exp.Literal) and key.is_string):
        raise PgError(FEATURE_NOT_SUPPORTED, f"{function}() with a key that is not a string constant "
                      "is not supported by fedgate outside PostgreSQL sources")
    return exp.Literal.string(json.dumps(key.this, ensure_ascii=False))


def _joined(pieces: list[exp.Expression]) -> exp.Expression:
    text = pieces[0]
    for piece in pieces[1:]:
        text = exp.DPipe(this=text, expression=piece, safe=True)
    return text


def postgres_json_build(node: exp.Expression) -> exp.Expression:
    if not isinstance(node, exp.Anonymous) or node.name.lower() not in ARRAYS + OBJECTS:
        return node
    function, arguments = node.name.lower(), node.expressions
    pieces: list[exp.Expression] = []
    if function in ARRAYS:
        for i, value in enumerate(arguments):
            pieces += ([exp.Literal.string(", ")] if i else []) + [_value(value, function)]
        opening, closing = "[", "]"
    else:
        if len(arguments) % 2:
            raise PgError(INVALID_PARAMETER_VALUE, "argument list must have even number of elements",
                          hint=f"The arguments of {function}() must consist of alternating keys and values.")
        for i in range(0, len(arguments), 2):
            pieces += ([exp.Literal.string(", ")] if i else []) + [
                _key(arguments[i], function), exp.Literal.string(" : "), _value(arguments[i + 1], function)]
        opening, closing = "{", "}"
    text = _joined([exp.Literal.string(opening), *pieces, exp.Literal.string(closing)])
    return exp.Cast(this=text, to=exp.DataType.build("JSON"))
