"""The smoke modes of the scripts under tests/bench run to the end (the figures are not
checked), so none of them can rot unnoticed. bench_pgbench, bench_star, bench_memory and
bench_federated_point have theirs run by tests of their own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def smoke(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *args, "--smoke"], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_bench_drivers_smoke() -> None:  # about 20 s
    done = smoke("tests/bench/bench_drivers.py")
    assert "| SQLAlchemy ORM session.get | " in done.stdout, done.stdout
    assert "failed" not in done.stdout, done.stdout


def test_bench_streaming_smoke() -> None:  # about 25 s
    done = smoke("tests/bench/bench_streaming.py")
    assert "| 1,000 rows × 4, qualified | gateway |" in done.stdout, done.stdout


@pytest.mark.load  # loads TPC-H at scale 0.01 into PostgreSQL: tens of seconds
def test_bench_tpch_smoke(tmp_path: Path) -> None:
    done = smoke("tests/bench/bench_tpch.py", "--cache", str(tmp_path))
    assert "NameError" not in done.stderr, done.stderr


def test_bench_planner_smoke() -> None:  # about 25 s
    done = smoke("tests/bench/bench_planner.py")
    assert "| all 22 |" in done.stdout, done.stdout


def test_bench_sources_smoke() -> None:  # about 10 s: PostgreSQL and MariaDB started
    done = smoke("tests/bench/bench_sources.py")
    for kind in ("postgres", "mysql", "sqlite", "duckdb", "parquet", "csv"):
        assert f"| {kind} |" in done.stdout, done.stdout


@pytest.mark.load  # pgbench against the demo gateway
def test_bench_spine_smoke() -> None:
    done = smoke("tests/bench/bench_spine.py")
    assert "0 failed" in done.stdout, done.stdout


@pytest.mark.spark
@pytest.mark.cluster  # a standalone master and worker
@pytest.mark.load
def test_bench_crossover_smoke() -> None:
    done = smoke("tests/bench/bench_crossover.py")
    assert "1,000" in done.stdout, done.stdout


def test_bench_lake_smoke() -> None:  # about 10 s: the S3 test server, 6,000 rows
    done = smoke("tests/bench/bench_lake.py")
    assert "| one partition (year = 2024 AND month = 3) | 100 |" in done.stdout, done.stdout
    assert "1 of 60 folders read (year=2024/month=03), 59 pruned" in done.stdout, done.stdout


def test_bench_moves_smoke() -> None:  # about 15 s: a PostgreSQL cluster and a gateway
    done = smoke("tests/bench/bench_moves.py")
    assert "| `INSERT INTO pg.dst SELECT * FROM files.src` (gateway) |" in done.stdout, done.stdout


@pytest.mark.spark
@pytest.mark.cluster  # about a minute: a standalone Spark cluster and a second gateway
def test_bench_moves_spark_smoke() -> None:
    done = smoke("tests/bench/bench_moves.py", "--spark")
    assert "Engine spark (SET fedgate.engine)" in done.stdout, done.stdout
    assert "| the same join, Spark on a standalone cluster, written by its executors (gateway) |" \
        in done.stdout, done.stdout
    assert "| the same join, Spark on a standalone cluster, rows back through the gateway's COPY |" \
        in done.stdout, done.stdout
    assert "Move: Spark's executors write the query's rows by JDBC" in done.stdout, done.stdout


def test_bench_copy_out_smoke() -> None:  # about 10 s
    done = smoke("tests/bench/bench_copy_out.py")
    assert "| gateway, CREATE TABLE out.copied AS SELECT * FROM files.src |" in done.stdout, done.stdout
