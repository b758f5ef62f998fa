"""tests/bench/bench_pgbench.py in its smoke mode: every workload, pgbench's defaults and
the qualified and quoted spellings included, runs on every target (the figures are not
checked)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.load  # a benchmark's smoke run: about a minute
def test_bench_pgbench_smoke() -> None:
    assert shutil.which("pgbench"), "pgbench not on PATH (Debian: postgresql-client)"
    done = subprocess.run([sys.executable, "tests/bench/bench_pgbench.py", "--smoke"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    failed = [line for line in done.stderr.splitlines() if line.startswith("FAILED")]
    # A one-second cell on a busy machine may count no transaction on some target; a
    # workload the gateway cannot run fails on the gateway.
    assert not [line for line in failed if " on gateway" in line], done.stderr
    for workload in ("-S, -M simple, without -n", "-S qualified", "-S quoted"):
        assert f"| {workload}" in done.stdout, done.stdout
