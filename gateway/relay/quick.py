"""The express lane's split of a simple Query's text: (statement, shape, numbers).

`gateway.relay.hot` finds a Query it relayed before by its shape, the text with each
number replaced by `?`. Only texts without quotes, escapes, dollar signs, question marks,
comments, inner semicolons or non-ASCII characters are read this way: for them, splitting
on numbers gives exactly the shape and numbers `gateway.relay.shapes` finds, and
`split_statements` the statement itself (stripped, one trailing semicolon dropped).

`quick_split` reads a text (`_remember` keys a shape with it); `quick_split_bytes` reads
a Query's bytes as they arrived, on every statement of the lane, in one pass; it is
`gateway.relay.statement_bytes` (compiled by Cython when built; FEDGATE_HOT_SPLIT says
which build runs, as FEDGATE_ROW_WALK does for the row walk), as is `quick_bind`, the
Bind of the numbers to the source's statement.
"""

from __future__ import annotations

import re

from pgwire.compiled import build_of
from gateway.relay import HOT_SPLIT_ENV, statement_bytes  # HOT_SPLIT_ENV: for the tests

# As gateway.relay.shapes' number alternative (a text read here has no quotes to skip).
_NUMBER = re.compile(r"(?<![\w$.])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)")
# Characters whose rules the split does not read; `;` inside the text makes two statements.
_UNREAD = re.compile(r"""['"\\$?]|--|/\*""")


def quick_split(text: str) -> tuple[str, str, list[str]] | None:
    """(statement, shape, numbers) of a one-statement text this module reads, else None."""
    if not text.isascii() or _UNREAD.search(text):
        return None
    sql = text.strip().rstrip(";").rstrip()
    if ";" in sql:
        return None
    parts = _NUMBER.split(sql)
    if len(parts) == 1:
        return None  # no numbers: nothing was lifted
    return sql, "?".join(parts[0::2]), parts[1::2]


# Which build of the split on a Query's bytes runs, for the start-up log.
HOT_SPLIT = build_of(statement_bytes)
