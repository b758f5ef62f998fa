"""Numbers of a relayed statement lifted into parameters of a prepared statement.

PostgreSQL parses and plans a simple Query every time it arrives. pgbench's `-S` and
TPC-B scripts (and most OLTP traffic) send one statement shape with different numbers,
so the gateway sends the shape once as a prepared statement on the session's link
(`$1`, `$2` where the numbers were) and afterwards only binds the numbers:

    UPDATE pgbench_accounts SET abalance = abalance + -4163 WHERE aid = 54321
    → Parse  UPDATE pgbench_accounts SET abalance = abalance + -$1 WHERE aid = $2  (int4, int4)
      Bind   ('4163', '54321')

Each parameter is declared with the type PostgreSQL gives the literal itself (int4,
int8 or numeric, by its text), so operators, functions, casts and assignments resolve as
they would with the literal. A number is lifted only where an expression may stand:
right after an arithmetic or comparison operator, or directly in an INSERT's VALUES
tuple. A statement is left as written (None) when any number stands elsewhere (ORDER BY
1, LIMIT 10, numeric(10,2) ...), or when it has string quotes, comments, escapes or
dollar signs: there the text itself carries meaning this scanner does not read. Quoted
identifiers (`"pg"."pgbench_accounts"`) are names: they are read past, never lifted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gateway.relay.respell import Respelled
from gateway.relay.shapes import scan

INT4, INT8, NUMERIC = 23, 20, 1700
_OPERATOR_CHARS = frozenset("=<>!+-*/%~^&|#@?")
_EXPRESSION_OPERATORS = frozenset({"=", "<>", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/"})
_QUOTED_NAME = re.compile(r'"[^"]*(?:""[^"]*)*"')
_NAME = rf"(?:{_QUOTED_NAME.pattern}|\w+)"  # an identifier, quoted or not
_INSERT_VALUES = re.compile(rf"\s*INSERT\s+INTO\s+{_NAME}(?:\s*\.\s*{_NAME})*\s*"
                            rf"(?:\((?:\s*{_NAME}\s*,)*\s*{_NAME}\s*\))?\s*VALUES\s*\(", re.I)


@dataclass(frozen=True, slots=True)
class Lifted:
    sql: str                       # the statement with $1 .. $n
    values: tuple[bytes, ...]      # the numbers, as text-format parameters
    oids: tuple[int, ...]          # their types: the literals' own
    # Per number: (start in the original, its length there, start in the lifted text,
    # its marker's length)
    spans: tuple[tuple[int, int, int, int], ...]
    # The lifted text respelled for the source (`sql` is then its respelling), if it
    # names tables qualified with the source's name (gateway.relay.respell).
    respelled: Respelled | None = None

    def respelled_as(self, respelling: Respelled) -> Lifted:
        """This lifting with its text respelled: `respelling` is of `sql`."""
        return replace(self, sql=respelling.sql, respelled=respelling)

    def position(self, position: int) -> int:
        """An error position (1-based, in `sql`) as a position in the original text."""
        if self.respelled is not None:
            position = self.respelled.position(position)
        at, shift = position - 1, 0
        for original, length, lifted, marker in self.spans:
            if at < lifted:
                break
            if at < lifted + marker:
                return original + 1
            shift += length - marker
        return at + shift + 1


def lift(sql: str) -> Lifted | None:
    numbers = scan(sql).numbers
    if not numbers:
        return None  # none, or text this scan does not read (quotes, comments ...)
    insert = _INSERT_VALUES.match(sql)
    values_at = insert.end() - 1 if insert else -1
    parts: list[str] = []
    values: list[bytes] = []
    oids: list[int] = []
    spans: list[tuple[int, int, int, int]] = []
    last = 0
    length = 0
    for start, end in numbers:
        if not (_after_operator(sql, start) or (0 <= values_at < start and _in_tuple(sql, values_at, start))):
            return None
        text = sql[start:end]
        parts.append(sql[last:start])
        length += start - last
        marker = f"${len(values) + 1}"
        spans.append((start, end - start, length, len(marker)))
        parts.append(marker)
        length += len(marker)
        values.append(text.encode())
        oids.append(type_of(text))
        last = end
    if not values:
        return None
    parts.append(sql[last:])
    return Lifted("".join(parts), tuple(values), tuple(oids), tuple(spans))


def type_of(text: str) -> int:
    """PostgreSQL's type of a numeric constant: int4 if it fits, else int8, else numeric."""
    if "." in text or "e" in text or "E" in text:
        return NUMERIC
    value = int(text)
    return INT4 if value < 2**31 else INT8 if value < 2**63 else NUMERIC


def _after_operator(sql: str, start: int) -> bool:
    """Whether the number at `start` follows an arithmetic or comparison operator."""
    i = start - 1
    while i >= 0 and sql[i].isspace():
        i -= 1
    end = i + 1
    while i >= 0 and sql[i] in _OPERATOR_CHARS:
        i -= 1
    return sql[i + 1:end] in _EXPRESSION_OPERATORS


def _in_tuple(sql: str, opening: int, start: int) -> bool:
    """Whether `start` lies directly in a VALUES tuple (not in a call or type inside it),
    right after its opening parenthesis or a comma."""
    i = start - 1
    while sql[i].isspace():
        i -= 1
    if sql[i] not in "(,":
        return False
    depth = 0
    for char in _QUOTED_NAME.sub("", sql[opening:start]):  # a quoted name's parentheses are letters
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
    return depth == 1
