"""Aggregates typed as PostgreSQL types them, for the residual engines (DuckDB and Spark).

PostgreSQL's result types: `sum(int2|int4)` is int8, `sum(int8)` numeric, `sum(float4)`
float4, `avg()` of any integer or numeric numeric; count is int8, min/max keep their
argument's type, and the sum of float8/numeric and the average of floats are typed alike
everywhere. The engines differ: DuckDB sums every integer into HUGEINT (numeric here) and
averages everything in DOUBLE; Spark sums int8 into int8 (which overflows where
PostgreSQL does not) and averages integers in DOUBLE. `pg_typed` wraps each such call,
with its FILTER and OVER, in what gives PostgreSQL's type on both engines:

    sum(i4)                 ->  CAST(SUM(i4) AS BIGINT)
    sum(i8)                 ->  SUM(CAST(i8 AS DECIMAL(38, 0)))
    sum(f4) OVER (...)      ->  CAST(SUM(f4) OVER (...) AS REAL)
    avg(n) (numeric(12,2))  ->  CAST(FEDGATE_AVG(SUM(n), COUNT(n), 16, 2) AS DECIMAL(38, 16))

An average is an exact numeric division, rounded half away from zero as PostgreSQL
rounds. `FEDGATE_AVG(sum, count, scale, sum's scale)` (connectors.base.EXACT_AVERAGE) is
a marker each engine's dialect expands when it renders. DuckDB divides decimals only in
DOUBLE, so for DuckDB it becomes arithmetic on 128-bit integers
(connectors.dialects.duckdb), exact for any sum DuckDB holds (a million int8 values near
their maximum sum beyond 10^25). Spark's own `try_divide` divides decimals exactly, so
for Spark (connectors.dialects.spark) the call becomes `try_divide(CAST(sum AS
DECIMAL(38, 16)), CAST(count AS DECIMAL(19, 0)))`, NULL for no rows as avg is; that cast
needs |sum| < 10^(38 - scale), beyond which Spark's ANSI mode raises numeric overflow.
The result's scale is fixed per column: 16, PostgreSQL's scale for an average between 1
and 9999, or the argument's scale if larger, less when the sum would not keep `HEADROOM`
digits above the argument's integer digits within the engines' 38 (int8: 13; wider
arguments, such as a DECIMAL(38, 0) sum, keep the engine's float8 average). PostgreSQL
picks the scale per value (about 16 significant digits: 1.00000000000000000000 for
avg(1), 20000000000000.0000 for an average of 2e13), which a fixed-scale column cannot
copy: the values are equal, the number of digits shown differs.

Only the outputs of a scope are rewritten (select-list items), not conditions: a HAVING
or WHERE compares the same values whatever their type.

The residual gets this from planner.pg_annotate import annotate_postgres
from planner.unparse. A query shipped whole to a source that runs
in DuckDB (a DuckDB file, Parquet/CSV files: the embedded demo among them) never reaches
the engine, so the planner applies `pg_typed_query` to it: every SELECT of the tree,
innermost first, with the column types of the tree's annotation (a column of a derived
table or CTE takes the type of the output it names, as rewritten). Those sources define
and render through the same DuckDB dialect, which expands the marker.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import Schema

from connectors.base import EXACT_AVERAGE, in_same_context
from planner.pg_annotate import annotate_postgres

T = exp.DataType.Type

_SMALL_INTEGERS = {T.TINYINT, T.UTINYINT, T.SMALLINT, T.USMALLINT, T.INT}
_WIDE_INTEGERS = {T.BIGINT, T.UINT}
_EXACT = _SMALL_INTEGERS | _WIDE_INTEGERS | {T.UBIGINT, T.INT128, T.DECIMAL, T.BIGDECIMAL}
DECIMAL_DIGITS = 38  # DuckDB's and Spark's widest DECIMAL
AVG_SCALE = 16  # PostgreSQL's display scale for an average between 1 and 9999
# Below this scale an exact average would round away digits PostgreSQL keeps (an average
# of a DECIMAL(38, 0) sum would come back a whole number): the engine's DOUBLE average,
# typed float8, is the nearer answer there.
MIN_AVG_SCALE = 13  # int8's
HEADROOM = 6  # digits a sum may grow by (a million rows of the largest values) before overflow


def _type(datatype: exp.DataType | None) -> exp.DataType.Type | None:
    return datatype.this if datatype is not None else None


def _avg_scale(datatype: exp.DataType) -> int:
    """The fixed scale of an average of `datatype` (see the module docstring)."""
    if datatype.this == T.DECIMAL and len(datatype.expressions) == 2:
        precision, scale = (int(e.name) for e in datatype.expressions)
    elif datatype.this in _SMALL_INTEGERS:
        precision, scale = 10, 0
    else:
        precision, scale = 19, 0  # int8 (and exact types of unknown width)
    return max(scale, min(AVG_SCALE, DECIMAL_DIGITS - HEADROOM - (precision - scale)))


def _cast(e: exp.Expression, to: str) -> exp.Cast:
    return exp.Cast(this=e, to=_datatype(to).copy())


@functools.lru_cache(maxsize=64)
def _datatype(text: str) -> exp.DataType:
    """`exp.DataType.build(text)`, parsed once: building parses the text every time."""
    return exp.DataType.build(text)


def _argument_type(call: exp.AggFunc,
                   column_type: Callable[[exp.Column], exp.DataType | None]) -> exp.DataType | None:
    """The type of `call`'s argument: as annotated already, its column's, or else that of
    an annotated copy (annotating only the argument: planning time counts)."""
    arg = call.this
    if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1:
        arg = arg.expressions[0]
    if isinstance(arg, exp.Column):  # the scope's type wins: a derived column may be retyped
        return column_type(arg) or _known(arg.type)
    known = _known(arg.type)
    if known is not None and known.this == T.DECIMAL and _arithmetic(arg):
        # sqlglot types n * n of a numeric(10, 2) as DECIMAL(10, 2), where the engines
        # (and PostgreSQL) compute it at scale 4: the sum's digits would be cut.
        return _rescaled(known, arg, column_type, known)
    if known is not None:
        return known
    probe = arg.copy()
    for column in list(probe.find_all(exp.Column)):
        found = column_type(column)
        if found is not None:  # a typed NULL: annotating would type a column afresh (unknown)
            column.replace(exp.Cast(this=exp.Null(), to=found.copy()))
    annotate_postgres(probe, dialect="postgres")
    known = _known(probe.type)
    # A decimal computed by arithmetic is typed anew, as above.
    if known is not None and known.this == T.DECIMAL and _arithmetic(probe):
        return _rescaled(known, arg, column_type, None)
    return known


def _arithmetic(e: exp.Expression) -> bool:
    return e.find(exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod) is not None


def _rescaled(known: exp.DataType, e: exp.Expression,
              column_type: Callable[[exp.Column], exp.DataType | None],
              unknown: exp.DataType | None) -> exp.DataType | None:
    """`known` (sqlglot's DECIMAL(p, s) of the arithmetic `e`) at the scale the engine
    computes `e` in, by DuckDB's rules, which are PostgreSQL's for these: a product adds its
    operands' scales, a sum or difference keeps the larger. The integer digits stay as
    annotated (they size the average's headroom: a sum past it overflows, an error, not a
    wrong digit). `unknown` when the scale cannot be told (a division, a call)."""
    found = _precision_and_scale(e, column_type)
    if found is None or len(known.expressions) != 2:
        return unknown
    precision, scale = (int(x.name) for x in known.expressions)
    if found[1] == scale:
        return known
    return _datatype(f"DECIMAL({min(precision - scale + found[1], DECIMAL_DIGITS)}, {found[1]})")


def _precision_and_scale(e: exp.Expression, column_type: Callable[[exp.Column], exp.DataType | None]
                         ) -> tuple[int, int] | None:
    """DuckDB's (precision, scale) of the exact arithmetic `e`, or None when not told."""
    if isinstance(e, (exp.Paren, exp.Neg)):
        return _precision_and_scale(e.this, column_type)
    if isinstance(e, (exp.Mul, exp.Add, exp.Sub)):
        left = _precision_and_scale(e.this, column_type)
        right = _precision_and_scale(e.expression, column_type)
        if left is None or right is None:
            return None
        if isinstance(e, exp.Mul):
            return left[0] + right[0], left[1] + right[1]
        scale = max(left[1], right[1])
        return max(left[0] - left[1], right[0] - right[1]) + scale + 1, scale
    if isinstance(e, exp.Literal) and not e.is_string and e.this.replace(".", "", 1).isdigit():
        digits, _, decimals = e.this.partition(".")
        return max(len(digits.lstrip("0")) + len(decimals), 1), len(decimals)
    datatype = (column_type(e) or _known(e.type)) if isinstance(e, exp.Column) else \
        e.to if isinstance(e, exp.Cast) else None
    if datatype is None:
        return None
    if datatype.this == T.DECIMAL and len(datatype.expressions) == 2:
        precision, scale = (int(x.name) for x in datatype.expressions)
        return precision, scale
    if datatype.this in _SMALL_INTEGERS:
        return 10, 0
    if datatype.this in _WIDE_INTEGERS:
        return 19, 0
    return None


def _retyped(call: exp.AggFunc, arg_type: exp.DataType | None) -> bool:
    """Whether `_typed_call` rewrites `call`, whose argument has `arg_type`."""
    kind = _type(arg_type)
    if isinstance(call, exp.Sum):
        return kind in _SMALL_INTEGERS or kind in _WIDE_INTEGERS or kind == T.FLOAT
    return (isinstance(call, exp.Avg) and arg_type is not None and kind in _EXACT
            and _avg_scale(arg_type) >= MIN_AVG_SCALE)


def _typed_call(outer: exp.Expression, call: exp.AggFunc,
                arg_type: exp.DataType | None) -> exp.Expression | None:
    """PostgreSQL's typing of one aggregate call, or None when the engines agree already."""
    if isinstance(call, exp.Sum):
        if _type(arg_type) in _SMALL_INTEGERS:
            return _cast(outer.copy(), "BIGINT")
        if _type(arg_type) in _WIDE_INTEGERS:
            arg = call.this.copy()
            if isinstance(arg, exp.Distinct):
                arg.set("expressions", [_cast(arg.expressions[0], "DECIMAL(38, 0)")])
            else:
                arg = _cast(arg, "DECIMAL(38, 0)")
            return in_same_context(outer, exp.Sum(this=arg))
        if _type(arg_type) == T.FLOAT:
            return _cast(outer.copy(), "REAL")
        return None
    if isinstance(call, exp.Avg) and arg_type is not None and arg_type.this in _EXACT:
        scale = _avg_scale(arg_type)
        if scale < MIN_AVG_SCALE:
            return None
        numeric = f"DECIMAL({DECIMAL_DIGITS}, {scale})"
        total = in_same_context(outer, exp.Sum(this=call.this.copy()))
        count = in_same_context(outer, exp.Count(this=call.this.copy()))
        sum_scale = int(arg_type.expressions[1].name) if arg_type.this == T.DECIMAL and \
            len(arg_type.expressions) == 2 else 0  # DuckDB sums integers into HUGEINT
        return _cast(exp.Anonymous(this=EXACT_AVERAGE, expressions=[
            total, count, exp.Literal.number(scale), exp.Literal.number(sum_scale)]), numeric)
    return None


def _calls(e: exp.Expression) -> list[tuple[exp.Expression, exp.AggFunc]]:
    """(outermost node of the call: Window > Filter > call, the call) for each sum/avg in
    `e` outside subqueries (EXISTS's too: a query is a scope of its own), outermost first."""
    found = []
    for node in e.walk(prune=lambda n: isinstance(n, exp.Query)):
        if isinstance(node, (exp.Sum, exp.Avg)):
            outer: exp.Expression = node
            while isinstance(outer.parent, (exp.Filter, exp.Window)) and outer.arg_key == "this":
                outer = outer.parent
            found.append((outer, node))
    return found


def pg_typed(e: exp.Expression,
             column_type: Callable[[exp.Column], exp.DataType | None]) -> exp.Expression:
    """A copy of select-list item `e` whose sums and averages have PostgreSQL's types;
    `column_type` tells each column's type (None: unknown, the call is left as it is).
    The same object when there is nothing to do."""
    if e.find(exp.Sum, exp.Avg) is None:
        return e
    calls = _calls(e)
    arg_types = [_argument_type(call, column_type) for _, call in calls]
    if not any(_retyped(call, t) for (_, call), t in zip(calls, arg_types)):
        return e
    e = e.copy()
    # Innermost first: an outer call sees its rewrite (`avg(sum(x)) OVER ()`), so a call
    # around another one has its argument typed again; the others keep theirs.
    for (outer, call), arg_type in reversed(list(zip(_calls(e), arg_types))):
        if len(arg_types) > 1 and call.this.find(exp.Sum, exp.Avg) is not None:
            arg_type = _argument_type(call, column_type)
        typed = _typed_call(outer, call, arg_type)
        if typed is None:
            continue
        if outer is e:
            e = typed
        else:
            outer.replace(typed)
    return e


def pg_typed_select(select: exp.Expression,
                    column_type: Callable[[exp.Column], exp.DataType | None]) -> None:
    """`pg_typed` on each select-list item of `select` (and of each branch of a UNION), in place."""
    if isinstance(select, exp.SetOperation):
        pg_typed_select(select.this, column_type)
        pg_typed_select(select.expression, column_type)
        return
    if isinstance(select, exp.Select):
        select.set("expressions", [pg_typed(item, column_type) for item in select.expressions])


def pg_typed_query(tree: exp.Expression, schema: Schema | None = None) -> None:
    """`pg_typed_select` on every SELECT of `tree` (qualified), in place; table columns
    are typed by their annotation or else by `schema`.

    Scopes come innermost first, so a derived table's outputs are rewritten before the
    query reading them asks their type."""
    for scope in traverse_scope(tree):
        if isinstance(scope.expression, exp.Select) and \
                scope.expression.find(exp.Sum, exp.Avg) is not None:
            pg_typed_select(scope.expression,
                            lambda c, scope=scope: _scope_column_type(scope, c, schema))


def _scope_column_type(scope: Scope, column: exp.Column, schema: Schema | None) -> exp.DataType | None:
    """The type of `column` in `scope`: a derived table's or CTE's output as it now reads,
    else the annotation's (tables, UNION outputs, outer columns of a correlated subquery),
    else the catalog's for a table's column."""
    source = scope.sources.get(column.table)
    if isinstance(source, Scope) and isinstance(source.expression, exp.Select):
        output = next((e for e in source.expression.selects if e.alias_or_name == column.name), None)
        if output is not None:
            inner = output.unalias()
            if isinstance(inner, exp.Column):
                return _scope_column_type(source, inner, schema)
            if inner.type is None:  # built by `pg_typed`, or not annotated
                _annotate_output(inner, source, schema)
            return _known(inner.type)
    known = _known(column.type)
    if known is None and schema is not None and isinstance(source, exp.Table):
        known = _known(schema.get_column_type(source, column.name))
    return known


def _annotate_output(output: exp.Expression, scope: Scope, schema: Schema | None) -> None:
    for column in output.find_all(exp.Column):
        if _known(column.type) is None:
            found = _scope_column_type(scope, column, schema)
            if found is not None:
                column.type = found
    annotate_postgres(output, dialect="postgres")


def _known(datatype: exp.DataType | None) -> exp.DataType | None:
    return datatype if datatype is not None and datatype.this != T.UNKNOWN else None

