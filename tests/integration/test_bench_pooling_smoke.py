"""tests/bench/bench_pooling.py in its smoke mode: every workload on every target with
more clients than the source has connections; the gateway serves them all (the figures
are not checked)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.load  # a benchmark's smoke run: about a minute
def test_bench_pooling_smoke() -> None:
    assert shutil.which("pgbench"), "pgbench not on PATH (Debian: postgresql-client)"
    done = subprocess.run([sys.executable, "tests/bench/bench_pooling.py", "--smoke"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    for workload in ("-S, -M simple", "-S, -M extended", "-S, -M prepared", "TPC-B, -M simple"):
        for clients in ("50", "120"):
            row = next((line for line in done.stdout.splitlines()
                        if line.startswith(f"| {workload} | {clients} |")), None)
            assert row is not None, done.stdout
            assert "failed" not in row.split("|")[3] and "aborted" not in row.split("|")[3], row
