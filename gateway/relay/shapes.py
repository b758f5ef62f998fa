"""A statement's shape (its text with literals blanked out) and where its numbers are.

Both come from one scan, done once per statement on the relay's hot path: the router
caches its decisions by shape (`gateway.relay.routing`), and `gateway.relay.literals` lifts the
numbers into parameters. The scan is kept for the last statement seen, because the
router and the lifting read the same string one after the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Quoted identifiers (kept), string literals and numbers (blanked). The lookahead lets the
# regex engine skip to candidate characters.
_SHAPE = re.compile(r"""(?=["'0-9])(?:("[^"]*(?:""[^"]*)*")|('[^']*(?:''[^']*)*')|(?<![\w$.])\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)""")
_DOLLAR_QUOTE = re.compile(r"\$\w*\$")
_STRING_PREFIX = re.compile(r"(?:^|[^\w])(?:[eEbBxXnN]|[uU]&)$")  # E'..', B'..', U&'..' ...


@dataclass(frozen=True, slots=True)
class Scan:
    shape: str
    # (start, end) of each number, in order; None when the text has string literals,
    # escapes, dollar signs or comments, whose rules this scan does not read (a quoted
    # identifier is read: it is skipped whole, digits and all).
    numbers: tuple[tuple[int, int], ...] | None


_last: tuple[str, Scan] | None = None


def scan(sql: str) -> Scan:
    global _last
    last = _last
    if last is not None and last[0] is sql:
        return last[1]
    found = _scan(sql)
    _last = (sql, found)
    return found


def shape_of(sql: str) -> str:
    """The text with literals blanked out: statements of one shape share a route."""
    return scan(sql).shape


def _scan(sql: str) -> Scan:
    if "\\" in sql or ("$" in sql and _DOLLAR_QUOTE.search(sql)):
        return Scan(sql, None)  # escapes or dollar quoting: a plain tokenizer could misread them
    numbers: list[tuple[int, int]] = []
    quoted = False  # a string literal was met

    def blank(found: re.Match) -> str:
        nonlocal quoted
        if found.group(1):
            return found.group(1)  # a quoted identifier stays
        start = found.start()
        if found.group(2):
            quoted = True
            if _STRING_PREFIX.search(sql, max(0, start - 3), start):
                raise _Prefixed  # a prefixed string (E'', B'', U&''): its own rules
        else:
            numbers.append(found.span())
        return "?"

    try:
        shape = _SHAPE.sub(blank, sql)
    except _Prefixed:
        return Scan(sql, None)  # keep the text: the shape is the statement itself
    readable = not quoted and "$" not in sql and "--" not in sql and "/*" not in sql
    return Scan(shape, tuple(numbers) if readable else None)


class _Prefixed(Exception):
    pass
