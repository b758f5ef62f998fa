"""Spark's own JDBC reads of a PostgreSQL source run as the gateway's reads do: under the
user's `source_roles` role there, with the settings the session forwards (a custom
`app.tenant` that a row-level policy reads). A local Spark told to read every fragment
itself (`spark_reads_sources = "always"`), a real PostgreSQL, a Parquet file to join with.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.gateway_proc import GatewayProcess, start_gateway
from tests.support.postgres import PostgresServer, new_database

pytestmark = pytest.mark.spark

PASSWORD = "s3cret-pw"


@dataclass(frozen=True)
class Setup:
    gateway: GatewayProcess

    async def connect(self, user: str) -> asyncpg.Connection:
        g = self.gateway
        conn = await asyncpg.connect(host=g.host, port=g.port, database=g.database, user=user,
                                     password=PASSWORD, command_timeout=300)
        # Every fragment Spark's to read (dynamic filtering reads one side here first).
        await conn.execute("SET fedgate.dynamic_filtering = off")
        return conn


async def _load(server: PostgresServer, role: str) -> str:
    dsn = await new_database(server, f"spark_access_{uuid.uuid4().hex[:6]}")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"""
            CREATE TABLE items (id int PRIMARY KEY, name text);
            INSERT INTO items VALUES (1, 'one'), (2, 'two'), (3, 'three');
            CREATE TABLE secrets (id int PRIMARY KEY, word text);
            INSERT INTO secrets VALUES (1, 'hush');
            CREATE TABLE tenants (id int PRIMARY KEY, tenant text);
            INSERT INTO tenants VALUES (1, 'a'), (2, 'b'), (3, 'a');
            ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
            CREATE ROLE {role} NOLOGIN;
            CREATE POLICY own ON tenants TO {role}
                USING (tenant = current_setting('app.tenant', true));
            GRANT USAGE ON SCHEMA public TO {role};
            GRANT SELECT ON items, tenants TO {role};
            ANALYZE""")
    finally:
        await conn.close()
    return dsn


@pytest.fixture(scope="module")
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root: Path = tmp_path_factory.mktemp("spark_reads_access")
    role = f"reader_{uuid.uuid4().hex[:6]}"
    dsn = asyncio.run(_load(postgres_server, role))
    (root / "files").mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int32())}), root / "files" / "keys.parquet")
    gateway = start_gateway("\n".join([
        "[server]", 'auth_method = "scram-sha-256"',
        "[engine]", 'default = "spark"', 'spark_reads_sources = "always"',
        "[[users]]", 'name = "carol"', f"password = {json.dumps(PASSWORD)}", 'sources = ["*"]',
        f"source_roles = {{ pg = {json.dumps(role)} }}",
        "[[users]]", 'name = "root"', f"password = {json.dumps(PASSWORD)}", 'sources = ["*"]',
        "[sources.pg]", 'kind = "postgres"', f"dsn = {json.dumps(dsn)}",
        "[sources.files]", 'kind = "parquet"', f"path = {json.dumps(str(root / 'files'))}", "",
    ]), root / "gateway")
    try:
        yield Setup(gateway)
    finally:
        gateway.stop()


JOINED = "SELECT {cols} FROM pg.{table} t JOIN files.keys k ON k.id = t.id ORDER BY t.id"


async def test_spark_reads_under_the_users_role(setup: Setup) -> None:
    conn = await setup.connect("carol")
    try:
        query = JOINED.format(cols="t.name", table="items")
        analyzed = [r[0] for r in await conn.fetch(f"EXPLAIN ANALYZE {query}")]
        assert any(line.startswith("Read frag_") and " on pg: by spark itself, JDBC" in line
                   for line in analyzed), analyzed
        assert [r[0] for r in await conn.fetch(query)] == ["one", "two", "three"]
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch(JOINED.format(cols="t.word", table="secrets"))
    finally:
        await conn.close()
    root = await setup.connect("root")  # no role: the dsn's user reads the secret
    try:
        assert [r[0] for r in await root.fetch(JOINED.format(cols="t.word", table="secrets"))] == ["hush"]
    finally:
        await root.close()


async def test_spark_reads_with_the_sessions_forwarded_settings(setup: Setup) -> None:
    conn = await setup.connect("carol")
    try:
        query = JOINED.format(cols="t.id", table="tenants")
        assert await conn.fetch(query) == []  # no tenant set: the policy shows nothing
        await conn.execute("SET app.tenant = 'a'")
        assert [r[0] for r in await conn.fetch(query)] == [1, 3]
        await conn.execute("SET app.tenant = 'b'")
        assert [r[0] for r in await conn.fetch(query)] == [2]
    finally:
        await conn.close()
