"""COPY ... TO STDOUT of rows the engine computes (a Parquet table), byte for byte against
PostgreSQL's own COPY of the same query, in each format and with the options that change
the escaping: a delimiter that needs escaping in text, a NULL spelled like a value, another
quote, a lone `\\.` (the end-of-data marker) in a one-column row, and values holding every
character the formats escape."""

from __future__ import annotations

import asyncpg
import pytest


# Hostile values next to the trap's own: every escaped character, the NULL spellings, the
# marker, quotes of both kinds.
VALUES = ("CASE t.id WHEN 1 THEN E'back\\\\slash\\ttab' WHEN 2 THEN E'new\\nline\\rcr' "
          "WHEN 3 THEN E'\\b\\f\\v' WHEN 4 THEN '\\N' WHEN 5 THEN 'NULL' WHEN 6 THEN 'a,b|c''d\"e' "
          "END")
QUERY = "SELECT t.id, t.s, t.f, t.n, t.ts, {values} AS hostile, '' AS empty FROM {table} t ORDER BY t.id"
LONE = "SELECT CASE WHEN t.id % 2 = 0 THEN '\\.' ELSE t.s END AS v FROM {table} t ORDER BY t.id"
OPTIONS = {
    "text": {},
    "text, comma": {"delimiter": ","},
    "text, NULL 'NULL'": {"null": "NULL"},
    "csv, header": {"format": "csv", "header": True},
    "csv, | NULL 'NULL' quote '": {"format": "csv", "delimiter": "|", "null": "NULL", "quote": "'"},
    "csv, tab, NULL '\\N'": {"format": "csv", "delimiter": "\t", "null": "\\N"},
    "csv, escape the quote": {"format": "csv", "quote": "'", "escape": "'"},
}


async def copied(conn: asyncpg.Connection, query: str, options: dict) -> bytes:
    chunks: list[bytes] = []

    async def take(data: bytes) -> None:
        chunks.append(data)
    await conn.copy_from_query(query, output=take, **options)
    return b"".join(chunks)


@pytest.mark.parametrize("options", list(OPTIONS))
async def test_copy_of_engine_rows_writes_what_postgresql_writes(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection, options: str) -> None:
    # The Parquet table is read by the engine, PostgreSQL's straight by its own COPY.
    got = await copied(gwc, QUERY.format(values=VALUES, table="pq.trap"), OPTIONS[options])
    want = await copied(pgc, QUERY.format(values=VALUES, table="trap"), OPTIONS[options])
    assert got == want


@pytest.mark.parametrize("fmt", ["text", "csv"])
async def test_a_lone_end_marker_is_quoted_as_postgresql_quotes_it(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection, fmt: str) -> None:
    got = await copied(gwc, LONE.format(table="pq.trap"), {"format": fmt})
    want = await copied(pgc, LONE.format(table="trap"), {"format": fmt})
    assert got == want
    if fmt == "csv":
        assert b'"\\."\n' in got


# Option sets PostgreSQL refuses, each for its own reason (ProcessCopyOptions).
REFUSED = [
    "(FORMAT csv, DELIMITER '|', QUOTE '|')",
    "(FORMAT csv, NULL 'a\"b')",
    "(DELIMITER ',', NULL 'a,b')",
    "(DELIMITER 'a')",
    "(DELIMITER '.')",
    "(DELIMITER E'\\n')",
    "(NULL E'x\\ry')",
    "(QUOTE '''')",
    "(FORMAT csv, QUOTE 'ab')",
    "(DELIMITER 'ab')",
    "(DELIMITER 'é')",
    "(FORMAT xml)",
    "(ESCAPE '\"')",
]


async def sqlstate_of(conn: asyncpg.Connection, sql: str) -> str:
    with pytest.raises(asyncpg.PostgresError) as failed:
        await conn.execute(sql)
    return failed.value.sqlstate


@pytest.mark.parametrize("options", REFUSED)
async def test_option_sets_postgresql_refuses_are_refused_alike(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection, options: str) -> None:
    got = await sqlstate_of(gwc, f"COPY (SELECT id FROM pq.trap) TO STDOUT {options}")
    want = await sqlstate_of(pgc, f"COPY (SELECT id FROM trap) TO STDOUT {options}")
    assert got == want


async def test_a_large_export_matches_postgresql_row_for_row(
        gwc: asyncpg.Connection, pgc: asyncpg.Connection) -> None:
    # Batches above the gateway's offload size are written on a worker thread.
    query = ("SELECT t.id * 100000 + g AS k, t.s || g AS s, t.f * g AS f FROM {table} t "
             "CROSS JOIN generate_series(1, 5000) g ORDER BY 1")
    got = await copied(gwc, query.format(table="pq.trap"), {"format": "csv"})
    want = await copied(pgc, query.format(table="trap"), {"format": "csv"})
    assert got.count(b"\n") == 35000
    assert got == want
