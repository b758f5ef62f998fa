"""MySQL's unsigned integer and wide decimal columns computed on as PostgreSQL computes on their types.

The gateway types `tinyint unsigned` as int2 and `bigint unsigned` as numeric(20,0)
(planner.type_names), so `ti - 5` is -5 and `bu + 1` is 2^64 where MySQL itself, which
computes with an unsigned column in unsigned 64 bits, fails with "BIGINT UNSIGNED value
is out of range". Such arithmetic is not shipped to MySQL (connectors.dialects.mysql),
and the engine reads the columns as their signed types (connectors.engines.duckdb) instead
of DuckDB's UTINYINT/UBIGINT, which overflow alike; a decimal beyond DuckDB's 38 digits
is passed through as its text (planner.kept_texts). The reference is PostgreSQL over the
same values, typed as the gateway types them.
"""

from __future__ import annotations

import asyncpg

from tests.sources.conftest import Federation

VALUES = ("(VALUES (1, 255::int2, 18446744073709551615::numeric(20,0)), (2, 0::int2, 0::numeric(20,0)), "
          "(3, NULL::int2, NULL::numeric(20,0))) AS u(id, ti, bu)")
SELECTED = "u.id, u.ti - 5, u.ti + 1, u.bu + 1, u.bu - 1, u.bu * 2, -u.ti"


async def _answer(conn: asyncpg.Connection, sql: str) -> tuple[list[str], list[tuple]]:
    statement = await conn.prepare(sql)
    return [a.type.name for a in statement.get_attributes()], \
        [tuple(r.values()) for r in await statement.fetch()]


async def test_federated_arithmetic_on_unsigned_columns(gw: asyncpg.Connection,
                                                        pgref: asyncpg.Connection) -> None:
    """Joined with a Parquet table, the engine computes: no overflow, PostgreSQL's types."""
    got = await _answer(gw, f"SELECT {SELECTED} FROM my.unsigned u JOIN pq.trap t ON t.id = u.id "
                            "WHERE u.ti - 5 < 300 OR u.ti IS NULL ORDER BY u.id")
    want = await _answer(pgref, f"SELECT {SELECTED} FROM {VALUES} JOIN trap t ON t.id = u.id "
                                "WHERE u.ti - 5 < 300 OR u.ti IS NULL ORDER BY u.id")
    assert got == want
    assert want[1][1][1] == -5 and want[1][0][3] == 2 ** 64


async def test_a_filter_with_unsigned_arithmetic_is_not_shipped(federation: Federation,
                                                                gw: asyncpg.Connection) -> None:
    """The pushed scan carries no arithmetic on the unsigned column: MySQL would fail."""
    plan = "\n".join(r[0] for r in await gw.fetch(
        "EXPLAIN VERBOSE SELECT u.id FROM my.unsigned u JOIN pq.trap t ON t.id = u.id "
        "WHERE u.ti - 5 < 0"))
    assert "unsigned" in plan and "pushed" not in plan.split("ti - 5")[1].split("\n")[0], plan
    rows = await gw.fetch("SELECT u.id FROM my.unsigned u JOIN pq.trap t ON t.id = u.id "
                          "WHERE u.ti - 5 < 0 ORDER BY 1")
    assert [r[0] for r in rows] == [2]


async def test_arithmetic_on_unsigned_columns_of_mysql_alone(gw: asyncpg.Connection,
                                                             pgref: asyncpg.Connection) -> None:
    """A statement of MySQL alone: its arithmetic on the unsigned columns is the engine's."""
    got = await _answer(gw, f"SELECT {SELECTED} FROM my.unsigned u ORDER BY u.id")
    want = await _answer(pgref, f"SELECT {SELECTED} FROM {VALUES} ORDER BY u.id")
    assert got == want


async def test_a_decimal_beyond_38_digits_through_the_engine(gw: asyncpg.Connection,
                                                             pgref: asyncpg.Connection) -> None:
    """MySQL's decimal(65,30), beyond DuckDB's 38 digits, joined with a Parquet table:
    passed through as numeric(65,30), exactly; sorted or computed on there, refused."""
    wide = ("(VALUES (1, 12345678901234567890123456789012345.123456789012345678901234567890"
            "::numeric(65,30)), (2, -1.5::numeric(65,30)), (3, NULL::numeric(65,30))) AS u(id, wide)")
    got = await _answer(gw, "SELECT u.id, u.wide FROM my.unsigned u JOIN pq.trap t ON t.id = u.id "
                            "ORDER BY u.id")
    want = await _answer(pgref, f"SELECT u.id, u.wide FROM {wide} JOIN trap t ON t.id = u.id "
                                "ORDER BY u.id")
    assert got == want
    for sql in ("SELECT u.wide + 1 FROM my.unsigned u JOIN pq.trap t ON t.id = u.id",
                "SELECT u.wide FROM my.unsigned u JOIN pq.trap t ON t.id = u.id ORDER BY u.wide"):
        try:
            await gw.fetch(sql)
        except asyncpg.PostgresError as exc:
            assert exc.sqlstate == "0A000" and "wide" in str(exc), str(exc)
        else:
            raise AssertionError(f"no refusal for {sql}")
