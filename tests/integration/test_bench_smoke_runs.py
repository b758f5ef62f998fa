"""The smoke modes of tests/bench/bench_streaming.py, bench_tpch.py and bench_moves.py run
to the end (the figures are not checked), so no script can rot unnoticed."""

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


def test_bench_streaming_smoke() -> None:  # about 25 s
    done = smoke("tests/bench/bench_streaming.py")
    assert "| 1,000 rows × 4, qualified | gateway |" in done.stdout, done.stdout


@pytest.mark.load  # loads TPC-H at scale 0.01 into PostgreSQL: tens of seconds
def test_bench_tpch_smoke(tmp_path: Path) -> None:
    done = smoke("tests/bench/bench_tpch.py", "--cache", str(tmp_path))
    assert "NameError" not in done.stderr, done.stderr


def test_bench_moves_smoke() -> None:  # about 15 s: a PostgreSQL cluster and a gateway
    done = smoke("tests/bench/bench_moves.py")
    assert "| `INSERT INTO pg.dst SELECT * FROM files.src` (gateway) |" in done.stdout, done.stdout
