"""pgJDBC from Debian's libpostgresql-jdbc-java on Java 17: DatabaseMetaData, prepared
statements past the server-prepare threshold, fetch size (portal suspension), a failing
batch, and Statement.cancel(). The Java program is compiled and run by this test.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.compat.test_catalog_sqlalchemy import keyed_gateway  # noqa: F401  (fixture)
from tests.support.slow import counting

JAR = Path("/usr/share/java/postgresql.jar")
SOURCE = Path(__file__).parent / "java" / "CatalogCheck.java"
CHECKS = ["getTables", "getColumns", "getSchemas", "getTypeInfo", "getPrimaryKeys",
          "prepared6", "batch", "fetchSize", "cancel"]


def _url(gw) -> str:
    return f"jdbc:postgresql://{gw.host}:{gw.port}/{gw.database}"


def test_pgjdbc_catalog_and_protocol(gateway, keyed_gateway, tmp_path):  # noqa: F811
    javac, java = shutil.which("javac"), shutil.which("java")
    assert javac and java, "a JDK is not on PATH (`make system-deps` installs one)"
    assert JAR.exists(), f"{JAR} missing: install libpostgresql-jdbc-java (`make system-deps`)"
    compiled = subprocess.run([javac, "-d", str(tmp_path), "-cp", str(JAR), str(SOURCE)],
                              capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stderr
    res = subprocess.run([java, "-cp", f"{JAR}:{tmp_path}", "CatalogCheck", _url(gateway),
                          _url(keyed_gateway), counting("lineitem")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    assert res.stdout.split() == [w for c in CHECKS for w in ("ok", c)], res.stdout
