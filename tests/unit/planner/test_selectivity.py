"""planner.selectivity: the fraction of rows a pushed filter keeps, from column statistics."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot

from connectors.base import ColumnStats, TableInfo, TableRef
from planner.selectivity import UNKNOWN, selectivity

STATUS = ColumnStats(null_frac=0.1, n_distinct=12,
                     most_common=(("F", 0.5), ("O", 0.2)))  # 10 others share 0.2
# 0..100 in four equal buckets; 0.2 of the rows are the common value 7, 0.1 null.
AMOUNT = ColumnStats(null_frac=0.1, n_distinct=1000, most_common=(("7", 0.2),),
                     histogram=("0", "25", "50", "75", "100"))
LIMITS = ColumnStats(null_frac=0.0, low="10", high="20")  # min/max only (Parquet)
DAY = ColumnStats(histogram=("2020-01-01", "2020-07-01", "2021-01-01"))
KEY = ColumnStats(n_distinct=50)  # a cardinality only (MySQL, SQLite)
TABLE = TableInfo(TableRef("s", "t"), pa.schema([("status", pa.string()), ("amount", pa.int64()),
                                                  ("q", pa.int64()), ("day", pa.date32()),
                                                  ("k", pa.int64()), ("other", pa.int64())]),
                  row_estimate=10_000,
                  column_stats=(("status", STATUS), ("amount", AMOUNT), ("q", LIMITS),
                                ("day", DAY), ("k", KEY)))


def sel(condition: str) -> float:
    return selectivity(sqlglot.parse_one(condition, read="postgres"), TABLE)


def test_equality_hits_a_common_value() -> None:
    assert sel("status = 'F'") == pytest.approx(0.5)
    assert sel("status <> 'F'") == pytest.approx(0.9 - 0.5)


def test_equality_missing_the_common_values_shares_the_rest() -> None:
    # 1 - 0.1 null - 0.7 common = 0.2 over the 10 other values.
    assert sel("status = 'X'") == pytest.approx(0.02)
    assert sel("k = 3") == pytest.approx(1 / 50)


def test_numbers_compare_as_numbers() -> None:
    assert sel("amount = 7.0") == pytest.approx(0.2)


def test_ranges_over_the_histogram_add_the_common_values() -> None:
    rest = 0.9 - 0.2  # the histogram's share of the rows
    assert sel("amount < 50") == pytest.approx(0.2 + 0.5 * rest)
    assert sel("amount > 50") == pytest.approx(0.5 * rest)
    assert sel("amount < 12.5") == pytest.approx(0.2 + 0.125 * rest)  # inside a bucket
    assert sel("amount >= 100") == pytest.approx(0.0)
    assert sel("amount < -5") == pytest.approx(0.0)
    assert sel("amount <= 1000") == pytest.approx(0.9)


def test_ranges_over_min_and_max() -> None:
    assert sel("q < 15") == pytest.approx(0.5)
    assert sel("q >= 12") == pytest.approx(0.8)
    assert sel("q > 30") == 0.0


def test_dates_compare_as_text() -> None:
    assert sel("day < DATE '2020-07-01'") == pytest.approx(0.5)
    assert sel("day >= '2021-06-01'") == pytest.approx(0.0)


def test_between() -> None:
    assert sel("q BETWEEN 12 AND 17") == pytest.approx(0.5)
    assert sel("amount BETWEEN 0 AND 10") == pytest.approx(0.2 + 0.1 * 0.7)
    assert sel("q NOT BETWEEN 12 AND 17") == pytest.approx(0.5)


def test_literal_on_the_left() -> None:
    assert sel("15 > q") == pytest.approx(sel("q < 15"))
    assert sel("'F' = status") == pytest.approx(0.5)
    assert sel("50 <= amount") == pytest.approx(sel("amount >= 50"))


def test_is_null() -> None:
    assert sel("status IS NULL") == pytest.approx(0.1)
    assert sel("status IS NOT NULL") == pytest.approx(0.9)
    assert sel("NOT status IS NULL") == pytest.approx(0.9)


def test_in_adds_its_values() -> None:
    assert sel("status IN ('F', 'O', 'X', 'F')") == pytest.approx(0.5 + 0.2 + 0.02)
    assert sel("status NOT IN ('F', 'O')") == pytest.approx(0.3)


def test_and_or_not() -> None:
    assert sel("status = 'F' AND q < 15") == pytest.approx(0.25)
    assert sel("status = 'F' OR q < 15") == pytest.approx(0.5 + 0.5 - 0.25)
    assert sel("NOT (status = 'F')") == pytest.approx(0.5)
    assert sel("(status = 'O')") == pytest.approx(0.2)


@pytest.mark.parametrize("condition", [
    "other = 1", "other < 5", "other IS NULL", "other IN (1, 2)", "other BETWEEN 1 AND 2",
    "nothing = 1", "status = other", "lower(status) = 'f'", "status LIKE 'F%'",
    "status IN (SELECT 1)", "status IN ('F', other)", "k < 5",
])
def test_what_the_statistics_cannot_read_keeps_a_third(condition: str) -> None:
    assert sel(condition) == pytest.approx(UNKNOWN)


def test_without_statistics_every_filter_keeps_a_third() -> None:
    bare = TableInfo(TABLE.ref, TABLE.schema, row_estimate=10_000)
    for condition in ("status = 'F'", "amount < 50", "status IS NULL"):
        assert selectivity(sqlglot.parse_one(condition, read="postgres"), bare) == pytest.approx(UNKNOWN)


def test_only_common_values_kept() -> None:
    flags = TableInfo(TABLE.ref, pa.schema([("b", pa.bool_())]),
                      column_stats=(("b", ColumnStats(n_distinct=2, most_common=(("f", 0.9), ("t", 0.1)))),))
    assert selectivity(sqlglot.parse_one("b = TRUE", read="postgres"), flags) == pytest.approx(0.1)
    assert selectivity(sqlglot.parse_one("b > 'f'", read="postgres"), flags) == pytest.approx(0.1)


def test_estimated_rows_uses_the_statistics() -> None:
    from planner.dynamic_filters import estimated_rows
    from planner.logical import Scan
    from planner.row_estimates import estimate_rows

    scan = Scan(TABLE, "t", filters=(sqlglot.parse_one("status = 'F'", read="postgres"),
                                     sqlglot.parse_one("q < 15", read="postgres")))
    assert estimated_rows(scan) == 2500
    assert estimate_rows([scan]) == 2500
    bare = Scan(TableInfo(TABLE.ref, TABLE.schema, row_estimate=9000), "t", filters=scan.filters)
    assert estimated_rows(bare) == 1000


@pytest.mark.parametrize("condition", [
    "NOT other = 1", "other = 1 OR other = 2", "NOT (other < 1 AND other > 5)",
    "lower(status) = 'f' OR other IS NULL", "other NOT IN (1, 2)",
])
def test_an_and_or_not_of_unknown_parts_keeps_a_third(condition: str) -> None:
    assert sel(condition) == pytest.approx(UNKNOWN)


def test_a_known_part_with_an_unknown_one() -> None:
    assert sel("status = 'F' OR other = 1") == pytest.approx(0.5 + UNKNOWN - 0.5 * UNKNOWN)
    assert sel("(status = 'F' AND other = 1)") == pytest.approx(0.5 * UNKNOWN)
