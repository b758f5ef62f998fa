"""A PostgreSQL source's jsonb, array or enum text, read as a value where the residual
computes on it.

A PostgreSQL source hands these over as PostgreSQL's own text (connectors.postgres.types);
planner.kept_texts refuses computing on such a text, except where this module rewrites
the column, in place, into a value of the engine whose answers are PostgreSQL's:

- jsonb: cast to JSONB, where an operator or function of json reads it (`->`, `->>`,
  `#>`, `#>>`, `@>`, `?`, jsonb_typeof(), ...): the engine's json rewrites
  (connectors.dialects.duckdb.json*) answer those as PostgreSQL does. The jsonb itself is
  not compared, grouped or sorted: PostgreSQL's jsonb equality and order are numeric on
  numbers (`1.0` equals `1.00`), its text's are not. Nor is what `->` or `#>` makes of it
  ordered (ORDER BY, <, >, min(), max(), directly, by its output's name or position, or
  from a derived table): jsonb's order (null < strings < numbers < booleans < arrays <
  objects, objects by their number of keys first) is not its text's (JsonbValue).
- an array of integers, booleans or text: parsed from array_out's text (`{a,"b c",NULL}`)
  into a list of its elements, where a subscript or slice, array_length(), cardinality(),
  unnest() (in the select list or in FROM, WITH ORDINALITY too), ANY/ALL,
  array_position(), `||`, array_append() or array_cat() reads it, and array_to_string()
  of integers or text (a boolean element prints `t` in PostgreSQL, `true` in the engine)
  (connectors.dialects.duckdb.arrays answers those as PostgreSQL does). A value of more than one dimension, or with explicit bounds
  (`[0:1]={1,2}`), is refused (0A000) when the row is computed: the list has no such
  shape. The array itself is not compared, grouped or sorted.
- an enum: planner.source_enums.

    frag_0.payload ->> 'k'      ->  CAST(frag_0.payload AS JSONB) ->> 'k'
    frag_0.tags[1]              ->  <list of frag_0.tags' elements>[1]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from planner.source_enums import EnumText, TypeOf, above_parens, below, enum_as_value


class JsonbValue(str):
    """The mark of an output that is a source jsonb's `->` or `#>` (planner.kept_texts): a
    value of the engine, passed through or read by a json operator, never ordered."""


_JSON_USES = (exp.JSONExtract, exp.JSONExtractScalar, exp.JSONBExtract, exp.JSONBExtractScalar,
              exp.ArrayContainsAll, exp.JSONBContainsTopKey)
# `->` and `#>`: their answer is a jsonb again
_JSONB_RESULTS = (exp.JSONExtract, exp.JSONBExtract)
# where a value is ordered, which jsonb's text is not as jsonb is
_ORDERED_USES = (exp.Ordered, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Between, exp.Min, exp.Max,
                 exp.ArgMin, exp.ArgMax, exp.Greatest, exp.Least)
_JSON_FUNCTIONS = ("jsonb_typeof", "jsonb_array_length", "jsonb_object_keys",
                   "jsonb_array_elements", "jsonb_array_elements_text")
# array_out's text of these element types parses exactly into a list (format_type's names)
_ELEMENTS = {"integer[]": "INT", "bigint[]": "BIGINT", "smallint[]": "SMALLINT",
             "boolean[]": "BOOLEAN", "text[]": "TEXT"}
_ARRAY_USES = (exp.Bracket, exp.ArraySize, exp.Explode, exp.Any, exp.All, exp.ArrayPosition,
               exp.ArrayAppend, exp.ArrayConcat, exp.DPipe)
_ARRAY_FUNCTIONS = ("cardinality", "all")
# array_to_string() writes each element as the engine prints it: a boolean as `true`, where
# array_out writes `t`
_PRINTED_ELEMENTS = ("integer[]", "bigint[]", "smallint[]", "text[]")
MULTIDIMENSIONAL = ("an array of more than one dimension or with explicit bounds from a source, "
                    "computed on in the engine, is not supported by fedgate outside PostgreSQL sources")


# Set in the residual's meta where a jsonb or an array is read as a value: the rewrites
# that answer them are DuckDB's (connectors.dialects), so only that engine runs it.
DUCKDB_VALUES = "source_values_in_duckdb"


def refuse_outside_duckdb(residual: exp.Expression, engine: str) -> None:
    """0A000 for a residual that reads a jsonb or an array as a value, in an engine other
    than DuckDB."""
    if residual.meta.get(DUCKDB_VALUES):
        raise PgError(FEATURE_NOT_SUPPORTED, "a jsonb or an array of a PostgreSQL source computed on "
                      f"in the engine is not supported by fedgate's {engine} engine (DuckDB's "
                      "rewrites read its values): SET fedgate.engine = 'duckdb'")


def as_value(column: exp.Column, kept: str, residual: exp.Expression,
             kept_of: Callable[[exp.Column], str | None], type_of: TypeOf | None = None) -> bool:
    """Rewrite `column`, which reads a source's text of PostgreSQL type `kept`, into the
    value its use needs, if that use is answered exactly; whether it is. `kept_of`: the
    PostgreSQL type whose text another column of the residual reads, if it reads one;
    `type_of`: another column's type, as the catalog has it."""
    if isinstance(kept, EnumText):
        return enum_as_value(column, kept, kept_of, *([type_of] if type_of else []))
    parent = above_parens(column)
    if kept == "jsonb" and (isinstance(parent, _JSON_USES) and parent.this is below(column, parent)
                            or _called(parent, _JSON_FUNCTIONS)):
        if is_ordered(_jsonb_result(parent)):
            return False
        value = exp.Cast(this=column.copy(), to=exp.DataType.build("JSONB", dialect="postgres"))
        value.meta[_SOURCE_JSONB] = True
        column.replace(value)
        residual.meta[DUCKDB_VALUES] = True
        return True
    if kept in _ELEMENTS and isinstance(parent, exp.Bracket) and parent.this is below(column, parent):
        if isinstance(parent.parent, exp.Bracket) or len(parent.expressions) != 1:
            return False  # more subscripts than the list has dimensions
        column.replace(array_value(column.copy(), _ELEMENTS[kept]))  # the dialect subscripts it
        residual.meta[DUCKDB_VALUES] = True
        return True
    if kept in _ELEMENTS and (isinstance(parent, _ARRAY_USES) and parent.this is below(column, parent)
                              or isinstance(parent, (exp.ArrayConcat, exp.DPipe))
                              or _called(parent, _ARRAY_FUNCTIONS) or _unnested(column, parent)
                              or kept in _PRINTED_ELEMENTS and isinstance(parent, exp.ArrayToString)
                              and parent.this is below(column, parent)):
        column.replace(array_value(column.copy(), _ELEMENTS[kept]))
        residual.meta[DUCKDB_VALUES] = True
        return True
    return False


_SOURCE_JSONB = "source_jsonb"


def _jsonb_result(use: exp.Expression) -> exp.Expression | None:
    """The outermost `->` / `#>` of the chain `use` starts (`(j -> 'a') #> '{b}'`): the
    jsonb a source's jsonb becomes; None when `use` gives no jsonb (`->>`, jsonb_typeof())."""
    if not isinstance(use, _JSONB_RESULTS):
        return None
    while True:
        above = above_parens(use)
        if not (isinstance(above, _JSONB_RESULTS) and above.this is below(use, above)):
            return use
        use = above


def is_ordered(value: exp.Expression | None) -> bool:
    return value is not None and isinstance(above_parens(value), _ORDERED_USES)


def jsonb_value(expression: exp.Expression) -> bool:
    """Whether `expression` is a source jsonb's `->` / `#>`, as rewritten by as_value."""
    node = expression
    while isinstance(node, _JSONB_RESULTS + (exp.Paren,)):
        node = node.this
    return node is not expression and isinstance(node, exp.Cast) and bool(node.meta.get(_SOURCE_JSONB))


def _unnested(column: exp.Column, parent: exp.Expression | None) -> bool:
    """unnest(a) of one array, in the select list or in FROM (`FROM t, unnest(t.a) AS u(x)`)."""
    return isinstance(parent, exp.Unnest) and len(parent.expressions) == 1 \
        and parent.expressions[0] is below(column, parent)


def _called(parent: exp.Expression | None, names: tuple[str, ...]) -> bool:
    return isinstance(parent, exp.Anonymous) and parent.name.lower() in names



def array_value(text: exp.Expression, element: str) -> exp.Expression:
    """The list array_out's `text` spells: its items are quoted (`"a b"`, with backslash
    escapes) or bare, and a bare NULL is a NULL element."""
    item = exp.to_identifier("fedgate_item")
    read = exp.column(item)
    quoted = exp.Anonymous(this="regexp_replace", expressions=[
        exp.Substring(this=read.copy(), start=exp.Literal.number(2),
                      length=exp.Sub(this=exp.Length(this=read.copy()), expression=exp.Literal.number(2))),
        exp.Literal.string(r"\\(.)"), exp.Literal.string(r"\1"), exp.Literal.string("g")])
    each = exp.Case(ifs=[
        exp.If(this=exp.EQ(this=read.copy(), expression=exp.Literal.string("NULL")), true=exp.null()),
        exp.If(this=exp.Like(this=read.copy(), expression=exp.Literal.string('"%')), true=quoted),
    ], default=read.copy())
    items = exp.Anonymous(this="regexp_extract_all", expressions=[
        text.copy(), exp.Literal.string(r'"(?:[^"\\]|\\.)*"|[^,{}"]+')])
    listed: exp.Expression = exp.Anonymous(this="list_transform", expressions=[
        items, exp.Lambda(this=each, expressions=[item])])
    shaped = exp.or_(exp.Like(this=text.copy(), expression=exp.Literal.string("{{%")),
                     exp.Like(this=text.copy(), expression=exp.Literal.string("[%")))
    checked = exp.Case(ifs=[exp.If(this=shaped, true=exp.Anonymous(
        this="error", expressions=[exp.Literal.string(MULTIDIMENSIONAL)]))], default=listed)
    # typed, so that the dialect's array rewrites (subscripts, ANY, ...) know it for a list
    value = exp.Cast(this=checked, to=exp.DataType.build(f"{element}[]", dialect="duckdb"))
    value.type = value.to.copy()
    return value
