"""pgbench against the gateway in the three query modes (bounded: fixed transaction count)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.load

SCRIPT = (
    "\\set ok random(1, 60000)\n"
    "SELECT l_orderkey, l_quantity FROM lineitem WHERE l_orderkey = :ok;\n"
)
PGBENCH_TIMEOUT = 240


def run_pgbench(
    gateway, tmp_path, mode: str, *extra: str, script: str = SCRIPT
) -> subprocess.CompletedProcess:
    pgbench = shutil.which("pgbench")
    # No skip: a machine without pgbench must fail this suite.
    assert pgbench, "pgbench is not on PATH (install postgresql-client)"
    script_file = tmp_path / f"bench_{mode}.sql"
    script_file.write_text(script)
    cmd = [
        pgbench,
        "-n",
        "-t",
        "200",
        "-c",
        "2",
        "-j",
        "2",
        "-M",
        mode,
        "-f",
        str(script_file),
        "-h",
        gateway.host,
        "-p",
        str(gateway.port),
        "-U",
        "fedgate",
        *extra,
        gateway.database,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGCONNECT_TIMEOUT"] = "10"
    return subprocess.run(
        cmd,
        check=False,
        capture_output=True,
        text=True,
        timeout=PGBENCH_TIMEOUT,
        env=env,
    )


@pytest.mark.parametrize("mode", ["simple", "extended", "prepared"])
def test_pgbench_point_lookups(gateway, tmp_path, mode):
    res = run_pgbench(gateway, tmp_path, mode)
    report = f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    assert res.returncode == 0, report
    assert f"query mode: {mode}" in res.stdout, report
    assert "number of failed transactions: 0" in res.stdout, report
    m = re.search(r"number of transactions actually processed: (\d+)/(\d+)", res.stdout)
    assert m and m.group(1) == m.group(2) == "400", report


@pytest.mark.parametrize("mode", ["simple", "extended", "prepared"])
def test_pgbench_transaction_block(gateway, tmp_path, mode):
    script = (
        "\\set ok random(1, 60000)\n"
        "\\set nk random(0, 24)\n"
        "BEGIN;\n"
        "SELECT l_orderkey, l_quantity FROM lineitem WHERE l_orderkey = :ok;\n"
        "SELECT n_name FROM nation WHERE n_nationkey = :nk;\n"
        "END;\n"
    )
    res = run_pgbench(gateway, tmp_path, mode, script=script)
    report = f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    assert res.returncode == 0, report
    assert "number of failed transactions: 0" in res.stdout, report
    assert "number of transactions actually processed: 400/400" in res.stdout, report
