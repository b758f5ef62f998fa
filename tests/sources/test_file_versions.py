"""A file source's table versions, and the inlined rows kept by them (issue 37).

A federated point query sends a small file table's rows to PostgreSQL at every run
(planner.inline_sides); gateway.executor.inlined_rows keeps them while the file source
says the table's version (each file's inode, size, mtime and ctime) is unchanged. These
tests pin that a changed file is read anew, that a file changed within the last
SETTLED_NS has no version (so a change within one tick of the file system's clock is not
missed), and that what cannot be versioned is read at every run.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connectors.base import VersionedTables
from connectors.files import source as files_source
from connectors.files.source import FilesSource
from gateway.executor.inlined_rows import InlinedRows
from gateway.state.metrics import Metrics
from planner.inline_sides import InlinedSide

SQL = 'SELECT "id", "name" FROM "small"'


def write_small(folder: Path, name: str) -> Path:
    path = folder / "small.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()), "name": [name, name]}), path)
    return path


def age(path: Path, seconds: int) -> None:
    """Set the file's mtime `seconds` back (its ctime becomes now: only a wait ages it)."""
    when = path.stat().st_mtime_ns - seconds * 1_000_000_000
    os.utime(path, ns=(when, when))


class Counting(FilesSource):
    """A file source that counts its statements."""

    runs = 0

    async def run_remote(self, sql, params=()):
        self.runs += 1
        return await super().run_remote(sql, params)


def plan_of(side: InlinedSide) -> SimpleNamespace:
    return SimpleNamespace(inlined=(side,), fragments=(SimpleNamespace(source="pg"),))


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    # Files written by the test are seconds old at most: let them have versions at once.
    monkeypatch.setattr(files_source, "SETTLED_NS", 0)


def test_a_file_source_versions_its_tables(tmp_path: Path, settled) -> None:
    path = write_small(tmp_path, "before")
    source = FilesSource("files", tmp_path)
    assert isinstance(source, VersionedTables)
    first = source.table_version("small")
    assert first is not None and first == source.table_version("small")
    assert source.table_version("nonesuch") is None
    write_small(tmp_path, "after!")  # another size
    assert source.table_version("small") != first
    second = source.table_version("small")
    write_small(tmp_path, "later!")  # the same size: the times and the inode tell
    age(path, 10)
    assert source.table_version("small") != second
    path.unlink()
    assert source.table_version("small") is None  # the read says it is gone


def test_a_file_changed_just_now_has_no_version(tmp_path: Path) -> None:
    write_small(tmp_path, "before")
    # Written this instant: another write within the clock's tick could keep its times.
    assert FilesSource("files", tmp_path).table_version("small") is None


async def test_inlined_rows_are_kept_while_the_file_is_unchanged(tmp_path: Path, settled) -> None:
    path = write_small(tmp_path, "before")
    source = Counting("files", tmp_path)
    rows = InlinedRows({"files": source}, Metrics())
    plan = plan_of(InlinedSide("f", "files", SQL, ("id", "name"), 1, "small"))
    try:
        assert await rows.params(plan) == [[1, 2], ["before", "before"]]
        assert await rows.params(plan) == [[1, 2], ["before", "before"]]
        assert source.runs == 1
        write_small(tmp_path, "after!")
        age(path, 10)
        assert await rows.params(plan) == [[1, 2], ["after!", "after!"]]
        assert source.runs == 2
        write_small(tmp_path, "later!")  # the same size, aged to other times
        age(path, 20)
        assert await rows.params(plan) == [[1, 2], ["later!", "later!"]]
        assert source.runs == 3
    finally:
        await source.close()


async def test_rows_without_a_version_are_read_at_every_run(tmp_path: Path) -> None:
    write_small(tmp_path, "before")  # just written: no version yet
    source = Counting("files", tmp_path)
    rows = InlinedRows({"files": source}, Metrics())
    try:
        for side in (InlinedSide("f", "files", SQL, ("id", "name"), 1, "small"),
                     InlinedSide("f", "files", SQL, ("id", "name"), 1)):  # no table named
            for _ in range(2):
                assert await rows.params(plan_of(side)) == [[1, 2], ["before", "before"]]
        assert source.runs == 4
    finally:
        await source.close()
