"""The PostgreSQL type of each output column, by PostgreSQL's own resolution rules.

The engines type results their own way: DuckDB types `3::int2 + 2` smallint and
`length(s)` bigint, rounds an integer to an integer, and `cardinality()` is a HUGEINT;
PostgreSQL answers int4, int4, float8 and int4. The gateway presents the engine's columns
as PostgreSQL types them (gateway.executor.presented casts the values where that is
exact), so this module says what PostgreSQL's type is, from pg_proc's signatures and
pg_operator's:

    SELECT 3::int2 + 2, round(7), round(7, 1), length(s) FROM t
       ->  ("int4", "float8", "numeric(1000,1)", "int4")

Arithmetic picks the operator of the wider operand (int2 < int4 < int8 < numeric <
float4 < float8, PostgreSQL's implicit casts); a function with several signatures takes
the one PostgreSQL's resolution picks for integer arguments: float8, the preferred type of
the numeric category (`round(int)` is `round(float8)`), unless a second argument picks
numeric's (`round(int, int)` is `round(numeric, int)`). A numeric type carries the
display scale where every value has the same one (`numeric(1000,s)`); a plain `numeric`
means the scale depends on the value (a division), and then only a numeric the engine
computed is presented as numeric. Those numeric rules are `planner.numeric_results`; this
module walks the query and its expressions and hands them the argument types.

None stands for "not known here": the engine's own type stays. The rules only cover
expressions whose type is certain; anything else (a user function, most of a catalog
query, a parameter) is None. A catalog's `name` columns, text to the engine, are the one
kind of column typed from what a source declares (planner.catalog.PgSchema): `name`.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import Schema

from connectors.base import DEVIATIONS
from planner.catalog import PgSchema
from planner.colnames import CAST_NAME
from planner.numeric_results import (NUMERIC_ORDER, arithmetic, base_of, float_or_numeric,
                                      integers_result, literal_type, math_result, numeric,
                                      rounded, sum_result)
from planner.nullif_type import nullif_result
from planner.star_outputs import Column, is_star, renamed, star_columns
from planner.type_names import pg_type_name

_INT4_CALLS = (exp.Length, exp.StrPosition, exp.Ascii, exp.BitLength, exp.ArraySize,
               exp.RegexpCount, exp.Grouping, exp.Ntile, exp.ArrayPosition)
_INT4_NAMES = {"octet_length", "array_upper", "array_lower", "array_ndims", "cardinality",
               "num_nonnulls", "num_nulls", "width_bucket"}
_INT8_CALLS = (exp.Count, exp.RowNumber, exp.Rank, exp.DenseRank)
_SAME_AS_ARG = (exp.Abs, exp.Max, exp.Min)
_SAME_INTEGERS = {"gcd", "lcm"}
_WHOLE = (exp.Ceil, exp.Floor)
# Aggregates typed the same under FILTER and OVER (planner.pg_aggregates retypes sums there too)
_TYPED_AGGREGATES = (*_INT4_CALLS, *_INT8_CALLS, exp.Avg, exp.Sum, *_SAME_AS_ARG, exp.JSONArrayAgg,
                     *DEVIATIONS)


def result_types(tree: exp.Expression, schema: Schema) -> tuple[str | None, ...] | None:
    """PostgreSQL's type name of each output column of `tree` (None where not known);
    None for a statement whose outputs are not known (a `*` over a join)."""
    columns = _query_columns(tree, _scopes(tree), schema)
    return tuple(kind for _, kind in columns) if columns is not None else None


def result_names(tree: exp.Expression, schema: Schema) -> tuple[str, ...] | None:
    """PostgreSQL's name of each output column of `tree` whose select list holds a `*`
    (planner.star_outputs), the others named already; None where not known."""
    columns = _query_columns(tree, _scopes(tree), schema)
    return tuple(name for name, _ in columns) if columns is not None else None


def expression_typer(tree: exp.Expression, schema: Schema) -> Callable[[exp.Select, exp.Expression], str | None]:
    """PostgreSQL's type of an expression of one of `tree`'s SELECTs (None: not known)."""
    scopes = _scopes(tree)

    def typed(select: exp.Select, node: exp.Expression) -> str | None:
        return _resolver(scopes.get(id(select)), scopes, schema)(node)
    return typed


def _scopes(tree: exp.Expression) -> dict[int, Scope]:
    return {id(scope.expression): scope for scope in traverse_scope(tree)}


def _query_columns(query: exp.Expression, scopes: dict[int, Scope],
                   schema: Schema) -> list[Column] | None:
    """The (name, type) of each output of `query`, as its own select list names them."""
    if isinstance(query, exp.Subquery):
        return _query_columns(query.this, scopes, schema)
    if isinstance(query, exp.SetOperation):
        left = _query_columns(query.this, scopes, schema)
        cte = query.parent
        if isinstance(cte, exp.CTE) and isinstance(cte.parent, exp.With) and cte.parent.args.get("recursive"):
            return left  # the non-recursive term types a recursive query's columns
        right = _query_columns(query.expression, scopes, schema)
        if left is None or right is None or len(left) != len(right):
            return None
        return [(name, _common([a, b])) for (name, a), (_, b) in zip(left, right)]
    if isinstance(query, exp.Values):
        rows = [row.expressions for row in query.expressions if isinstance(row, exp.Tuple)]
        if not rows or len(rows) != len(query.expressions):
            return None
        resolve = _resolver(None, scopes, schema)
        return [(f"column{i + 1}", _common([resolve(row[i]) for row in rows], values=True))
                for i in range(len(rows[0]))]
    if not isinstance(query, exp.Select):
        return None
    scope = scopes.get(id(query))
    resolve = _resolver(scope, scopes, schema)
    columns: list[Column] = []
    for projection in query.expressions:
        if is_star(projection):
            expanded = star_columns(projection, scope, schema, _table_type(schema),
                                    lambda q: _derived_columns(q, scopes, schema))
            if expanded is None:
                return None
            columns += expanded
        else:
            columns.append((_projection_name(projection), _output(resolve(projection.unalias()))))
    return columns


def _projection_name(projection: exp.Expression) -> str:
    if isinstance(projection, exp.Column) and not projection.this.quoted:
        return projection.name.lower()  # PostgreSQL folds an unquoted name
    return projection.alias_or_name


def _derived_columns(query: exp.Expression, scopes: dict[int, Scope],
                     schema: Schema) -> list[Column] | None:
    """A derived table's, CTE's or VALUES list's columns as the query reading it sees them."""
    columns = _query_columns(query, scopes, schema)
    return renamed(query, columns) if columns is not None else None


def _output(name: str | None) -> str | None:
    # A bare string literal or NULL is of type unknown, shown as text.
    return "text" if name == "unknown" else name


def _common(names: list[str | None], values: bool = False) -> str | None:
    """The type a UNION or VALUES column resolves to (parse_coerce.c's select_common_type)
    for the numeric category and for identical types; unknowns give way to the others."""
    known = [n for n in names if n != "unknown"]
    if not known:
        return "text" if names else None
    if any(n is None for n in known):
        return None
    bases = {base_of(n) for n in known}
    if len(set(known)) == 1:
        return known[0]
    if bases <= set(NUMERIC_ORDER):
        wider = max(bases, key=NUMERIC_ORDER.index)
        return "numeric" if wider == "numeric" else wider
    if len(bases) == 1 and bases <= {"varchar", "bpchar"}:
        return bases.pop()
    return None


def _resolver(scope: Scope | None, scopes: dict[int, Scope],
              schema: Schema) -> Callable[[exp.Expression], str | None]:
    def column(node: exp.Column | exp.Subquery) -> str | None:
        if isinstance(node, exp.Subquery):  # a scalar subquery: its one output's type
            outputs = _query_columns(node.this, scopes, schema)
            return outputs[0][1] if outputs is not None and len(outputs) == 1 else None
        if scope is None:
            return None
        sources = scope.sources
        name = node.name if node.this.quoted else node.name.lower()
        if node.table and node.table not in sources and scope.parent is not None:
            # an outer reference (a LATERAL's or a correlated subquery's): the outer scope's
            return _resolver(scope.parent, scopes, schema)(node)
        source = sources.get(node.table) if node.table else \
            next(iter(sources.values())) if len(sources) == 1 else _holder(sources, name, schema)
        if isinstance(source, exp.Table):
            return _table_type(schema)(source, name)
        if isinstance(source, Scope) and isinstance(source.expression, exp.Unnest):
            return _unnested(source.expression, name, _resolver(source, scopes, schema))
        if isinstance(source, Scope):
            derived = source.expression
            if isinstance(derived, exp.Lateral) and isinstance(derived.this, exp.Subquery):
                derived = derived.this  # LATERAL (SELECT ...) AS l
            columns = _derived_columns(derived, scopes, schema)
            found = [kind for column_name, kind in columns or () if column_name == name]
            return found[0] if len(found) == 1 else None
        return None
    return lambda node: pg_type(node, column)


def _unnested(unnest: exp.Unnest, name: str, resolve: Callable[[exp.Expression], str | None]) -> str | None:
    """The type of the column `name` of `unnest(a) [WITH ORDINALITY] AS u(x [, n])` in a
    FROM list: a's element type (`_int4`: int4); its ordinality's, int8."""
    if len(unnest.expressions) != 1:
        return None
    offset = unnest.args.get("offset")
    if isinstance(offset, exp.Identifier) and offset.name == name:
        return "int8"
    alias = unnest.args.get("alias")
    columns = alias.columns if isinstance(alias, exp.TableAlias) else []
    element = columns[0].name if columns else alias.name if isinstance(alias, exp.TableAlias) else None
    array = resolve(unnest.expressions[0])
    return array[1:] if element == name and array is not None and array.startswith("_") else None


def _holder(sources: dict, name: str, schema: Schema) -> exp.Table | None:
    """The one table among `sources` with a column `name`, for an unqualified column of a
    join (`avg(cs_quantity) FROM catalog_sales, item`); None if a derived table is among
    them (its columns are not looked up here) or no table, or several, hold it."""
    if not all(isinstance(s, exp.Table) for s in sources.values()):
        return None
    holders = [s for s in sources.values() if name in schema.column_names(s)]
    return holders[0] if len(holders) == 1 else None


def _table_type(schema: Schema) -> Callable[[exp.Table, str], str | None]:
    def table_type(table: exp.Table, name: str) -> str | None:
        if isinstance(schema, PgSchema):  # a type the Arrow type does not tell (`name`)
            declared = schema.declared_type(table.db, table.name, name)
            if declared is not None:
                return declared
        found = schema.get_column_type(table, exp.to_identifier(name, quoted=True))
        if found.this == exp.DataType.Type.DECIMAL and len(found.expressions) == 2:
            return numeric(int(found.expressions[1].name))  # numeric(p, s) shows s digits
        return pg_type_name(found) if found.this != exp.DataType.Type.UNKNOWN else None
    return table_type


def pg_type(node: exp.Expression, column: Callable[[exp.Expression], str | None]) -> str | None:
    """PostgreSQL's type of one expression; `column` types a column reference and a
    scalar subquery."""
    def of(child: exp.Expression | None) -> str | None:
        return pg_type(child, column) if child is not None else None

    if isinstance(node, exp.Paren):
        return of(node.this)
    if isinstance(node, exp.Distinct) and len(node.expressions) == 1:
        return of(node.expressions[0])  # an aggregate's DISTINCT argument: sum(DISTINCT x) as sum(x)
    if isinstance(node, (exp.Column, exp.Subquery)):
        return column(node)
    if isinstance(node, exp.Literal):
        return literal_type(node)
    if isinstance(node, exp.Null):
        return "unknown"
    if isinstance(node, exp.Boolean):
        return "bool"
    if isinstance(node, exp.Cast):
        return _cast(node)
    if isinstance(node, exp.Neg):
        if isinstance(node.this, exp.Literal) and node.this.name.isdigit():
            # PostgreSQL's grammar folds the sign into the constant: -2147483648 is int4.
            return literal_type(node.this, negative=True)
        return of(node.this) if base_of(of(node.this)) in NUMERIC_ORDER else None
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        return arithmetic(node, of(node.this), of(node.expression))
    if isinstance(node, exp.Filter):  # agg FILTER (WHERE ...) is of the aggregate's type
        return of(node.this) if isinstance(node.this, (*_TYPED_AGGREGATES, exp.ArrayAgg)) \
            else None
    if isinstance(node, exp.Window):
        return of(node.this) if isinstance(node.this, (*_TYPED_AGGREGATES, exp.ArrayAgg,
                                                       exp.Filter)) else None
    if isinstance(node, _INT4_CALLS):
        return "int4"
    if isinstance(node, _INT8_CALLS):
        return "int8"
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        if name in _INT4_NAMES:
            return "int4"
        if name in _REG_OUTPUTS:  # a reg* value the catalog shows (planner.pgcompat)
            return name[:-len("_out")]
        if name in _JSON_BUILDERS:  # json_build_array/object and the jsonb forms
            return name.split("_")[0]
        if name in _SAME_INTEGERS and len(node.expressions) == 2:
            return integers_result(of(node.expressions[0]), of(node.expressions[1]))
        return None
    if isinstance(node, exp.JSONArrayAgg):
        return "json"
    if isinstance(node, (exp.JSONExtract, exp.JSONBExtract)):
        arg = of(node.this)  # `->` and `#>` keep their operand's type (json or jsonb)
        return arg if arg in ("json", "jsonb") else None
    if isinstance(node, exp.Bracket):  # an array's element, or a slice: an array alike
        arg = of(node.this)
        if arg is None or not arg.startswith("_"):
            return None
        return arg if any(isinstance(e, exp.Slice) for e in node.expressions) else arg[1:]
    if isinstance(node, exp.Nullif):
        return nullif_result(of(node.this), of(node.expression))
    if isinstance(node, exp.Coalesce):  # of catalog names: name, as a UNION column's
        args = [of(arg) for arg in (node.this, *node.expressions)]
        if "name" in args and set(args) <= {"name", "unknown"}:
            return "name"  # of numbers: their common type, as a CASE's (coalesce(sum(n), 0))
        known = [a for a in args if a != "unknown"]
        return _common(args) if known and all(base_of(a) in NUMERIC_ORDER for a in known) else None
    if isinstance(node, exp.ArrayAgg):  # array_agg(relname) is name[]
        arg = node.this.this if isinstance(node.this, exp.Order) else node.this
        if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1:
            arg = arg.expressions[0]
        return "_name" if of(arg) == "name" else None
    if isinstance(node, exp.Case):  # its results' common type, as a UNION column's
        results = [branch.args["true"] for branch in node.args.get("ifs", [])]
        return _common([of(r) for r in results + [node.args.get("default") or exp.null()]])
    if isinstance(node, exp.Sum):
        return sum_result(of(node.this))
    if isinstance(node, (exp.Avg, *DEVIATIONS)):
        base = base_of(of(node.this))
        return "numeric" if base in ("int2", "int4", "int8", "numeric") else \
            "float8" if base in ("float4", "float8") else None
    if isinstance(node, _SAME_AS_ARG):
        arg = of(node.this)
        return arg if base_of(arg) in NUMERIC_ORDER else None
    if isinstance(node, exp.Sign):
        return float_or_numeric(of(node.this), 0)
    if isinstance(node, _WHOLE) and node.args.get("decimals") is None:
        return float_or_numeric(of(node.this), 0)
    if isinstance(node, (exp.Round, exp.Trunc)):
        return rounded(of(node.this), node.args.get("decimals"))
    if isinstance(node, (exp.Sqrt, exp.Exp, exp.Ln, exp.Log, exp.Pow)):
        return math_result(node, of)
    return None


_JSON_BUILDERS = {"json_build_array", "json_build_object", "jsonb_build_array", "jsonb_build_object"}
_REG_OUTPUTS = {f"{kind}_out" for kind in ("regtype", "regclass", "regproc", "regprocedure",
                                            "regnamespace", "regrole")}


def _cast(node: exp.Cast) -> str | None:
    to = node.to
    if to.this == exp.DataType.Type.UINT and node.meta.get(CAST_NAME):
        return "oid"  # `::oid`, written as an unsigned integer (planner.pgcompat)
    name = pg_type_name(to)
    if name in ("varchar", "bpchar", "numeric") and to.expressions:
        args = [e.this.name if isinstance(e, exp.DataTypeParam) else e.name for e in to.expressions]
        if name == "numeric":
            return numeric(int(args[1])) if len(args) == 2 and args[1].isdigit() else \
                numeric(0) if len(args) == 1 else "numeric"
        return f"{name}({args[0]})" if args[0].isdigit() else name
    if name == "bpchar":  # char without a length is char(1); bpchar has none
        return "bpchar" if to.this == exp.DataType.Type.BPCHAR else "bpchar(1)"
    if to.this == exp.DataType.Type.TEXT or name in NUMERIC_ORDER or name in (
            "bool", "date", "timestamp", "timestamptz", "interval", "varchar", "bytea", "uuid",
            "json", "jsonb", "time"):
        return name
    return None

