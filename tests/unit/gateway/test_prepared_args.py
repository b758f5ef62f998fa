"""PREPARE's declared types and EXECUTE's arguments as PostgreSQL reads them (the
integration test tests/integration/test_sql_prepare.py compares whole answers)."""

from __future__ import annotations

import pytest

from gateway.session.prepared_args import argument_texts, declared_types, parse_arguments, split_top_level
from pgwire.errors import PgError

INT4, INT8, TEXT, BOOL, NUMERIC, DATE = 23, 20, 25, 16, 1700, 1082


def texts(args: str, oids: tuple[int, ...]) -> list[bytes | None]:
    return argument_texts(parse_arguments(args), oids)


def test_split_top_level() -> None:
    assert split_top_level("int, numeric(10, 2) ,'a,b'") == [("int", 0), ("numeric(10, 2)", 5), ("'a,b'", 21)]


def test_declared_types() -> None:
    assert declared_types("int, bigint, text[], pg_catalog.bool, numeric(10,2), character varying(3)", 0) \
        == (INT4, INT8, 1009, BOOL, NUMERIC, 1043)
    with pytest.raises(PgError) as caught:
        declared_types("int, NoSuch", 10)
    assert (caught.value.sqlstate, caught.value.message, caught.value.position) == \
        ("42704", 'type "nosuch" does not exist', 16)


@pytest.mark.parametrize(("args", "oids", "expected"), [
    ("1, 'a', NULL", (INT4, TEXT, INT4), [b"1", b"a", None]),
    ("-5, +6", (INT8, INT4), [b"-5", b"6"]),
    ("2.5, -2.5, 2.4", (INT4, INT4, INT4), [b"3", b"-3", b"2"]),  # numeric into integer: rounded
    ("2.5", (NUMERIC,), [b"2.5"]),
    ("TRUE, false", (BOOL, TEXT), [b"true", b"false"]),
    ("'it''s'", (TEXT,), [b"it's"]),
    ("E'a\\tb', $$x$$", (TEXT, TEXT), [b"a\tb", b"x"]),
    ("'5'::int, CAST(1.5 AS int), DATE '2024-01-02', ('x')", (INT4, INT4, DATE, TEXT), [b"5", b"2", b"2024-01-02", b"x"]),
    ("12::bigint", (INT4,), [b"12"]),
    ("7", (TEXT,), [b"7"]),  # a number into a string type: its text
    ("DATE '2024-01-02', TIMESTAMP '2024-01-02 10:00'", (1184, 1184), [b"2024-01-02", b"2024-01-02 10:00"]),
])
def test_argument_texts(args: str, oids: tuple[int, ...], expected: list[bytes | None]) -> None:
    assert texts(args, oids) == expected


@pytest.mark.parametrize(("args", "oids", "sqlstate", "message"), [
    ("TRUE", (INT4,), "42804", "parameter $1 of type boolean cannot be coerced to the expected type integer"),
    ("1, DATE '2024-01-01'", (INT4, INT4), "42804",
     "parameter $2 of type date cannot be coerced to the expected type integer"),
    ("(SELECT 1)", (INT4,), "0A000", "cannot use subquery in EXECUTE parameter"),
    ("1 + 1", (INT4,), "0A000", "EXECUTE arguments other than constants"),
    ("$1", (INT4,), "42P02", "there is no parameter $1"),
    ("$2::int", (INT4,), "42P02", "there is no parameter $2"),
    ("TRUE::int", (INT4,), "0A000", "cast a boolean to integer"),
    ("3000000000", (INT4,), "22003", "integer out of range"),
    ("40000.4", (21,), "22003", "smallint out of range"),
    ("'x'::nosuch", (INT4,), "42704", 'type "nosuch" does not exist'),
])
def test_refused_arguments(args: str, oids: tuple[int, ...], sqlstate: str, message: str) -> None:
    with pytest.raises(PgError) as caught:
        texts(args, oids)
    assert caught.value.sqlstate == sqlstate
    assert caught.value.message.startswith(message) or message in caught.value.message
