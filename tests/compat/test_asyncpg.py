"""asyncpg against the gateway: binary parameters and results, cursors, errors, cancel."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
import uuid
from decimal import Decimal

import asyncpg
import pytest

from tests.support.slow import counting

# Counts up a row at a time for half an hour on the demo's DuckDB: only a cancel ends it.
SLOW_QUERY = counting("lineitem")
LINEITEM_ORDERED = "select l_orderkey from lineitem order by l_orderkey, l_linenumber"

# Every query is bounded: asyncpg gives up (and cancels) after this many seconds.
TEST_TIMEOUT = 20


async def connect(gateway, **kw) -> asyncpg.Connection:
    return await asyncpg.connect(
        host=gateway.host,
        port=gateway.port,
        user="fedgate",
        database=gateway.database,
        timeout=10,
        command_timeout=TEST_TIMEOUT,
        **kw,
    )


@pytest.fixture
async def conn(gateway):
    c = await connect(gateway)
    yield c
    await asyncio.wait_for(c.close(timeout=5), 10)


# --------------------------------------------------------------------------- types


UTC = dt.UTC
TYPED_VALUES = [
    ("int2", 12345),
    ("int2", -32768),
    ("int4", 2_000_000_123),
    ("int8", 2**62 + 7),
    ("int8", -(2**63)),
    ("float4", 1.5),
    ("float8", 3.141592653589793),
    ("float8", -1e-300),
    ("numeric(12,4)", Decimal("12345678.1234")),
    ("numeric(12,4)", Decimal("-0.0001")),
    ("numeric", Decimal("12345678901234567890.123456789")),
    ("text", "héllo ☃ 日本"),
    ("text", ""),
    ("varchar", "plain varchar"),
    ("bool", True),
    ("bool", False),
    ("date", dt.date(2024, 2, 29)),
    ("date", dt.date(1, 1, 1)),
    ("time", dt.time(12, 34, 56, 789000)),
    ("timestamp", dt.datetime(2024, 2, 29, 13, 14, 15, 123456)),
    ("timestamp", dt.datetime(1970, 1, 1)),
    ("timestamptz", dt.datetime(2024, 7, 1, 23, 59, 59, 999999, tzinfo=UTC)),
    ("interval", dt.timedelta(days=3, seconds=3723, microseconds=5)),
    ("interval", dt.timedelta(seconds=-90)),
    ("bytea", b"\x00\x01\xfe\xff binary \\ data"),
    ("bytea", b""),
    ("uuid", uuid.UUID("12345678-1234-5678-1234-567812345678")),
]


@pytest.mark.parametrize(
    ("pgtype", "value"),
    TYPED_VALUES,
    ids=[f"{t}-{i}" for i, (t, _) in enumerate(TYPED_VALUES)],
)
async def test_param_roundtrip_single_type(conn, pgtype, value):
    got = await conn.fetchval(f"select $1::{pgtype}", value)
    assert got == value
    if isinstance(value, uuid.UUID):
        assert isinstance(got, uuid.UUID)  # asyncpg returns its own UUID subclass
    else:
        assert type(got) is type(value)


async def test_params_of_many_types_in_one_row(conn):
    types = [t for t, _ in TYPED_VALUES]
    values = [v for _, v in TYPED_VALUES]
    sql = "select " + ", ".join(f"${i + 1}::{t}" for i, t in enumerate(types))
    row = await conn.fetchrow(sql, *values)
    assert list(row.values()) == values


async def test_timestamptz_roundtrip_other_zone(conn):
    value = dt.datetime(2024, 3, 10, 8, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    got = await conn.fetchval("select $1::timestamptz", value)
    assert got == value  # same instant
    assert got.utcoffset() == dt.timedelta(0)  # decoded in UTC


async def test_json_and_jsonb_roundtrip(conn):
    doc = '{"a": [1, 2.5, "x"], "b": null, "c": {"d": true}}'
    got_json, got_jsonb = await conn.fetchrow("select $1::json, $2::jsonb", doc, doc)
    assert isinstance(got_json, str) and isinstance(got_jsonb, str)
    assert json.loads(got_json) == json.loads(doc)
    assert json.loads(got_jsonb) == json.loads(doc)
    # json keeps the text as given.
    assert got_json == doc


async def test_null_params(conn):
    row = await conn.fetchrow(
        "select $1::int8, $2::text, $3::date, $4::numeric, $5::bool",
        None,
        None,
        None,
        None,
        None,
    )
    assert list(row.values()) == [None] * 5
    assert await conn.fetchval("select $1::int4 is null", None) is True
    assert await conn.fetchval("select coalesce($1::text, 'dflt')", None) == "dflt"


async def test_result_types_from_tables(conn):
    row = await conn.fetchrow(
        "select l_orderkey, l_linenumber, l_quantity, l_shipdate, l_returnflag "
        "from lineitem order by l_orderkey, l_linenumber limit 1"
    )
    assert row["l_orderkey"] == 1 and row["l_linenumber"] == 1
    assert isinstance(row["l_quantity"], Decimal)
    assert isinstance(row["l_shipdate"], dt.date)
    assert isinstance(row["l_returnflag"], str)


# --------------------------------------------------------------------------- queries


async def test_fetch_with_param_against_lineitem(conn):
    key = await conn.fetchval(
        "select min(l_orderkey) from lineitem where l_orderkey > 1000"
    )
    expected = await conn.fetchval(
        f"select count(*) from lineitem where l_orderkey = {key}"
    )
    rows = await conn.fetch(
        "select l_orderkey, l_linenumber from lineitem where l_orderkey = $1 order by l_linenumber",
        key,
    )
    assert len(rows) == expected >= 1
    assert all(r["l_orderkey"] == key for r in rows)
    assert [r["l_linenumber"] for r in rows] == list(range(1, expected + 1))


async def test_fetchrow_and_fetchval(conn):
    row = await conn.fetchrow(
        "select n_nationkey, n_name from nation where n_nationkey = $1", 7
    )
    assert row["n_nationkey"] == 7 and row["n_name"] == "GERMANY"
    assert row[1] == "GERMANY"
    assert await conn.fetchval("select count(*) from nation") == 25
    assert (
        await conn.fetchval("select n_name from nation where n_nationkey = $1", 1000)
        is None
    )
    assert (
        await conn.fetchrow("select * from nation where n_nationkey = $1", -1) is None
    )
    assert (
        await conn.fetchval(
            "select n_name, n_nationkey from nation where n_nationkey = 3", column=1
        )
        == 3
    )


async def test_duplicate_column_names(conn):
    row = await conn.fetchrow("select 1 as a, 2 as a")
    assert tuple(row) == (1, 2)
    stmt = await conn.prepare("select 1 as a, 2 as a")
    assert [a.name for a in stmt.get_attributes()] == ["a", "a"]


async def test_fetch_many_rows(conn):
    rows = await conn.fetch("select o_orderkey from orders order by o_orderkey")
    assert len(rows) == 15000
    keys = [r[0] for r in rows]
    assert keys == sorted(keys)


async def test_execute_simple_statements(conn):
    # execute() without args uses the simple protocol; it returns the last command tag.
    assert await conn.execute("select 1; select 2") == "SELECT 1"
    assert await conn.execute("begin") == "BEGIN"
    assert await conn.execute("commit") == "COMMIT"


async def test_same_query_many_times_uses_statement_cache(conn):
    for key in range(25):
        assert (
            await conn.fetchval(
                "select n_nationkey from nation where n_nationkey = $1", key
            )
            == key
        )


# --------------------------------------------------------------------------- cursors


async def test_cursor_iteration_with_prefetch_reads_all_rows(conn):
    total = await conn.fetchval("select count(*) from lineitem")
    n = 0
    last = None
    async with conn.transaction():
        async for r in conn.cursor(LINEITEM_ORDERED, prefetch=50):
            if last is not None:
                assert r["l_orderkey"] >= last
            last = r["l_orderkey"]
            n += 1
    assert n == total


async def test_cursor_iteration_small_prefetch(conn):
    n = 0
    async with conn.transaction():
        async for r in conn.cursor(
            "select o_orderkey from orders where o_orderkey < 2000 order by 1",
            prefetch=50,
        ):
            n += 1
    assert n == await conn.fetchval(
        "select count(*) from orders where o_orderkey < 2000"
    )


async def test_cursor_fetch_twice(conn):
    expected = [r[0] for r in await conn.fetch(LINEITEM_ORDERED + " limit 20")]
    async with conn.transaction():
        cur = await conn.cursor(LINEITEM_ORDERED)
        first = await cur.fetch(10)
        second = await cur.fetch(10)
        row = await cur.fetchrow()
    assert [r[0] for r in first] == expected[:10]
    assert [r[0] for r in second] == expected[10:20]
    assert row is not None


async def test_cursor_with_params(conn):
    async with conn.transaction():
        cur = await conn.cursor(
            "select n_name from nation where n_regionkey = $1 order by n_name", 1
        )
        rows = await cur.fetch(100)
    assert [r[0] for r in rows] == [
        "ARGENTINA",
        "BRAZIL",
        "CANADA",
        "PERU",
        "UNITED STATES",
    ]


async def test_cursor_outside_transaction_is_refused_by_asyncpg(conn):
    with pytest.raises(asyncpg.NoActiveSQLTransactionError):
        await conn.cursor(LINEITEM_ORDERED)
    assert await conn.fetchval("select 1") == 1


# --------------------------------------------------------------------------- transactions


async def test_transaction_block_and_status(conn):
    assert not conn.is_in_transaction()
    tr = conn.transaction()
    await tr.start()
    assert conn.is_in_transaction()
    assert await conn.fetchval("select count(*) from region") == 5
    await tr.commit()
    assert not conn.is_in_transaction()


async def test_error_inside_transaction_rolls_back(conn):
    with pytest.raises(asyncpg.UndefinedTableError):
        async with conn.transaction():
            await conn.fetchval("select 1")
            await conn.fetchval("select * from nope_missing_table")
    assert not conn.is_in_transaction()
    assert await conn.fetchval("select 2") == 2


async def test_in_failed_transaction(conn):
    tr = conn.transaction()
    await tr.start()
    with pytest.raises(asyncpg.UndefinedTableError):
        await conn.fetch("select * from nope_missing_table")
    with pytest.raises(asyncpg.InFailedSQLTransactionError):
        await conn.fetchval("select 1")
    await tr.rollback()
    assert await conn.fetchval("select 3") == 3


# --------------------------------------------------------------------------- errors


async def test_undefined_table_then_recovery(conn):
    with pytest.raises(asyncpg.UndefinedTableError) as ei:
        await conn.fetch("select * from nope_missing_table")
    assert ei.value.sqlstate == "42P01"
    assert await conn.fetchval("select count(*) from nation") == 25


async def test_division_by_zero_then_recovery(conn):
    with pytest.raises(asyncpg.exceptions.DivisionByZeroError) as ei:
        await conn.fetchval("select 1/0")
    assert ei.value.sqlstate == "22012"
    assert await conn.fetchval("select 1/1") == 1


async def test_division_by_zero_with_param_then_recovery(conn):
    with pytest.raises(asyncpg.exceptions.DivisionByZeroError):
        await conn.fetchval("select 10 / $1::int4", 0)
    assert await conn.fetchval("select 10 / $1::int4", 5) == 2


async def test_syntax_error_then_recovery(conn):
    with pytest.raises(asyncpg.PostgresSyntaxError) as ei:
        await conn.fetch("selec 1 frm nation")
    assert ei.value.sqlstate == "42601"
    assert await conn.fetchval("select 'still ok'") == "still ok"


async def test_undefined_column_then_recovery(conn):
    with pytest.raises(asyncpg.UndefinedColumnError):
        await conn.fetch("select no_such_column from nation")
    assert await conn.fetchval("select count(*) from region") == 5


async def test_error_in_simple_execute_then_recovery(conn):
    with pytest.raises(asyncpg.UndefinedTableError):
        await conn.execute("select 1; select * from nope_missing_table; select 3")
    assert await conn.execute("select 1") == "SELECT 1"


async def test_bad_param_value_is_a_client_error(conn):
    # asyncpg encodes binary params itself: a wrong Python type fails before sending.
    with pytest.raises(asyncpg.DataError):
        await conn.fetchval("select $1::int4", "not a number")
    assert await conn.fetchval("select $1::int4", 4) == 4


# --------------------------------------------------------------------------- prepared statements


async def test_prepared_statement_types(conn):
    stmt = await conn.prepare(
        "select l_orderkey, l_linenumber, l_quantity, l_shipdate, l_comment "
        "from lineitem where l_orderkey = $1 order by l_linenumber"
    )
    assert [t.name for t in stmt.get_parameters()] == ["int8"]
    attrs = stmt.get_attributes()
    assert [a.name for a in attrs] == [
        "l_orderkey",
        "l_linenumber",
        "l_quantity",
        "l_shipdate",
        "l_comment",
    ]
    assert [a.type.name for a in attrs[:4]] == ["int8", "int4", "numeric", "date"]
    assert attrs[4].type.name in ("varchar", "text")
    rows = await stmt.fetch(1)
    assert len(rows) >= 1 and all(r["l_orderkey"] == 1 for r in rows)
    assert await stmt.fetchval(1) == 1
    rows2 = await stmt.fetch(2)
    assert all(r["l_orderkey"] == 2 for r in rows2)


async def test_prepared_statement_param_types_from_any_and_all(conn):
    """`x = ANY($1)` and `x <> ALL($2)` take arrays of x's type, as PostgreSQL infers them."""
    stmt = await conn.prepare(
        "select l_linenumber from lineitem where l_orderkey = ANY($1) "
        "and l_linenumber <> ALL ($2) order by l_orderkey, l_linenumber"
    )
    assert [t.name for t in stmt.get_parameters()] == ["int8[]", "int4[]"]  # as asyncpg names them
    rows = await stmt.fetch([1, 2], [1, 3])
    assert rows and all(r["l_linenumber"] not in (1, 3) for r in rows)


async def test_prepared_statement_param_types_from_casts(conn):
    stmt = await conn.prepare(
        "select $1::int4 + 1 as a, $2::text || 'x' as b, $3::date as c"
    )
    assert [t.name for t in stmt.get_parameters()] == ["int4", "text", "date"]
    assert [(a.name, a.type.name) for a in stmt.get_attributes()] == [
        ("a", "int4"),
        ("b", "text"),
        ("c", "date"),
    ]
    assert tuple(await stmt.fetchrow(41, "y", dt.date(2020, 1, 2))) == (
        42,
        "yx",
        dt.date(2020, 1, 2),
    )


async def test_prepared_statement_explicit_name_reuse(conn):
    stmt = await conn.prepare(
        "select n_name from nation where n_nationkey = $1", name="nation_by_key"
    )
    names = [await stmt.fetchval(k) for k in (0, 1, 2)]
    assert names == ["ALGERIA", "ARGENTINA", "BRAZIL"]


async def test_prepared_statement_cursor(conn):
    stmt = await conn.prepare("select o_orderkey from orders order by o_orderkey")
    async with conn.transaction():
        cur = await stmt.cursor()
        a = await cur.fetch(5)
        b = await cur.fetch(5)
    all_keys = [
        r[0]
        for r in await conn.fetch(
            "select o_orderkey from orders order by o_orderkey limit 10"
        )
    ]
    assert [r[0] for r in a + b] == all_keys


# --------------------------------------------------------------------------- cancel


async def test_timeout_cancels_slow_query_and_connection_survives(conn):
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await conn.fetch(SLOW_QUERY, timeout=0.5)
    # asyncpg waited for the server to acknowledge the CancelRequest; the slow query
    # (many seconds) must really have stopped, not run to completion.
    assert time.monotonic() - started < 10
    assert (
        await asyncio.wait_for(conn.fetchval("select count(*) from nation"), 10) == 25
    )
    assert not conn.is_in_transaction()


async def test_other_connection_works_while_one_is_busy_and_cancelled(gateway):
    busy = await connect(gateway)
    other = await connect(gateway)
    try:
        task = asyncio.create_task(busy.fetch(SLOW_QUERY, timeout=4))
        await asyncio.sleep(0.5)
        assert not task.done()
        # While `busy` runs its slow query, another session gets answers promptly.
        t0 = time.monotonic()
        assert (
            await asyncio.wait_for(other.fetchval("select count(*) from region"), 5)
            == 5
        )
        assert (
            await asyncio.wait_for(other.fetchval("select $1::int8 * 2", 21), 5) == 42
        )
        assert time.monotonic() - t0 < 3
        assert not task.done()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(task, 20)
        assert await asyncio.wait_for(busy.fetchval("select 1"), 10) == 1
        assert await asyncio.wait_for(other.fetchval("select 2"), 10) == 2
    finally:
        for c in (busy, other):
            c.terminate()


async def test_cancel_inside_transaction_fails_transaction(conn):
    tr = conn.transaction()
    await tr.start()
    with pytest.raises(TimeoutError):
        await conn.fetch(SLOW_QUERY, timeout=0.5)
    with pytest.raises(asyncpg.InFailedSQLTransactionError):
        await conn.fetchval("select 1")
    await tr.rollback()
    assert await conn.fetchval("select 1") == 1


async def test_many_concurrent_connections(gateway):
    conns = await asyncio.gather(*(connect(gateway) for _ in range(8)))
    try:
        results = await asyncio.wait_for(
            asyncio.gather(
                *(
                    c.fetchval(
                        "select count(*) from nation where n_regionkey = $1", i % 5
                    )
                    for i, c in enumerate(conns)
                )
            ),
            30,
        )
        assert results == [5] * 8
    finally:
        await asyncio.gather(*(c.close(timeout=5) for c in conns))


async def test_server_settings_and_version(conn):
    assert conn.get_server_version().major == 15
    assert conn.get_settings().server_encoding == "UTF8"
    assert conn.get_settings().client_encoding == "UTF8"
    assert await conn.fetchval("select current_database()") == "fedgate"
    assert await conn.fetchval("select current_user") == "fedgate"
