"""The express lane's split of a simple Query's text: (statement, shape, numbers).

`gateway.relay.hot` finds a Query it relayed before by its shape, the text with each
number replaced by `?`. Only texts without quotes, escapes, dollar signs, question marks,
comments, inner semicolons or non-ASCII characters are read this way: for them, splitting
on numbers gives exactly the shape and numbers `gateway.relay.shapes` finds, and
`split_statements` the statement itself (stripped, one trailing semicolon dropped).

`quick_split` reads a text (`_remember` keys a shape with it); `quick_split_bytes` reads
a Query's bytes as they arrived, on every statement of the lane. The latter is the C
split (`gateway/relay/hotsplit.c`) when it is built, else the pure Python one here
(`quick_split_bytes_py`); so is `quick_bind`, the Bind of the numbers to the source's
statement. FEDGATE_HOT_SPLIT says which, as FEDGATE_ROW_WALK does for
the row walk (`pgwire.protocol.client`). Both give the same answer for any bytes.
"""

from __future__ import annotations

import re
import struct

from pgwire.compiled import choose

# As gateway.relay.shapes' number alternative (a text read here has no quotes to skip).
_NUMBER = re.compile(r"(?<![\w$.])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)")
# Characters whose rules the split does not read; `;` inside the text makes two statements.
_UNREAD = re.compile(r"""['"\\$?]|--|/\*""")
# The same two on a Query's bytes: for ASCII, `\w` and `\d` match the same characters in
# bytes as in text, and _SPACE is what str.strip() strips there.
_NUMBER_B = re.compile(_NUMBER.pattern.encode())
_UNREAD_B = re.compile(_UNREAD.pattern.encode())
_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


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


def quick_split_bytes_py(data: bytes) -> tuple[bytes, bytes, list[bytes]] | None:
    """`quick_split` of a Query's text as bytes (`data`: the text, without its NUL): the
    same statement, shape and numbers, encoded, without decoding the text first."""
    if not data.isascii() or _UNREAD_B.search(data):
        return None
    sql = data.strip(_SPACE).rstrip(b";").rstrip(_SPACE)
    if b";" in sql:
        return None
    parts = _NUMBER_B.split(sql)
    if len(parts) == 1:
        return None
    return sql, b"?".join(parts[0::2]), parts[1::2]


_I32 = struct.Struct("!i")


def quick_bind_py(head: bytes, numbers: list[bytes], tail: bytes) -> bytes:
    """The Bind of the split's numbers (text format) to the source's statement, then
    `tail`: 'B', its length, `head` (the Bind's bytes between its length and its values),
    each number with its length, no result formats."""
    parts = [b"B", b"", head]
    for value in numbers:
        parts.append(_I32.pack(len(value)))
        parts.append(value)
    parts.append(b"\0\0")
    parts[1] = _I32.pack(sum(map(len, parts)) + 3)
    parts.append(tail)
    return b"".join(parts)


# FEDGATE_HOT_SPLIT=python picks the Python split even when the C one is built (the tests
# run the lane both ways); =c insists on the C split (an ImportError when it is not
# built); unset: C when built.
HOT_SPLIT_ENV = "FEDGATE_HOT_SPLIT"
quick_split_bytes, HOT_SPLIT = choose(HOT_SPLIT_ENV, "gateway.relay.hotsplit", "split",
                                      quick_split_bytes_py, "split", "a faster express lane")
quick_bind, _ = choose(HOT_SPLIT_ENV, "gateway.relay.hotsplit", "bind", quick_bind_py,
                       "Bind", "a faster express lane")
