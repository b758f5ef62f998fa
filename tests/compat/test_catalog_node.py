"""node-postgres (the `pg` package) with pg-cursor against the gateway.

The packages are installed into tests/compat/node by `make test` (target `node-deps`); a
machine without them fails here with the command to run, never skips.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

NODE_DIR = Path(__file__).parent / "node"


def test_node_postgres_and_pg_cursor(gateway):
    node = shutil.which("node")
    assert node, "node is not on PATH (install nodejs; `make system-deps` does)"
    assert (NODE_DIR / "node_modules" / "pg-cursor").is_dir(), \
        "node packages missing: run `make node-deps`"
    res = subprocess.run([node, str(NODE_DIR / "check.js"), gateway.host, str(gateway.port),
                          gateway.database], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    assert res.stdout.split() == ["ok", "simple", "ok", "parameterized", "ok", "named", "ok",
                                  "cursor", "ok", "error-then-query", "ok", "catalog"]
