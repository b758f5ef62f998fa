"""psycopg 3 (libpq underneath) against the gateway: params, binary results, prepare, cancel."""

from __future__ import annotations

import datetime as dt
import signal
import threading
import time
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from psycopg import errors, pq

from tests.support.slow import counting

# Counts up a row at a time for half an hour on the demo's DuckDB: only a cancel ends it.
SLOW_QUERY = counting("lineitem")

# Every test is bounded: a hung query fails the test instead of hanging the run.
TEST_TIMEOUT = 30


@pytest.fixture(autouse=True)
def _bounded_in_time():
    def on_alarm(signum, frame):
        raise TimeoutError(f"test still running after {TEST_TIMEOUT}s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_TIMEOUT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def connect(gateway, **kw) -> psycopg.Connection:
    return psycopg.connect(
        host=gateway.host,
        port=gateway.port,
        user="fedgate",
        dbname=gateway.database,
        connect_timeout=10,
        **kw,
    )


@pytest.fixture
def conn(gateway):
    c = connect(gateway, autocommit=True)
    yield c
    c.close()


@pytest.fixture
def tx_conn(gateway):
    c = connect(gateway)  # autocommit off: psycopg opens a transaction implicitly
    yield c
    c.close()


# --------------------------------------------------------------------------- params


def test_server_basics(conn):
    assert conn.info.server_version // 10000 == 15
    assert conn.info.parameter_status("server_encoding") == "UTF8"
    assert conn.info.parameter_status("client_encoding") == "UTF8"
    assert conn.info.parameter_status("integer_datetimes") == "on"
    assert conn.info.dbname == "fedgate"
    assert conn.info.backend_pid != 0


def test_params_text_protocol(conn):
    row = conn.execute(
        "select %s::int4 + 1, %s::text || '!', %s::numeric * 2, %s::date, %s::bool",
        (41, "hi", Decimal("1.25"), dt.date(2021, 12, 31), False),
    ).fetchone()
    assert row == (42, "hi!", Decimal("2.50"), dt.date(2021, 12, 31), False)


def test_params_against_lineitem(conn):
    cur = conn.execute(
        "select l_orderkey, l_linenumber from lineitem where l_orderkey = %s order by l_linenumber",
        (1,),
    )
    rows = cur.fetchall()
    assert len(rows) >= 1
    assert all(r[0] == 1 for r in rows)
    assert [r[1] for r in rows] == list(range(1, len(rows) + 1))
    assert cur.rowcount == len(rows)
    assert [d.name for d in cur.description] == ["l_orderkey", "l_linenumber"]


def test_named_params_and_nulls(conn):
    row = conn.execute(
        "select %(a)s::int8, %(b)s::text, %(a)s::int8 is null", {"a": None, "b": None}
    ).fetchone()
    assert row == (None, None, True)


def test_unicode_text(conn):
    assert conn.execute("select %s::text", ("héllo ☃ 日本",)).fetchone() == (
        "héllo ☃ 日本",
    )


def test_binary_cursor_results(conn):
    cur = conn.cursor(binary=True)
    row = cur.execute(
        "select 1::int2, 2::int4, 3000000000::int8, 1.5::float4, 2.25::float8, "
        "12345678.1234::numeric(12,4), 'txt'::text, 'vc'::varchar, true, "
        "date '2024-02-29', timestamp '2024-02-29 13:14:15.123456', "
        "time '12:34:56.789', timestamptz '2024-07-01 23:59:59.999999+00'"
    ).fetchone()
    assert cur.pgresult.fformat(0) == pq.Format.BINARY
    assert row[:9] == (
        1,
        2,
        3000000000,
        1.5,
        2.25,
        Decimal("12345678.1234"),
        "txt",
        "vc",
        True,
    )
    assert row[9] == dt.date(2024, 2, 29)
    assert row[10] == dt.datetime(2024, 2, 29, 13, 14, 15, 123456)
    assert row[11] == dt.time(12, 34, 56, 789000)
    assert row[12] == dt.datetime(2024, 7, 1, 23, 59, 59, 999999, tzinfo=dt.UTC)


def test_binary_cursor_table_columns(conn):
    cur = conn.cursor(binary=True)
    cur.execute(
        "select l_orderkey, l_linenumber, l_quantity, l_shipdate, l_returnflag from lineitem "
        "where l_orderkey = %s order by l_linenumber",
        (1,),
    )
    assert all(cur.pgresult.fformat(i) == pq.Format.BINARY for i in range(5))
    text_rows = conn.execute(
        "select l_orderkey, l_linenumber, l_quantity, l_shipdate, l_returnflag from lineitem "
        "where l_orderkey = 1 order by l_linenumber"
    ).fetchall()
    rows = cur.fetchall()
    assert rows == text_rows
    assert isinstance(rows[0][2], Decimal) and isinstance(rows[0][3], dt.date)


def test_binary_params(conn):
    cur = conn.cursor(binary=True)
    vals = (
        7,
        2**40,
        0.5,
        Decimal("-3.1400"),
        "abc",
        dt.date(1999, 12, 31),
        dt.datetime(2000, 1, 1, 0, 0, 1),
        b"\x00\xff",
    )
    cur.execute("select %b, %b, %b, %b, %b, %b, %b, %b", vals)
    assert cur.fetchone() == vals


def test_executemany_select_returning(conn):
    cur = conn.cursor()
    cur.executemany(
        "select n_name from nation where n_nationkey = %s",
        [(0,), (1,), (2,)],
        returning=True,
    )
    names = []
    while True:
        names.append(cur.fetchone()[0])
        if not cur.nextset():
            break
    assert names == ["ALGERIA", "ARGENTINA", "BRAZIL"]


def test_many_rows(conn):
    rows = conn.execute(
        "select o_orderkey, o_orderdate from orders order by o_orderkey"
    ).fetchall()
    assert len(rows) == 15000
    assert isinstance(rows[0][1], dt.date)


# --------------------------------------------------------------------------- prepared statements


def test_prepare_threshold_server_side_prepare(conn, tmp_path: Path):
    assert conn.prepare_threshold == 5
    assert conn.prepared_max >= 1
    trace_file = tmp_path / "libpq.trace"
    sql = "select n_name, n_regionkey from nation where n_nationkey = %s"
    expected = {
        k: conn.execute(
            f"select n_name, n_regionkey from nation where n_nationkey = {k}"
        ).fetchone()
        for k in range(10)
    }
    with open(trace_file, "w") as f:
        conn.pgconn.trace(f.fileno())
        conn.pgconn.set_trace_flags(
            pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE
        )
        try:
            for k in range(10):
                assert conn.execute(sql, (k,)).fetchone() == expected[k], f"run {k + 1}"
        finally:
            conn.pgconn.untrace()
    trace = trace_file.read_text()
    # Runs 1-5 use the unnamed statement; then psycopg prepares a named one ("_pg3_N")
    # once and only Binds/Executes it afterwards.
    named_parses = [
        ln for ln in trace.splitlines() if "\tParse\t" in ln and '"_pg3_' in ln
    ]
    assert len(named_parses) == 1, trace
    assert trace.count("\tBind\t") >= 10
    assert [
        ln for ln in trace.splitlines() if ln.startswith("B") and "ErrorResponse" in ln
    ] == []


def test_explicit_prepare(conn):
    cur = conn.cursor()
    for k in (3, 4, 5):
        cur.execute(
            "select n_nationkey from nation where n_nationkey = %s", (k,), prepare=True
        )
        assert cur.fetchone() == (k,)


def test_prepared_after_error_still_works(conn):
    sql = "select n_nationkey from nation where n_nationkey = %s"
    for k in range(7):
        assert conn.execute(sql, (k,)).fetchone() == (k,)
    with pytest.raises(errors.UndefinedTable):
        conn.execute("select * from nope_missing_table")
    assert conn.execute(sql, (8,)).fetchone() == (8,)


# --------------------------------------------------------------------------- errors and transactions


def test_error_then_recovery_autocommit(conn):
    with pytest.raises(errors.UndefinedTable) as ei:
        conn.execute("select * from nope_missing_table")
    assert ei.value.sqlstate == "42P01"
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert conn.execute("select count(*) from nation").fetchone() == (25,)


@pytest.mark.parametrize(
    ("sql", "exc", "sqlstate"),
    [
        ("selec 1", errors.SyntaxError, "42601"),
        ("select no_such_column from nation", errors.UndefinedColumn, "42703"),
        ("select 1/0", errors.DivisionByZero, "22012"),
        ("select * from nope_missing_table", errors.UndefinedTable, "42P01"),
    ],
    ids=["syntax", "undefined-column", "division-by-zero", "undefined-table"],
)
def test_error_classes(conn, sql, exc, sqlstate):
    with pytest.raises(exc) as ei:
        conn.execute(sql)
    assert ei.value.sqlstate == sqlstate
    assert ei.value.diag.severity == "ERROR"
    assert ei.value.diag.message_primary
    assert conn.execute("select 1").fetchone() == (1,)


def test_error_with_params_then_recovery(conn):
    with pytest.raises(errors.DivisionByZero):
        conn.execute("select 10 / %s::int4", (0,))
    assert conn.execute("select 10 / %s::int4", (5,)).fetchone() == (2,)


def test_transaction_status_tracking(tx_conn):
    conn = tx_conn
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    conn.execute("select 1")
    assert conn.info.transaction_status == pq.TransactionStatus.INTRANS
    conn.commit()
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    conn.execute("select 1")
    assert conn.info.transaction_status == pq.TransactionStatus.INTRANS
    conn.rollback()
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE


def test_failed_transaction_then_rollback(tx_conn):
    conn = tx_conn
    assert conn.execute("select count(*) from region").fetchone() == (5,)
    with pytest.raises(errors.UndefinedTable):
        conn.execute("select * from nope_missing_table")
    assert conn.info.transaction_status == pq.TransactionStatus.INERROR
    with pytest.raises(errors.InFailedSqlTransaction) as ei:
        conn.execute("select 1")
    assert ei.value.sqlstate == "25P02"
    assert conn.info.transaction_status == pq.TransactionStatus.INERROR
    conn.rollback()
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert conn.execute("select count(*) from nation").fetchone() == (25,)
    conn.commit()


def test_transaction_context_manager(conn):
    with conn.transaction():
        assert conn.info.transaction_status == pq.TransactionStatus.INTRANS
        assert conn.execute("select count(*) from region").fetchone() == (5,)
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    with pytest.raises(errors.UndefinedTable), conn.transaction():
        conn.execute("select * from nope_missing_table")
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert conn.execute("select 1").fetchone() == (1,)


def test_pipeline_mode(conn):
    with conn.pipeline():
        c1 = conn.execute("select count(*) from nation")
        c2 = conn.execute("select n_name from nation where n_nationkey = %s", (7,))
        c3 = conn.execute("select count(*) from region")
    assert c1.fetchone() == (25,)
    assert c2.fetchone() == ("GERMANY",)
    assert c3.fetchone() == (5,)


def test_pipeline_mode_error_aborts_rest(conn):
    with pytest.raises(errors.UndefinedTable), conn.pipeline():
        conn.execute("select 1")
        conn.execute("select * from nope_missing_table")
        conn.execute("select 3")
    assert conn.execute("select 4").fetchone() == (4,)


# --------------------------------------------------------------------------- cancel


@pytest.mark.parametrize("method", ["cancel", "cancel_safe"])
def test_cancel_from_another_thread(conn, method):
    timer = threading.Timer(0.5, getattr(conn, method))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(errors.QueryCanceled) as ei:
            conn.execute(SLOW_QUERY)
    finally:
        timer.cancel()
        timer.join(10)
    assert ei.value.sqlstate == "57014"
    assert time.monotonic() - started < 10
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert conn.execute("select count(*) from nation").fetchone() == (25,)


def test_cancel_in_transaction_then_rollback(tx_conn):
    conn = tx_conn
    timer = threading.Timer(0.5, conn.cancel_safe)
    timer.start()
    try:
        with pytest.raises(errors.QueryCanceled):
            conn.execute(SLOW_QUERY)
    finally:
        timer.join(10)
    assert conn.info.transaction_status == pq.TransactionStatus.INERROR
    conn.rollback()
    assert conn.execute("select 1").fetchone() == (1,)
    conn.rollback()


def test_statement_timeout_setting(conn):
    conn.execute("set statement_timeout = '300ms'")
    try:
        started = time.monotonic()
        with pytest.raises(errors.QueryCanceled):
            conn.execute(SLOW_QUERY)
        assert time.monotonic() - started < 10
    finally:
        conn.execute("reset statement_timeout")
    assert conn.execute("select 1").fetchone() == (1,)
