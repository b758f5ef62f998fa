"""The embedded demo data: generated with tpchgen-cli, typed, reused, regenerated on a new scale."""

from __future__ import annotations

import io
import shutil
import stat
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from gateway.server import demo
from gateway.server.demo import DUCKDB_CONFIG, TPCH_SCHEMA, ensure_demo

SCALE = 0.001  # lineitem has about 6,000 rows: fast enough for a unit test


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ensure_demo(tmp_path_factory.mktemp("demo") / "demo.duckdb", SCALE, progress=False)


def _query(path: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True, config=DUCKDB_CONFIG) as con:
        return con.execute(sql).fetchall()


def test_tables_and_row_counts(demo_db: Path) -> None:
    tables = {r[0] for r in _query(demo_db, "SELECT table_name FROM duckdb_tables()")}
    assert set(TPCH_SCHEMA) <= tables
    counts = {t: _query(demo_db, f"SELECT count(*) FROM {t}")[0][0] for t in TPCH_SCHEMA}
    assert counts["nation"] == 25
    assert counts["region"] == 5
    assert counts["orders"] == 1500  # 1,500,000 per scale unit
    assert counts["customer"] == 150
    assert counts["supplier"] == 10
    assert counts["lineitem"] > counts["orders"]
    assert all(n > 0 for n in counts.values())


def test_column_types(demo_db: Path) -> None:
    rows = _query(demo_db,
                  "SELECT table_name, column_name, data_type FROM information_schema.columns")
    types = {(t, c): d for t, c, d in rows}
    assert types[("lineitem", "l_quantity")] == "DECIMAL(15,2)"
    assert types[("lineitem", "l_shipdate")] == "DATE"
    assert types[("lineitem", "l_orderkey")] == "BIGINT"
    assert types[("lineitem", "l_linenumber")] == "INTEGER"
    assert types[("lineitem", "l_comment")] == "VARCHAR"  # not string_view
    for table, columns in TPCH_SCHEMA.items():
        assert [(c, types[(table, c)]) for c, _ in columns] == list(columns)


def test_lineitem_sorted_by_orderkey(demo_db: Path) -> None:
    # Physical order matters for zone maps; rowid follows insertion order.
    [(unsorted,)] = _query(demo_db, """
        SELECT count(*) FROM (SELECT l_orderkey, lag(l_orderkey) OVER (ORDER BY rowid) AS prev
                              FROM lineitem) WHERE l_orderkey < prev""")
    assert unsorted == 0


def test_records_scale(demo_db: Path) -> None:
    [(scale, generator)] = _query(demo_db, "SELECT scale, generator FROM fedgate.demo_info")
    assert scale == SCALE
    assert "tpchgen" in generator


def test_reuses_file(demo_db: Path) -> None:
    before = demo_db.stat().st_mtime_ns
    assert ensure_demo(demo_db, SCALE, progress=False) == demo_db
    assert demo_db.stat().st_mtime_ns == before
    leftovers = [p.name for p in demo_db.parent.iterdir()
                 if p.name not in ("demo.duckdb", "demo.duckdb.lock")]
    assert leftovers == []  # no .tmp database, WAL or Parquet directory


def test_other_scale_regenerates(demo_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "demo.duckdb"
    shutil.copyfile(demo_db, path)
    [(orders,)] = _query(path, "SELECT count(*) FROM orders")
    ensure_demo(path, 0.002, progress=False)
    assert _query(path, "SELECT scale FROM fedgate.demo_info") == [(0.002,)]
    assert _query(path, "SELECT count(*) FROM orders") == [(2 * orders,)]


def test_missing_table_or_foreign_file_is_stale(demo_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "demo.duckdb"
    shutil.copyfile(demo_db, path)
    assert demo._is_current(path, SCALE)
    with duckdb.connect(str(path), config=DUCKDB_CONFIG) as con:
        con.execute("DROP TABLE region")
    assert not demo._is_current(path, SCALE)
    path.write_text("not a database")
    assert not demo._is_current(path, SCALE)


def _fake_generate(path: Path, scale: float, *, progress: bool) -> None:
    """A quick stand-in for the real generator: empty tables, slow enough to race."""
    time.sleep(0.3)
    tmp = path.with_suffix(".tmp")
    with duckdb.connect(str(tmp), config=DUCKDB_CONFIG) as con:
        for table, columns in TPCH_SCHEMA.items():
            con.execute(f"CREATE TABLE {table}({', '.join(f'{c} {t}' for c, t in columns)})")
        con.execute("CREATE SCHEMA fedgate")
        con.execute("CREATE TABLE fedgate.demo_info(scale DOUBLE, generator VARCHAR)")
        con.execute("INSERT INTO fedgate.demo_info VALUES (?, 'fake')", [scale])
    tmp.replace(path)


def test_concurrent_callers_generate_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def counting(*args, **kwargs) -> None:
        calls.append(threading.get_ident())
        _fake_generate(*args, **kwargs)

    monkeypatch.setattr(demo, "_generate", counting)
    path = tmp_path / "demo.duckdb"
    errors: list[BaseException] = []

    def run() -> None:
        try:
            ensure_demo(path, SCALE, progress=False)
        except Exception as exc:  # noqa: BLE001 - reported by the assert below
            errors.append(exc)

    # Separate open() calls get separate flock()s, so threads contend like processes do.
    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert len(calls) == 1  # the others waited on the lock, then found the file ready


def test_progress_on_a_terminal_and_in_logs() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    log, tty = io.StringIO(), Tty()
    for stream in (log, tty):
        bar = demo._Progress(2, enabled=True, stream=stream)
        for table in ("nation", "region"):
            bar.step(table, "generating")
            bar.redraw(table, "loading")
            bar.done(table)
        bar.finish()
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and lines[1].startswith("fedgate demo: region 2/2 loaded (")
    assert "\r" not in log.getvalue()
    frames = tty.getvalue().split("\r")
    assert "1/2 generating nation" in frames[1]
    assert "2/2 loading region" in frames[-2]
    assert tty.getvalue().endswith("\n") and tty.getvalue().count("\n") == 1
    quiet = io.StringIO()
    demo._Progress(2, enabled=False, stream=quiet).done("nation")
    assert quiet.getvalue() == ""


def _no_tpchgen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def test_missing_generator_is_a_clear_error(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _no_tpchgen(monkeypatch, tmp_path)
    with pytest.raises(RuntimeError, match="tpchgen-cli not found"):
        ensure_demo(tmp_path / "demo.duckdb", SCALE, progress=False)
    assert not (tmp_path / "demo.duckdb").exists()


def test_failing_generator_reports_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_tpchgen(monkeypatch, tmp_path)
    fake = tmp_path / "empty" / "tpchgen-cli"
    fake.parent.mkdir()
    # Answers --version, then fails like a broken generator would.
    fake.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "fake 0" && exit 0\n'
                    'echo "boom: out of disk" >&2\nexit 3\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(RuntimeError, match="(?s)exit code 3.*boom: out of disk"):
        ensure_demo(tmp_path / "demo.duckdb", SCALE, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.duckdb.lock", "empty"]
