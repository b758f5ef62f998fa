"""`pgwire.compiled`: which build of a compiled module runs (the extension, or its .py
source as it is), and the sentence that says so. A build missing is named as such and
never taken silently; FEDGATE_..=c insists on the compiled build and fails
instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ENV = "FEDGATE_TEST_CHOICE"


def build_in_fresh_process(root: Path, chosen: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(root), os.getcwd()])
    if chosen is not None:
        env[ENV] = chosen
    code = ("import fgtest_pkg.walk as walk\nfrom pgwire.compiled import build_of\n"
            "print(build_of(walk), walk.ANSWER)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=False, timeout=60)
    return res.stdout.strip() if res.returncode == 0 else res.stderr.strip().splitlines()[-1]


def test_a_module_without_its_compiled_build(tmp_path: Path) -> None:
    """As after an install without a compiler: the source runs, and says why; with =c, an
    ImportError. The module is imported by an ordinary import statement either way."""
    package = tmp_path / "fgtest_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        f"from pgwire.compiled import compiled_module\n"
        f"compiled_module('fgtest_pkg.walk', {ENV!r})\n")
    (package / "walk.py").write_text("ANSWER = 42\n")
    assert build_in_fresh_process(tmp_path, None) == (
        "interpreted: fgtest_pkg.walk is not compiled; install Cython, a C compiler and "
        "Python's headers and reinstall fedgate for its compiled build 42")
    assert build_in_fresh_process(tmp_path, "python") == f"interpreted ({ENV}=python) 42"
    assert build_in_fresh_process(tmp_path, "c") == (
        f"ImportError: {ENV}=c, but fgtest_pkg.walk is not compiled: install Cython, a C "
        f"compiler and Python's headers and reinstall fedgate")
    assert build_in_fresh_process(tmp_path, "fast") == (
        f"ValueError: {ENV}='fast': expected 'c' or 'python'")
