"""A PostgreSQL source's enum, read as its labels where the residual computes on it
(planner.source_values rewrites a source's other texts).

Its labels are distinct, so grouping it, count(DISTINCT), PARTITION BY, its equality with
a label (`=`, `<>`, IS [NOT] DISTINCT FROM, IN, `CASE st WHEN 'label'`) or with a column of
the same enum, and `||` with a string are its text's; it is ordered (ORDER BY, <, >, min(),
max(), against a label or a column of the same enum) by the position of its label in the
declared order (pg_enum.enumsortorder, which catalog discovery reads). A literal that is
no label is PostgreSQL's 22P02. A value of the enum that is no column (a parameter or a
cast typed as the enum, planner.enum_values; a coalesce() of its columns with labels) is
compared and ordered as a label is (check_enum_value); one of another use is refused. A
parameter of the enum's array (`st = ANY($1)`) is text[] in the engine, compared as texts
and ordered by its labels' positions.

    ORDER BY frag_0.st          ->  ORDER BY CASE frag_0.st WHEN 'new' THEN 1 WHEN ... END
    MAX(frag_0.st)              ->  ARG_MAX(frag_0.st, CASE frag_0.st WHEN ... END)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from pgwire.errors import DATATYPE_MISMATCH, INVALID_TEXT_REPRESENTATION, UNDEFINED_FUNCTION, PgError

class EnumText(str):
    """The PostgreSQL type name of an enum a source hands over as text, with its labels
    in their declared order; and the source, its OID of the enum and the enum's typname,
    by which an output of it is described (gateway.executor.enum_types); the source's OID of
    its array type (0: not read), by which a parameter of that is described."""

    labels: tuple[str, ...]
    source: str
    oid: int | None
    typname: str
    array_oid: int

    def __new__(cls, name: str, labels: Sequence[str], source: str = "", oid: int | None = None,
                typname: str = "", array_oid: int = 0) -> EnumText:
        made = super().__new__(cls, name)
        made.labels = tuple(labels)
        made.source, made.oid, made.typname, made.array_oid = source, oid, typname or name, array_oid
        return made

    def __deepcopy__(self, memo: dict) -> EnumText:
        return self  # immutable: a copied tree's node meta (ENUM_EXTREME) keeps it as it is


class EnumArray(str):
    """The PostgreSQL name of an array of an enum (`status[]`): a bind parameter's, compared
    with a column of the enum by ANY or ALL (planner.enum_values); `element`: the enum."""

    element: EnumText

    def __new__(cls, element: EnumText) -> EnumArray:
        made = super().__new__(cls, f"{element}[]")
        made.element = element
        return made

    def __deepcopy__(self, memo: dict) -> EnumArray:
        return self


def casts_to_other_enum(expression: exp.Expression, source: str) -> bool:
    """Whether `expression` casts to an enum (or its array) of a source other than `source`,
    which has no such type: the engine computes it (planner.pushdown)."""
    for datatype in expression.find_all(exp.DataType):
        kept = datatype.meta.get(ENUM_VALUE)
        if isinstance(kept, EnumText) and kept.source != source:
            return True
    return False


def enum_outputs(kept: dict[int, str]) -> tuple[dict[int, str], tuple[tuple[int, str, int, str], ...]]:
    """planner.kept_texts' outputs apart: those of another type, and the enums as
    (position, source, the source's OID of the enum, its typname) (QueryPlan.enum_outputs)."""
    enums = tuple((i, t.source, t.oid, t.typname) for i, t in sorted(kept.items())
                  if isinstance(t, EnumText) and t.oid is not None)
    return {i: t for i, t in kept.items() if not isinstance(t, EnumText)}, enums



_ORDERS = (exp.LT, exp.LTE, exp.GT, exp.GTE)
_EQUALITIES = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ)


def above_parens(node: exp.Expression) -> exp.Expression | None:
    """`node`'s parent, past any parentheses."""
    parent = node.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    return parent


def below(node: exp.Expression, ancestor: exp.Expression) -> exp.Expression:
    """The child of `ancestor` that holds `node`."""
    while node.parent is not ancestor:
        node = node.parent
    return node


# The type of a column of a fragment, by the catalog (planner.kept_texts), if known
TypeOf = Callable[[exp.Column], exp.DataType | None]


def _no_type(column: exp.Column) -> None:
    return None


def enum_as_value(column: exp.Column, kept: EnumText, kept_of: Callable[[exp.Column], str | None],
                  type_of: TypeOf = _no_type) -> bool:
    parent = above_parens(column)
    if isinstance(parent, exp.Group):
        return True
    # distinct labels are distinct texts: count(DISTINCT st) and PARTITION BY st are the text's
    if isinstance(parent, exp.Distinct) and isinstance(parent.parent, exp.Count):
        return True
    if isinstance(parent, exp.Window) and any(
            key is below(column, parent) for key in parent.args.get("partition_by") or ()):
        return True
    if isinstance(parent, exp.DPipe):
        other = parent.expression if below(column, parent) is parent.this else parent.this
        if _string(other) or isinstance(other, exp.Null) or _typed(other, kept_of, type_of) == "text":
            return True  # `st || 'x'`, `st || c.name`: the label's text and the string's (textanycat)
        _refuse_operands(parent, "||", other, kept, kept_of, type_of)
    if isinstance(parent, exp.In) and parent.this is column and not parent.args.get("query"):
        for value in parent.expressions:
            refuse_string_parameter("=", value, kept, False)
            _refuse_operands(parent, "=", value, kept, kept_of, type_of)
        return all(_value_of(e, kept) or _label(e, kept) is not None for e in parent.expressions)
    if isinstance(parent, exp.Case) and parent.this is below(column, parent):
        # `CASE st WHEN 'paid' THEN ...`: its equality with each label
        return all(_value_of(branch.this, kept) or _label(branch.this, kept) is not None
                   for branch in parent.args.get("ifs") or ())
    if isinstance(parent, _EQUALITIES + _ORDERS):
        other = parent.expression if below(column, parent) is parent.this else parent.this
        array = _quantified_array(other, kept)
        if array is not None:  # `st = ANY($1)`: equal as texts, ordered by the labels' positions
            if isinstance(parent, _ORDERS):
                array.replace(positions(array.copy(), kept))
                column.replace(position(column.copy(), kept))
            return True
        _refuse_other_enum(parent, other, kept, kept_of)
        refuse_string_parameter(OPERATORS.get(type(parent), "="), other, kept, parent.this is other)
        _refuse_operands(parent, OPERATORS.get(type(parent), "="), other, kept, kept_of, type_of)
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
        return _coalesced(parent, kept, kept_of, type_of)
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


# Set on the cast to text[] in the residual of a parameter of an array of an enum: the enum.
ENUM_ARRAY = "enum_array"


def _quantified_array(node: exp.Expression, kept: EnumText) -> exp.Expression | None:
    """The array of the enum `kept` that `node`, an ANY or ALL, compares with, if it is one."""
    if isinstance(node, exp.Anonymous) and node.name.upper() in ("ANY", "ALL") and len(node.expressions) == 1:
        array = node.expressions[0]
    elif isinstance(node, (exp.Any, exp.All)):
        array = node.this
    else:
        return None
    while isinstance(array, exp.Paren):
        array = array.this
    found = array.meta.get(ENUM_ARRAY)
    return array if isinstance(found, EnumText) and found == kept and found.labels == kept.labels else None


def positions(array: exp.Expression, kept: EnumText) -> exp.Expression:
    """The positions of an array's labels in the enum's declared order (NULL for NULL)."""
    label = exp.to_identifier("fedgate_label")
    made = exp.Cast(this=exp.Anonymous(this="list_transform", expressions=[
        array, exp.Lambda(this=position(exp.column(label), kept), expressions=[label])]),
        to=exp.DataType.build("INT[]", dialect="duckdb"))
    made.type = made.to.copy()
    return made


def _value_of(node: exp.Expression, kept: EnumText) -> bool:
    """Whether `node` is a value of the enum `kept` that is no column (a parameter)."""
    while isinstance(node, exp.Paren):
        node = node.this
    found = node.meta.get(ENUM_VALUE)
    return isinstance(found, EnumText) and found == kept and found.labels == kept.labels


def _coalesced(coalesce: exp.Coalesce, kept: EnumText, kept_of: Callable[[exp.Column], str | None],
               type_of: TypeOf) -> bool:
    """coalesce() of the enum's columns, values and labels (`coalesce(st, 'new')`): a value
    of the enum (ENUM_VALUE), if the engine answers its use (check_enum_value)."""
    if coalesce.meta.get(ENUM_VALUE) is not None:
        return True  # its other column: checked with the first
    _refuse_coalesced(coalesce, kept_of, type_of)
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
    parent = above_parens(node)
    if isinstance(parent, exp.Alias):
        return isinstance(parent.parent, exp.Select) and parent.arg_key == "expressions"
    if isinstance(parent, exp.Select):
        return below(node, parent).arg_key == "expressions"
    if isinstance(parent, (exp.Is, exp.Coalesce, exp.Group)):  # its distinct labels group as texts
        return True
    if isinstance(parent, exp.Ordered):
        node.replace(position(node.copy(), kept))
        return True
    if isinstance(parent, (exp.Min, exp.Max)) and parent.this is below(node, parent):
        which = exp.ArgMin if isinstance(parent, exp.Min) else exp.ArgMax  # as of a column
        extreme = which(this=node.copy(), expression=position(node.copy(), kept))
        extreme.meta[ENUM_EXTREME] = kept
        parent.replace(extreme)
        return True
    if isinstance(parent, exp.If) and parent.this is below(node, parent) and isinstance(parent.parent, exp.Case):
        return _same_enum(parent.parent.this, kept, kept_of)  # `CASE st WHEN $1`: equal as texts
    if isinstance(parent, exp.In) and parent.this is below(node, parent) and not parent.args.get("query"):
        return all(_label(e, kept) is not None for e in parent.expressions)
    if isinstance(parent, _EQUALITIES + _ORDERS):
        other = parent.expression if below(node, parent) is parent.this else parent.this
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


# PostgreSQL's names of the engine's types an operand beside an enum may have
_PG_NAMES = {exp.DataType.Type.TEXT: "text", exp.DataType.Type.VARCHAR: "text", exp.DataType.Type.INT: "integer",
             exp.DataType.Type.BIGINT: "bigint", exp.DataType.Type.SMALLINT: "smallint",
             exp.DataType.Type.BOOLEAN: "boolean", exp.DataType.Type.DOUBLE: "double precision",
             exp.DataType.Type.DATE: "date"}


def _typed(node: exp.Expression, kept_of: Callable[[exp.Column], str | None], type_of: TypeOf) -> str | None:
    """PostgreSQL's name of the type of `node`, an operand beside an enum, where known: an
    enum's, or (a column of another source, an expression) its annotated type's; None for
    a source's text of another type, a literal, a parameter or a type not known."""
    while isinstance(node, exp.Paren):
        node = node.this
    found = kept_of(node) if isinstance(node, exp.Column) else node.meta.get(ENUM_VALUE)
    if isinstance(found, EnumText):
        return found.typname
    if found is not None or isinstance(node, (exp.Null, exp.Parameter)) or ENUM_VALUE in node.meta \
            or isinstance(node, exp.Literal) and node.is_string:
        return None
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Parameter):
        return None  # a parameter (refuse_string_parameter says what a declared one is)
    if isinstance(node, exp.Literal):  # a number: PostgreSQL's integer where it fits
        return "integer" if node.this.isdigit() and int(node.this) < 2**31 else None
    known = node.type if node.type is not None and node.type.this != exp.DataType.Type.UNKNOWN else \
        type_of(node) if isinstance(node, exp.Column) else None
    return _PG_NAMES.get(known.this) if known is not None else None


def _refuse_operands(operation: exp.Expression, operator: str, other: exp.Expression, kept: EnumText,
                     kept_of: Callable[[exp.Column], str | None], type_of: TypeOf) -> None:
    """An enum beside a value of a known other type (`st = c.name`, `st || 1`): PostgreSQL
    has no such operator (42883); a column of the same enum is compared, not concatenated."""
    other_type = _typed(other, kept_of, type_of)
    if other_type is None or other_type == kept.typname and operator != "||":
        return
    on_the_left = operation.this is not None and below(other, operation) is operation.this \
        if other is not operation else False
    left, right = (other_type, kept.typname) if on_the_left else (kept.typname, other_type)
    raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: {left} {operator} {right}",
                  hint="No operator matches the given name and argument types. You might need "
                  "to add explicit type casts.")


def _refuse_coalesced(coalesce: exp.Coalesce, kept_of: Callable[[exp.Column], str | None], type_of: TypeOf) -> None:
    """coalesce() of an enum and a value of a known other type: PostgreSQL's 42804."""
    names = [_typed(argument, kept_of, type_of) for argument in coalesce.iter_expressions()]
    known = [n for n in names if n is not None]
    other = next((n for n in known if n != known[0]), None)
    if other is not None:
        raise PgError(DATATYPE_MISMATCH, f"COALESCE types {known[0]} and {other} cannot be matched")


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
