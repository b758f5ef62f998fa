"""A PostgreSQL value the engine holds as text is passed through, never computed on.

A PostgreSQL source hands over the values of types Arrow cannot hold (an unconstrained
`numeric`, a jsonb, an array, an enum, bit, money, ...) as PostgreSQL's own text
(connectors.postgres.types), so in the engine they are text: `ORDER BY n` would sort
'10' before '2', `n + 1` has no operator, `a[1]` indexes characters, and '1.5' and '1.50'
are two groups. The residual may therefore only pass such a column through to the
client (which then gets it with its PostgreSQL type: the planner's output types say
so), test it for NULL, count it or cast it to text; anything else is refused (0A000)
naming the column, except where planner.source_values reads a jsonb, an array or an enum
as its value (a json operator, a subscript, an enum's grouping or order). So is a MySQL decimal beyond the engine's 38 digits, which the DuckDB
engine reads as its text.

A varchar(n) or name is text to the engine too: computed on as text, and passed through
with its type. So is a char(n), which arrives blank-padded: where PostgreSQL turns it into
text (`ch || '|'` is 'ab|', `length(ch)` 2, `ch = 'ab'`) the residual is rewritten in
place to read it without the blanks. What the source computes itself (a pushed filter, a
statement shipped whole) is PostgreSQL's answer and never reaches this check.

    SELECT g.nb FROM frag_0 AS g JOIN frag_1 AS d ON d.dk = g.dk        -> output 0 is numeric
    SELECT g.nb FROM frag_0 AS g JOIN frag_1 AS d ON ... ORDER BY g.nb  -> 0A000
    SELECT g.ch || '|' FROM frag_0 AS g ...  ->  SELECT RTRIM(g.ch, ' ') || '|' FROM ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache, partial

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from pgwire.errors import FEATURE_NOT_SUPPORTED, PgError
from pgwire.types.table import pg_type_by_name
from planner.enum_values import enum_casts_as_text
from planner.source_enums import ENUM_EXTREME, ENUM_VALUE, EnumText, check_enum_value, enum_outputs, position
from planner.source_values import JsonbValue, as_value, is_ordered, jsonb_value

_TEXT_CASTS = (exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR)
# Text to the engine as well: their order and equality are the text's.
_PLAIN_TEXT = ("varchar", "char", "bpchar", "name", "text")


def _computed_as_text(kept: str | None) -> bool:
    return kept is not None and kept.split("(")[0] not in _PLAIN_TEXT


def _blank_padded(kept: str | None) -> bool:
    return kept is not None and kept.split("(")[0] in ("char", "bpchar")


# Where PostgreSQL reads a char(n) with its trailing blanks, as the engine holds it: its
# own comparisons (grouping, sorting) ignore them, and equal-length padded texts compare
# as the unpadded ones do; pattern matching and concat() see them.
_PADDED_USES = (exp.Group, exp.Ordered, exp.Window, exp.Is, exp.Count, exp.Concat,
                exp.ConcatWs, exp.Like, exp.ILike, exp.RegexpLike, exp.RegexpILike,
                exp.SimilarTo)
# Where the result keeps the char(n) type, which the engine would compute as text.
_TYPED_USES = (exp.Coalesce, exp.Case, exp.If, exp.Nullif, exp.Greatest, exp.Least, exp.Max,
               exp.Min, exp.ArgMax, exp.ArgMin, exp.AnyValue, exp.First, exp.Last)


def _unpad(column: exp.Column, select: exp.Select, kept: str) -> None:
    """A char(n) is blank-padded text; PostgreSQL drops the blanks where it turns one
    into text (`ch || 'x'`, `length(ch)`, `ch = 'ab'`, ...), so there the residual reads
    it without them."""
    parent = column.parent
    if _passed(column, select) and not isinstance(parent, exp.Cast) or isinstance(parent, _PADDED_USES):
        return
    if isinstance(parent, _TYPED_USES) or isinstance(parent, exp.Cast) and \
            parent.to.this in (exp.DataType.Type.CHAR, exp.DataType.Type.NCHAR):
        _refuse(column, kept)
    _without_blanks(column)


def _without_blanks(column: exp.Column) -> None:
    column.replace(exp.Trim(this=column.copy(), expression=exp.Literal.string(" "),
                            position="TRAILING"))


def _compared(select: exp.Select) -> bool:
    """Whether `select` is the list of an IN or an ANY, which compares its values as text."""
    holder = select.parent
    return isinstance(holder, exp.Subquery) and isinstance(holder.parent, (exp.In, exp.Any))


def _unpad_outputs(select: exp.Select, marks: list[str | None]) -> None:
    """A char(n) an IN or ANY compares with other values: without its trailing blanks."""
    for expression, mark in zip(select.expressions, marks):
        if _blank_padded(mark):
            _without_blanks(expression.this if isinstance(expression, exp.Alias) else expression)


def kept_texts(residual: exp.Expression, texts: Mapping[str, Mapping[str, str]],
               column_types: Callable[[], Mapping[str, Mapping[str, str]]] = dict,
               ) -> tuple[dict[int, str], tuple[tuple[int, str, int, str], ...]]:
    """{output position: PostgreSQL type} of the residual's outputs that pass a source's
    text through, with the enums apart (planner.source_enums.enum_outputs); raise 0A000
    where the residual computes on such a text.
    `texts`: fragment name -> column -> PostgreSQL type (planner.fragment_types);
    `column_types`: the fragments' column types (planner.physical.render), read where an
    enum meets another column (PostgreSQL's 42883 for `st = c.name`)."""
    return enum_outputs(_kept_outputs(residual, texts, cache(column_types)))


def _kept_outputs(residual: exp.Expression, texts: Mapping[str, Mapping[str, str]],
                  column_types: Callable[[], Mapping[str, Mapping[str, str]]]) -> dict[int, str]:
    enum_values = enum_casts_as_text(residual)
    if not any(texts.values()) and not enum_values:
        return {}
    outputs: dict[int, list[str | None]] = {}  # per scope expression: each output's type
    root: Scope | None = None
    for scope in traverse_scope(residual):
        root = scope
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        # a lateral unnest()'s argument is among its select's columns twice, an outer
        # reference among its subquery's too: one rewritten already is no longer in the
        # residual (nor is the other enum of a comparison of two, planner.source_enums)
        if enum_values:
            _check_enum_values(select, partial(_kept, scope=scope, texts=texts, outputs=outputs))
        for column in {id(c): c for c in scope.columns}.values():
            if column.root() is not residual:
                continue
            kept = _kept(column, scope, texts, outputs)
            if isinstance(kept, JsonbValue):
                # a derived table's `->` answer: a value of the engine, never ordered; read by
                # a json operator, as the source's jsonb is (its containers in jsonb's layout)
                if is_ordered(column):
                    _refuse(column, kept)
                if not _passed(column, select):
                    as_value(column, kept, residual, partial(_kept, scope=scope, texts=texts, outputs=outputs))
            elif _blank_padded(kept):
                _unpad(column, select, kept)
            elif _computed_as_text(kept):
                # what the engine reads is text, whatever value the catalog types it as
                # (planner.type_names): the dialect's rewrites must not take it for one
                column.type = exp.DataType.build("TEXT")
                if not _passed(column, select) and not as_value(
                        column, kept, residual, partial(_kept, scope=scope, texts=texts, outputs=outputs),
                        partial(_fragment_type, scope=scope, types=column_types)):
                    _refuse(column, kept)
        marks = [_output_mark(e, scope, texts, outputs) for e in select.expressions]
        if any(map(_blank_padded, marks)) and _compared(select):
            _unpad_outputs(select, marks)
        if any(isinstance(m, EnumText) for m in marks):
            _order_enum_outputs(select, marks)
        if any(isinstance(m, JsonbValue) for m in marks):
            _check_order(select, [m if isinstance(m, JsonbValue) else None for m in marks])
        texts_only = [m if _computed_as_text(m) and not isinstance(m, (EnumText, JsonbValue)) else None
                      for m in marks]
        if any(texts_only):
            _check_select(select, texts_only)
        outputs[id(select)] = marks
    if root is None or not isinstance(root.expression, exp.Select):
        return {}
    # An enum is described as the gateway's catalog numbers it (planner.source_enums
    # enum_outputs); another type the gateway does not know is presented as text.
    return {i: t for i, t in enumerate(outputs.get(id(root.expression), ()))
            if t is not None and not isinstance(t, JsonbValue)
            and (isinstance(t, EnumText) or pg_type_by_name(t) is not None)}


def _kept(column: exp.Column, scope: Scope, texts: Mapping[str, Mapping[str, str]],
          outputs: Mapping[int, list[str | None]]) -> str | None:
    """The PostgreSQL type whose text `column` reads, if it reads one."""
    walk: Scope | None = scope
    while walk is not None and column.table not in walk.sources:
        walk = walk.parent  # an outer reference
    if walk is None or not column.table:
        return None
    source = walk.sources[column.table]
    if isinstance(source, exp.Table):
        return texts.get(source.name, {}).get(column.name)
    if isinstance(source, Scope) and isinstance(source.expression, exp.Select):
        marks = outputs.get(id(source.expression), ())
        names = _output_names(source)
        return marks[names.index(column.name)] if column.name in names else None
    return None


def _fragment_type(column: exp.Column, scope: Scope,
                   types: Callable[[], Mapping[str, Mapping[str, str]]]) -> exp.DataType | None:
    """The type of a fragment's column as the catalog has it, if `column` reads one."""
    walk: Scope | None = scope
    while walk is not None and column.table not in walk.sources:
        walk = walk.parent
    source = walk.sources[column.table] if walk is not None and column.table else None
    name = types().get(source.name, {}).get(column.name) if isinstance(source, exp.Table) else None
    return exp.DataType.build(name, dialect="duckdb") if name else None


def _output_names(scope: Scope) -> list[str]:
    """A derived table's or CTE's output names: its alias's column list, else its own."""
    holder = scope.expression.parent
    alias = holder.args.get("alias") if isinstance(holder, (exp.Subquery, exp.CTE)) else None
    columns = alias.columns if isinstance(alias, exp.TableAlias) else []
    if columns:
        return [c.name for c in columns]
    return [e.alias_or_name for e in scope.expression.expressions]


def _check_enum_values(select: exp.Select, kept_of: Callable[[exp.Column], str | None]) -> None:
    """0A000 for a cast to an enum of `select` (planner.enum_values) used where the engine
    would answer it as text (planner.source_enums.check_enum_value)."""
    # (a cast of a value checked as the row is computed is the CASE that checks it)
    values = [v for v in select.find_all(exp.Cast, exp.Case)
              if isinstance(v.meta.get(ENUM_VALUE), EnumText) and v.find_ancestor(exp.Select) is select]
    for value in values:
        if not check_enum_value(value, value.meta[ENUM_VALUE], kept_of):
            parent = value.parent
            while isinstance(parent, exp.Paren) and parent.parent is not None:
                parent = parent.parent
            raise _error(value.meta[ENUM_VALUE], f"`{parent.sql('postgres')[:80]}`")


def _output_mark(expression: exp.Expression, scope: Scope, texts: Mapping[str, Mapping[str, str]],
                 outputs: Mapping[int, list[str | None]]) -> str | None:
    inner = expression.this if isinstance(expression, exp.Alias) else expression
    if jsonb_value(inner):
        return JsonbValue("jsonb")
    if isinstance(inner.meta.get(ENUM_EXTREME), EnumText):  # min() / max() of an enum
        return inner.meta[ENUM_EXTREME]
    if isinstance(inner.meta.get(ENUM_VALUE), EnumText):  # a cast to it, a coalesce() of it
        return inner.meta[ENUM_VALUE]
    return _kept(inner, scope, texts, outputs) if isinstance(inner, exp.Column) else None


def _passed(column: exp.Column, select: exp.Select) -> bool:
    """Whether `column` is only passed through, tested for NULL, counted or cast to text."""
    parent = column.parent
    if isinstance(parent, exp.Alias):
        return parent.parent is select and parent.arg_key == "expressions"
    if parent is select:
        return column.arg_key == "expressions"
    if isinstance(parent, exp.Is):
        return True
    if isinstance(parent, exp.Count):
        return True  # count(DISTINCT c) has a Distinct in between: refused
    if isinstance(parent, exp.Cast):
        return parent.to.this in _TEXT_CASTS and not parent.to.expressions
    return False


def _check_select(select: exp.Select, marks: list[str | None]) -> None:
    """A passed-through text must not be made distinct, set-combined or sorted."""
    first = next(m for m in marks if m is not None)
    if select.args.get("distinct") is not None:
        raise _error(first, "DISTINCT")
    if isinstance(select.parent, exp.SetOperation):
        raise _error(first, select.parent.key.upper())
    holder = select.parent
    if isinstance(holder, exp.Subquery) and not isinstance(holder.parent, (exp.From, exp.Join)):
        # an IN list or a scalar subquery: its value meets the outer query's as text
        raise _error(first, "a subquery expression")
    _check_order(select, marks)


def _check_order(select: exp.Select, marks: list[str | None]) -> None:
    """An output marked in `marks` must not be what the select is sorted by (its position,
    its name)."""
    named = {e.alias_or_name: m for e, m in zip(select.expressions, marks) if m is not None}
    order = select.args.get("order")
    for ordered in order.expressions if order is not None else ():
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(marks) \
                and marks[int(key.name) - 1] is not None:
            raise _error(marks[int(key.name) - 1], "ORDER BY")
        if isinstance(key, exp.Column) and not key.table and key.name in named:
            raise _error(named[key.name], "ORDER BY")


def _order_enum_outputs(select: exp.Select, marks: list[str | None]) -> None:
    """An enum output the select is ordered by (its position, its name) is ordered by its
    labels' declared order; made distinct, it is its labels' (planner.source_enums).
    Set-combined or compared by an outer query, it is refused."""
    first = next(m for m in marks if isinstance(m, EnumText))
    holder = select.parent
    if isinstance(select.parent, exp.SetOperation):
        raise _error(first, select.parent.key.upper())
    if isinstance(holder, exp.Subquery) and not isinstance(holder.parent, (exp.From, exp.Join)):
        raise _error(first, "a subquery expression")
    named = {e.alias_or_name: (e, m) for e, m in zip(select.expressions, marks) if isinstance(m, EnumText)}
    order = select.args.get("order")
    for ordered in order.expressions if order is not None else ():
        key = ordered.this
        output = None
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(marks) \
                and isinstance(marks[int(key.name) - 1], EnumText):
            output = select.expressions[int(key.name) - 1], marks[int(key.name) - 1]
        elif isinstance(key, exp.Column) and not key.table and key.name in named:
            output = named[key.name]
        if output is not None:
            value = output[0].this if isinstance(output[0], exp.Alias) else output[0]
            key.replace(position(value.copy(), output[1]))


def _refuse(column: exp.Column, kept: str) -> None:
    parent = column.parent
    while isinstance(parent, (exp.Paren, exp.Ordered)) and parent.parent is not None:
        parent = parent.parent
    where = "ORDER BY" if isinstance(column.parent, exp.Ordered) else \
        "GROUP BY" if isinstance(parent, exp.Group) else f"`{parent.sql('postgres')[:80]}`"
    raise _error(kept, where, column.name)


def _error(kept: str, where: str, name: str | None = None) -> PgError:
    what = f'the column "{name}"' if name else "a column"
    if isinstance(kept, JsonbValue):
        return PgError(FEATURE_NOT_SUPPORTED, f"{what} of type jsonb (a PostgreSQL source's jsonb "
                       f"read by -> or #>) in {where} is not supported by the query engine, whose "
                       "order of it is its text's, not jsonb's")
    hint = "Cast it to numeric(p,s) in a subquery over its own table, which its source then " \
        "computes." if kept.split("(")[0] == "numeric" else None
    return PgError(FEATURE_NOT_SUPPORTED, f"{what} of type {kept} in {where} is not supported by "
                   "the query engine, which holds its values as text (a filter or a statement "
                   "its source runs itself is)", hint=hint)
