"""tests/bench/bench_star.py in its smoke mode: every star shape, the unanalyzed one
included, answers as PostgreSQL alone does at scale 0.01 (the times are not checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.load  # a benchmark's smoke run: tens of seconds
def test_bench_star_smoke(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "tests/bench/bench_star.py", "--smoke", "--cache", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    answers = [line for line in done.stderr.splitlines() if ", same answer: " in line]
    assert len(answers) == 4 and all(line.endswith("same answer: yes") for line in answers), done.stderr
    assert "| Q72-UNANALYZED |" in done.stdout, done.stdout
