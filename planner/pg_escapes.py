"""PostgreSQL's escape strings on sqlglot's postgres dialect: `E'\\v'` is `v`.

PostgreSQL's lexer knows `\\b \\f \\n \\r \\t`, octal, hex and Unicode escapes in an
`E'...'` string; any other character after a backslash stands for itself. sqlglot's
postgres dialect also reads `\\v` as a vertical tab (the C escape), so a statement the
engine answered saw a different string than the same statement relayed to PostgreSQL, and
a vertical tab sqlglot writes back into an `E'...'` string would come out as `v` on a
PostgreSQL source. Both tables of the dialect are set here, once, at import of the planner
package, before any statement is parsed; everything else reads the dialect by name.
"""

from __future__ import annotations

from sqlglot.dialects.postgres import Postgres

Postgres.UNESCAPED_SEQUENCES = {**Postgres.UNESCAPED_SEQUENCES, "\\v": "v"}
Postgres.ESCAPED_SEQUENCES = {**Postgres.ESCAPED_SEQUENCES, "\x0b": "\\x0b"}
