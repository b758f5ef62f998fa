"""The engine speaks PostgreSQL only: DuckDB's and Spark's own functions are not callable.

A client reads nothing through the gateway that PostgreSQL would not let it read: DuckDB's
file and network functions (`read_text`, `read_csv`, `glob`, `parquet_metadata` ...) and
Spark's (`reflect`, `java_method`) are PostgreSQL's 42883, whichever road the statement
takes (the engine, a DuckDB file shipped the whole statement, a Parquet source), and a
PostgreSQL function still works. Behind that check, every DuckDB connection runs with
external access off, so the gateway's own configuration file stays unreadable even to
SQL that reached DuckDB directly.

Which DuckDB functions count as reaching files or the network (the scalar ones; every
table function is tried): names with `read`, `glob`, `getenv`, `env`, `http`, `file`,
`path`, `dir`, `sniff`, `parquet`, `csv`, `url`, `extension`, `secret`, `query`,
`setting` or `profile` in them.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import asyncpg
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connectors.duckdb.runner import DuckDBRunner
from connectors.duckdb.source import DuckDBSource
from connectors.engines.duckdb import DuckDBEngine
from connectors.files.source import FilesSource
from gateway.pg_catalog.callable import CALLABLE_FUNCTIONS
from pgwire.errors import PgError
from pgwire.function_names import NO_MATCH_HINT, POSTGRES_FUNCTIONS
from tests.support.gateway_proc import GatewayProcess, start_gateway

REACHING_OUT = re.compile(r"read|glob|getenv|env|http|file|path|dir|sniff|parquet|csv|url|"
                          r"extension|secret|query|setting|profile")
# DuckDB table functions that share a name with a PostgreSQL function: they compute, and
# read no file (with external access off they could not anyway).
SHARED_TABLE_FUNCTIONS = {"generate_series", "json_each", "pg_timezone_names", "repeat", "unnest"}
# sqlglot reads `glob` as its GLOB operator, which takes two operands: `glob('x')` does not
# parse. PostgreSQL would say 42883; a syntax error refuses the call all the same.
UNPARSABLE = {"glob"}
# Every file reader DuckDB has, as the config file would be fed to it.
FILE_READERS = ("read_csv", "read_csv_auto", "read_text", "read_blob", "read_json",
                "read_json_auto", "read_json_objects", "read_ndjson", "read_parquet",
                "parquet_metadata", "parquet_schema", "parquet_scan", "sniff_csv")


def _duckdb_functions(kinds: tuple[str, ...]) -> list[str]:
    con = duckdb.connect()
    try:
        rows = con.execute("SELECT DISTINCT function_name FROM duckdb_functions() "
                           "WHERE function_type IN (SELECT unnest($1::VARCHAR[])) "
                           "ORDER BY 1", [list(kinds)]).fetchall()
    finally:
        con.close()
    return [name for (name,) in rows if re.fullmatch(r"[a-z_][a-z0-9_]*", name)]


TABLE_FUNCTIONS = _duckdb_functions(("table", "table_macro"))
REACHING_SCALARS = [n for n in _duckdb_functions(("scalar", "macro", "aggregate"))
                    if REACHING_OUT.search(n) and n not in CALLABLE_FUNCTIONS]


@pytest.fixture(scope="module")
def four_sources(tmp_path_factory: pytest.TempPathFactory) -> GatewayProcess:
    """Two DuckDB files (a join of both takes the engine), a folder of Parquet files and
    a SQLite file (writable: writes are rendered in its dialect)."""
    root = tmp_path_factory.mktemp("engine_functions")
    for name, ddl in (("sales", "CREATE TABLE orders AS SELECT range AS id, range % 7 AS cust "
                                "FROM range(50)"),
                      ("crm", "CREATE TABLE customers AS SELECT range AS id, 'c' || range AS name "
                              "FROM range(7)")):
        con = duckdb.connect(str(root / f"{name}.duckdb"))
        con.execute(ddl)
        con.close()
    (root / "files").mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "tag": ["a", "b", "c"]}),
                   root / "files" / "tags.parquet")
    lite = sqlite3.connect(root / "lite.db")
    lite.execute("CREATE TABLE notes (body TEXT)")
    lite.commit()
    lite.close()
    proc = start_gateway(
        '[catalog]\nsearch_path = ["sales", "crm", "files", "lite"]\n'
        f'[sources.lite]\nkind = "sqlite"\npath = "{root / "lite.db"}"\n'
        f'[sources.sales]\nkind = "duckdb"\npath = "{root / "sales.duckdb"}"\n'
        f'[sources.crm]\nkind = "duckdb"\npath = "{root / "crm.duckdb"}"\n'
        f'[sources.files]\nkind = "parquet"\npath = "{root / "files"}"\n', root / "gw")
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def config_file(four_sources: GatewayProcess) -> str:
    return str(four_sources.log_path.parent / "fedgate.toml")


@pytest.fixture
async def conn(four_sources: GatewayProcess):
    connection = await asyncpg.connect(four_sources.dsn)
    yield connection
    await connection.close()


async def _refused(conn: asyncpg.Connection, sql: str) -> asyncpg.PostgresError:
    with pytest.raises(asyncpg.PostgresError) as caught:
        await conn.fetch(sql)
    return caught.value


async def test_read_text_of_the_config_file_is_postgresql_s_42883(conn, config_file) -> None:
    error = await _refused(conn, f"SELECT content FROM read_text('{config_file}')")
    assert error.sqlstate == "42883"
    assert error.message == "function read_text(unknown) does not exist"
    assert error.hint == NO_MATCH_HINT
    error = await _refused(conn, f"SELECT read_text('{config_file}'::text)")
    assert error.message == "function read_text(text) does not exist"


async def test_postgresql_functions_still_work(conn) -> None:
    assert await conn.fetchval("SELECT lower('ABC')") == "abc"
    assert await conn.fetchval("SELECT sum(g) FROM generate_series(1, 4) AS g") == 10
    assert await conn.fetchval("SELECT string_agg(name, ',' ORDER BY id) FROM customers "
                               "WHERE id < 3") == "c0,c1,c2"
    assert await conn.fetchval("SELECT strpos('abc', 'c')") == 3
    assert await conn.fetchval("SELECT count(*) FROM orders o JOIN customers c "
                               "ON o.cust = c.id WHERE upper(c.name) = 'C1'") == 7
    # Functions the emulated catalog answers itself stay callable.
    assert await conn.fetchval("SELECT format_type(23, -1)") == "integer"
    assert await conn.fetchval("SELECT current_setting('TimeZone')") == "UTC"
    assert await conn.fetchval("SELECT pg_catalog.pg_get_userbyid(10)") == "fedgate"
    assert (await conn.fetchval("SELECT version()")).startswith("PostgreSQL")


@pytest.mark.parametrize("reader", FILE_READERS)
async def test_no_road_reads_the_config_file(conn, config_file, reader: str) -> None:
    roads = {
        "no table: the engine alone": f"SELECT * FROM {reader}('{config_file}')",
        "scalar position": f"SELECT {reader}('{config_file}')",
        "a DuckDB file, shipped whole": f"SELECT * FROM orders, {reader}('{config_file}')",
        "a Parquet source, shipped whole": f"SELECT * FROM tags, {reader}('{config_file}')",
        "the engine over two sources": f"SELECT * FROM orders o JOIN customers c ON o.cust = "
                                       f"c.id CROSS JOIN {reader}('{config_file}') AS f",
        "a subquery": f"SELECT (SELECT count(*) FROM {reader}('{config_file}')) FROM tags",
        "EXPLAIN": f"EXPLAIN SELECT * FROM {reader}('{config_file}')",
    }
    for road, sql in roads.items():
        error = await _refused(conn, sql)
        assert (error.sqlstate, error.message) == (
            "42883", f"function {reader}(unknown) does not exist"), road


async def test_prepared_statements_cursors_and_copy_are_checked(conn, config_file) -> None:
    with pytest.raises(asyncpg.UndefinedFunctionError):
        await conn.prepare(f"SELECT * FROM read_text($1) WHERE filename = '{config_file}'")
    async with conn.transaction():
        with pytest.raises(asyncpg.UndefinedFunctionError):
            await conn.execute(f"DECLARE c CURSOR FOR SELECT * FROM read_blob('{config_file}')")
    with pytest.raises(asyncpg.UndefinedFunctionError):
        await conn.copy_from_query(f"SELECT * FROM read_csv('{config_file}')", output=Path("/dev/null"))


@pytest.mark.parametrize("name", TABLE_FUNCTIONS)
async def test_every_duckdb_table_function_postgresql_lacks_is_refused(conn, name: str) -> None:
    if name in POSTGRES_FUNCTIONS:
        assert name in SHARED_TABLE_FUNCTIONS, f"{name}: a DuckDB table function with a PostgreSQL name"
        return
    error = await _refused(conn, f"SELECT * FROM {name}('x')")
    if name in UNPARSABLE:
        assert error.sqlstate == "42601"
        return
    assert (error.sqlstate, error.message) == ("42883", f"function {name}(unknown) does not exist")


@pytest.mark.parametrize("name", REACHING_SCALARS)
async def test_every_duckdb_scalar_that_reaches_out_is_refused(conn, name: str) -> None:
    error = await _refused(conn, f"SELECT {name}('x', 'y')")
    assert error.sqlstate in ("42883", "42601"), (name, error.message)


async def test_set_cannot_turn_external_access_back_on(conn, config_file) -> None:
    # The gateway checks a SET against PostgreSQL's settings (gateway.state.pg_settings)
    # and forwards none to an engine: PostgreSQL has no such setting, DuckDB never sees it.
    with pytest.raises(asyncpg.UndefinedObjectError):
        await conn.execute("SET enable_external_access = true")
    error = await _refused(conn, f"SELECT * FROM read_text('{config_file}')")
    assert error.sqlstate == "42883"
    # Below the gateway: a connection the runner opened refuses it too, for good.
    runner = DuckDBRunner.open(":memory:")
    try:
        with pytest.raises(duckdb.Error, match="Cannot enable external access"):
            runner.query_sync("SET enable_external_access = true")
    finally:
        runner.close()


# Defence in depth: were a DuckDB function to get past the planner, the connections that
# run SQL still could not open the config file.

async def test_the_engine_connection_reads_no_file(config_file) -> None:
    engine = DuckDBEngine()
    try:
        for reader in ("read_text", "read_csv", "glob", "read_parquet"):
            with pytest.raises(PgError, match="disabled by configuration"):
                await engine.execute(f"SELECT * FROM {reader}('{config_file}')", {})
        stream = await engine.execute("SELECT sum(x) AS s FROM t", {"t": pa.table({"x": [1, 2]})})
        assert [b.to_pylist() async for b in stream] == [[{"s": 3}]]
    finally:
        await engine.close()


async def test_source_connections_read_only_their_own_files(tmp_path: Path, config_file) -> None:
    database = tmp_path / "d.duckdb"
    con = duckdb.connect(str(database))
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.close()
    pq.write_table(pa.table({"x": [5]}), tmp_path / "p.parquet")
    (tmp_path / "csvs").mkdir()
    (tmp_path / "csvs" / "c.csv").write_text("x\n7\n")
    sources = [DuckDBSource("d", database), FilesSource("p", tmp_path / "p.parquet"),
               FilesSource("c", tmp_path / "csvs", file_format="csv")]
    try:
        for source, own in zip(sources, ('SELECT x FROM main.t', 'SELECT x FROM "p"',
                                         'SELECT x FROM "c"')):
            stream = await source.run_remote(own)
            assert len([b async for b in stream]) == 1
            for reader in ("read_text", "read_csv", "read_blob", "read_json", "sniff_csv"):
                with pytest.raises(PgError, match="disabled by configuration"):
                    await source.run_remote(f"SELECT * FROM {reader}('{config_file}')")
        # The Parquet source's DuckDB may open its one file, and nothing beside it.
        with pytest.raises(PgError, match="disabled by configuration"):
            await sources[1].run_remote(f"SELECT * FROM read_parquet('{tmp_path / 'csvs' / 'c.csv'}')")
    finally:
        for source in sources:
            await source.close()


# The Spark engine: the same check, before Spark sees a statement; Spark SQL's own ways to
# read a file (`parquet.`path``, `reflect`, `java_method`) are not PostgreSQL either.

SPARK_REFUSED = ("read_text", "read_csv", "read_parquet", "parquet_metadata", "sniff_csv",
                 "reflect", "java_method", "input_file_name", "explode", "stack", "json_tuple",
                 "range")


@pytest.fixture(scope="module")
async def spark_conn(four_sources: GatewayProcess):
    connection = await asyncpg.connect(four_sources.dsn, command_timeout=300)
    await connection.execute("SET fedgate.engine = 'spark'")
    yield connection
    await connection.close()


@pytest.mark.spark
async def test_spark_engine_refuses_engine_functions(spark_conn, config_file) -> None:
    # A PostgreSQL function over two sources runs on Spark as before.
    assert await spark_conn.fetchval("SELECT count(*) FROM orders o JOIN customers c "
                                     "ON o.cust = c.id WHERE lower(c.name) = 'c1'") == 7
    for name in SPARK_REFUSED:
        for sql in (f"SELECT {name}('{config_file}', 'x', 'y')",
                    f"SELECT * FROM orders o JOIN customers c ON o.cust = c.id "
                    f"WHERE c.name = {name}('{config_file}', 'x', 'y')::text",
                    f"SELECT * FROM {name}('{config_file}', 'x', 'y')"):
            error = await _refused(spark_conn, sql)
            assert error.sqlstate == "42883", (sql, error.message)
            assert error.message.startswith(f"function {name}("), sql


@pytest.mark.spark
@pytest.mark.parametrize("sql, sqlstate", [
    ("SELECT * FROM parquet.`{path}`", "42601"),  # Spark's file-as-table syntax: no PostgreSQL
    ("SELECT * FROM csv.`{path}`", "42601"),
    ("SELECT * FROM text.`{path}`", "42601"),
    ('SELECT * FROM parquet."{path}"', "42P01"),  # PostgreSQL's reading: a table, not found
    ('SELECT * FROM "{path}"', "42P01"),
])
async def test_spark_file_tables_cannot_be_expressed(spark_conn, config_file, sql: str,
                                                     sqlstate: str) -> None:
    error = await _refused(spark_conn, sql.format(path=config_file))
    assert error.sqlstate in (sqlstate, "3F000"), error.message  # 3F000: schema "parquet"


async def test_a_path_in_from_is_a_table_name_not_a_file(conn, config_file) -> None:
    # sqlglot reads a string in FROM as a quoted name (DuckDB would read the file it
    # names): the catalog knows no such table, as PostgreSQL knows none.
    for sql in (f"SELECT * FROM '{config_file}'", f'SELECT * FROM "{config_file}"',
                f'SELECT * FROM orders, "{config_file}"'):
        error = await _refused(conn, sql)
        assert error.sqlstate in ("42P01", "42601"), (sql, error.message)


async def test_writes_to_other_sources_call_only_postgresql_functions(conn, config_file) -> None:
    for sql in (f"INSERT INTO notes VALUES (load_file('{config_file}'))",
                f"INSERT INTO notes SELECT content FROM read_text('{config_file}')",
                f"UPDATE notes SET body = readfile('{config_file}')"):
        error = await _refused(conn, sql)
        assert error.sqlstate == "42883", (sql, error.message)
    await conn.execute("INSERT INTO notes VALUES (lower('KEPT'))")
    assert await conn.fetchval("SELECT body FROM notes") == "kept"
