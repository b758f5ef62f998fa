"""The express lane's split of a simple Query's text: (statement, shape, numbers).

`gateway.relay.express.memory` finds a Query it relayed before by its shape, the text with
each number replaced by `?`. Only texts without string quotes, escapes, dollar signs,
question marks, comments, inner semicolons or non-ASCII characters are read this way: for
them, splitting on numbers gives exactly the shape and numbers `gateway.relay.shapes` finds,
and `split_statements` the statement itself (stripped, one trailing semicolon dropped).
Quoted identifiers (`"pg"."t1"`, as ORMs write them) are read, kept whole: a digit inside
one is no number, as in `gateway.relay.shapes`; with an unclosed one the text is not read.

`quick_split` reads a text (`_remember` keys a shape with it); `quick_split_bytes` reads a
Query's bytes as they arrived, on every statement of the lane, in one pass; it is
`gateway.relay.express.statement_bytes` (compiled by Cython when built; FEDGATE_EXPRESS
says which build runs, as FEDGATE_ROW_WALK does for the row walk), as is `quick_bind`, the
Bind of the numbers to the source's statement.
"""

from __future__ import annotations

import re

from pgwire.compiled import build_of
from gateway.relay.express import EXPRESS_BUILD_ENV, statement_bytes  # EXPRESS_BUILD_ENV: for the tests

# As gateway.relay.shapes' quoted identifier and number alternatives (`""` inside a quoted
# identifier reads as two quoted identifiers in a row: kept whole all the same).
_NUMBER = re.compile(r'"[^"]*"|(?<![\w$.])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)')
# Characters whose rules the split does not read; `;` inside the text makes two statements.
_UNREAD = re.compile(r"""['\\$?]|--|/\*""")


def quick_split(text: str) -> tuple[str, str, list[str]] | None:
    """(statement, shape, numbers) of a one-statement text this module reads, else None."""
    if not text.isascii() or _UNREAD.search(text) or text.count('"') % 2:
        return None
    sql = text.strip().rstrip(";").rstrip()
    if ";" in sql:
        return None
    parts, numbers, at = [], [], 0
    for found in _NUMBER.finditer(sql):
        if found.group(1) is not None:
            parts.append(sql[at:found.start()])
            numbers.append(found.group(1))
            at = found.end()
    if not numbers:
        return None  # nothing was lifted
    parts.append(sql[at:])
    return sql, "?".join(parts), numbers


# Which build of the split on a Query's bytes runs, for the start-up log.
SPLIT_BUILD = build_of(statement_bytes)
