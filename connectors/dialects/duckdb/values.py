"""A VALUES column of string constants and integers, typed as PostgreSQL types it.

PostgreSQL gives a string constant in VALUES the type the column's other values agree on
(select_common_type leaves out the unknown-typed inputs, then coerces them): `VALUES ('1'),
(2)` is an integer column of 1 and 2. DuckDB refuses to combine a VARCHAR with an integer.
So in a column of string constants, integer constants and NULLs, the strings are cast to
the integers' type: integer, or bigint when a constant is beyond it. A string that is not
an integer raises PostgreSQL's 22P02, the first of them in PostgreSQL's order (column by
column). Columns holding anything else are left as written.
"""

from __future__ import annotations

from sqlglot import exp

from connectors.dialects.duckdb.integers import check_text

_NAMES = {"INT": "integer", "BIGINT": "bigint"}
INT4_MAX = 2**31 - 1
INT8_MAX = 2**63 - 1


def _integer(item: exp.Expression) -> int | None:
    """The value of an integer constant (`5`, `-5`), else None."""
    negative = isinstance(item, exp.Neg)
    literal = item.this if negative else item
    if not isinstance(literal, exp.Literal) or literal.is_string or not literal.this.isdigit():
        return None
    return -int(literal.this) if negative else int(literal.this)


def _string(item: exp.Expression) -> bool:
    return isinstance(item, exp.Literal) and item.is_string


def _strings_type(column: tuple[exp.Expression, ...]) -> str | None:
    """The type the string constants of `column` take, when it holds string constants,
    integer constants and NULLs alone, both of the first two; else None."""
    integers = [_integer(item) for item in column if not _string(item) and not isinstance(item, exp.Null)]
    if not integers or None in integers or not any(map(_string, column)):
        return None
    largest = max(abs(value) for value in integers)  # type: ignore[arg-type]
    return "INT" if largest <= INT4_MAX else "BIGINT" if largest <= INT8_MAX else None


def _rows(values: exp.Values) -> list[list[exp.Expression]] | None:
    rows = [row.expressions for row in values.expressions if isinstance(row, exp.Tuple)]
    return rows if rows and len(rows) == len(values.expressions) else None


def needs_rewrite(tree: exp.Expression) -> bool:
    for values in tree.find_all(exp.Values):
        rows = _rows(values)
        if rows is not None and any(_strings_type(column) for column in zip(*rows)):
            return True
    return False


def typed_values(node: exp.Expression) -> exp.Expression:
    """A VALUES list with its columns' string constants cast as PostgreSQL resolves them;
    any other node as it is."""
    if not isinstance(node, exp.Values):
        return node
    rows = _rows(node)
    if rows is None:
        return node
    kinds = [_strings_type(column) for column in zip(*rows)]
    if not any(kinds):
        return node
    # PostgreSQL coerces column by column, each from the first row down: its first
    # unreadable string is the one it names.
    for index, kind in enumerate(kinds):
        for row in rows:
            if kind is not None and _string(row[index]):
                check_text(row[index].this, _NAMES[kind])
    typed = node.copy()
    for row in typed.expressions:
        for item, kind in zip(list(row.expressions), kinds):
            if kind is not None and _string(item):
                item.replace(exp.Cast(this=item.copy(), to=exp.DataType.build(kind)))
    return typed
