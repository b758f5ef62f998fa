"""The Spark session rules that need no JVM: which endpoints a start probes, the 08001 of
an unreachable cluster (answered before PySpark is even imported), settings per mode, the
start-up warnings for sources executors elsewhere cannot reach, and daemon threads."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import types

import pytest

from connectors.engines.spark import SparkEngine
from connectors.engines.spark_session import SessionKeeper, endpoints, in_thread, probe, reach_warnings
from pgwire.errors import PgError
from tests.support.system import free_port


def test_endpoints_of_each_kind_of_master() -> None:
    assert endpoints("local[2]", None) == []
    assert endpoints("spark://a:7078,b", None) == [("a", 7078), ("b", 7077)]
    assert endpoints("local[*]", "sc://conn") == [("conn", 15002)]
    assert endpoints("local[*]", "sc://conn:1234/;user_id=x") == [("conn", 1234)]


async def test_an_unreachable_master_is_08001_at_once() -> None:
    port = free_port()  # nothing listens there
    keeper = SessionKeeper(f"spark://127.0.0.1:{port}", None, {}, [], 30.0, 0)
    started = time.monotonic()
    with pytest.raises(PgError) as failure:
        await keeper.get()
    assert time.monotonic() - started < 5
    assert failure.value.sqlstate == "08001"
    assert failure.value.message.startswith(f"Spark cluster at spark://127.0.0.1:{port} is unavailable: ")
    assert "refused" in failure.value.message.lower()
    assert probe([("127.0.0.1", port)], 1.0) is not None


async def test_spark_work_runs_on_daemon_threads() -> None:
    seen = await in_thread(lambda: (threading.current_thread().daemon, threading.current_thread().name))
    assert seen[0] is True
    with pytest.raises(ValueError):
        await in_thread(int, "not a number")


async def test_a_hung_call_does_not_hold_the_loop() -> None:
    release = threading.Event()
    hung = in_thread(release.wait, 30)
    started = time.monotonic()
    await asyncio.sleep(0.05)  # the loop runs on while the call hangs
    assert time.monotonic() - started < 1 and not hung.done()
    release.set()
    assert await hung is True


def test_settings_by_mode(caplog: pytest.LogCaptureFixture) -> None:
    local = SparkEngine("local[3]")
    assert local.conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert "spark.cores.max" not in local.conf
    standalone = SparkEngine("spark://127.0.0.1:7077", conf={"spark.cores.max": 1})
    assert standalone.conf["spark.cores.max"] == "1" and standalone.conf["spark.executor.memory"] == "2g"
    with caplog.at_level(logging.WARNING, "fedgate.spark"):
        connect = SparkEngine(remote="sc://127.0.0.1:15002",
                              conf={"spark.executor.memory": "8g", "spark.sql.shuffle.partitions": 4})
    assert connect.conf["spark.sql.shuffle.partitions"] == "4"
    assert connect.conf["spark.sql.ansi.enabled"] == "true"
    assert not any(k.startswith(("spark.driver", "spark.executor", "spark.ui")) for k in connect.conf)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "spark.executor.memory" in warnings[0], warnings


def test_sources_executors_elsewhere_cannot_reach_are_named() -> None:
    warnings = reach_warnings("spark://cluster:7077", [
        ("near", "postgres", "postgresql://u:secret@127.0.0.1:5432/db", None),
        ("shop", "mysql", "mysql://localhost/shop", None),
        ("far", "postgres", "postgresql://db.example.net/db", None),
        ("lake", "parquet", None, "data/lake"),
        ("bucket", "parquet", None, "s3a://bucket/lake"),
        ("lite", "sqlite", None, "local.db"),
    ])
    assert [w.split(":")[0] for w in warnings] == ["source near", "source shop", "source lake"]
    assert not any("secret" in w for w in warnings)


async def test_start_pending_says_whether_a_statement_would_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    keeper = SessionKeeper("local[2]", None, {}, [], 30.0, 0)
    assert keeper.start_pending == ("starting the Spark engine (local[2]); the first Spark "
                                    "statement waits for it")
    release = threading.Event()
    session = types.SimpleNamespace(stop=lambda: None)
    monkeypatch.setattr(keeper, "_start", lambda: release.wait(30) and session)
    monkeypatch.setattr("connectors.engines.spark_session._alive", lambda s, connect: True)
    getting = asyncio.ensure_future(keeper.get())
    await asyncio.sleep(0.05)
    assert keeper.start_pending == "waiting for the Spark engine (local[2]) to start"
    release.set()
    assert await getting is session
    assert keeper.start_pending is None  # a session is up: nothing to wait for
    await keeper.close()  # as the idle stop does: the next statement starts it again
    assert keeper.start_pending is not None and keeper.start_pending.startswith("starting")


def test_duckdb_never_waits_for_a_start() -> None:
    from connectors.engines.duckdb import DuckDBEngine

    engine = DuckDBEngine()
    assert engine.start_pending is None and SparkEngine("local[1]").start_pending is not None
