"""An append-only log of the statements a source ran, for sources that keep none.

PostgreSQL has `log_statement` and MariaDB its general log; SQLite, DuckDB and the file
sources have nothing comparable, so they write here when configured (`statement_log`).
Tests read it to prove whether an expression was shipped or kept local.
"""

from __future__ import annotations

import threading
from pathlib import Path


class StatementLog:
    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self._lock = threading.Lock()

    def write(self, statement: str) -> None:
        if self.path is None:
            return
        with self._lock, open(self.path, "a") as f:
            f.write(statement.replace("\n", " ") + "\n")
