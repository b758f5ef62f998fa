"""What the image build does, without Docker: the Dockerfile's build stage run on a copy of
the files it copies, the wheel it makes installed without the repository beside it, and the
gateway started from that install with the example configurations of compose and Kubernetes.

The sources of those configurations are compose services or cluster hosts; here each DSN is
swapped for a database on this machine's throwaway PostgreSQL and MariaDB servers, loaded
with the compose stack's sample tables by the same init scripts. Everything else in the
configurations is used as shipped, except that the gateway listens on loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.deploy.files import DEPLOY, REPO, k8s_documents, stage, toml_file
from tests.support.mariadb import start_mariadb
from tests.support.postgres import fresh_database
from tests.support.system import free_port, terminate, wait_listening

TIMEOUT = 300
PACKAGES = ("pgwire", "connectors", "planner", "gateway")
COMPOSE_CONFIG = DEPLOY / "compose" / "gateway.toml"
# The compose stack's sample data, joined across the two sources.
JOIN = ("SELECT c.name, sum(o.amount) AS spent FROM pg.customers c "
        "JOIN maria.orders o ON o.customer = c.id GROUP BY c.name ORDER BY c.name")
SPENT = [("Ada", "155.50"), ("Edsger", "12.00"), ("Grace", "99.90")]


def run(argv: list[str] | str, **kwargs) -> subprocess.CompletedProcess:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False,
                         **kwargs)
    assert res.returncode == 0, f"{argv} failed:\n{res.stdout}\n{res.stderr}"
    return res


def build_context(context: Path) -> None:
    """The files the build stage's COPY instructions put in its WORKDIR."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for instruction in stage("build").all("COPY"):
        *sources, target = instruction.words()
        for source in sources:
            origin = REPO / source
            if origin.is_dir():
                shutil.copytree(origin, context / target, ignore=ignore)
            else:
                (context / target).mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, context / target / origin.name)


@dataclass
class Install:
    wheel: Path
    site: Path  # the wheel installed with --target, dependencies from the test venv
    workdir: Path

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.site), "PYTHONUNBUFFERED": "1"}

    def fedgate(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
        # The console script the wheel declares, run away from the repository's sources.
        return subprocess.run([str(self.site / "bin" / "fedgate"), *args], input=stdin,
                              cwd=self.workdir, env=self.env(), capture_output=True, text=True,
                              timeout=TIMEOUT, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Install:
    root = tmp_path_factory.mktemp("image")
    context = root / "src"
    build_context(context)
    # The build stage's RUN lines, with this venv's python where the image has its own.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    for instruction in stage("build").all("RUN"):
        run(["sh", "-c", instruction.args], cwd=context, env={**os.environ, "PATH": path})
    (wheel,) = (context / "dist").glob("fedgate-*.whl")
    site = root / "site"
    run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
         "--target", str(site), str(wheel)])
    workdir = root / "work"
    workdir.mkdir()
    return Install(wheel, site, workdir)


def test_the_wheel_holds_every_module_and_the_command(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    modules = {str(p.relative_to(REPO)) for package in PACKAGES
               for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts}
    assert modules and modules <= names, sorted(modules - names)[:10]
    # The compiled modules, built by the build stage.
    for module in ("pgwire/protocol/answer_walks.", "gateway/relay/express/statement_bytes."):
        assert any(n.startswith(module) and n.endswith(".so") for n in names), module
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(installed.wheel).read(entry_points).decode()
    assert "fedgate = gateway.server.cli:main" in text


def test_the_installed_command_runs_from_the_wheel(installed):
    res = installed.fedgate("--version")
    assert res.returncode == 0, res.stderr
    version = toml_file(REPO / "pyproject.toml")["project"]["version"]
    assert res.stdout.strip() == f"fedgate {version}"
    where = subprocess.run([sys.executable, "-c", "import gateway; print(gateway.__file__)"],
                           cwd=installed.workdir, env=installed.env(), capture_output=True,
                           text=True, timeout=60, check=True).stdout.strip()
    assert Path(where).is_relative_to(installed.site)


# --------------------------------------------------------------------------- the configs


@dataclass
class Databases:
    pg_dsn: str
    maria_dsn: str


@pytest.fixture(scope="module")
def databases(postgres_server) -> Iterator[Databases]:
    """The compose stack's two databases, loaded by its own init scripts."""
    pg_dsn = fresh_database(postgres_server, "compose")
    run(["psql", "-X", "-v", "ON_ERROR_STOP=1", "-q", "-d", pg_dsn,
         "-f", str(DEPLOY / "compose" / "postgres-init.sql")])
    maria = start_mariadb()
    try:
        client = ["mariadb", "--no-defaults", "-h", maria.host, "-P", str(maria.port), "-u", "root"]
        run([*client, "-e", "CREATE DATABASE shop"])
        init = (DEPLOY / "compose" / "mariadb-init.sql").read_text()
        run([*client, "shop"], input=init)
        yield Databases(pg_dsn, maria.dsn("shop"))
    finally:
        maria.stop()


@contextmanager
def serving(install: Install, config: Path) -> Iterator[int]:
    """`fedgate serve` from the wheel on a loopback port; yields the port."""
    port = free_port()
    log_path = config.with_suffix(".log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(install.site / "bin" / "fedgate"), "serve", "--config",
                                 str(config), "--host", "127.0.0.1", "--port", str(port)],
                                cwd=install.workdir, env=install.env(), stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        assert wait_listening(proc, port, 120), f"gateway did not serve:\n{log_path.read_text()}"
        yield port
    finally:
        terminate(proc, 10, 5)


def swap_dsns(template: str, sources: dict, dsns: dict[str, str]) -> str:
    """`template` with each source's DSN replaced by the one of this machine's databases."""
    for name, dsn in dsns.items():
        shipped = json.dumps(sources[name]["dsn"])
        assert template.count(shipped) == 1, name
        template = template.replace(shipped, json.dumps(dsn))
    return template


def spent(port: int, user: str, password: str) -> list[tuple[str, str]]:
    with psycopg.connect(host="127.0.0.1", port=port, dbname="fedgate", user=user,
                         password=password, connect_timeout=10) as conn:
        return [(name, str(amount)) for name, amount in conn.execute(JOIN).fetchall()]


def test_the_compose_config_serves_the_sample_join(installed, databases, tmp_path):
    shipped = COMPOSE_CONFIG.read_text()
    config = toml_file(COMPOSE_CONFIG)
    local = tmp_path / "gateway.toml"
    local.write_text(swap_dsns(shipped, config["sources"],
                               {"pg": databases.pg_dsn, "maria": databases.maria_dsn}))
    (user,) = config["users"]
    with serving(installed, local) as port:
        assert spent(port, user["name"], user["password"]) == SPENT


def test_the_k8s_config_rendered_from_the_secret_serves_the_sample_join(installed, databases,
                                                                         tmp_path):
    template = k8s_documents()["ConfigMap"]["data"]["gateway.toml"]
    secret = installed.fedgate("hash-password", stdin="k8s password\n")
    assert secret.returncode == 0, secret.stderr
    env = {**installed.env(), "FEDGATE_PASSWORD": secret.stdout.strip(),
           "PG_DSN": databases.pg_dsn, "MARIADB_DSN": databases.maria_dsn}
    (tmp_path / "template.toml").write_text(template)
    rendered = tmp_path / "gateway.toml"
    # The init container's command, as the image installs it.
    run([sys.executable, str(DEPLOY / "render_config.py"), str(tmp_path / "template.toml"),
         str(rendered)], env=env)
    checked = installed.fedgate("check-config", str(rendered))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "k8s password" not in rendered.read_text()
    # The pod's HTTP port on a free loopback port here (tests listen on loopback only).
    http_port = free_port()
    text = rendered.read_text()
    assert text.count("http_port = 8080") == 1 and text.count('http_host = "0.0.0.0"') == 1
    rendered.write_text(text.replace("http_port = 8080", f"http_port = {http_port}")
                        .replace('http_host = "0.0.0.0"', 'http_host = "127.0.0.1"'))
    with serving(installed, rendered) as port:
        # What the readiness probe asks: every required source answers, no statement waits.
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/readyz", timeout=30) as ready:
            assert ready.status == 200 and json.loads(ready.read())["ready"] is True
        assert spent(port, "fedgate", "k8s password") == SPENT
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            spent(port, "fedgate", "change-me")
