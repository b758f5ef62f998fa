"""Read what a source really ran, from its own log, for the "where did it run" tests.

PostgreSQL logs every statement of our source database (`log_statement = all`), MariaDB
keeps its general query log, and SQLite, DuckDB and the file sources write
`connectors.statement_log` files. A `LogTail` remembers a file's size; `statements()`
returns what was logged after that point, one statement per entry, so a test sees the
statements of its own query only (tests run one at a time).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

# PostgreSQL: "2024-... UTC [pid] LOG:  statement: SELECT ..." (simple protocol) or
# "... LOG:  execute <unnamed>: SELECT ..." (extended); continuation lines start with a tab.
_PG_STATEMENT = re.compile(r"LOG:\s+(?:statement|execute [^:]*):\s(.*)")
# MariaDB general log: "[time]\t\t    12 Query\tSELECT ...".
_MY_QUERY = re.compile(r"\d+\s+Query\t(.*)")


class LogTail:
    def __init__(self, kind: str, path: Path) -> None:
        self.kind = kind
        self.path = path
        self.offset = self._size()

    def _size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def mark(self) -> LogTail:
        self.offset = self._size()
        return self

    def _new_text(self) -> str:
        if not self.path.exists():
            return ""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            return f.read().decode(errors="replace")

    def statements(self) -> list[str]:
        text = self._new_text()
        if self.kind == "postgres":
            return _pg_statements(text)
        if self.kind == "mysql":
            return [m.group(1) for m in _MY_QUERY.finditer(text)]
        return [line for line in text.splitlines() if line]

    def wait_for(self, needle: str, timeout: float = 5.0) -> list[str]:
        """Statements logged since the mark, once one mentions `needle` (logs can lag
        a little behind the answer: the server writes them, not us)."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.statements()
            if any(needle in s for s in found) or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


def _pg_statements(text: str) -> list[str]:
    statements: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        match = _PG_STATEMENT.search(line)
        if match:
            if current is not None:
                statements.append(" ".join(current))
            current = [match.group(1)]
        elif line.startswith("\t") and current is not None:
            current.append(line.strip())
        elif current is not None:
            statements.append(" ".join(current))
            current = None
    if current is not None:
        statements.append(" ".join(current))
    return statements
