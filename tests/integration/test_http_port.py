"""The HTTP side port against a real gateway: /metrics after a mixed workload (relayed
and express statements on a PostgreSQL source, federated queries, errors), /healthz and
/readyz (a required source down answers 503), EXPLAIN (FORMAT JSON) through psycopg,
and who may see the status page and cancel (basic auth when [[users]] exist, the Host
check and the cancel token in loopback trust mode)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.server.scram import scram_secret
from tests.support.gateway_proc import start_gateway
from tests.support.http_gateway import HttpGateway, demo_file, http_gateway, http_get
from tests.support.postgres import PostgresServer
from tests.support.system import free_port, free_port_run

DDL = ("CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL);"
       "INSERT INTO acct SELECT g, g * 10 FROM generate_series(1, 50) g;"
       "CREATE TABLE zones (regionkey int PRIMARY KEY, label text);"
       "INSERT INTO zones VALUES (0, 'africa'), (1, 'americas'), (2, 'asia')")
FEDERATED = ("SELECT z.label, count(*) FROM zones z JOIN demo.nation n "
             "ON n.n_regionkey = z.regionkey WHERE n.n_nationkey > 2 GROUP BY z.label")


@pytest.fixture(scope="module")
def setup(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    with http_gateway(postgres_server.dsn, tmp_path_factory.mktemp("http-gateway"), DDL) as found:
        yield found


def scrape(setup: HttpGateway) -> dict[tuple[str, tuple], float]:
    status, headers, body = http_get(setup.base + "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "worker"))
            samples[(sample.name, labels)] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_move_with_a_mixed_workload(setup: HttpGateway) -> None:
    before = scrape(setup)
    with psycopg.connect(setup.gateway.dsn, autocommit=True) as conn:
        for i in range(1, 21):  # relayed; repeats take the express lane
            conn.execute(f"SELECT bal FROM acct WHERE id = {i}", prepare=False).fetchall()
        conn.execute("UPDATE acct SET bal = bal + 1 WHERE id = 1")
        for _ in range(3):
            assert conn.execute(FEDERATED).fetchall()
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT count(*) / 0 FROM demo.region z JOIN zones y ON true")
        with pytest.raises(psycopg.errors.UndefinedTable):
            conn.execute("SELECT * FROM no_such_table")
        conn.execute("SET search_path = pg, demo")
        after = scrape(setup)
        assert value(after, "fedgate_sessions") >= 1
    moved = {key: after.get(key, 0.0) - before.get(key, 0.0) for key in after}

    def delta(name: str, **labels: str) -> float:
        return moved.get((name, tuple(sorted(labels.items()))), 0.0)

    assert delta("fedgate_statements_total", kind="select", sqlstate_class="00") >= 23
    assert delta("fedgate_statements_total", kind="write", sqlstate_class="00") == 1
    assert delta("fedgate_statements_total", kind="select", sqlstate_class="22") == 1
    assert delta("fedgate_statements_total", kind="select", sqlstate_class="42") == 1
    assert delta("fedgate_statements_total", kind="utility", sqlstate_class="00") == 1
    express = delta("fedgate_statement_duration_seconds_count", path="express")
    relay = delta("fedgate_statement_duration_seconds_count", path="relay")
    assert express >= 10 and relay >= 1 and express + relay == 21
    assert delta("fedgate_statement_duration_seconds_count", path="federated") == 5
    assert delta("fedgate_statement_duration_seconds_count", path="utility") == 1
    assert delta("fedgate_statement_duration_seconds_bucket", path="federated", le="+Inf") == 5
    assert delta("fedgate_source_rows_total", source="pg") >= 3 * 3
    assert delta("fedgate_source_rows_total", source="demo") >= 3 * 22
    assert delta("fedgate_source_bytes_total", source="demo") > 0
    assert delta("fedgate_engine_queries_total", engine="duckdb") >= 3
    pushed = sum(delta("fedgate_pushdown_conjuncts_total", outcome=o)
                 for o in ("exact", "inexact", "unsupported"))
    assert delta("fedgate_pushdown_conjuncts_total", outcome="exact") >= 3 and pushed >= 3
    assert value(after, "fedgate_source_up", source="pg") == 1.0
    assert value(after, "fedgate_source_up", source="demo") == 1.0
    # The engine's memory: its pool, and nothing held once every statement is done.
    assert value(after, "fedgate_engine_memory_bytes", kind="limit") > 0
    assert value(after, "fedgate_engine_memory_bytes", kind="held") == 0
    assert value(after, "fedgate_engine_memory_bytes", kind="reserved") == 0
    assert value(after, "fedgate_engine_memory_waiting") == 0
    assert not any(name == "fedgate_statement_memory_bytes" for name, _ in after)


def test_healthz_and_readyz_while_every_source_answers(setup: HttpGateway) -> None:
    assert http_get(setup.base + "/healthz")[::2] == (200, b"ok\n")
    status, headers, body = http_get(setup.base + "/readyz")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"ready": True, "required": ["pg"], "failing": [],
                                "waiting_for_memory": 0}


def test_readyz_is_503_naming_a_required_source_that_does_not_answer(tmp_path: Path) -> None:
    http_port = free_port()
    nowhere = f"postgresql://nobody@127.0.0.1:{free_port()}/none"
    config = (f"[server]\nhttp_port = {http_port}\n[catalog]\nsearch_path = [\"demo\"]\n"
              f'[sources.demo]\nkind = "duckdb"\npath = {json.dumps(str(demo_file()))}\nrequired = true\n'
              f'[sources.gone]\nkind = "postgres"\ndsn = "{nowhere}"\nrequired = true\n'
              f'[sources.optional]\nkind = "postgres"\ndsn = "{nowhere}"\n')
    gateway = start_gateway(config, tmp_path)
    try:
        base = f"http://127.0.0.1:{http_port}"
        assert http_get(base + "/healthz")[0] == 200
        status, _, body = http_get(base + "/readyz")
        answer = json.loads(body)
        assert status == 503 and answer["ready"] is False
        assert answer["required"] == ["demo", "gone"] and answer["failing"] == ["gone"]
        page = http_get(base + "/")[2].decode()
        assert '<span class="down">down</span>' in page  # with the reason beside it
        samples = {(s.name, s.labels.get("source")): s.value
                   for f in text_string_to_metric_families(http_get(base + "/metrics")[2].decode())
                   for s in f.samples}
        assert samples[("fedgate_source_up", "gone")] == 0.0
        assert samples[("fedgate_source_up", "demo")] == 1.0
    finally:
        gateway.stop()


def test_explain_format_json_through_psycopg(setup: HttpGateway) -> None:
    with psycopg.connect(setup.gateway.dsn, autocommit=True) as conn:
        cur = conn.execute(f"EXPLAIN (FORMAT JSON) {FEDERATED}")
        assert cur.description[0].name == "QUERY PLAN" and cur.description[0].type_code == 114
        [(document,)] = cur.fetchall()
        assert isinstance(document, list)  # psycopg parsed the json column
        root = document[0]["Plan"]
        assert root["Node Type"] == "Engine" and root["Engine"] == "duckdb"
        fragments = {node["Source"]: node for node in root["Plans"]}
        assert set(fragments) == {"pg", "demo"}
        assert all(node["Node Type"] == "Remote Fragment" and node["Remote SQL"]
                   for node in fragments.values())
        assert "Actual Rows" not in root
        [(analyzed,)] = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {FEDERATED}").fetchall()
        root = analyzed[0]["Plan"]
        assert root["Actual Rows"] == 3 and analyzed[0]["Execution Time"] > 0
        rows = {node["Source"]: node["Actual Rows"] for node in root["Plans"]}
        assert rows["pg"] == 3 and rows["demo"] == 22
        [(relayed,)] = conn.execute("EXPLAIN (FORMAT JSON) SELECT bal FROM acct").fetchall()
        assert relayed[0]["Plan"]["Node Type"] == "Relay" and relayed[0]["Plan"]["Source"] == "pg"
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute("EXPLAIN (FORMAT YAML) SELECT 1")
    # The statement explained with ANALYZE is kept for the status page, figures drawn.
    page = http_get(setup.base + "/")[2].decode()
    assert "EXPLAIN (ANALYZE, FORMAT JSON)" in page and "22 rows" in page
    assert "<h2>Engine memory</h2>" in page and "no engine statement running" in page


def test_open_mode_checks_the_host_and_the_cancel_token(setup: HttpGateway) -> None:
    assert http_get(setup.base + "/", headers={"Host": "attacker.example"})[0] == 403
    assert http_get(setup.base + "/healthz", headers={"Host": "attacker.example"})[0] == 200
    assert http_get(setup.base + "/cancel", data=b"pid=1&token=forged")[0] == 403
    assert http_get(setup.base + "/cancel")[0] == 405
    assert http_get(setup.base + "/../../etc/passwd")[0] == 404
    assert http_get(setup.base + "/cancel", data=b"x" * 100_000)[0] == 413
    with psycopg.connect(setup.gateway.dsn, autocommit=True) as conn:
        conn.execute("SELECT 1 AS \"<script>alert(1)</script>\" FROM demo.region WHERE r_name = '<b>x</b>'")
        with pytest.raises(psycopg.errors.Error):
            conn.execute("SELECT '<img src=x onerror=alert(1)>'::int FROM demo.region")
    page = http_get(setup.base + "/")[2].decode()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_with_users_the_port_needs_basic_auth_of_a_configured_user(tmp_path: Path) -> None:
    http_port = free_port()
    config = (f"[server]\nhttp_port = {http_port}\n"
              f"[[users]]\nname = \"ann\"\npassword = {json.dumps(scram_secret('s3cret'))}\n"
              f"sources = [\"*\"]\nadmin = true\n"
              f"[[users]]\nname = \"bob\"\npassword = \"plain\"\nauth_method = \"password\"\n"
              f"sources = [\"*\"]\nadmin = true\n"
              f"[[users]]\nname = \"carl\"\npassword = \"plain\"\nauth_method = \"password\"\n"
              f"sources = [\"*\"]\n"
              f'[sources.demo]\nkind = "duckdb"\npath = {json.dumps(str(demo_file()))}\n')
    gateway = start_gateway(config, tmp_path)
    try:
        base = f"http://127.0.0.1:{http_port}"
        status, headers, _ = http_get(base + "/")
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
        assert http_get(base + "/metrics", user="ann", password="wrong")[0] == 401
        assert http_get(base + "/metrics", user="nobody", password="s3cret")[0] == 401
        assert http_get(base + "/metrics", user="ann", password="s3cret")[0] == 200
        assert http_get(base + "/", user="bob", password="plain")[0] == 200
        assert http_get(base + "/", user="carl", password="plain")[0] == 403  # not an admin
        assert http_get(base + "/healthz")[0] == 200 and http_get(base + "/readyz")[0] == 200
    finally:
        gateway.stop()


def test_each_worker_serves_its_own_http_port(tmp_path: Path) -> None:
    http_port = free_port_run(2)  # worker i serves http_port + i
    config = (f"[server]\nhttp_port = {http_port}\n"
              f'[sources.demo]\nkind = "duckdb"\npath = {json.dumps(str(demo_file()))}\n')
    gateway = start_gateway(config, tmp_path, workers=2)
    try:
        workers = set()
        for port in (http_port, http_port + 1):
            try:
                body = http_get(f"http://127.0.0.1:{port}/metrics")[2].decode()
            except OSError as exc:
                raise AssertionError(f"port {port}: {exc}\n{gateway.log()}") from exc
            workers |= {s.labels["worker"] for f in text_string_to_metric_families(body)
                        for s in f.samples if s.name == "fedgate_sessions"}
        assert workers == {"0", "1"}
    finally:
        gateway.stop()


def test_an_http_port_in_use_stops_the_start_naming_the_key(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    from tests.support.gateway_proc import REPO

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        http_port = taken.getsockname()[1]
        config = tmp_path / "fedgate.toml"
        config.write_text(f"[server]\nhttp_port = {http_port}\n"
                          f'[sources.demo]\nkind = "duckdb"\npath = {json.dumps(str(demo_file()))}\n')
        done = subprocess.run([sys.executable, "-m", "gateway", "serve", "--config", str(config),
                               "--port", str(free_port())], cwd=REPO, capture_output=True,
                              text=True, timeout=120)
    assert done.returncode != 0
    assert (f"[server] http_port: cannot listen on 127.0.0.1:{http_port}: Address already in use"
            in done.stderr), done.stderr
