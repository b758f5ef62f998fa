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
- an enum: its labels are distinct, so grouping it, count(DISTINCT), PARTITION BY, its
  equality with a label (`=`, `<>`, IS [NOT] DISTINCT FROM, IN, `CASE st WHEN 'label'`)
  or with a column of the same enum, and `||` with
  a string are its text's; it is ordered (ORDER BY, <, >, min(), max(), against a label
  or a column of the same enum) by the position of its label in the declared order
  (pg_enum.enumsortorder, which catalog discovery reads). A literal that is no label is
  PostgreSQL's 22P02. A value of the enum that is no column (a parameter or a cast typed
  as the enum, planner.enum_values; a coalesce() of its columns with labels) is compared
  and ordered as a label is (check_enum_value); one of another use is refused.

    frag_0.payload ->> 'k'      ->  CAST(frag_0.payload AS JSONB) ->> 'k'
    frag_0.tags[1]              ->  <list of frag_0.tags' elements>[1]
    ORDER BY frag_0.st          ->  ORDER BY CASE frag_0.st WHEN 'new' THEN 1 WHEN ... END
    MAX(frag_0.st)              ->  ARG_MAX(frag_0.st, CASE frag_0.st WHEN ... END)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, UNDEFINED_FUNCTION, PgError


class JsonbValue(str):
    """The mark of an output that is a source jsonb's `->` or `#>` (planner.kept_texts): a
    value of the engine, passed through or read by a json operator, never ordered."""


class EnumText(str):
    """The PostgreSQL type name of an enum a source hands over as text, with its labels
    in their declared order; and the source, its OID of the enum and the enum's typname,
    by which an output of it is described (gateway.executor.enum_types)."""

    labels: tuple[str, ...]
    source: str
    oid: int | None
    typname: str

    def __new__(cls, name: str, labels: Sequence[str], source: str = "", oid: int | None = None,
                typname: str = "") -> EnumText:
        made = super().__new__(cls, name)
        made.labels = tuple(labels)
        made.source, made.oid, made.typname = source, oid, typname or name
        return made

    def __deepcopy__(self, memo: dict) -> EnumText:
        return self  # immutable: a copied tree's node meta (ENUM_EXTREME) keeps it as it is


def enum_outputs(kept: dict[int, str]) -> tuple[dict[int, str], tuple[tuple[int, str, int, str], ...]]:
    """planner.kept_texts' outputs apart: those of another type, and the enums as
    (position, source, the source's OID of the enum, its typname) (QueryPlan.enum_outputs)."""
    enums = tuple((i, t.source, t.oid, t.typname) for i, t in sorted(kept.items())
                  if isinstance(t, EnumText) and t.oid is not None)
    return {i: t for i, t in kept.items() if not isinstance(t, EnumText)}, enums


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
_ORDERS = (exp.LT, exp.LTE, exp.GT, exp.GTE)
_EQUALITIES = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ)
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
             kept_of: Callable[[exp.Column], str | None]) -> bool:
    """Rewrite `column`, which reads a source's text of PostgreSQL type `kept`, into the
    value its use needs, if that use is answered exactly; whether it is. `kept_of`: the
    PostgreSQL type whose text another column of the residual reads, if it reads one."""
    if isinstance(kept, EnumText):
        return _enum(column, kept, kept_of)
    parent = _above_parens(column)
    if kept == "jsonb" and (isinstance(parent, _JSON_USES) and parent.this is _below(column, parent)
                            or _called(parent, _JSON_FUNCTIONS)):
        if is_ordered(_jsonb_result(parent)):
            return False
        value = exp.Cast(this=column.copy(), to=exp.DataType.build("JSONB", dialect="postgres"))
        value.meta[_SOURCE_JSONB] = True
        column.replace(value)
        residual.meta[DUCKDB_VALUES] = True
        return True
    if kept in _ELEMENTS and isinstance(parent, exp.Bracket) and parent.this is _below(column, parent):
        if isinstance(parent.parent, exp.Bracket) or len(parent.expressions) != 1:
            return False  # more subscripts than the list has dimensions
        column.replace(array_value(column.copy(), _ELEMENTS[kept]))  # the dialect subscripts it
        residual.meta[DUCKDB_VALUES] = True
        return True
    if kept in _ELEMENTS and (isinstance(parent, _ARRAY_USES) and parent.this is _below(column, parent)
                              or isinstance(parent, (exp.ArrayConcat, exp.DPipe))
                              or _called(parent, _ARRAY_FUNCTIONS) or _unnested(column, parent)
                              or kept in _PRINTED_ELEMENTS and isinstance(parent, exp.ArrayToString)
                              and parent.this is _below(column, parent)):
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
        above = _above_parens(use)
        if not (isinstance(above, _JSONB_RESULTS) and above.this is _below(use, above)):
            return use
        use = above


def is_ordered(value: exp.Expression | None) -> bool:
    return value is not None and isinstance(_above_parens(value), _ORDERED_USES)


def jsonb_value(expression: exp.Expression) -> bool:
    """Whether `expression` is a source jsonb's `->` / `#>`, as rewritten by as_value."""
    node = expression
    while isinstance(node, _JSONB_RESULTS + (exp.Paren,)):
        node = node.this
    return node is not expression and isinstance(node, exp.Cast) and bool(node.meta.get(_SOURCE_JSONB))


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


def _unnested(column: exp.Column, parent: exp.Expression | None) -> bool:
    """unnest(a) of one array, in the select list or in FROM (`FROM t, unnest(t.a) AS u(x)`)."""
    return isinstance(parent, exp.Unnest) and len(parent.expressions) == 1 \
        and parent.expressions[0] is _below(column, parent)


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


def _enum(column: exp.Column, kept: EnumText, kept_of: Callable[[exp.Column], str | None]) -> bool:
    parent = _above_parens(column)
    if isinstance(parent, exp.Group):
        return True
    # distinct labels are distinct texts: count(DISTINCT st) and PARTITION BY st are the text's
    if isinstance(parent, exp.Distinct) and isinstance(parent.parent, exp.Count):
        return True
    if isinstance(parent, exp.Window) and any(
            key is _below(column, parent) for key in parent.args.get("partition_by") or ()):
        return True
    if isinstance(parent, exp.DPipe) and _string(parent.expression if _below(column, parent)
                                                 is parent.this else parent.this):
        return True  # `st || 'x'` is the label's text and the string's (textanycat)
    if isinstance(parent, exp.In) and parent.this is column and not parent.args.get("query"):
        for value in parent.expressions:
            refuse_string_parameter("=", value, kept, False)
        return all(_value_of(e, kept) or _label(e, kept) is not None for e in parent.expressions)
    if isinstance(parent, exp.Case) and parent.this is _below(column, parent):
        # `CASE st WHEN 'paid' THEN ...`: its equality with each label
        return all(_value_of(branch.this, kept) or _label(branch.this, kept) is not None
                   for branch in parent.args.get("ifs") or ())
    if isinstance(parent, _EQUALITIES + _ORDERS):
        other = parent.expression if _below(column, parent) is parent.this else parent.this
        _refuse_other_enum(parent, other, kept, kept_of)
        refuse_string_parameter(OPERATORS.get(type(parent), "="), other, kept, parent.this is other)
        # `e.st < f.st`: both by their labels' positions; `=` by their texts. The other
        # column, replaced, is no longer the residual's (planner.kept_texts skips it); a
        # parameter by its label's position too
        if _same_enum(other, kept, kept_of) or _value_of(other, kept):
            if isinstance(parent, _ORDERS):
                other.replace(position(other.copy(), kept))
                column.replace(position(column.copy(), kept))
            return True
        return _compared_with_label(parent, other, column, kept)
    if isinstance(parent, exp.Ordered):
        column.replace(position(column.copy(), kept))
        return True
    if isinstance(parent, exp.Coalesce):
        return _coalesced(parent, kept, kept_of)
    if isinstance(parent, (exp.Min, exp.Max)) and parent.this is column:
        which = exp.ArgMin if isinstance(parent, exp.Min) else exp.ArgMax
        extreme = which(this=column.copy(), expression=position(column.copy(), kept))
        extreme.meta[ENUM_EXTREME] = kept  # still of the enum (planner.kept_texts marks it)
        parent.replace(extreme)
        return True
    return False


# Set on the ARG_MIN / ARG_MAX a min() or max() of an enum becomes: its EnumText.
ENUM_EXTREME = "enum_extreme"
# Set on the type of a value of an enum that is no column (a parameter compared with one),
# and on its cast to text in the residual: its EnumText (planner.enum_values).
ENUM_VALUE = "enum_value"


def _value_of(node: exp.Expression, kept: EnumText) -> bool:
    """Whether `node` is a value of the enum `kept` that is no column (a parameter)."""
    while isinstance(node, exp.Paren):
        node = node.this
    found = node.meta.get(ENUM_VALUE)
    return isinstance(found, EnumText) and found == kept and found.labels == kept.labels


def _coalesced(coalesce: exp.Coalesce, kept: EnumText, kept_of: Callable[[exp.Column], str | None]) -> bool:
    """coalesce() of the enum's columns, values and labels (`coalesce(st, 'new')`): a value
    of the enum (ENUM_VALUE), if the engine answers its use (check_enum_value)."""
    if coalesce.meta.get(ENUM_VALUE) is not None:
        return True  # its other column: checked with the first
    for argument in coalesce.iter_expressions():
        if not (_same_enum(argument, kept, kept_of) or _value_of(argument, kept) or isinstance(argument, exp.Null)
                or _label(argument, kept) is not None):
            return False
    coalesce.meta[ENUM_VALUE] = kept
    return check_enum_value(coalesce, kept, kept_of)


def check_enum_value(node: exp.Expression, kept: EnumText, kept_of: Callable[[exp.Column], str | None]) -> bool:
    """Whether the engine answers the use of `node`, a value of the enum that is no column
    (a cast to it, planner.enum_values, or a coalesce() of its columns) as PostgreSQL does:
    passed through, tested for NULL, coalesced, grouped or ordered by, compared with a column of the
    enum (whose own rewrite orders both) or with a label (ordered by the labels' positions)."""
    parent = _above_parens(node)
    if isinstance(parent, exp.Alias):
        return isinstance(parent.parent, exp.Select) and parent.arg_key == "expressions"
    if isinstance(parent, exp.Select):
        return _below(node, parent).arg_key == "expressions"
    if isinstance(parent, (exp.Is, exp.Coalesce, exp.Group)):  # its distinct labels group as texts
        return True
    if isinstance(parent, exp.Ordered):
        node.replace(position(node.copy(), kept))
        return True
    if isinstance(parent, exp.If) and parent.this is _below(node, parent) and isinstance(parent.parent, exp.Case):
        return _same_enum(parent.parent.this, kept, kept_of)  # `CASE st WHEN $1`: equal as texts
    if isinstance(parent, exp.In) and parent.this is _below(node, parent) and not parent.args.get("query"):
        return all(_label(e, kept) is not None for e in parent.expressions)
    if isinstance(parent, _EQUALITIES + _ORDERS):
        other = parent.expression if _below(node, parent) is parent.this else parent.this
        return _same_enum(other, kept, kept_of) or _compared_with_label(parent, other, node, kept)
    return False


def _compared_with_label(parent: exp.Expression, other: exp.Expression, value: exp.Expression,
                         kept: EnumText) -> bool:
    """`value`, of the enum `kept`, compared with `other`: True when `other` is one of its
    labels, both then replaced by the labels' positions when `parent` orders them."""
    label = _label(other, kept)
    if label is None:
        return False
    if isinstance(parent, _ORDERS):
        other.replace(exp.Literal.number(kept.labels.index(label) + 1))
        value.replace(position(value.copy(), kept))
    return True


def _string(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Literal) and node.is_string


def _same_enum(node: exp.Expression, kept: EnumText, kept_of: Callable[[exp.Column], str | None]) -> bool:
    """Whether `node` is a column of the same enum as `kept` (same name, same labels)."""
    if not isinstance(node, exp.Column):
        return False
    other = kept_of(node)
    return isinstance(other, EnumText) and other == kept and other.labels == kept.labels \
        and (other.source, other.oid) == (kept.source, kept.oid)


OPERATORS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


def _refuse_other_enum(comparison: exp.Expression, other: exp.Expression, kept: EnumText,
                       kept_of: Callable[[exp.Column], str | None]) -> None:
    """An enum compared with a column of another enum: PostgreSQL has no such operator
    (42883); compared as their texts (`a::text = b::text`) they are plain text."""
    found = kept_of(other) if isinstance(other, exp.Column) else None
    if not isinstance(found, EnumText) or _same_enum(other, kept, kept_of):
        return
    left, right = (kept, found) if comparison.this is not other else (found, kept)
    operator = OPERATORS.get(type(comparison), "=")
    raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: {left.typname} {operator} {right.typname}",
                  hint="No operator matches the given name and argument types. You might need "
                  "to add explicit type casts.")


# PostgreSQL's names of the types a client may declare a string parameter as
_STRING_TYPES = {exp.DataType.Type.TEXT: "text", exp.DataType.Type.VARCHAR: "character varying"}


def refuse_string_parameter(operator: str, other: exp.Expression, kept: EnumText, on_the_left: bool) -> None:
    """An enum compared with a parameter the client declared as text or varchar (pgJDBC's
    setString): PostgreSQL has no such operator (42883), as where the source compares them."""
    while isinstance(other, exp.Paren):
        other = other.this
    if not (isinstance(other, exp.Cast) and isinstance(other.this, exp.Parameter) and ENUM_VALUE not in other.meta
            and other.to.this in _STRING_TYPES and not other.to.expressions):
        return
    names = (str(kept), _STRING_TYPES[other.to.this])
    left, right = names[::-1] if on_the_left else names
    raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: {left} {operator} {right}",
                  hint="No operator matches the given name and argument types. You might need "
                  "to add explicit type casts.")


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
