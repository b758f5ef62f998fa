"""The engine's memory without a server: sizes and the default memory_limit
(gateway.config.memory), the pool's admission (waits in order, bounded, cancellable),
a statement's held rows (gateway.state.memory), what a feed counts for an engine that
streams its inputs and for one that holds them (gateway.executor.feeds), and a real
DuckDB opened with the process's limits failing with 53200 / 53100 in PostgreSQL's words
(connectors.duckdb.runner, pgwire.engine_words)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyarrow as pa
import pytest

from connectors.base import TableStream
from connectors.duckdb import runner
from connectors.duckdb.runner import DuckDBLimits, DuckDBRunner
from gateway.config import ConfigError, parse_config
from gateway.config.memory import (GATEWAY_RESERVE, MIN_MEMORY_LIMIT, available_bytes,
                                   default_memory_limit, memory_limit_bytes, parse_share,
                                   parse_size, share_bytes)
from gateway.executor.feeds import Feed
from gateway.state.memory import EngineMemory, StatementMemory
from gateway.state.settings import validate
from pgwire.errors import PgError

MB = 1 << 20


def test_sizes_and_shares() -> None:
    assert parse_size("1GB") == parse_size("1 GiB") == 1 << 30
    assert parse_size("300MB") == 300 * MB and parse_size("512kB") == 512 << 10
    assert parse_size("1024") == 1024
    assert parse_size("1XB") is None and parse_size("50%") is None and parse_size("") is None
    assert parse_share("50%") == 0.5 and parse_share("150%") is None and parse_share("0%") is None
    assert share_bytes("25%", 400 * MB) == 100 * MB and share_bytes("64MB", 400 * MB) == 64 * MB


def test_the_default_memory_limit_leaves_room_for_the_gateway() -> None:
    four_gib = 4 << 30
    assert default_memory_limit(1, four_gib) == (four_gib - GATEWAY_RESERVE) // 2
    assert default_memory_limit(2, four_gib) == (four_gib - GATEWAY_RESERVE) // 4
    assert default_memory_limit(1, 256 * MB) == MIN_MEMORY_LIMIT
    assert memory_limit_bytes("50%", 2, four_gib) == four_gib // 4
    assert memory_limit_bytes("300MB", 4, four_gib) == 300 * MB  # a size is per worker already
    assert 0 < available_bytes()


def test_the_configuration_checks_the_memory_keys() -> None:
    engine = parse_config({"engine": {"memory_limit": "1GB", "statement_memory": "10%",
                                      "temp_directory_max_size": "10GB", "memory_wait_s": 5}}).engine
    assert (engine.memory_limit, engine.statement_memory, engine.memory_wait_s) == ("1GB", "10%", 5)
    for bad, words in ((({"memory_limit": "lots"}), "memory_limit must be a size"),
                       ({"temp_directory_max_size": "50%"}, "temp_directory_max_size must be a size"),
                       ({"memory_limit": "1GB", "statement_memory": "2GB"}, "more than memory_limit"),
                       ({"memory_limt": "1GB"}, "did you mean memory_limit")):
        with pytest.raises(ConfigError, match=words):
            parse_config({"engine": bad})


def test_statement_memory_is_a_size_or_a_share() -> None:
    assert validate("fedgate.statement_memory", " 256MB ") == "256MB"
    assert validate("fedgate.statement_memory", "10%") == "10%"
    with pytest.raises(PgError) as found:
        validate("fedgate.statement_memory", "a lot")
    assert found.value.sqlstate == "22023"


async def test_heavy_statements_wait_in_order_for_a_share() -> None:
    pool = EngineMemory(100, wait_s=5)
    first = await pool.admit(StatementMemory(40, "s1"))
    second = await pool.admit(StatementMemory(40, "s2"))
    assert pool.reserved == 80
    third = asyncio.ensure_future(pool.admit(StatementMemory(40, "s3")))
    fourth = asyncio.ensure_future(pool.admit(StatementMemory(10, "s4")))
    await asyncio.sleep(0.05)
    # s4 would fit, but does not overtake s3, which came first.
    assert not third.done() and not fourth.done() and pool.waiting == 2
    pool.forget(first)
    await asyncio.sleep(0.05)
    assert third.done() and fourth.done() and pool.reserved == 90 and pool.waiting == 0
    for statement in (second, third.result(), fourth.result()):
        pool.forget(statement)
    assert pool.reserved == 0 and not pool.statements


async def test_a_wait_is_bounded_and_a_cancelled_wait_takes_nothing() -> None:
    pool = EngineMemory(100, wait_s=0.1)
    holder = await pool.admit(StatementMemory(100, "big"))
    with pytest.raises(PgError) as found:
        await pool.admit(StatementMemory(50, "late"))
    assert found.value.sqlstate == "53200" and "memory_wait_s (0.1 s)" in found.value.message
    assert pool.waited_out == 1 and pool.waiting == 0
    waiting = asyncio.ensure_future(pool.admit(StatementMemory(50, "cancelled")))
    await asyncio.sleep(0.02)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    pool.forget(holder)
    assert pool.reserved == 0 and pool.waiting == 0


def test_held_rows_stop_at_half_the_share() -> None:
    statement = StatementMemory(100 * MB, "pid 1 statement 1")
    statement.charge(20 * MB, "frag_0 on pg")
    # A fragment read whole may take a quarter of the share, the rows held in all half.
    assert statement.room_to_hold(5 * MB) and not statement.room_to_hold(6 * MB)
    statement.charge(20 * MB, "frag_1 on files")
    with pytest.raises(PgError) as found:
        statement.charge(11 * MB, "frag_1 on files")
    assert found.value.sqlstate == "53200" and "frag_1 on files" in found.value.message
    assert "fedgate.statement_memory (100 MB)" in found.value.message
    statement.release(40 * MB)
    assert statement.held == 0 and statement.peak == 40 * MB


def _rows(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64())})


@pytest.mark.parametrize("holds", [False, True])
async def test_a_feed_counts_what_the_engine_has_not_taken_or_holds(holds: bool) -> None:
    table = _rows(40_000)
    statement = StatementMemory(64 * MB, "feed")
    feed = Feed("frag_0", "pg", TableStream(table, batch_rows=1000), statement, holds)
    reader = feed.reader()
    read = await asyncio.to_thread(reader.read_all)
    await asyncio.sleep(0.05)  # the loop hears of each batch taken
    assert read.num_rows == table.num_rows
    if holds:  # Spark reads every input whole: all of it counts until the statement ends
        assert statement.held == table.nbytes
    else:  # DuckDB: only the batch it has now
        assert statement.held <= 1000 * 8
    await feed.close()
    assert statement.held == 0


def test_a_limited_duckdb_fails_in_postgresql_words(tmp_path: Path) -> None:
    table = pa.table({"s": pa.array([("x" * 100) + str(i) for i in range(400_000)])})
    sort = "SELECT s FROM t ORDER BY s DESC"
    try:
        runner.limit_every_database(DuckDBLimits(24 * MB, str(tmp_path), 8 * MB))
        duck = DuckDBRunner.open(":memory:")
        folder = Path(duck.spill_folder or "")
        assert folder.parent == tmp_path and folder.is_dir()

        async def run() -> PgError:
            with pytest.raises(PgError) as found:
                stream = await duck.stream(sort, register={"t": table})
                async for _ in stream:
                    pass
            return found.value

        error = asyncio.run(run())
        assert error.sqlstate in ("53100", "53200"), error
        if error.sqlstate == "53100":
            assert "spill folder" in error.message and "temp_directory_max_size" in (error.hint or "")
        duck.close()
        assert not folder.exists()  # the spill folder goes with the runner
    finally:
        runner.PROCESS_LIMITS.clear()
