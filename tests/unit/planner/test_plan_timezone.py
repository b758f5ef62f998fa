"""Zone-dependent expressions stay off the sources when the session's TimeZone is not UTC.

Sources compute in UTC; PostgreSQL computes `timestamptz::text`, `extract`, `date_trunc`,
`timestamptz + interval`, `to_char`, `timestamp::timestamptz` and comparisons with zone-less
text in the session's zone. In UTC those ship as before; in another zone they are local
(computed by the engine, which runs in the client's zone) with the reason EXPLAIN shows.
"""

from __future__ import annotations

import importlib

import pyarrow as pa
import pytest

from connectors.base import TableInfo, TableRef
from planner import CatalogSnapshot, PlanCache, PlanSettings, SourceEntry, plan
from planner.parse import parse_query
from planner.zone_dependent import REASON, needs_check
from tests.support.planning import ENGINE_DIALECTS

DIALECTS = ("duckdb", "postgres", "mysql", "sqlite", "files")
NEW_YORK = "America/New_York"


def catalog_for(dialect_name: str) -> CatalogSnapshot:
    dialect = importlib.import_module(f"connectors.dialects.{dialect_name}").DIALECT
    trap = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")),
                      ("t", pa.timestamp("us"))])
    other = pa.schema([("id", pa.int64())])
    return CatalogSnapshot(1, {
        "src": SourceEntry("src", dialect, {"trap": TableInfo(TableRef("src", "trap", None, "trap"), trap)}),
        "side": SourceEntry("side", dialect, {"o": TableInfo(TableRef("side", "o", None, "o"), other)}),
    }, engine_dialects=ENGINE_DIALECTS)


def explain(dialect: str, sql: str, zone: str) -> list[str]:
    return plan(sql, catalog_for(dialect), PlanSettings(("src", "side"), timezone=zone)).explain()


def conjunct(lines: list[str], text: str) -> str:
    return next(line for line in lines if line.startswith("Conjunct") and text in line)


ZONE_DEPENDENT_FILTERS = [
    "extract(hour from ts) = 3",
    "date_part('hour', ts) = 3",
    "date_trunc('day', ts) = timestamptz '2024-03-10 05:00:00+00'",
    "ts::date = date '2024-03-10'",
    "ts::text = 'x'",
    "ts::timestamp = t",
    "ts + interval '1 day' > timestamptz '2024-03-10 05:00:00+00'",
    "t::timestamptz > timestamptz '2024-03-10 05:00:00+00'",
    "ts > '2024-03-10'",
    "ts > t",
    "to_char(ts, 'HH24') = '03'",
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("condition", ZONE_DEPENDENT_FILTERS)
def test_zone_dependent_conjunct_is_local_outside_utc(dialect: str, condition: str) -> None:
    # Two sources, so the statement is federated and each conjunct is classified alone.
    sql = f"SELECT trap.id FROM trap JOIN o ON o.id = trap.id WHERE {condition} AND trap.id > 2"
    zoned = explain(dialect, sql, NEW_YORK)
    assert REASON in conjunct(zoned, "Conjunct") and ": local (" in conjunct(zoned, REASON)
    assert "pushed" in conjunct(zoned, "trap.id > 2")  # the rest still ships
    remote = next(line for line in zoned if "on src:" in line)
    where = remote.split(" WHERE ", 1)[1]
    assert where.endswith("> 2") and " AND " not in where  # only the zone-free conjunct


@pytest.mark.parametrize("dialect", ("duckdb", "postgres"))
@pytest.mark.parametrize("condition", ZONE_DEPENDENT_FILTERS[:5])
def test_same_conjunct_ships_in_utc(dialect: str, condition: str) -> None:
    sql = f"SELECT trap.id FROM trap JOIN o ON o.id = trap.id WHERE {condition} AND trap.id > 2"
    lines = explain(dialect, sql, "UTC")
    assert not any(REASON in line for line in lines)
    assert all("pushed" in line for line in lines if line.startswith("Conjunct"))


@pytest.mark.parametrize("dialect", ("duckdb", "postgres"))
def test_single_source_statement_stays_whole_in_utc_and_splits_outside(dialect: str) -> None:
    sql = ("SELECT ts::text, extract(hour from ts), date_trunc('day', ts), ts::date, "
           "ts + interval '1 day' FROM trap")
    utc = explain(dialect, sql, "UTC")
    assert "Residual" not in "\n".join(utc) and "EXTRACT(HOUR FROM trap.ts)" in "\n".join(utc)
    zoned = explain(dialect, sql, NEW_YORK)
    remote = next(line for line in zoned if "on src:" in line)
    assert "EXTRACT" not in remote and "CAST" not in remote and "INTERVAL" not in remote


@pytest.mark.parametrize("condition", ["ts > $1", "ts = ts", "ts - ts > interval '1 hour'",
                                       "id > 2", "ts > timestamptz '2024-03-10 05:00:00+00'"])
def test_zone_independent_filters_still_ship(condition: str) -> None:
    # Parameters are decoded by the gateway in the session's zone; comparing instants is not
    # zone-dependent. A timestamptz literal is cast from text, which is, and stays local.
    sql = f"SELECT id FROM trap WHERE {condition}"
    lines = explain("postgres", sql, NEW_YORK)
    dependent = "timestamptz '" in condition
    assert any(REASON in line for line in lines) is dependent


def test_zone_is_part_of_the_plan_cache_key() -> None:
    cache = PlanCache()
    catalog = catalog_for("duckdb")
    sql = "SELECT extract(hour from ts) FROM trap"
    utc = cache.get(sql, catalog, PlanSettings(("src",), timezone="UTC"))
    zoned = cache.get(sql, catalog, PlanSettings(("src",), timezone=NEW_YORK))
    assert utc.residual_sql is None and zoned.residual_sql is not None
    assert "EXTRACT" not in zoned.fragments[0].sql
    assert cache.misses == 2


def test_statement_without_timestamptz_plans_as_in_utc() -> None:
    # No timestamptz column or value: nothing to keep local, and no type annotation to pay.
    sql = "SELECT o.id, count(*) FROM o WHERE o.id > 2 GROUP BY o.id"
    assert explain("postgres", sql, NEW_YORK) == explain("postgres", sql, "UTC")
    assert not needs_check(parse_query(sql), catalog_for("postgres").sources["side"].tables.values())
    assert needs_check(parse_query("SELECT current_date"), [])
    assert needs_check(parse_query("SELECT '2024-03-10'::timestamptz"), [])
