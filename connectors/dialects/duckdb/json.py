"""json and jsonb where DuckDB answers otherwise: `->`, `->>`, to_json(), json_typeof(),
json_array_length(), `?`.

json (not jsonb) `->` and `->>` whose answer is an object or an array: refused.

PostgreSQL's json keeps its input text as written, so `'{"a": {"b": "x"}}'::json -> 'a'`
is `{"b": "x"}` with the input's spacing; DuckDB parses the text and writes the piece back
compact (`{"b":"x"}`). A scalar is the same text in both, so only an object or array
answer raises a refusal (0A000), when the row is computed. jsonb is printed PostgreSQL's
way by the gateway (gateway.executor.presented).

jsonb `->` and `->>` of the index 0 or -1 on a scalar: PostgreSQL stores a scalar jsonb
as a one-element array (jsonb.h's raw scalar), so `'null'::jsonb -> 0` is `null` and
`'5'::jsonb ->> -1` is `5`; DuckDB finds no element (NULL). The scalar is answered as is
(json is NULL there in both).

`to_json(numeric)`: PostgreSQL writes the numeric's text, at its display scale
(`to_json(1.50)` is `1.50`); DuckDB reads `1.50` as a double and drops zeros of a
DECIMAL's scale too (`1.5`). A numeric whose DuckDB DECIMAL has PostgreSQL's scale (a
constant, a numeric(p, s) column or cast, and +, -, * of those and integers) is written
as its text; any other numeric argument (a quotient, a function's, an array of numerics)
is refused.

`json_typeof(x)`, `jsonb_typeof(x)`: DuckDB has json_type(), which names its own types
(`VARCHAR`, `UBIGINT`, `DOUBLE` ...); written out with PostgreSQL's names (`string`,
`number` ...).

`json_array_length(x)`, `jsonb_array_length(x)`: DuckDB's answers 0 for an object or a
scalar, where PostgreSQL raises 22023; written out with json_type().

`jsonb ? key`: DuckDB has no such operator; written out with json_type(), json_keys()
and the top-level array's string elements.

`row_to_json(r)`: PostgreSQL writes each field by its type's output (a numeric at its
display scale, a timestamp as `2024-01-01T10:00:00`), DuckDB its own way (`1.5`,
`2024-01-01 10:00:00`): refused.
"""

from __future__ import annotations

from decimal import Decimal

from sqlglot import exp

from connectors.base import volatile_reason
from connectors.dialects.rules import call as _call, raised
from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

CONTAINER_REFUSED = ("json -> or ->> of an object or array (PostgreSQL keeps its text as "
                     "written) is not supported by fedgate outside PostgreSQL sources")
_JSON = exp.DataType.Type.JSON
_JSONB = exp.DataType.Type.JSONB
_CONTAINERS = [exp.Literal.string("OBJECT"), exp.Literal.string("ARRAY")]


NUMBER_REFUSED = ("json or jsonb -> or ->> of a document holding a number with a fraction or an "
                  "exponent (the engine reads it as a double) is not supported by fedgate outside "
                  "PostgreSQL sources")
ESCAPE_REFUSED = ("json -> of a document holding a backslash escape (PostgreSQL keeps it as written) "
                  "is not supported by fedgate outside PostgreSQL sources")
JSONB_CONTAINER_REFUSED = ("jsonb ->> of an object or array (PostgreSQL writes it in jsonb's layout) "
                           "is not supported by fedgate outside PostgreSQL sources")
VOLATILE_DOCUMENT_REFUSED = ("json -> or ->> of a volatile document is not supported by fedgate "
                             "outside PostgreSQL sources")
COMPARISON_REFUSED = ("comparing jsonb values (PostgreSQL compares them as values, 1.0 = 1) is not "
                      "supported by fedgate outside PostgreSQL sources")
TEXT_REFUSED = ("jsonb as text (PostgreSQL writes it in jsonb's layout) is not supported by fedgate "
                "outside PostgreSQL sources")
TO_JSON_REFUSED = ("to_json() of a numeric computed by the engine (PostgreSQL writes it at its "
                   "display scale) is not supported by fedgate outside PostgreSQL sources")
_DECIMAL = exp.DataType.Type.DECIMAL


def _is_to_json(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "to_json" \
        and len(node.expressions) == 1


ROW_TO_JSON_REFUSED = ("row_to_json() (PostgreSQL writes each field by its type's output) is not "
                       "supported by fedgate outside PostgreSQL sources")


def _is_row_to_json(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "row_to_json"


def _is_typeof(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() in ("json_typeof", "jsonb_typeof") \
        and len(node.expressions) == 1


# DuckDB's json_type() names, as json_typeof()/jsonb_typeof() name them; any other (BIGINT,
# UBIGINT, HUGEINT, DOUBLE: DuckDB's types of a JSON number) is 'number'.
_TYPE_NAMES = {"OBJECT": "object", "ARRAY": "array", "VARCHAR": "string", "BOOLEAN": "boolean",
               "NULL": "null"}


def _is_array_length(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and len(node.expressions) == 1 \
        and str(node.this).lower() in ("json_array_length", "jsonb_array_length")


def _array_length(node: exp.Anonymous) -> exp.Expression:
    """json_array_length(x)/jsonb_array_length(x): an array's length (int4); for an object
    or a scalar PostgreSQL's 22023, in its words."""
    document = node.expressions[0]
    kind = _call("json_type", document.copy())
    length = _call("json_array_length", document.copy())
    return exp.Case(ifs=[
        exp.If(this=exp.EQ(this=kind.copy(), expression=exp.Literal.string("ARRAY")),
               true=exp.Cast(this=length, to=exp.DataType.build("INT"))),
        exp.If(this=exp.EQ(this=kind.copy(), expression=exp.Literal.string("OBJECT")), true=raised(NOT_AN_ARRAY)),
        exp.If(this=exp.Not(this=exp.Is(this=kind, expression=exp.null())), true=raised(A_SCALAR))])


def _typeof(node: exp.Anonymous) -> exp.Expression:
    """json_typeof(x)/jsonb_typeof(x) from DuckDB's json_type(x): NULL for a NULL x."""
    kind = _call("json_type", node.expressions[0].copy())
    ifs = [exp.If(this=exp.Is(this=kind.copy(), expression=exp.null()), true=exp.null())]
    ifs += [exp.If(this=exp.EQ(this=kind.copy(), expression=exp.Literal.string(duckdb_name)),
                   true=exp.Literal.string(name)) for duckdb_name, name in _TYPE_NAMES.items()]
    return exp.Cast(this=exp.Case(ifs=ifs, default=exp.Literal.string("number")),
                    to=exp.DataType.build("VARCHAR"))


NOT_AN_ARRAY = "cannot get array length of a non-array"
A_SCALAR = "cannot get array length of a scalar"
HAS_KEY_REFUSED = ("the jsonb ? operator of an operand that is not a jsonb, or a volatile one, is not "
                   "supported by fedgate outside PostgreSQL sources")


def _has_key(node: exp.JSONBContainsTopKey) -> exp.Expression:
    """`jsonb ? key`: a key of the top-level object, a string among the top-level array's
    elements, or the string a scalar is (PostgreSQL stores a scalar as a one-element
    array); false for anything else, NULL when either operand is."""
    document, key = node.this, node.expression
    if not _is_json(document, _JSONB) or volatile_reason(document) or volatile_reason(key):
        raise PgError(FEATURE_NOT_SUPPORTED, HAS_KEY_REFUSED)
    constant = document
    while isinstance(constant, (exp.Cast, exp.Paren)):
        constant = constant.this
    if isinstance(constant, exp.Null):  # (DuckDB cannot bind the list function to a NULL)
        return exp.Cast(this=exp.null(), to=exp.DataType.build("BOOLEAN"))
    kind = _call("json_type", document.copy())
    element = exp.column("fg_element")
    is_key = exp.and_(exp.EQ(this=_call("json_type", element.copy()), expression=exp.Literal.string("VARCHAR")),
                      exp.EQ(this=_call("json_extract_string", element.copy(), exp.Literal.string("$")),
                             expression=key.copy()))
    strings = _call("list_filter", _call("json_extract", document.copy(), exp.Literal.string("$[*]")),
                    exp.Lambda(this=is_key, expressions=[exp.to_identifier("fg_element")]))
    return exp.Case(ifs=[
        exp.If(this=exp.or_(exp.Is(this=document.copy(), expression=exp.null()),
                            exp.Is(this=key.copy(), expression=exp.null())), true=exp.null()),
        exp.If(this=exp.EQ(this=kind.copy(), expression=exp.Literal.string("OBJECT")),
               true=_call("list_contains", _call("json_keys", document.copy()), key.copy())),
        exp.If(this=exp.EQ(this=kind.copy(), expression=exp.Literal.string("ARRAY")),
               true=exp.GT(this=_call("len", strings), expression=exp.Literal.number(0))),
        exp.If(this=exp.EQ(this=kind, expression=exp.Literal.string("VARCHAR")),
               true=exp.EQ(this=_call("json_extract_string", document.copy(), exp.Literal.string("$")),
                           expression=key.copy()))],
        default=exp.false())


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.JSONExtract, exp.JSONExtractScalar, exp.JSONBContainsTopKey) is not None \
        or needs_types(tree) \
        or any(_is_row_to_json(call) or _is_typeof(call) or _is_array_length(call)
               for call in tree.find_all(exp.Anonymous)) \
        or any(t.this == _JSONB for t in tree.find_all(exp.DataType))


def needs_types(tree: exp.Expression) -> bool:
    """Whether the tree holds a call rewritten by its argument's type (to_json)."""
    return any(_is_to_json(call) for call in tree.find_all(exp.Anonymous))


def _decimal_literal(node: exp.Expression) -> bool:
    """A constant PostgreSQL reads as numeric: with a point or an exponent."""
    return isinstance(node, exp.Literal) and not node.is_string and not node.this.isdigit()


def _digits(literal: exp.Literal) -> tuple[str, int, int]:
    """The constant's text at PostgreSQL's display scale, its precision and scale
    (`1e3` is 1000 at scale 0, `2.5e-2` is 0.025)."""
    mantissa, _, exponent = literal.this.lower().partition("e")
    scale = max(len(mantissa.partition(".")[2]) - int(exponent or 0), 0)
    text = f"{Decimal(literal.this):.{scale}f}"
    return text, max(len(text.lstrip("-").replace(".", "").lstrip("0")), scale + 1, 1), scale


def _scaled(kind: exp.DataType | None) -> bool:
    """A DECIMAL of a stated scale (or precision alone: scale 0)."""
    return kind is not None and kind.this == _DECIMAL and bool(kind.expressions)


def _integer(node: exp.Expression) -> bool:
    return (isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()) or \
        (node.type is not None and node.type.this in exp.DataType.INTEGER_TYPES)


def at_display_scale(node: exp.Expression) -> bool:
    """Whether DuckDB computes `node` as a DECIMAL of PostgreSQL's display scale."""
    if isinstance(node, (exp.Neg, exp.Paren)):
        return at_display_scale(node.this)
    if _decimal_literal(node):
        return _digits(node)[1] <= 38
    if isinstance(node, exp.Cast):
        return _scaled(node.to)
    if isinstance(node, exp.Column):
        return _scaled(node.type)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        sides = (node.this, node.expression)
        return all(at_display_scale(side) or _integer(side) for side in sides) and any(at_display_scale(side) for side in sides)
    return False


def _exact_literal(node: exp.Expression) -> exp.Expression:
    if not _decimal_literal(node) or isinstance(node.parent, exp.Cast):
        return node
    text, precision, scale = _digits(node)
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build(f"DECIMAL({precision}, {scale})"))


def _numeric_like(node: exp.Expression) -> bool:
    kind = node.type
    if kind is not None and (kind.this == _DECIMAL or (kind.expressions and "DECIMAL" in kind.sql().upper())):
        return True
    return any(_decimal_literal(n) for n in node.find_all(exp.Literal)) or \
        node.find(exp.Div, exp.Avg) is not None


def _to_json(node: exp.Expression) -> exp.Expression:
    """to_json(x) of a numeric as PostgreSQL writes it (see the module docstring)."""
    argument = node.expressions[0]
    if isinstance(argument, exp.Cast) and (isinstance(argument.this, exp.Null) or not (
            argument.to.this == _DECIMAL or argument.to.is_type(*exp.DataType.NESTED_TYPES))):
        return node  # NULL either way; or a value of another type (1.5::float8)
    if at_display_scale(argument):
        text = exp.Cast(this=argument.transform(_exact_literal), to=exp.DataType.build("VARCHAR"))
        return exp.Cast(this=text, to=exp.DataType.build("JSON"))
    if _numeric_like(argument):
        raise PgError(FEATURE_NOT_SUPPORTED, TO_JSON_REFUSED)
    return node


JSON_KIND = "json_kind"  # meta of a node written here for a `->` piece: its json or jsonb type


def json_type(value: exp.Expression) -> exp.DataType | None:
    """json or jsonb (or another type) of `value`: a cast's, an annotated node's, and for
    a `->` piece its document's, also once rewritten here (`JSON_KIND`)."""
    while isinstance(value, exp.Paren):
        value = value.this
    marked = value.meta.get(JSON_KIND) if value._meta else None
    if marked is not None:
        return marked
    if isinstance(value, exp.JSONExtract):
        return json_type(value.this)
    return value.to if isinstance(value, exp.Cast) else value.type


def _is_json(value: exp.Expression, kind_of: exp.DataType.Type = _JSON) -> bool:
    kind = json_type(value)
    return kind is not None and kind.this == kind_of


def _first_or_last(index: exp.Expression) -> exp.Expression | None:
    """A condition that `index` is 0 or -1 (an element a scalar's pseudo-array has);
    None when the index is not an integer (a key)."""
    if isinstance(index, exp.JSONPath):
        steps = index.expressions
        if len(steps) == 2 and isinstance(steps[0], exp.JSONPathRoot) \
                and isinstance(steps[1], exp.JSONPathSubscript) and isinstance(steps[1].this, int):
            return exp.true() if steps[1].this in (0, -1) else exp.false()
        return None
    number = index.this if isinstance(index, exp.Neg) else index
    if isinstance(number, exp.Literal) and not number.is_string:
        return exp.true() if index.sql() in ("0", "-1") else exp.false()
    if index.type is not None and index.type.this in exp.DataType.INTEGER_TYPES:
        return exp.In(this=index.copy(), expressions=[exp.Literal.number(0), exp.Literal.number(-1)])
    return None


def _scalar_element(node: exp.Expression) -> exp.Expression:
    """jsonb `->`/`->>` with the scalar answered as PostgreSQL does (see the docstring)."""
    index = _first_or_last(node.expression)
    if index is None or index == exp.false():
        return node
    scalar = exp.Not(this=exp.In(this=exp.Anonymous(this="json_type", expressions=[node.this.copy()]),
                                 expressions=[c.copy() for c in _CONTAINERS]))
    condition = scalar if index == exp.true() else exp.and_(scalar, index)
    answer = node.this.copy() if isinstance(node, exp.JSONExtract) else exp.JSONExtractScalar(
        this=node.this.copy(), expression=exp.JSONPath(expressions=[exp.JSONPathRoot()]),
        only_json_types=node.args.get("only_json_types"))
    return exp.Case(ifs=[exp.If(this=condition, true=answer)], default=node.copy())


def _container(node: exp.Expression) -> exp.Expression:
    """Whether the piece `node` (-> or ->>) picks is an object or an array."""
    piece = exp.JSONExtract(this=node.this.copy(), expression=node.expression.copy(),
                            only_json_types=node.args.get("only_json_types"))
    kind = exp.Anonymous(this="json_type", expressions=[piece])
    return exp.In(this=kind, expressions=[c.copy() for c in _CONTAINERS])


def _guarded(node: exp.Expression, answer: exp.Expression, jsonb: bool) -> exp.Expression:
    """`answer` unless what it picks holds what DuckDB writes back otherwise: a number it
    reads as a double (1.50 would be 1.5); for json's `->`, the document an escape (json
    keeps `\\/` as written, DuckDB writes `/`)."""
    document = node.this
    if volatile_reason(document) is not None:  # the checks read it again
        raise PgError(FEATURE_NOT_SUPPORTED, VOLATILE_DOCUMENT_REFUSED)
    piece = exp.JSONExtract(this=document.copy(), expression=node.expression.copy(),
                            only_json_types=node.args.get("only_json_types"))
    structure = exp.Cast(this=exp.Anonymous(this="json_structure", expressions=[piece]),
                         to=exp.DataType.build("VARCHAR"))
    checks = [exp.If(this=exp.Anonymous(this="contains", expressions=[structure, exp.Literal.string('"DOUBLE"')]),
                     true=raised(NUMBER_REFUSED))]
    if not jsonb and isinstance(node, exp.JSONExtract):
        text = exp.Cast(this=document.copy(), to=exp.DataType.build("VARCHAR"))
        checks.append(exp.If(this=exp.Anonymous(this="contains", expressions=[text, exp.Literal.string("\\")]),
                             true=raised(ESCAPE_REFUSED)))
    guarded = exp.Case(ifs=checks, default=answer)
    if isinstance(node, exp.JSONExtract):  # a piece of the document's own type, for the next step
        guarded.meta[JSON_KIND] = exp.DataType.build("JSONB" if jsonb else "JSON")
    return guarded


def postgres_json(node: exp.Expression) -> exp.Expression:
    """`node` with a refusal where its answer would be laid out otherwise."""
    if _is_to_json(node):
        return _to_json(node)
    if _is_row_to_json(node):
        raise PgError(FEATURE_NOT_SUPPORTED, ROW_TO_JSON_REFUSED)
    if _is_typeof(node):
        return _typeof(node)  # type: ignore[arg-type]
    if _is_array_length(node) and not volatile_reason(node):
        return _array_length(node)  # type: ignore[arg-type]
    if isinstance(node, exp.JSONBContainsTopKey):
        return _has_key(node)
    if not isinstance(node, (exp.JSONExtract, exp.JSONExtractScalar)):
        return node
    if _is_json(node.this, _JSONB):
        answer = _scalar_element(node)
        if answer is node:  # the CASE below holds it: not the node it replaces
            answer = node.copy()
        if isinstance(node, exp.JSONExtractScalar):
            answer = exp.Case(ifs=[exp.If(this=_container(node), true=raised(JSONB_CONTAINER_REFUSED))],
                              default=answer)
        return _guarded(node, answer, jsonb=True)
    if not _is_json(node.this):
        return node
    answer = exp.Case(ifs=[exp.If(this=_container(node), true=raised(CONTAINER_REFUSED))], default=node.copy())
    return _guarded(node, answer, jsonb=False)


_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ)


def _jsonb_valued(node: exp.Expression) -> bool:
    """A jsonb value: a cast to jsonb, a jsonb-typed node, or `->` of one."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.JSONExtract):
        return _jsonb_valued(node.this)
    return _is_json(node, _JSONB)


def refuse_jsonb_layouts(tree: exp.Expression) -> None:
    """Raise 0A000 for jsonb compared or turned into text: the engine holds a jsonb as the
    text it was given, PostgreSQL as a value it compares as one (`1.0` = `1`, keys in any
    order) and writes in its own layout. Before the rewrites, which hide what `->` reads."""
    for node in tree.find_all(exp.Cast, *_COMPARISONS):
        if isinstance(node, exp.Cast):
            if node.to.this in (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR) and _jsonb_valued(node.this):
                raise PgError(FEATURE_NOT_SUPPORTED, TEXT_REFUSED)
        elif _jsonb_valued(node.this) or _jsonb_valued(node.expression):
            raise PgError(FEATURE_NOT_SUPPORTED, COMPARISON_REFUSED)
