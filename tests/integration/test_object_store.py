"""Parquet in object storage: a parquet source whose path is s3://bucket/prefix/, read from
an S3 protocol server on 127.0.0.1 (tests/support/s3_server.py) through the gateway.

One gateway serves four sources: `lake` (the bucket, its credentials given as env: and
file: secrets), `badkey` (a key the store does not know), `nobucket` (a bucket that does
not exist) and `pg` (a PostgreSQL database), so the failures are seen next to working
sources, and the join crosses the two kinds.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.gateway_proc import GatewayProcess, new_database, start_gateway
from tests.support.http_gateway import http_get
from tests.support.s3_server import ACCESS_KEY_ID, SECRET_ACCESS_KEY, S3Server, start_s3_server
from tests.support.system import free_port

YEARS = (2023, 2024)
MONTHS = (1, 3, 6)
ROWS_PER_FILE = 50


@dataclass
class Lake:
    s3: S3Server
    gateway: GatewayProcess
    bucket: Path
    http_port: int


def _events(year: int, month: int) -> pa.Table:
    base = (year * 100 + month) * 1000
    return pa.table({"id": pa.array(range(base, base + ROWS_PER_FILE), pa.int64()),
                     "customer_id": pa.array([i % 5 for i in range(ROWS_PER_FILE)], pa.int64()),
                     "amount": pa.array([i * 10 for i in range(ROWS_PER_FILE)], pa.int64())})


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory, postgres_server) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("s3")
    s3 = start_s3_server(root / "store")
    bucket = s3.bucket("lake")
    for year in YEARS:
        for month in MONTHS:
            folder = bucket / "events" / f"year={year}" / f"month={month:02d}"
            folder.mkdir(parents=True)
            pq.write_table(_events(year, month), folder / "part-0.parquet")
    pq.write_table(pa.table({"sku": ["a", "b", "c"], "price": [1, 2, 3]}), bucket / "items.parquet")
    truth = new_database(postgres_server.dsn,
                         "create table customers (id bigint primary key, name text);"
                         "insert into customers select i, 'customer ' || i "
                         "from generate_series(0, 4) i;")
    workdir = root / "gw"
    workdir.mkdir()
    (workdir / "lake.secret").write_text(SECRET_ACCESS_KEY + "\n")
    http_port = free_port()
    config = (f'[server]\nhttp_port = {http_port}\n'
              f'[catalog]\nsearch_path = ["lake"]\nrefresh_seconds = 0\n'
              f'[sources.lake]\nkind = "parquet"\npath = "s3://lake/"\n'
              f'endpoint = "{s3.endpoint}"\nregion = "us-east-1"\n'
              f'access_key_id = "env:FEDGATE_TEST_LAKE_KEY"\n'
              f'secret_access_key = "file:lake.secret"\n'
              f'[sources.badkey]\nkind = "parquet"\n'
              + s3.config("s3://lake/", access_key_id="nobody-knows-me") +
              f'[sources.nobucket]\nkind = "parquet"\n' + s3.config("s3://no-such-bucket/data/") +
              f'[sources.pg]\nkind = "postgres"\ndsn = {json.dumps(truth)}\n')
    gateway = start_gateway(config, workdir, env={"FEDGATE_TEST_LAKE_KEY": ACCESS_KEY_ID})
    try:
        yield Lake(s3, gateway, bucket, http_port)
    finally:
        gateway.stop()
        s3.stop()


def _query(lake: Lake, sql: str) -> list[tuple]:
    with psycopg.connect(lake.gateway.dsn, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def _explain(lake: Lake, sql: str) -> list[str]:
    return [row[0] for row in _query(lake, f"EXPLAIN {sql}")]


def test_tables_of_the_bucket_are_read(lake: Lake) -> None:
    assert _query(lake, "select sku, price from items order by sku") == [
        ("a", 1), ("b", 2), ("c", 3)]
    assert _query(lake, "select count(*), sum(amount) from events") == [
        (len(YEARS) * len(MONTHS) * ROWS_PER_FILE,
         len(YEARS) * len(MONTHS) * sum(i * 10 for i in range(ROWS_PER_FILE)))]
    tables = _query(lake, "select table_name from information_schema.tables "
                          "where table_schema = 'lake' order by 1")
    assert tables == [("events",), ("items",)]
    columns = _query(lake, "select column_name, data_type from information_schema.columns "
                           "where table_schema = 'lake' and table_name = 'events' "
                           "order by ordinal_position")
    assert columns == [("id", "bigint"), ("customer_id", "bigint"), ("amount", "bigint"),
                       ("year", "integer"), ("month", "integer")]


def test_a_conjunct_on_partition_columns_prunes_folders_and_explain_names_them(lake: Lake) -> None:
    sql = "select count(*) from events where year = 2024 and month >= 3"
    assert _query(lake, sql) == [(2 * ROWS_PER_FILE,)]
    lines = _explain(lake, sql)
    partition_lines = [line.strip() for line in lines if "Partitions of lake.events" in line]
    assert len(partition_lines) == 1, lines
    line = partition_lines[0]
    assert "2 of 6 folders read (year=2024/month=03, year=2024/month=06)" in line, line
    assert ("4 pruned (year=2023/month=01, year=2023/month=03, year=2023/month=06, "
            "year=2024/month=01)") in line, line
    # A conjunct on other columns prunes no folder, and says so.
    unpruned = [line for line in _explain(lake, "select id from events where amount > 100")
                if "Partitions of" in line]
    assert unpruned and "all 6 folders read" in unpruned[0], unpruned


def test_new_and_removed_objects_are_noticed(lake: Lake) -> None:
    folder = lake.bucket / "events" / "year=2025" / "month=01"
    folder.mkdir(parents=True)
    pq.write_table(_events(2025, 1), folder / "part-0.parquet")
    pq.write_table(pa.table({"n": [7, 8]}), lake.bucket / "fresh.parquet")
    try:
        # The miss on `fresh` reads the catalog again; the partitioned table then lists the
        # new folder too.
        assert _query(lake, "select n from fresh order by n") == [(7,), (8,)]
        assert _query(lake, "select count(*) from events where year = 2025") == [
            (ROWS_PER_FILE,)]
    finally:
        (folder / "part-0.parquet").unlink()
        folder.rmdir()
        folder.parent.rmdir()
    (lake.bucket / "fresh.parquet").unlink()
    with pytest.raises(psycopg.errors.UndefinedTable) as caught:
        _query(lake, "select n from fresh")
    assert 'relation "lake.fresh" does not exist' in str(caught.value) \
        or 'relation "fresh" does not exist' in str(caught.value)


def test_bad_credentials_name_the_source(lake: Lake) -> None:
    with pytest.raises(psycopg.errors.SqlclientUnableToEstablishSqlconnection) as caught:
        _query(lake, "select * from badkey.items")
    message = str(caught.value)
    assert 'source "badkey" is unavailable' in message, message
    assert message.count("is unavailable") == 1, message
    assert "access denied" in message and "s3://lake/" in message, message
    assert "Traceback" not in lake.gateway.log()
    assert SECRET_ACCESS_KEY not in lake.gateway.log()  # not even the good source's


def test_a_missing_bucket_names_the_source(lake: Lake) -> None:
    with pytest.raises(psycopg.errors.SqlclientUnableToEstablishSqlconnection) as caught:
        _query(lake, "select * from nobucket.anything")
    message = str(caught.value)
    assert 'source "nobucket" is unavailable' in message, message
    assert "the bucket does not exist" in message and "s3://no-such-bucket/data/" in message, \
        message
    assert "Traceback" not in lake.gateway.log()


def test_an_s3_table_joins_a_postgres_table(lake: Lake) -> None:
    rows = _query(lake, "select c.name, sum(e.amount) from events e "
                        "join pg.customers c on c.id = e.customer_id "
                        "where e.year = 2023 and e.month = 1 group by c.name order by c.name")
    expected = {}
    for i in range(ROWS_PER_FILE):
        expected[f"customer {i % 5}"] = expected.get(f"customer {i % 5}", 0) + i * 10
    assert rows == sorted(expected.items())


def test_the_catalog_and_the_status_page_know_the_source(lake: Lake) -> None:
    with psycopg.connect(lake.gateway.dsn, autocommit=True) as conn:
        relations = conn.execute("select c.relname from pg_catalog.pg_class c join "
                                 "pg_catalog.pg_namespace n on n.oid = c.relnamespace "
                                 "where n.nspname = 'lake' and c.relkind = 'r' "
                                 "order by 1").fetchall()
    assert relations == [("events",), ("items",)]
    status, _, body = http_get(f"http://127.0.0.1:{lake.http_port}/")
    page = body.decode()
    assert status == 200 and "parquet in s3://lake/" in page, page
    assert "access denied" in page  # badkey's last error
    for secret in (SECRET_ACCESS_KEY, ACCESS_KEY_ID, "lake.secret"):
        assert secret not in page


def test_an_object_rewritten_between_statements_is_read_anew(lake: Lake) -> None:
    path = lake.bucket / "rewritten.parquet"
    pq.write_table(pa.table({"v": pa.array([1, 2], pa.int64())}), path)
    assert _query(lake, "select sum(v) from rewritten") == [(3,)]
    # Larger and of other values: a reader that kept the old size or footer would fail or
    # answer the old rows.
    pq.write_table(pa.table({"v": pa.array(range(1000), pa.int64())}), path)
    assert _query(lake, "select sum(v), count(*) from rewritten") == [(sum(range(1000)), 1000)]
    path.unlink()


def test_every_statement_sees_the_objects_of_its_tables_as_they_are_now(lake: Lake) -> None:
    """The rule that keeps a table's dataset across statements: each statement lists the
    prefixes of the tables it names (while DuckDB starts over the dataset as last
    listed) and any object added, removed or rewritten (another size or time) makes the
    dataset anew before a row is sent. No catalog read is needed: the table is known."""
    every = len(YEARS) * len(MONTHS) * ROWS_PER_FILE
    count = "select count(*), sum(amount) from events"
    assert _query(lake, count) == [(every, len(YEARS) * len(MONTHS) * sum(range(0, 500, 10)))]
    folder = lake.bucket / "events" / "year=2024" / "month=03"
    extra = folder / "part-1.parquet"
    pq.write_table(_events(2024, 3), extra)
    try:
        assert _query(lake, count)[0][0] == every + ROWS_PER_FILE
        # Rewritten, larger: the old size would cut the object or fail its footer.
        bigger = pa.concat_tables([_events(2024, 3)] * 3)
        pq.write_table(bigger, extra)
        assert _query(lake, count)[0][0] == every + 3 * ROWS_PER_FILE
        assert _query(lake, "select count(*) from events where year = 2024 and month = 3") == [
            (4 * ROWS_PER_FILE,)]
    finally:
        extra.unlink()
    assert _query(lake, count)[0][0] == every
    assert "Traceback" not in lake.gateway.log()


def test_a_bucket_that_disappears_fails_its_statement_with_08006(lake: Lake) -> None:
    """The bucket is gone after the catalog listed it: the statement that finds it gone
    fails with 08006 naming the source; the other sources keep answering."""
    gone = lake.bucket.with_name("lake-away")
    lake.bucket.rename(gone)
    try:
        with pytest.raises(psycopg.errors.ConnectionFailure) as caught:
            _query(lake, "select count(*) from lake.items")
        message = str(caught.value)
        assert 'source "lake" is unavailable' in message and "bucket does not exist" in message, \
            message
        assert _query(lake, "select count(*) from pg.customers") == [(5,)]
    finally:
        gone.rename(lake.bucket)
    assert _query(lake, "select count(*) from lake.items") == [(3,)]
    assert "Traceback" not in lake.gateway.log()


def test_a_bucket_that_disappears_part_way_through_a_read_is_08006(lake: Lake) -> None:
    """The bucket goes while the statement is reading its objects (after the first
    object's bytes): that statement fails with 08006, the next one after it is back reads."""
    lake.s3.vanish_after("lake", 1)
    try:
        with pytest.raises(psycopg.errors.ConnectionFailure) as caught:
            _query(lake, "select sum(amount) from lake.events")
        message = str(caught.value)
        assert 'source "lake" is unavailable' in message and "bucket does not exist" in message, \
            message
        assert _query(lake, "select count(*) from pg.customers") == [(5,)]
    finally:
        lake.s3.come_back("lake")
    assert _query(lake, "select count(*) from lake.events") == [
        (len(YEARS) * len(MONTHS) * ROWS_PER_FILE,)]
    assert "Traceback" not in lake.gateway.log()


def test_partition_values_and_names_are_data_not_sql(lake: Lake) -> None:
    """Folder and file names with quotes, and partition values that look like SQL or
    like paths, reach the client as values; a filter on them matches them exactly."""
    hostile = "a' OR '1'='1"
    table = lake.bucket / 'od"d'
    for city, n in ((hostile, 1), ("b", 2), ("..", 3)):
        folder = table / f"city={city}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"n": pa.array([n], pa.int64())}), folder / "p.parquet")
    try:
        rows = _query(lake, 'select city, n from lake."od""d" order by n')
        assert rows == [(hostile, 1), ("b", 2), ("..", 3)]
        with psycopg.connect(lake.gateway.dsn, autocommit=True) as conn:
            found = conn.execute('select n from lake."od""d" where city = %s', (hostile,)).fetchall()
        assert found == [(1,)]
        lines = _explain(lake, "select n from lake.\"od\"\"d\" where city = 'b'")
        assert any("1 of 3 folders read (city=b)" in line for line in lines), lines
    finally:
        for path in sorted(table.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        table.rmdir()


def test_psql_describes_an_s3_table(lake: Lake) -> None:
    done = subprocess.run(["psql", lake.gateway.dsn, "-X", "-c", r"\d lake.events"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert 'Table "lake.events"' in done.stdout, done.stdout
    for column, type_name in (("id", "bigint"), ("year", "integer"), ("month", "integer")):
        assert any(line.split("|")[0].strip() == column and line.split("|")[1].strip() == type_name
                   for line in done.stdout.splitlines() if "|" in line), done.stdout


def test_a_move_into_the_bucket_is_refused_before_anything_is_written(lake: Lake) -> None:
    with pytest.raises(psycopg.errors.FeatureNotSupported) as caught:
        _query(lake, "create table lake.copied as select id, name from pg.customers")
    assert 'source "lake" takes no moves' in str(caught.value), caught.value
    assert "Traceback" not in lake.gateway.log()
