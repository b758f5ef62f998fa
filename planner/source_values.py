"""A PostgreSQL source's jsonb, array or enum text, read as a value where the residual
computes on it.

A PostgreSQL source hands these over as PostgreSQL's own text (connectors.postgres.types);
planner.kept_texts refuses computing on such a text, except where this module rewrites
the column, in place, into a value of the engine whose answers are PostgreSQL's:

- jsonb: cast to JSONB, where an operator or function of json reads it (`->`, `->>`,
  `#>`, `#>>`, `@>`, `?`, jsonb_typeof(), ...): the engine's json rewrites
  (connectors.dialects.duckdb_json*) answer those as PostgreSQL does. The jsonb itself is
  not compared, grouped or sorted: PostgreSQL's jsonb equality and order are numeric on
  numbers (`1.0` equals `1.00`), its text's are not.
- an array of integers, booleans or text: parsed from array_out's text (`{a,"b c",NULL}`)
  into a list of its elements, where a subscript or slice, array_length(), cardinality(),
  unnest() or ANY/ALL reads it (connectors.dialects.duckdb_arrays answers those as
  PostgreSQL does). A value of more than one dimension, or with explicit bounds
  (`[0:1]={1,2}`), is refused (0A000) when the row is computed: the list has no such
  shape. The array itself is not compared, grouped or sorted.
- an enum: its labels are distinct, so grouping it and its equality with a label (`=`,
  `<>`, IN) are its text's; it is ordered (ORDER BY, <, >, min(), max()) by the position
  of its label in the declared order (pg_enum.enumsortorder, which catalog discovery
  reads). A literal that is no label is PostgreSQL's 22P02.

    frag_0.payload ->> 'k'      ->  CAST(frag_0.payload AS JSONB) ->> 'k'
    frag_0.tags[1]              ->  <list of frag_0.tags' elements>[1]
    ORDER BY frag_0.st          ->  ORDER BY CASE frag_0.st WHEN 'new' THEN 1 WHEN ... END
    MAX(frag_0.st)              ->  ARG_MAX(frag_0.st, CASE frag_0.st WHEN ... END)
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, PgError


class EnumText(str):
    """The PostgreSQL type name of an enum a source hands over as text, with its labels
    in their declared order."""

    labels: tuple[str, ...]

    def __new__(cls, name: str, labels: Sequence[str]) -> EnumText:
        made = super().__new__(cls, name)
        made.labels = tuple(labels)
        return made


_JSON_USES = (exp.JSONExtract, exp.JSONExtractScalar, exp.JSONBExtract, exp.JSONBExtractScalar,
              exp.ArrayContainsAll, exp.JSONBContainsTopKey)
_JSON_FUNCTIONS = ("jsonb_typeof", "jsonb_array_length", "jsonb_object_keys",
                   "jsonb_array_elements", "jsonb_array_elements_text")
# array_out's text of these element types parses exactly into a list (format_type's names)
_ELEMENTS = {"integer[]": "INT", "bigint[]": "BIGINT", "smallint[]": "SMALLINT",
             "boolean[]": "BOOLEAN", "text[]": "TEXT"}
_ARRAY_USES = (exp.Bracket, exp.ArraySize, exp.Explode, exp.Unnest, exp.Any, exp.All)
_ARRAY_FUNCTIONS = ("cardinality", "all")
_ORDERS = (exp.LT, exp.LTE, exp.GT, exp.GTE)
_EQUALITIES = (exp.EQ, exp.NEQ)
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


def as_value(column: exp.Column, kept: str, residual: exp.Expression) -> bool:
    """Rewrite `column`, which reads a source's text of PostgreSQL type `kept`, into the
    value its use needs, if that use is answered exactly; whether it is."""
    if isinstance(kept, EnumText):
        return _enum(column, kept)
    parent = _above_parens(column)
    if kept == "jsonb" and (isinstance(parent, _JSON_USES) and parent.this is _below(column, parent)
                            or _called(parent, _JSON_FUNCTIONS)):
        column.replace(exp.Cast(this=column.copy(), to=exp.DataType.build("JSONB", dialect="postgres")))
        residual.meta[DUCKDB_VALUES] = True
        return True
    if kept in _ELEMENTS and isinstance(parent, exp.Bracket) and parent.this is _below(column, parent):
        if isinstance(parent.parent, exp.Bracket) or len(parent.expressions) != 1:
            return False  # more subscripts than the list has dimensions
        column.replace(array_value(column.copy(), _ELEMENTS[kept]))  # the dialect subscripts it
        residual.meta[DUCKDB_VALUES] = True
        return True
    if kept in _ELEMENTS and (isinstance(parent, _ARRAY_USES) and parent.this is _below(column, parent)
                              or _called(parent, _ARRAY_FUNCTIONS)):
        column.replace(array_value(column.copy(), _ELEMENTS[kept]))
        residual.meta[DUCKDB_VALUES] = True
        return True
    return False


def _above_parens(node: exp.Expression) -> exp.Expression | None:
    parent = node.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    return parent


def _below(node: exp.Expression, ancestor: exp.Expression) -> exp.Expression:
    """The child of `ancestor` that holds `node`."""
    while node.parent is not ancestor:
        node = node.parent
    return node


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


def _enum(column: exp.Column, kept: EnumText) -> bool:
    parent = _above_parens(column)
    if isinstance(parent, exp.Group):
        return True
    if isinstance(parent, exp.In) and parent.this is column and not parent.args.get("query"):
        return all(_label(e, kept) is not None for e in parent.expressions)
    if isinstance(parent, _EQUALITIES + _ORDERS):
        other = parent.expression if _below(column, parent) is parent.this else parent.this
        label = _label(other, kept)
        if label is None:
            return False
        if isinstance(parent, _ORDERS):
            other.replace(exp.Literal.number(kept.labels.index(label) + 1))
            column.replace(position(column.copy(), kept))
        return True
    if isinstance(parent, exp.Ordered):
        column.replace(position(column.copy(), kept))
        return True
    if isinstance(parent, (exp.Min, exp.Max)) and parent.this is column:
        which = exp.ArgMin if isinstance(parent, exp.Min) else exp.ArgMax
        parent.replace(which(this=column.copy(), expression=position(column.copy(), kept)))
        return True
    return False


def _label(node: exp.Expression, kept: EnumText) -> str | None:
    """The label a string literal names (PostgreSQL's 22P02 if none); None if `node` is
    no string literal."""
    while isinstance(node, exp.Paren):
        node = node.this
    if not (isinstance(node, exp.Literal) and node.is_string):
        return None
    if node.name not in kept.labels:
        raise PgError(INVALID_TEXT_REPRESENTATION, f'invalid input value for enum {kept}: "{node.name}"')
    return node.name


def position(value: exp.Expression, kept: EnumText) -> exp.Expression:
    """The position of `value`'s label in the enum's declared order (NULL for NULL)."""
    return exp.Case(this=value, ifs=[exp.If(this=exp.Literal.string(label), true=exp.Literal.number(i + 1))
                                     for i, label in enumerate(kept.labels)])
