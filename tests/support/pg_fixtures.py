"""pytest plugin: a session-wide throwaway PostgreSQL 15 server (see tests/support/postgres.py).

Loaded through `pytest_plugins` in tests/conftest.py. The server starts on first use only,
so test runs that never ask for `postgres_server` do not pay for initdb.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import PostgresServer, start_postgres


@pytest.fixture(scope="session")
def postgres_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PostgresServer]:
    """A running PostgreSQL 15 cluster with trust auth; user `postgres`, database `postgres`."""
    server = start_postgres(tmp_path_factory.mktemp("postgres"))
    try:
        yield server
    finally:
        server.stop()
