"""Wire-protocol edge cases, driven byte by byte through a raw socket.

The expected behaviour is PostgreSQL 15's (backend/tcop/postgres.c, postmaster.c).
"""

from __future__ import annotations

import socket
import struct
import time

import pytest

from tests.support import rawpg
from tests.support.rawpg import (
    RawPG,
    command_tags,
    data_rows,
    errors,
    ready_status,
    types_of,
)
from tests.support.slow import counting, cpu_seconds

INT8_OID = 20
# Counts up a row at a time for half an hour on the demo's DuckDB: only a cancel ends it.
SLOW_QUERY = counting("lineitem")


@pytest.fixture
def conn(gateway):
    c = RawPG.connect(
        gateway.host, gateway.port, user="fedgate", database=gateway.database
    )
    yield c
    c.__exit__(None, None, None)


def assert_gateway_usable(gateway) -> None:
    """A fresh connection can log in and run a query."""
    with RawPG.connect(gateway.host, gateway.port, database=gateway.database) as c:
        msgs = c.simple("select count(*) from nation")
        assert data_rows(msgs) == [["25"]], msgs
        assert ready_status(msgs[-1]) == "I"


def no_notices(msgs):
    """Drop NoticeResponse and ParameterStatus messages, which may legally appear anywhere."""
    return [m for m in msgs if m.type not in ("N", "S")]


# --------------------------------------------------------------------------- startup


def test_startup_reports_parameter_status_and_backend_key(gateway):
    c = RawPG.open(gateway.host, gateway.port)
    try:
        msgs = c.startup(
            user="fedgate", database=gateway.database, application_name="rawpg-edges"
        )
        kinds = types_of(msgs)
        # AuthenticationOk first, ReadyForQuery('I') last, BackendKeyData in between.
        assert kinds[0] == "R" and struct.unpack("!i", msgs[0].payload)[0] == 0, msgs[0]
        assert kinds[-1] == "Z" and ready_status(msgs[-1]) == "I"
        assert "E" not in kinds
        key_msgs = [m for m in msgs if m.type == "K"]
        assert len(key_msgs) == 1 and len(key_msgs[0].payload) == 8, msgs
        assert kinds.index("K") < kinds.index("Z")

        p = c.parameters
        assert p["server_version"].split(".")[0] == "15", p
        assert p["server_encoding"] == "UTF8"
        assert p["client_encoding"] == "UTF8"
        assert p["DateStyle"] == "ISO, MDY"
        assert p["integer_datetimes"] == "on"
        assert p["standard_conforming_strings"] == "on"
        assert p.get("TimeZone"), p
        assert p["application_name"] == "rawpg-edges"
    finally:
        c.__exit__(None, None, None)


def test_application_name_defaults_to_empty(gateway):
    with RawPG.connect(gateway.host, gateway.port, database=gateway.database) as c:
        assert c.parameters.get("application_name") == "", c.parameters


def test_ssl_request_declined_then_plain_startup_on_same_socket(gateway):
    c = RawPG.open(gateway.host, gateway.port)
    try:
        c.send(rawpg.ssl_request())
        assert c.read_bytes(1) == b"N"
        c.startup(user="fedgate", database=gateway.database)
        msgs = c.simple("select 41 + 1")
        assert data_rows(msgs) == [["42"]]
    finally:
        c.__exit__(None, None, None)


def test_gssenc_request_declined_then_plain_startup_on_same_socket(gateway):
    c = RawPG.open(gateway.host, gateway.port)
    try:
        c.send(rawpg.gssenc_request())
        assert c.read_bytes(1) == b"N"
        c.startup(user="fedgate", database=gateway.database)
        msgs = c.simple("select 'ok'")
        assert data_rows(msgs) == [["ok"]]
    finally:
        c.__exit__(None, None, None)


def test_wrong_database_is_fatal_3d000(gateway):
    c = RawPG.open(gateway.host, gateway.port)
    try:
        c.send(rawpg.startup_message({"user": "fedgate", "database": "no_such_db_xyz"}))
        msgs = c.expect_closed()
        errs = [m for m in msgs if m.type == "E"]
        assert len(errs) == 1, msgs
        assert errs[0].fields["S"] == "FATAL"
        assert errs[0].fields["C"] == "3D000"
        assert "Z" not in types_of(msgs)
    finally:
        c.close()
    assert_gateway_usable(gateway)


@pytest.mark.parametrize("length", [10005, 100_000, 1 << 30])
def test_oversized_startup_packet_closes_connection(gateway, length):
    # PostgreSQL caps the startup packet body at 10000 bytes (10004 with the length word)
    # and rejects a longer one with "invalid length of startup packet" (08P01). PG only
    # logs it (COMMERROR) and closes, so an ErrorResponse is optional; if one is sent it
    # must be 08P01.
    c = RawPG.open(gateway.host, gateway.port)
    try:
        body = struct.pack("!i", rawpg.PROTOCOL_3_0) + b"user\x00fedgate\x00"
        body += b"x" * (min(length, 20_000) - 4 - len(body))
        try:
            c.send(struct.pack("!i", length) + body)
        except OSError:
            pass  # the server may already have closed
        msgs = c.expect_closed()
        assert "R" not in types_of(msgs) and "Z" not in types_of(msgs), msgs
        for m in msgs:
            assert m.type == "E" and m.sqlstate == "08P01", msgs
    finally:
        c.close()
    assert gateway.proc.poll() is None, gateway.log()
    assert_gateway_usable(gateway)


def test_large_but_valid_startup_packet_is_accepted(gateway):
    # 10000 bytes in all, under PostgreSQL's limit: a long application_name is fine.
    params = {"user": "fedgate", "database": gateway.database, "application_name": ""}
    base = len(rawpg.startup_message(params))
    params["application_name"] = "a" * (10_000 - base)
    packet = rawpg.startup_message(params)
    assert len(packet) == 10_000
    c = RawPG.open(gateway.host, gateway.port)
    try:
        c.send(packet)
        msgs = c.read_until_ready()
        assert "E" not in types_of(msgs), msgs
        assert ready_status(msgs[-1]) == "I"
        assert data_rows(c.simple("select 1")) == [["1"]]
    finally:
        c.__exit__(None, None, None)


@pytest.mark.parametrize(
    "garbage",
    [
        b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"\x00\x00\x00\x08\x12\x34\x56\x78",  # valid length, unknown protocol code
        b"\x00\x00\x00\x02",  # length shorter than the length word itself
        bytes(range(256)) * 4,
    ],
    ids=["http", "bad-protocol-code", "short-length", "binary-noise"],
)
def test_garbage_after_connect_closes_without_crash(gateway, garbage):
    c = RawPG.open(gateway.host, gateway.port)
    try:
        try:
            c.send(garbage)
        except OSError:
            pass
        msgs = c.expect_closed()
        assert "R" not in types_of(msgs) and "Z" not in types_of(msgs), msgs
        for m in msgs:
            assert m.type == "E", msgs
    finally:
        c.close()
    assert gateway.proc.poll() is None, gateway.log()
    assert_gateway_usable(gateway)


def test_unsupported_protocol_version_rejected(gateway):
    # Protocol 2.0 is gone since PostgreSQL 14: FATAL 0A000 "unsupported frontend protocol".
    # PG answers in the client's (old, unframed) protocol: 'E' then a C string; a v3
    # ErrorResponse with 0A000 is accepted too.
    c = RawPG.open(gateway.host, gateway.port)
    try:
        c.send(
            rawpg.startup_message(
                {"user": "fedgate", "database": "fedgate"}, version=2 << 16
            )
        )
        raw = c.read_raw_until_closed()
        assert raw[:1] == b"E", raw
        assert b"unsupported frontend protocol" in raw or b"C0A000\x00" in raw, raw
        assert b"R\x00\x00\x00" not in raw
    finally:
        c.close()
    assert_gateway_usable(gateway)


@pytest.mark.parametrize("encoding", ["UTF8", "utf8", "UTF-8", "'utf-8'"])
def test_startup_client_encoding_spellings(gateway, encoding):
    # PostgreSQL accepts any spelling of UTF8 (asyncpg sends the quoted "'utf-8'") and
    # reports the canonical name back.
    with RawPG.connect(
        gateway.host, gateway.port, database=gateway.database, client_encoding=encoding
    ) as c:
        assert c.parameters["client_encoding"] == "UTF8"
        assert data_rows(c.simple("select 'é'")) == [["é"]]


def test_startup_options_with_guc(gateway):
    # libpq's `options` carries "-c name=value" settings into the session.
    with RawPG.connect(
        gateway.host,
        gateway.port,
        database=gateway.database,
        options="-c application_name=from_options",
    ) as c:
        assert c.parameters["application_name"] == "from_options"
        assert data_rows(c.simple("show application_name")) == [["from_options"]]


# --------------------------------------------------------------------------- after login


def test_sync_right_after_login_gives_ready_for_query(conn):
    conn.send(rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "Z"
    assert ready_status(msgs[0]) == "I"


def test_unknown_message_type_is_fatal_protocol_violation(gateway, conn):
    conn.send(b"Y" + struct.pack("!i", 4))
    msgs = conn.expect_closed()
    errs = [m for m in msgs if m.type == "E"]
    assert len(errs) == 1, msgs
    assert errs[0].fields["C"] == "08P01"
    assert errs[0].fields["S"] == "FATAL"
    assert "Z" not in types_of(msgs)
    assert_gateway_usable(gateway)


def test_terminate_closes_connection(conn):
    conn.send(rawpg.terminate())
    assert conn.expect_closed() == []


def test_empty_query(conn):
    msgs = conn.simple("")
    assert types_of(no_notices(msgs)) == "IZ"
    assert ready_status(msgs[-1]) == "I"


def test_whitespace_and_semicolon_only_query_is_empty(conn):
    msgs = conn.simple("  ;  ")
    assert types_of(no_notices(msgs)) == "IZ"


def test_simple_query_row_description_and_tag(conn):
    msgs = conn.simple(
        "select n_nationkey, n_name from nation where n_nationkey < 3 order by n_nationkey"
    )
    assert types_of(msgs) == "TDDDCZ", msgs
    cols = rawpg.parse_row_description(msgs[0].payload)
    assert [c["name"] for c in cols] == ["n_nationkey", "n_name"]
    assert cols[0]["type_oid"] == INT8_OID
    assert all(c["format"] == 0 for c in cols)
    assert [r[0] for r in data_rows(msgs)] == ["0", "1", "2"]
    assert data_rows(msgs)[0][1] == "ALGERIA"
    assert command_tags(msgs) == ["SELECT 3"]


def test_multi_statement_query_stops_at_first_error(conn):
    msgs = no_notices(
        conn.simple("select 1 as a; select * from nope_missing_table; select 3 as c")
    )
    # Results of the first statement, one error, nothing from the third.
    assert types_of(msgs) == "TDCEZ", msgs
    assert data_rows(msgs) == [["1"]]
    assert command_tags(msgs) == ["SELECT 1"]
    assert errors(msgs)[0]["C"] == "42P01"
    assert ready_status(msgs[-1]) == "I"
    # The session is fine afterwards.
    assert data_rows(conn.simple("select 3 as c")) == [["3"]]


def test_multi_statement_query_all_results(conn):
    msgs = no_notices(conn.simple("select 1; select 'two'; select 3"))
    assert types_of(msgs) == "TDCTDCTDCZ", msgs
    assert data_rows(msgs) == [["1"], ["two"], ["3"]]


def test_error_in_transaction_block_then_rollback(conn):
    msgs = no_notices(conn.simple("begin"))
    assert command_tags(msgs) == ["BEGIN"] and ready_status(msgs[-1]) == "T"

    msgs = no_notices(conn.simple("select * from nope_missing_table"))
    assert types_of(msgs) == "EZ" and errors(msgs)[0]["C"] == "42P01"
    assert ready_status(msgs[-1]) == "E"

    msgs = no_notices(conn.simple("select 1"))
    assert types_of(msgs) == "EZ", msgs
    assert errors(msgs)[0]["C"] == "25P02"
    assert ready_status(msgs[-1]) == "E"

    msgs = no_notices(conn.simple("rollback"))
    assert command_tags(msgs) == ["ROLLBACK"] and ready_status(msgs[-1]) == "I"

    msgs = conn.simple("select 1")
    assert data_rows(msgs) == [["1"]] and ready_status(msgs[-1]) == "I"


def test_commit_of_failed_transaction_reports_rollback(conn):
    conn.simple("begin")
    msgs = conn.simple("select * from nope_missing_table")
    assert ready_status(msgs[-1]) == "E"
    msgs = no_notices(conn.simple("commit"))
    # PostgreSQL answers COMMIT in a failed transaction with the tag ROLLBACK.
    assert command_tags(msgs) == ["ROLLBACK"], msgs
    assert ready_status(msgs[-1]) == "I"


def test_transaction_status_in_ready_for_query(conn):
    assert ready_status(conn.simple("begin")[-1]) == "T"
    assert ready_status(conn.simple("select 1")[-1]) == "T"
    assert ready_status(conn.simple("commit")[-1]) == "I"


def test_large_result_simple_query(conn):
    msgs = conn.simple("select o_orderkey from orders order by o_orderkey")
    assert errors(msgs) == []
    kinds = types_of(msgs)
    assert (kinds[0], kinds.count("D"), kinds[-2:]) == ("T", 15000, "CZ")
    assert kinds == "T" + "D" * 15000 + "CZ"
    keys = [int(r[0]) for r in data_rows(msgs)]
    assert keys == sorted(keys) and keys[0] == 1
    assert command_tags(msgs) == ["SELECT 15000"]


def test_large_result_extended_query(conn):
    conn.send(
        rawpg.parse("select l_orderkey, l_comment from lineitem"),
        rawpg.bind(),
        rawpg.execute(),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready(timeout=30)
    total = 60175
    assert errors(msgs) == []
    kinds = types_of(msgs)
    assert (kinds[:2], kinds.count("D"), kinds[-2:]) == ("12", total, "CZ")
    assert kinds == "12" + "D" * total + "CZ"
    assert command_tags(msgs) == [f"SELECT {total}"]


def test_boolean_results(conn):
    msgs = conn.simple("select true, false, 1 is null, null::bool")
    cols = rawpg.parse_row_description(msgs[0].payload)
    assert [c["type_oid"] for c in cols] == [16, 16, 16, 16]
    assert data_rows(msgs) == [["t", "f", "f", None]]


def test_duplicate_column_names_are_kept(conn):
    msgs = conn.simple(
        "select 1 as a, 2 as a, n_nationkey, n_nationkey from nation where n_nationkey = 4"
    )
    cols = rawpg.parse_row_description(msgs[0].payload)
    assert [c["name"] for c in cols] == ["a", "a", "n_nationkey", "n_nationkey"]
    assert data_rows(msgs) == [["1", "2", "4", "4"]]


# --------------------------------------------------------------------------- extended protocol


def test_parse_error_yields_one_error_then_ready(conn):
    conn.send(
        rawpg.parse("selec 1 frm"),
        rawpg.bind(),
        rawpg.execute(),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ", msgs
    assert msgs[0].fields["C"] == "42601"
    assert msgs[0].fields["S"] == "ERROR"
    assert ready_status(msgs[1]) == "I"
    # Nothing else is pending: a new query gets exactly its own answer.
    msgs = conn.simple("select 7")
    assert types_of(msgs) == "TDCZ" and data_rows(msgs) == [["7"]]


def test_messages_after_error_are_skipped_until_sync(conn):
    conn.send(
        rawpg.parse("select * from nope_missing_table"),
        rawpg.parse("select 1", name="after_error"),
        rawpg.bind(statement="after_error"),
        rawpg.execute(),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ", msgs
    assert msgs[0].fields["C"] == "42P01"
    # The skipped Parse did not create the statement.
    conn.send(rawpg.describe("S", "after_error"), rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ", msgs
    assert msgs[0].fields["C"] == "26000"


def test_extended_query_roundtrip(conn):
    conn.send(
        rawpg.parse(
            "select n_name from nation where n_nationkey = $1", param_oids=[INT8_OID]
        ),
        rawpg.bind(params=[b"7"]),
        rawpg.describe("P"),
        rawpg.execute(),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "12TDCZ", msgs
    assert data_rows(msgs) == [["GERMANY"]]
    assert command_tags(msgs) == ["SELECT 1"]


def test_extended_query_binary_params_and_results(conn):
    conn.send(
        rawpg.parse(
            "select n_nationkey, n_name from nation where n_nationkey = $1",
            param_oids=[INT8_OID],
        ),
        rawpg.bind(
            params=[struct.pack("!q", 7)], param_formats=[1], result_formats=[1, 0]
        ),
        rawpg.describe("P"),
        rawpg.execute(),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "12TDCZ", msgs
    cols = rawpg.parse_row_description(msgs[2].payload)
    assert [c["format"] for c in cols] == [1, 0]
    (row,) = [rawpg.parse_data_row(m.payload) for m in msgs if m.type == "D"]
    assert struct.unpack("!q", row[0]) == (7,)
    assert row[1] == b"GERMANY"


def test_describe_statement_reports_param_and_column_types(conn):
    conn.send(
        rawpg.parse(
            "select l_orderkey from lineitem where l_orderkey = $1", name="desc_s1"
        ),
        rawpg.describe("S", "desc_s1"),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "1tTZ", msgs
    assert rawpg.parse_parameter_description(msgs[1].payload) == [INT8_OID]
    cols = rawpg.parse_row_description(msgs[2].payload)
    assert len(cols) == 1
    assert cols[0]["name"] == "l_orderkey"
    assert cols[0]["type_oid"] == INT8_OID
    # Statement description has no result formats yet: text (0).
    assert cols[0]["format"] == 0


def test_describe_statement_without_result_is_no_data(conn):
    conn.send(
        rawpg.parse("begin", name="desc_begin"),
        rawpg.describe("S", "desc_begin"),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "1tnZ", msgs
    assert rawpg.parse_parameter_description(msgs[1].payload) == []


def test_named_statement_reused_with_different_params(conn):
    conn.send(
        rawpg.parse(
            "select n_name from nation where n_nationkey = $1",
            name="reuse",
            param_oids=[INT8_OID],
        )
    )
    for key, name in [(b"0", "ALGERIA"), (b"1", "ARGENTINA"), (b"24", "UNITED STATES")]:
        conn.send(rawpg.bind(statement="reuse", params=[key]), rawpg.execute())
    conn.send(rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "1" + "2DC" * 3 + "Z", msgs
    assert data_rows(msgs) == [["ALGERIA"], ["ARGENTINA"], ["UNITED STATES"]]


def test_duplicate_named_statement_is_42p05(conn):
    conn.send(rawpg.parse("select 1", name="dup"), rawpg.sync())
    assert types_of(conn.read_until_ready()) == "1Z"
    conn.send(rawpg.parse("select 2", name="dup"), rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ"
    assert msgs[0].fields["C"] == "42P05"


def test_bind_unknown_statement_is_26000(conn):
    conn.send(rawpg.bind(statement="never_prepared"), rawpg.execute(), rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ", msgs
    assert msgs[0].fields["C"] == "26000"


def test_execute_unknown_portal_is_34000(conn):
    conn.send(rawpg.execute("never_bound"), rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ", msgs
    assert msgs[0].fields["C"] == "34000"


def test_bind_wrong_param_count_is_08p01(conn):
    conn.send(
        rawpg.parse("select $1::int8 + 1", name="one_param"),
        rawpg.bind(statement="one_param", params=[]),
        rawpg.execute(),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "1EZ", msgs
    assert msgs[1].fields["C"] == "08P01"
    assert ready_status(msgs[-1]) == "I"
    # Only the message is rejected; the session goes on.
    assert data_rows(conn.simple("select 5")) == [["5"]]


def test_close_missing_statement_and_portal_is_not_an_error(conn):
    conn.send(
        rawpg.close("S", "does_not_exist"),
        rawpg.close("P", "does_not_exist"),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "33Z", msgs
    assert ready_status(msgs[-1]) == "I"


def test_close_statement_then_bind_fails(conn):
    conn.send(
        rawpg.parse("select 1", name="closing"),
        rawpg.close("S", "closing"),
        rawpg.sync(),
    )
    assert types_of(conn.read_until_ready()) == "13Z"
    conn.send(rawpg.bind(statement="closing"), rawpg.execute(), rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ"
    assert msgs[0].fields["C"] == "26000"
    # The name is free again.
    conn.send(rawpg.parse("select 2", name="closing"), rawpg.sync())
    assert types_of(conn.read_until_ready()) == "1Z"


def test_execute_max_rows_suspends_portal(conn):
    conn.send(
        rawpg.parse("select n_nationkey from nation order by n_nationkey limit 10"),
        rawpg.bind(),
        rawpg.execute(max_rows=3),
        rawpg.execute(max_rows=3),
        rawpg.execute(max_rows=3),
        rawpg.execute(max_rows=3),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "12" + "DDDs" * 3 + "DCZ", msgs
    assert [r[0] for r in data_rows(msgs)] == [str(i) for i in range(10)]
    # The tag counts the rows of the last Execute only.
    assert command_tags(msgs) == ["SELECT 1"]


def test_execute_max_rows_exact_multiple_needs_extra_execute(conn):
    # With 6 rows and max_rows 3, the second Execute still ends in PortalSuspended (the
    # executor has not seen the end yet); a third Execute returns no rows and "SELECT 0".
    conn.send(
        rawpg.parse("select n_nationkey from nation order by n_nationkey limit 6"),
        rawpg.bind(),
        rawpg.execute(max_rows=3),
        rawpg.execute(max_rows=3),
        rawpg.execute(max_rows=3),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "12DDDsDDDsCZ", msgs
    assert command_tags(msgs) == ["SELECT 0"]


def test_suspended_portal_across_flush_in_transaction(conn):
    """A named portal inside BEGIN survives Sync and can be fetched from in later batches."""
    assert ready_status(conn.simple("begin")[-1]) == "T"
    conn.send(
        rawpg.parse(
            "select n_nationkey from nation order by n_nationkey", name="cur_s"
        ),
        rawpg.bind(portal="cur_p", statement="cur_s"),
        rawpg.execute("cur_p", 10),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "12" + "D" * 10 + "sZ", msgs
    assert ready_status(msgs[-1]) == "T"
    conn.send(rawpg.execute("cur_p", 10), rawpg.flush())
    msgs = conn.read_until("sC")
    assert types_of(msgs) == "D" * 10 + "s"
    conn.send(rawpg.execute("cur_p", 10), rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "D" * 5 + "CZ"
    assert command_tags(msgs) == ["SELECT 5"]
    assert data_rows(msgs)[-1] == ["24"]
    assert ready_status(conn.simple("commit")[-1]) == "I"


def test_unnamed_portal_is_gone_after_sync_outside_transaction(conn):
    conn.send(
        rawpg.parse("select n_nationkey from nation order by n_nationkey"),
        rawpg.bind(),
        rawpg.execute(max_rows=2),
        rawpg.sync(),
    )
    assert types_of(conn.read_until_ready()) == "12DDsZ"
    conn.send(rawpg.execute(max_rows=2), rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ", msgs
    assert msgs[0].fields["C"] == "34000"


def test_flush_without_sync_delivers_parse_complete(conn):
    conn.send(rawpg.parse("select 1", name="flushed"), rawpg.flush())
    msgs = conn.read_until("1", timeout=5)
    assert types_of(msgs) == "1"
    conn.send(rawpg.bind(statement="flushed"), rawpg.execute(), rawpg.flush())
    msgs = conn.read_until("C", timeout=5)
    assert types_of(msgs) == "2DC"
    conn.send(rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "Z" and ready_status(msgs[0]) == "I"


def test_error_is_sent_without_waiting_for_sync(conn):
    # asyncpg prepares with Parse + Describe + Flush and waits: the ErrorResponse must be
    # flushed right away (PG flushes every error), the Sync comes only after it.
    conn.send(
        rawpg.parse("select * from nope_missing_table", name="flush_err"),
        rawpg.describe("S", "flush_err"),
        rawpg.flush(),
    )
    msgs = conn.read_until("E", timeout=5)
    assert types_of(msgs) == "E" and msgs[0].fields["C"] == "42P01"
    conn.send(rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "Z" and ready_status(msgs[0]) == "I"


def test_execute_error_is_sent_without_waiting_for_sync(conn):
    conn.send(rawpg.parse("select 1/0"), rawpg.bind(), rawpg.execute(), rawpg.flush())
    msgs = conn.read_until("E", timeout=5)
    assert msgs[-1].fields["C"] == "22012"
    conn.send(rawpg.sync())
    assert types_of(conn.read_until_ready()) == "Z"


def test_extended_error_in_transaction_block(conn):
    conn.simple("begin")
    conn.send(
        rawpg.parse("select * from nope_missing_table"),
        rawpg.bind(),
        rawpg.execute(),
        rawpg.sync(),
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ" and ready_status(msgs[-1]) == "E"
    conn.send(rawpg.parse("select 1"), rawpg.bind(), rawpg.execute(), rawpg.sync())
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "EZ" and msgs[0].fields["C"] == "25P02"
    assert ready_status(conn.simple("rollback")[-1]) == "I"


def test_simple_query_inside_extended_batch_is_answered_in_order(conn):
    conn.send(
        rawpg.parse("select 1", name="order1"), rawpg.sync(), rawpg.query("select 2")
    )
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "1Z"
    msgs = conn.read_until_ready()
    assert types_of(msgs) == "TDCZ" and data_rows(msgs) == [["2"]]


# --------------------------------------------------------------------------- cancel


def test_cancel_request_interrupts_running_query(gateway, conn):
    assert conn.backend_key is not None
    pid, key = conn.backend_key
    conn.send(rawpg.query(SLOW_QUERY))
    time.sleep(0.5)
    started = time.monotonic()
    with socket.create_connection((gateway.host, gateway.port), timeout=5) as s:
        s.sendall(rawpg.cancel_request(pid, key))
        s.settimeout(5)
        # The server answers a CancelRequest by closing the socket, nothing else.
        assert s.recv(100) == b""
    msgs = no_notices(conn.read_until_ready(timeout=15))
    assert time.monotonic() - started < 10
    assert types_of(msgs)[-2:] == "EZ", msgs
    assert errors(msgs)[0]["C"] == "57014"
    assert ready_status(msgs[-1]) == "I"
    assert data_rows(conn.simple("select 1")) == [["1"]]


# The slow count shipped whole to the demo's DuckDB, and run by the gateway's engine
# (no table: nothing to ship).
@pytest.mark.parametrize("slow_query", [SLOW_QUERY, counting()], ids=["source", "engine"])
def test_cancelled_query_really_stops(gateway, conn, slow_query):
    # After the ErrorResponse 57014 the slow query must no longer burn CPU in the server
    # (it would otherwise run for half an hour in the background).
    pid, key = conn.backend_key
    conn.send(rawpg.query(slow_query))
    time.sleep(0.5)
    with socket.create_connection((gateway.host, gateway.port), timeout=5) as s:
        s.sendall(rawpg.cancel_request(pid, key))
    msgs = no_notices(conn.read_until_ready(timeout=15))
    assert errors(msgs)[0]["C"] == "57014"
    time.sleep(0.3)
    before = cpu_seconds(gateway.proc.pid)
    time.sleep(1.5)
    used = cpu_seconds(gateway.proc.pid) - before
    assert used < 0.5, f"server used {used:.2f}s CPU in 1.5s after the cancel"


def test_cancel_request_with_wrong_key_is_ignored(gateway, conn):
    pid, key = conn.backend_key
    with socket.create_connection((gateway.host, gateway.port), timeout=5) as s:
        s.sendall(rawpg.cancel_request(pid, key ^ 0x5A5A5A5A))
        s.settimeout(5)
        assert s.recv(100) == b""
    msgs = conn.simple("select count(*) from region")
    assert data_rows(msgs) == [["5"]]
    assert "E" not in types_of(msgs)
