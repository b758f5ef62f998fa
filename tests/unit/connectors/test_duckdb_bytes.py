"""octet_length() of text, length() of a bytea and encode() to hex and base64, written
for DuckDB (connectors.dialects.duckdb.bytes) and run there, against what PostgreSQL
answers. The differential suite (tests/conformance) compares a few calls with
PostgreSQL itself; here every input length from 0 to 200 bytes meets base64's line
breaks, against PostgreSQL's own algorithm (pg_base64_encode in encode.c) written out
in Python."""

from __future__ import annotations

import base64

import duckdb
import pytest
import sqlglot
from sqlglot.optimizer.annotate_types import annotate_types

from connectors.dialects.duckdb import to_duckdb
from connectors.dialects.duckdb.bytes import MIME_LINE, needs_rewrite, postgres_bytes


def pg_base64(data: bytes) -> str:
    """PostgreSQL's encode(data, 'base64'): after each group of four characters that
    fills a line, a newline; the padded last group is written after the loop, so no
    newline follows it."""
    whole, rest = divmod(len(data), 3)
    out, line = [], 0
    for group in range(whole):
        out.append(base64.b64encode(data[3 * group:3 * group + 3]).decode())
        line += 4
        if line >= MIME_LINE:
            out.append("\n")
            line = 0
    if rest:
        out.append(base64.b64encode(data[3 * whole:]).decode())
    return "".join(out)


def _answer(sql: str) -> object:
    """`sql` as the DuckDB dialect writes it (its bytea constants too), run in DuckDB."""
    tree = annotate_types(sqlglot.parse_one(sql, read="postgres"))
    assert needs_rewrite(tree)
    return duckdb.sql(to_duckdb(tree)).fetchall()[0][0]


@pytest.mark.parametrize("size", range(0, 201))
def test_base64_breaks_lines_as_postgresql(size: int) -> None:
    data = bytes((7 * i + 161) % 256 for i in range(size))
    assert _answer(f"SELECT encode('\\x{data.hex()}'::bytea, 'base64')") == pg_base64(data)


def test_hex_is_lower_case() -> None:
    assert _answer("SELECT encode('\\xDEADbeef'::bytea, 'hex')") == "deadbeef"


def test_lengths_count_bytes_as_int4() -> None:
    assert _answer("SELECT octet_length('Ünïcødé ß')") == len("Ünïcødé ß".encode())
    assert _answer("SELECT length('\\xdeadbeef'::bytea)") == 4
    tree = annotate_types(sqlglot.parse_one("SELECT octet_length('ab')", read="postgres"))
    assert tree.transform(postgres_bytes).sql("duckdb") == "SELECT CAST(STRLEN('ab') AS INT)"


def test_other_formats_are_left_to_the_refusal() -> None:
    tree = annotate_types(sqlglot.parse_one("SELECT encode('\\x00'::bytea, 'escape')", read="postgres"))
    assert tree.transform(postgres_bytes).sql("postgres") == tree.sql("postgres")


def pg_substring(data: bytes, start: int, count: int | None) -> bytes:
    """PostgreSQL's bytea_substring: from max(start, 1) up to start + count, exclusive."""
    first = max(start, 1)
    end = len(data) + 1 if count is None else start + count
    return data[first - 1:end - 1] if end > first else b""


@pytest.mark.parametrize("start", range(-3, 7))
def test_substring_keeps_postgresql_bounds(start: int) -> None:
    data = bytes.fromhex("deadbeef")
    for count in (None, 0, 1, 2, 5):
        call = f"substring('\\x{data.hex()}'::bytea FROM {start}" + ("" if count is None else f" FOR {count}") + ")"
        assert _answer(f"SELECT {call}") == pg_substring(data, start, count), call


def test_substring_of_a_negative_length_raises() -> None:
    with pytest.raises(duckdb.Error, match="negative substring length not allowed"):
        _answer("SELECT substring('\\xdeadbeef'::bytea FROM 2 FOR -1)")


def test_get_byte_reads_each_byte_and_names_the_valid_range() -> None:
    data = bytes.fromhex("00deadbeefff")
    for index, byte in enumerate(data):
        assert _answer(f"SELECT get_byte('\\x{data.hex()}'::bytea, {index})") == byte
    with pytest.raises(duckdb.Error, match=r"index 6 out of valid range, 0\.\.5"):
        _answer(f"SELECT get_byte('\\x{data.hex()}'::bytea, 6)")
