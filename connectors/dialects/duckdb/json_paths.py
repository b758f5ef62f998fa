"""json's and jsonb's `#>` and `#>>` with a constant path, as steps of `->`, on DuckDB.

DuckDB has no `#>`. PostgreSQL walks the path one element at a time: a key of an object,
or, in an array, the element's index when it reads as an integer (negative from the end);
anything else gives NULL. A path known when the statement is planned becomes that walk:

    j #> '{a,0}'   ->  CASE WHEN json_type(j -> 'a') = 'OBJECT' THEN j -> 'a' -> '0'
                        WHEN json_type(j -> 'a') = 'ARRAY' THEN j -> 'a' -> 0 END
    j #>> '{a}'    ->  j ->> 'a'

Each step is the `->` (the last of `#>>` the `->>`) that connectors.dialects.duckdb.json
rewrites and guards, so a number DuckDB would write otherwise, json's escapes and a
jsonb container as text are refused there as for `->`. (A scalar has no element: unlike
`'5'::jsonb -> 0`, `'5'::jsonb #> '{0}'` is NULL.) Over a constant
document (`'{...}'::jsonb`) the path is followed here and the answer written as a
constant, in jsonb's layout (pgwire.types.jsonb). Otherwise an empty path, a path that
is not a constant, or one with NULL or quoted-with-escapes elements, is refused (0A000).
"""

from __future__ import annotations

import re

from sqlglot import exp

from connectors.dialects.duckdb.json import JSON_KIND, json_type
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.jsonb import jsonb_layout, jsonb_value, path_piece, scalar_text

_ELEMENT = re.compile(r'\s*(?:"([^"\\]*)"|([^",{}\\\s]+))\s*(?:,|$)')
_INTEGER = re.compile(r"[+-]?\d+")
_NOT_CONSTANT = object()
REFUSED = ("#> or #>> with a path that is not a constant of plain elements is not supported by "
           "fedgate outside PostgreSQL sources")


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.JSONBExtract, exp.JSONBExtractScalar) is not None


def _elements(path: exp.Expression, empty: bool = False) -> list[str]:
    """The elements of a text[] constant written `'{a,0,"b c"}'`."""
    text = path.this if isinstance(path, exp.Literal) and path.is_string else None
    if text is None or not (text.strip().startswith("{") and text.strip().endswith("}")):
        raise PgError(FEATURE_NOT_SUPPORTED, REFUSED)
    inner, elements, at = text.strip()[1:-1], [], 0
    while at < len(inner):
        found = _ELEMENT.match(inner, at)
        if found is None or found.group(2) == "NULL" or found.end() == at:
            raise PgError(FEATURE_NOT_SUPPORTED, REFUSED)
        elements.append(found.group(1) if found.group(1) is not None else found.group(2))
        at = found.end()
    if not elements and not empty:
        raise PgError(FEATURE_NOT_SUPPORTED, REFUSED)
    return elements


def _constant_document(node: exp.Expression) -> object:
    """The parsed jsonb of `node` when it is a constant (`'{...}'::jsonb`), else _NOT_CONSTANT."""
    literal = node.this if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.JSONB else None
    if not (isinstance(literal, exp.Literal) and literal.is_string):
        return _NOT_CONSTANT
    try:
        return jsonb_value(literal.this)
    except ValueError:  # not JSON: the engine's cast raises PostgreSQL's 22P02
        return _NOT_CONSTANT


def _folded(node: exp.Expression, document: object) -> exp.Expression:
    """A path over a constant jsonb, answered here: PostgreSQL's answer is a constant too."""
    found, piece = path_piece(document, _elements(node.expression, empty=True))
    if isinstance(node, exp.JSONBExtract):
        value = exp.Literal.string(jsonb_layout(piece)) if found else exp.null()
        return exp.Cast(this=value, to=exp.DataType.build("JSONB"))
    text = scalar_text(piece) if found else None
    return exp.Literal.string(text) if text is not None else exp.Cast(this=exp.null(), to=exp.DataType.build("TEXT"))


def _step(current: exp.Expression, element: str, scalar: bool) -> exp.Expression:
    kind = exp.JSONExtractScalar if scalar else exp.JSONExtract
    key = kind(this=current.copy(), only_json_types=True,
               expression=exp.JSONPath(expressions=[exp.JSONPathRoot(), exp.JSONPathKey(this=element)]))
    if not _INTEGER.fullmatch(element):
        return key
    index = kind(this=current.copy(), only_json_types=True,
                 expression=exp.JSONPath(expressions=[exp.JSONPathRoot(), exp.JSONPathSubscript(this=int(element))]))
    def is_(kind: str) -> exp.Expression:
        return exp.EQ(this=exp.Anonymous(this="json_type", expressions=[current.copy()]),
                      expression=exp.Literal.string(kind))

    step = exp.Case(ifs=[exp.If(this=is_("OBJECT"), true=key), exp.If(this=is_("ARRAY"), true=index)])
    kind = json_type(current)
    if kind is not None and not scalar:
        step.meta[JSON_KIND] = kind.copy()
    return step


def json_path(node: exp.Expression) -> exp.Expression:
    """`#>`/`#>>` written as steps (see the module docstring); other nodes as they are."""
    if not isinstance(node, (exp.JSONBExtract, exp.JSONBExtractScalar)):
        return node
    document = _constant_document(node.this)
    if document is not _NOT_CONSTANT:
        return _folded(node, document)
    elements = _elements(node.expression)
    current: exp.Expression = node.this
    for i, element in enumerate(elements):
        last = i == len(elements) - 1
        current = _step(current, element, last and isinstance(node, exp.JSONBExtractScalar))
    return current
