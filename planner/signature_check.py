"""Calls and operators PostgreSQL has no overload for, given their argument types.

A function can exist in PostgreSQL and still not take the types a statement passes it:
there is no `%` or `mod()` of a float, no `round(double precision, integer)` nor
`trunc(double precision, integer)` (only numeric's), no two-argument `log()` of a float
(a float does not cast to numeric implicitly), and no `min()` or `max()` of a boolean;
`to_json('text')` and `lead('x') OVER ()` cannot resolve their polymorphic argument from a
literal of unknown type.
PostgreSQL answers such a statement with 42883 before it runs; DuckDB and Spark have the
overloads and would answer rows. So the planner raises PostgreSQL's error here: for an
operator `operator does not exist: double precision % integer`, for a call `function
round(double precision, integer) does not exist`.

Only argument types the statement makes certain count (a literal, a cast, a typed column);
an argument of unknown type is left to the engine, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from pgwire.errors import DATATYPE_MISMATCH, UNDEFINED_FUNCTION, PgError
from pgwire.function_names import undefined_function
from planner.catalog import CatalogSnapshot
from planner.function_check import argument_type, called_name, display_type_name, type_in_place

FLOATS = frozenset({"double precision", "real"})
KNOWN = FLOATS | {"smallint", "integer", "bigint", "numeric"}
NO_OPERATOR_HINT = ("No operator matches the given name and argument types. "
                    "You might need to add explicit type casts.")
_CANDIDATES = (exp.Mod, exp.Round, exp.Trunc, exp.Log, exp.Min, exp.Max)


def _arguments(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, (exp.Round, exp.Trunc)):
        return [a for a in (node.this, node.args.get("decimals")) if a is not None]
    if isinstance(node, (exp.Min, exp.Max)):
        return [node.this, *node.expressions]
    return [a for a in (node.this, node.args.get("expression")) if a is not None]


def _missing(node: exp.Expression, types: list[str]) -> bool:
    """Whether PostgreSQL lacks the overload for `types` (each certain)."""
    if isinstance(node, (exp.Min, exp.Max)):
        return types == ["boolean"]
    if not all(t in KNOWN for t in types):
        return False
    if isinstance(node, exp.Mod):
        return any(t in FLOATS for t in types)
    if isinstance(node, (exp.Round, exp.Trunc)):
        return len(types) == 2 and types[0] in FLOATS
    return len(types) == 2 and any(t in FLOATS for t in types)  # log(b, x)


def _certain_type(arg: exp.Expression, columns_certain: bool) -> str:
    """The argument's type when the statement makes it certain, else "unknown": sqlglot's
    types of other expressions are not always PostgreSQL's (avg() is a double to it)."""
    while isinstance(arg, exp.Paren):
        arg = arg.this
    literal = arg.this if isinstance(arg, exp.Neg) else arg
    if isinstance(literal, (exp.Literal, exp.Boolean)) or isinstance(arg, exp.Cast) or \
            (columns_certain and isinstance(arg, exp.Column)):
        return argument_type(arg)
    if isinstance(arg, (exp.Predicate, exp.Connector, exp.Not)):
        return "boolean"  # a comparison, AND, OR, NOT
    return "unknown"


# Polymorphic functions whose argument PostgreSQL must know the type of: a string
# literal (type unknown) cannot be resolved.
_POLYMORPHIC = frozenset({"to_json", "to_jsonb"})
# The window functions whose first argument is `anyelement` (lag, lead, first_value,
# last_value, nth_value): `lead('x') OVER ()` is the same error.
_POLYMORPHIC_WINDOWS = (exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue, exp.NthValue)


def _unknown_literal(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _unknown_polymorphic(tree: exp.Expression) -> None:
    for call in tree.find_all(exp.Anonymous, *_POLYMORPHIC_WINDOWS):
        if isinstance(call, exp.Anonymous):
            unresolved = call.name.lower() in _POLYMORPHIC and len(call.expressions) == 1 \
                and _unknown_literal(call.expressions[0])
        else:
            unresolved = _unknown_literal(call.this)
        if unresolved:
            raise PgError(DATATYPE_MISMATCH, "could not determine polymorphic type because "
                          "input has type unknown")


# Functions of text alone: a number or a boolean does not cast to text implicitly.
_TEXT_ONLY = frozenset({"quote_ident"})


def _text_only(tree: exp.Expression) -> None:
    for call in tree.find_all(exp.Anonymous):
        if call.name.lower() in _TEXT_ONLY and len(call.expressions) == 1:
            kind = _certain_type(call.expressions[0], False)
            if kind in KNOWN or kind == "boolean":
                start = call.meta.get("start")
                raise undefined_function(call.name.lower(), [kind], start + 1 if start is not None else None)


# Comparisons PostgreSQL has no operator for across these categories: `text = 1`,
# `flag = 1`, `name IN ('a', 1)`, `name BETWEEN 1 AND 2` (a string or a boolean against a
# number). DuckDB casts and answers rows, or fails at the first value that does not cast
# (22P02).
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_STRINGS = frozenset({"text", "character varying", "character", "name"})


def _category(kind: str) -> str | None:
    return "string" if kind in _STRINGS else "number" if kind in KNOWN else \
        "boolean" if kind == "boolean" else None


def _a_number_or_boolean_literal(node: exp.Expression) -> bool:
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    return isinstance(node, exp.Boolean) or (isinstance(node, exp.Literal) and not node.is_string)


def _declared_type(node: exp.Expression, param_types: Sequence[str | None]) -> str | None:
    """A parameter's type when the client (or the lifting of a literal) declared it."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal) and node.this.is_int:
        index = int(node.this.this) - 1
        if 0 <= index < len(param_types) and param_types[index]:
            return display_type_name(param_types[index])
    return None


def _compared_pairs(tree: exp.Expression):
    """(node, left, operator, right) for each comparison, each IN list item (=) and each
    BETWEEN bound (>=, <=: PostgreSQL's own expansion)."""
    for node in tree.find_all(*_COMPARISONS, exp.In, exp.Between):
        if isinstance(node, exp.In):
            if node.args.get("query") is None and not node.args.get("unnest"):
                yield from ((node, node.this, "=", item) for item in node.expressions)
        elif isinstance(node, exp.Between):
            yield node, node.this, ">=", node.args["low"]
            yield node, node.this, "<=", node.args["high"]
        else:
            yield node, node.left, _OPERATOR_TEXT[type(node)], node.right


def _suspect_comparisons(tree: exp.Expression, param_types: Sequence[str | None]):
    """The compared pairs of a number or boolean literal, or of a declared parameter: the
    only ones typed (every statement compares columns; typing them all would cost each
    plan)."""
    pairs = list(_compared_pairs(tree))
    suspects = {id(node) for node, left, _, right in pairs
                if any(_a_number_or_boolean_literal(side) or _declared_type(side, param_types)
                       for side in (left, right))}
    return [pair for pair in pairs if id(pair[0]) in suspects]  # all pairs of a BETWEEN


def _operator_position(node: exp.Binary, sql: str) -> int | None:
    """Where PostgreSQL points for an operator: the operator itself, after its left side."""
    ends = [n.meta["end"] for n in node.left.walk() if "end" in n.meta]
    if not ends:
        return None
    spellings = ("<>", "!=") if isinstance(node, exp.NEQ) else (_OPERATOR_TEXT[type(node)],)
    found = [at for at in (sql.find(spelling, max(ends) + 1) for spelling in spellings) if at >= 0]
    return min(found) + 1 if found else None


# Field metadata of a column the engine holds as text for a type of another category (a
# PostgreSQL source's unconstrained numeric, an enum, a MySQL decimal beyond 38 digits).
_HELD_AS_TEXT = (b"pg_type", b"source_type", b"pg_type_oid")


def _held_as_text(typed: exp.Expression, catalog: CatalogSnapshot | None) -> set[tuple[str, str]]:
    """(table alias, column) of the typed tree's columns whose text is another type's."""
    held: set[tuple[str, str]] = set()
    for table in typed.find_all(exp.Table) if catalog is not None else ():
        entry = catalog.sources.get(table.db) if table.db else None
        info = entry.tables.get(table.name) if entry is not None else None
        for field in info.schema if info is not None else ():
            if field.metadata and any(key in field.metadata for key in _HELD_AS_TEXT):
                held.add((table.alias_or_name, field.name))
    return held


def _comparisons_across_categories(typed: exp.Expression, sql: str, columns_certain: bool,
                                   param_types: Sequence[str | None],
                                   catalog: CatalogSnapshot | None) -> None:
    held: set[tuple[str, str]] | None = None
    for node, left_side, operator, right_side in _suspect_comparisons(typed, param_types):
        if isinstance(left_side, (exp.Any, exp.All)) or isinstance(right_side, (exp.Any, exp.All)):
            continue  # x = ANY (array): compares x with the elements
        held = _held_as_text(typed, catalog) if held is None else held
        if any(isinstance(side, exp.Column) and (side.table, side.name) in held
               for side in (left_side, right_side)):
            continue  # its type is not text: planner.kept_texts has the rules for it
        left, right = (_declared_type(side, param_types) or _certain_type(side, columns_certain)
                       for side in (left_side, right_side))
        categories = {_category(left), _category(right)}
        if None in categories or len(categories) == 1:
            continue
        raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: {left} {operator} {right}",
                      hint=NO_OPERATOR_HINT,
                      position=_operator_position(node, sql) if isinstance(node, _COMPARISONS) else None)


_OPERATOR_TEXT = {exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}


def signature_check(tree: exp.Expression, sql: str, catalog: CatalogSnapshot | None = None,
                    search_path: Sequence[str] = (), param_types: Sequence[str | None] = ()) -> None:
    """Raise PostgreSQL's 42883 for the first call or operator in `tree` (parsed from
    `sql`) that PostgreSQL has no overload of for its argument types. The tree is not
    changed (column types are read on a copy)."""
    _unknown_polymorphic(tree)
    _text_only(tree)
    if tree.find(*_CANDIDATES) is None and not _suspect_comparisons(tree, param_types):
        return
    typed = tree.copy()
    # A column is certain when it can only be a catalog table's (no derived table, CTE or
    # VALUES list in the statement gives columns of its own, typed by sqlglot).
    columns_certain = catalog is not None and typed.find(exp.Subquery, exp.CTE, exp.Values) is None
    if columns_certain and typed.find(exp.Column) is not None:
        type_in_place(typed, catalog, search_path)
    _comparisons_across_categories(typed, sql, columns_certain, param_types, catalog)
    for node in typed.find_all(*_CANDIDATES):
        if isinstance(node, (exp.Min, exp.Max)) and node.expressions:
            continue  # not PostgreSQL's aggregate (it has one argument)
        name = called_name(node, sql)
        if isinstance(node, exp.Log) and name != "log":
            continue  # log10(x) and ln(x) parse as a Log with a base of their own
        types = [_certain_type(a, columns_certain) for a in _arguments(node)]
        if not _missing(node, types):
            continue
        if name is None:  # the % operator
            raise PgError(UNDEFINED_FUNCTION, f"operator does not exist: {types[0]} % {types[1]}",
                          hint=NO_OPERATOR_HINT)
        start = node.meta.get("start")
        raise undefined_function(name, types, start + 1 if start is not None else None)
