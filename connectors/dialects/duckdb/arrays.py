"""PostgreSQL's array answers that DuckDB gives otherwise on empty or NULL arrays.

- `array_length(a, d)`: PostgreSQL's empty array has no dimensions, so its length is NULL;
  DuckDB answers 0. No PostgreSQL array has a dimension of length 0, so NULLIF(…, 0) is
  exactly PostgreSQL's answer.
- `x op ANY (a)` / `x op ALL (a)` over an array (not a subquery): a NULL array makes the
  comparison NULL in PostgreSQL; DuckDB answers false (ANY) and true (ALL). An empty
  array is false and true in both.
- A multidimensional array literal (`ARRAY[[1, 2], [3, 4]]`) is one array of integers in
  PostgreSQL, a list of lists in DuckDB: a subscript by fewer indices than its dimensions
  (NULL in PostgreSQL), a slice, cardinality(), unnest() and ANY/ALL over it are refused;
  full subscripts, array_length() and array_upper() agree.
- `a[i]` and `a[lo:hi]` of a one-dimensional array: an index outside 1..n is NULL and a
  slice's bounds are clamped to 1..n; DuckDB counts a negative index from the end. Written
  out with list_extract and list_slice.
- `array_remove(a, v)` keeps NULL elements unless v is NULL.
- an array cast to text is PostgreSQL's `{a,"b c",NULL}`, DuckDB's `[a, b c, NULL]`: it is
  written out for arrays of integers, booleans, dates and text (an element quoted where
  array_out quotes it); of other elements (numerics, floats, timestamps, arrays) refused.
- `a || b` with an array operand: PostgreSQL's array_cat, array_append or array_prepend
  (by the other operand's type); DuckDB's `||` of lists is NULL when either is, and it
  has no list-and-element `||` at all. array_cat keeps the other array when one is NULL
  (NULL only when both are); DuckDB's list_concat gives [] for two NULLs. An untyped
  string operand is an array literal to PostgreSQL: refused.
- `array_dims(a)`: DuckDB has none. A one-dimensional array's is `[1:n]` (NULL when empty,
  as PostgreSQL's empty array has no dimensions); a multidimensional literal's is read off
  the literal (`[1:2][1:3]`); any other argument (a list of lists from a file) is refused.
- `array_agg(DISTINCT x)` and `string_agg(DISTINCT x, sep)` without an ORDER BY come out
  in x's order in PostgreSQL (its DISTINCT sorts), in hash order in DuckDB: the ORDER BY
  x is written out.
"""

from __future__ import annotations

from sqlglot import exp

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def needs_rewrite(tree: exp.Expression) -> bool:
    return tree.find(exp.ArraySize, exp.Any, exp.All, exp.Bracket, exp.Explode, exp.Unnest,
                     exp.ArrayRemove, exp.ArrayAgg, exp.GroupConcat, exp.ArrayConcat,
                     exp.DPipe) is not None \
        or any(map(_array_text, tree.find_all(exp.Cast))) or any(
        call.name.upper() in ("ALL", "CARDINALITY", "ARRAY_DIMS") for call in tree.find_all(exp.Anonymous))


def needs_types(tree: exp.Expression) -> bool:
    """`||` and array_cat read their operands' types (an array or an element), array_dims
    its argument's (an array of arrays is not answered)."""
    return tree.find(exp.DPipe, exp.ArrayConcat) is not None or any(
        call.name.lower() == "array_dims" for call in tree.find_all(exp.Anonymous))


def _shape(node: exp.Expression) -> list[int] | None:
    """The lengths of an ARRAY literal's dimensions; None when its sub-arrays differ."""
    level = _unwrapped(node)
    if not isinstance(level, exp.Array):
        return []
    inner = [_shape(element) for element in level.expressions]
    if any(shape is None or shape != inner[0] for shape in inner):
        return None
    return [len(level.expressions), *(inner[0] if inner else [])]  # type: ignore[misc]


def _array_dims(node: exp.Anonymous) -> exp.Expression:
    """array_dims(a) as PostgreSQL writes it (see the module docstring)."""
    array = node.expressions[0]
    if _dimensions(array) > 1:
        lengths = _shape(array)
        if lengths is None:  # PostgreSQL refuses to build it; DuckDB builds a ragged list
            raise PgError(FEATURE_NOT_SUPPORTED, "array_dims() of an array literal whose rows differ "
                          "in shape is not supported by fedgate outside PostgreSQL sources")
        return exp.Literal.string("".join(f"[1:{length}]" for length in lengths))
    kind = array.type
    if kind is None or kind.this != exp.DataType.Type.ARRAY or not kind.expressions \
            or kind.expressions[0].this == exp.DataType.Type.ARRAY:
        raise PgError(FEATURE_NOT_SUPPORTED, "array_dims() of an array of arrays, or of an argument of "
                      "unknown type, is not supported by fedgate outside PostgreSQL sources")
    size = exp.Anonymous(this="len", expressions=[array.copy()])
    text = exp.DPipe(this=exp.DPipe(this=exp.Literal.string("[1:"), expression=exp.Cast(
        this=size.copy(), to=exp.DataType.build("VARCHAR"))), expression=exp.Literal.string("]"))
    return exp.Case(ifs=[exp.If(this=exp.GT(this=size, expression=exp.Literal.number(0)), true=text)])


def _array_operand(node: exp.Expression) -> exp.Expression | None:
    """The array of `x op ANY/ALL (array)`; None for a subquery or another shape."""
    quantified = node.expression if isinstance(node, _COMPARISONS) else None
    if isinstance(quantified, exp.Anonymous) and quantified.name.upper() in ("ANY", "ALL") \
            and len(quantified.expressions) == 1:
        array = quantified.expressions[0]  # sqlglot reads `ALL (a)` as a call
    elif isinstance(quantified, (exp.Any, exp.All)):
        array = quantified.this
    else:
        return None
    while isinstance(array, exp.Paren):
        array = array.this
    return None if isinstance(array, (exp.Query, exp.Subquery)) else array


def _unwrapped(node: exp.Expression | None) -> exp.Expression | None:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _dimensions(node: exp.Expression | None) -> int:
    """How many dimensions an ARRAY literal has (0: not a literal)."""
    node, depth = _unwrapped(node), 0
    while isinstance(node, exp.Array):
        depth += 1
        node = node.expressions[0] if node.expressions and all(
            isinstance(_unwrapped(e), exp.Array) for e in node.expressions) else None
        node = _unwrapped(node)
    return depth


def _multidimensional_use(node: exp.Expression) -> str | None:
    """What PostgreSQL answers otherwise about a multidimensional literal, if `node` is one."""
    if isinstance(node, exp.Bracket) and _dimensions(node.this) > 1:
        subscripts, above = 1, node
        while isinstance(above.parent, exp.Bracket) and above.parent.this is above:
            subscripts, above = subscripts + 1, above.parent
        sliced = any(isinstance(e, exp.Slice) for b in [node, *node.find_all(exp.Bracket)]
                     for e in b.expressions)
        if subscripts < _dimensions(node.this) or sliced:
            return "a subscript of a multidimensional array"
    if isinstance(node, (exp.Explode, exp.Unnest)) and any(
            _dimensions(e) > 1 for e in [node.this, *node.expressions] if e is not None):
        return "unnest() of a multidimensional array"
    if isinstance(node, exp.Anonymous) and node.name.lower() == "cardinality" and \
            node.expressions and _dimensions(node.expressions[0]) > 1:
        return "cardinality() of a multidimensional array"
    quantified = node.expression if isinstance(node, _COMPARISONS) else None
    if isinstance(quantified, (exp.Any, exp.All, exp.Anonymous)) and any(
            _dimensions(e) > 1 for e in [quantified.this, *quantified.expressions]
            if isinstance(e, exp.Expression)):
        return "ANY or ALL over a multidimensional array"
    return None


def _array_remove(node: exp.ArrayRemove) -> exp.Expression:
    """array_remove(a, v) keeps the elements not distinct from v (sqlglot's own DuckDB
    form filters on `<>`, which drops the NULL elements too)."""
    element = exp.to_identifier("fedgate_element")
    kept = exp.NullSafeNEQ(this=exp.column(element), expression=node.expression.copy())
    return exp.Anonymous(this="list_filter", expressions=[
        node.this.copy(), exp.Lambda(this=kept, expressions=[element])])


T = exp.DataType.Type
_TEXT = {T.TEXT, T.VARCHAR}
_PLAIN_ELEMENTS = {T.TINYINT, T.SMALLINT, T.INT, T.BIGINT, T.DATE}


def _array_text(node: exp.Expression) -> bool:
    """A cast to text of an array (the tree's types say so)."""
    return isinstance(node, exp.Cast) and node.to.this in _TEXT and node.this.type is not None \
        and node.this.type.this == T.ARRAY


def _element_text(kind: exp.DataType, element: exp.Expression) -> exp.Expression:
    """One element as array_out writes it; NULL as NULL."""
    text = exp.Cast(this=element.copy(), to=exp.DataType.build("VARCHAR"))
    if kind.this == T.BOOLEAN:
        text = exp.If(this=element.copy(), true=exp.Literal.string("t"), false=exp.Literal.string("f"))
    elif kind.this in _TEXT:
        quoted = exp.or_(exp.EQ(this=element.copy(), expression=exp.Literal.string("")),
                         exp.Anonymous(this="regexp_matches", expressions=[
                             element.copy(), exp.Literal.string('[{}",\\\\[:space:]]')]),
                         exp.EQ(this=exp.Lower(this=element.copy()), expression=exp.Literal.string("null")))
        escaped = exp.Replace(this=exp.Replace(this=element.copy(), expression=exp.Literal.string("\\"),
                                               replacement=exp.Literal.string("\\\\")),
                              expression=exp.Literal.string('"'), replacement=exp.Literal.string('\\"'))
        text = exp.If(this=quoted, true=exp.DPipe(this=exp.DPipe(this=exp.Literal.string('"'), expression=escaped),
                                                  expression=exp.Literal.string('"')),
                      false=element.copy())
    return exp.Coalesce(this=text, expressions=[exp.Literal.string("NULL")])


def _array_out(node: exp.Cast) -> exp.Expression:
    kinds = node.this.type.expressions
    kind = kinds[0] if kinds and isinstance(kinds[0], exp.DataType) else None
    if kind is None or not (kind.this in _PLAIN_ELEMENTS or kind.this in _TEXT or kind.this == T.BOOLEAN):
        raise PgError(FEATURE_NOT_SUPPORTED, "an array cast to text, of elements other than integers, "
                      "booleans, dates or text, is not supported by fedgate outside PostgreSQL sources")
    element = exp.to_identifier("fedgate_element")
    each = exp.Anonymous(this="list_transform", expressions=[
        node.this.copy(), exp.Lambda(this=_element_text(kind, exp.column(element)), expressions=[element])])
    joined = exp.Anonymous(this="array_to_string", expressions=[each, exp.Literal.string(",")])
    return exp.DPipe(this=exp.DPipe(this=exp.Literal.string("{"), expression=joined),
                     expression=exp.Literal.string("}"))


def _is_array(node: exp.Expression) -> bool:
    return node.type is not None and node.type.this == exp.DataType.Type.ARRAY


def _is_null(node: exp.Expression) -> bool:
    return isinstance(_unwrapped(node), exp.Null)


def _array_cat(left: exp.Expression, right: exp.Expression) -> exp.Expression:
    """PostgreSQL's array_cat: NULL only when both arrays are."""
    both_null = exp.And(this=exp.Is(this=left.copy(), expression=exp.Null()),
                        expression=exp.Is(this=right.copy(), expression=exp.Null()))
    concat = exp.Anonymous(this="list_concat", expressions=[left.copy(), right.copy()])
    return exp.Case(ifs=[exp.If(this=both_null, true=exp.Null())], default=concat)


def _concatenation(node: exp.DPipe) -> exp.Expression:
    """`a || b` with an array operand, as PostgreSQL resolves the operator."""
    left, right = node.this, node.expression
    for operand in (left, right):
        if _dimensions(operand) > 1 or (_is_array(operand) and operand.type.expressions
                                        and operand.type.expressions[0].this == exp.DataType.Type.ARRAY):
            raise PgError(FEATURE_NOT_SUPPORTED, "|| of a multidimensional array is not "
                          "supported by fedgate outside PostgreSQL sources")
        if isinstance(_unwrapped(operand), exp.Literal) and operand.is_string:
            raise PgError(FEATURE_NOT_SUPPORTED, "|| of an array and a string literal (an "
                          "array literal to PostgreSQL) is not supported by fedgate outside "
                          "PostgreSQL sources")
    if (_is_array(left) or _is_null(left)) and (_is_array(right) or _is_null(right)):
        return _array_cat(left, right)
    if _is_array(left):
        return exp.Anonymous(this="list_append", expressions=[left.copy(), right.copy()])
    return exp.Anonymous(this="list_prepend", expressions=[left.copy(), right.copy()])


def _positive(bound: exp.Expression | None, offset: int) -> bool:
    """A subscript bound that is absent or a constant PostgreSQL index of at least 1."""
    return bound is None or isinstance(bound, exp.Literal) and bound.is_int and int(bound.name) + offset >= 1


def _subscript(node: exp.Bracket) -> exp.Expression:
    """PostgreSQL's `a[i]` and `a[lo:hi]` of a one-dimensional array (its lower bound 1)
    over the list: an element outside 1..n is NULL (DuckDB counts a negative index from
    the end), a slice's bounds are clamped to 1..n ([] when they cross), a NULL bound is
    NULL. A constant index or bound of at least 1 is DuckDB's own."""
    listed, index = node.this.copy(), node.expressions[0]
    if not isinstance(index, exp.Slice):
        if _positive(index, 1):  # sqlglot holds a constant subscript 0-based, any other as written
            return node
        constant = isinstance(index, exp.Neg) and index.this.is_int or index.is_int
        at = exp.Add(this=index.copy(), expression=exp.Literal.number(1)) if constant else exp.paren(index.copy())
        return exp.Case(ifs=[exp.If(this=exp.GTE(this=at, expression=exp.Literal.number(1)),
                                    true=exp.Anonymous(this="list_extract", expressions=[listed, at.copy()]))])
    if _positive(index.this, 0) and _positive(index.expression, 0):
        return node
    one = exp.Literal.number(1)
    low = index.this.copy() if index.this is not None else one.copy()
    high = index.expression.copy() if index.expression is not None else \
        exp.Anonymous(this="len", expressions=[listed.copy()])
    low = exp.Case(ifs=[exp.If(this=exp.LT(this=exp.paren(low), expression=one.copy()), true=one.copy())],
                   default=exp.paren(low.copy()))
    high = exp.Case(ifs=[exp.If(this=exp.LT(this=exp.paren(high), expression=one.copy()),
                                true=exp.Literal.number(0))], default=exp.paren(high.copy()))
    return exp.Anonymous(this="list_slice", expressions=[listed, low, high])


def _one_dimensional(node: exp.Expression) -> bool:
    """A list of scalars: a one-dimensional ARRAY literal, or typed an array of non-arrays."""
    if _dimensions(node) == 1:
        return True
    kinds = node.type.expressions if _is_array(node) else []
    return _dimensions(node) == 0 and len(kinds) == 1 and isinstance(kinds[0], exp.DataType) \
        and kinds[0].this != T.ARRAY


def postgres_arrays(node: exp.Expression) -> exp.Expression:
    """`node` rewritten to PostgreSQL's answer in DuckDB (children are rewritten first)."""
    use = _multidimensional_use(node)
    if use is not None:
        raise PgError(FEATURE_NOT_SUPPORTED, f"{use} is not supported by fedgate outside "
                      "PostgreSQL sources")
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1 and _one_dimensional(node.this) \
            and not (isinstance(node.parent, exp.Bracket) and node.parent.this is node):
        return _subscript(node)
    if isinstance(node, exp.ArraySize) and node.expression is not None:
        return exp.Nullif(this=node.copy(), expression=exp.Literal.number(0))
    if isinstance(node, exp.ArrayRemove):
        return _array_remove(node)
    if isinstance(node, exp.Anonymous) and node.name.lower() == "array_dims" and len(node.expressions) == 1:
        return _array_dims(node)
    if isinstance(node, exp.DPipe) and (_is_array(node.this) or _is_array(node.expression)):
        return _concatenation(node)
    if isinstance(node, exp.ArrayConcat) and len(node.expressions) == 1:
        return _array_cat(node.this, node.expressions[0])
    if _array_text(node):
        return _array_out(node)
    if isinstance(node, (exp.ArrayAgg, exp.GroupConcat)) and isinstance(node.this, exp.Distinct) \
            and len(node.this.expressions) == 1:
        ordered = node.copy()
        distinct = ordered.this
        ordered.set("this", exp.Order(this=distinct.copy(), expressions=[
            exp.Ordered(this=distinct.expressions[0].copy(), nulls_first=False)]))
        return ordered
    array = _array_operand(node)
    if isinstance(array, exp.Literal) and array.is_string:
        raise PgError(FEATURE_NOT_SUPPORTED, "ANY or ALL over a string literal (an array literal "
                      "to PostgreSQL) is not supported by fedgate outside PostgreSQL sources")
    if array is not None:
        return exp.Case(ifs=[exp.If(this=exp.Is(this=array.copy(), expression=exp.Null()),
                                    true=exp.Null())], default=node.copy())
    return node
