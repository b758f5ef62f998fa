"""The configuration checker: every key of every section is declared, typed and named in
its error; nothing is accepted and then ignored."""

from __future__ import annotations

import errno
import socket
import tomllib
from pathlib import Path
from typing import Any

import pytest

from gateway.config import (Config, ConfigError, DemoConfig, EngineConfig, ServerConfig, UserConfig,
                            listen_error, load_config, parse_config, source_path)
from gateway.config.schema import DEMO, ENGINE, SERVER, SOURCES, USER

EVERY_SERVER_KEY = {"host": "127.0.0.1", "port": 15000, "database": "db", "max_connections": 5,
                    "statement_timeout_ms": 10, "auth_method": "md5",
                    "max_message_bytes": 1 << 20, "workers": 2, "tls_cert": "server.crt",
                    "tls_key": "server.key", "tls": "require", "log_format": "json",
                    "log_min_duration_ms": 0, "http_port": 9000, "http_host": "127.0.0.1",
                    "authentication_timeout_s": 5, "max_startup_connections": 7,
                    "auth_failure_delay_ms": 100, "max_auth_failures": 3, "auth_lockout_s": 2.5,
                    "shutdown_timeout_s": 0, "max_inflight_message_bytes": 1 << 21}
EVERY_ENGINE_KEY = {"default": "spark", "spark_master": "local[2]", "spark_threshold_rows": 7,
                    "spark_reads_sources": "never", "spark_read_threshold_rows": 0,
                    "spark_partition_rows": 9, "spark_conf": {"spark.driver.memory": "1g"},
                    "spark_connect_timeout_s": 5, "spark_job_timeout_s": 0, "spark_idle_stop_s": 60,
                    "spark_stall_timeout_s": 15}
EVERY_SOURCE_KEY: dict[str, dict[str, Any]] = {
    "postgres": {"kind": "postgres", "dsn": "postgresql://u@h/d", "schema": "s",
                 "pool_size": 3, "pool_mode": "session", "pool_timeout_s": 2.5,
                 "server_idle_timeout_s": 60, "server_lifetime_s": 0,
                 "read_only": True, "required": True},
    "mysql": {"kind": "mysql", "dsn": "mysql://u@h/d", "pool_size": 3, "read_only": False,
              "required": False},
    "sqlite": {"kind": "sqlite", "path": "a.db", "statement_log": "log.txt", "read_only": True,
               "required": True},
    "duckdb": {"kind": "duckdb", "path": "a.duckdb", "schema": "main", "statement_log": "l",
               "required": True},
    "parquet": {"kind": "parquet", "path": "s3://lake/files/", "statement_log": "l",
                "endpoint": "minio:9000", "region": "us-east-1", "access_key_id": "AKID",
                "secret_access_key": "plain", "required": True},
    "csv": {"kind": "csv", "path": "s3://lake/csv/", "statement_log": "l",
            "endpoint": "https://s3.example.com", "region": "eu-west-1",
            "access_key_id": "env:K", "secret_access_key": "env:S", "required": True},
    "delta": {"kind": "delta", "path": "s3://lake/tables/", "statement_log": "l",
              "endpoint": "http://127.0.0.1:9000", "region": "eu-west-1",
              "access_key_id": "env:LAKE_KEY", "secret_access_key": "file:lake.secret",
              "required": True},
    "iceberg": {"kind": "iceberg", "catalog_uri": "sqlite:///catalog.db", "catalog_name": "c",
                "namespace": "sales", "warehouse": "file:///data/wh", "statement_log": "l",
                "required": True},
}


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    return str(caught.value)


def with_source(**keys: Any) -> dict[str, Any]:
    return {"sources": {"x": keys}, "catalog": {"search_path": ["x"]}}


# --------------------------------------------------------------------------- what is accepted


def test_every_declared_key_is_accepted_and_lands_in_the_config() -> None:
    config = parse_config({
        "server": EVERY_SERVER_KEY, "engine": EVERY_ENGINE_KEY,
        "catalog": {"search_path": ["postgres"], "refresh_seconds": 0.5},
        "users": [{"name": "alice", "password": "pw", "sources": ["postgres"],
                   "auth_method": "password", "read_only": True, "admin": True,
                   "source_roles": {"postgres": "alice_ro"}}],
        "sources": EVERY_SOURCE_KEY,
    })
    assert config.server == ServerConfig(**EVERY_SERVER_KEY)
    assert config.engine == EngineConfig(**EVERY_ENGINE_KEY)
    assert config.catalog_refresh_s == 0.5
    assert config.users[0].sources == ("postgres",) and config.users[0].auth_method == "password"
    assert config.users[0].read_only and config.users[0].admin
    assert config.users[0].source_roles == {"postgres": "alice_ro"}
    for source in config.sources:
        assert {"kind": source.kind, **source.options} == EVERY_SOURCE_KEY[source.kind]


def test_the_declared_keys_are_the_dataclass_fields() -> None:
    """A field with no key could not be set; a key with no field would be ignored."""
    assert set(SERVER.keys) == set(ServerConfig.__dataclass_fields__)
    assert set(ENGINE.keys) == set(EngineConfig.__dataclass_fields__)
    assert set(DEMO.keys) == set(DemoConfig.__dataclass_fields__)
    assert set(USER.keys) == set(UserConfig.__dataclass_fields__)
    assert set(SOURCES) == set(EVERY_SOURCE_KEY)
    for kind, keys in EVERY_SOURCE_KEY.items():
        assert set(SOURCES[kind].keys) == set(keys), kind


def test_defaults_serve_the_demo() -> None:
    config = parse_config({})
    assert config.uses_demo and config.search_path == ("demo",)
    assert config.server == ServerConfig() and config.users == ()


def test_demo_path_is_relative_to_the_file(tmp_path: Path) -> None:
    config = parse_config({"demo": {"path": "cache/demo.duckdb", "scale": 0.01}}, tmp_path)
    assert config.demo.path == str(tmp_path / "cache" / "demo.duckdb")
    assert config.sources[0].options["path"] == config.demo.path


# --------------------------------------------------------------------------- unknown keys


@pytest.mark.parametrize("section", ["server", "engine", "catalog", "demo"])
def test_an_unknown_key_names_its_section_and_key(section: str) -> None:
    message = error_of({section: {"colour": "blue"}})
    assert message.startswith(f"unknown key colour in [{section}] (")


def test_an_unknown_key_of_a_user_names_the_user() -> None:
    assert error_of({"users": [{"name": "alice", "sources": ["*"], "pasword": "x"}]}) == (
        'unknown key pasword in [[users]] "alice" (did you mean password?)')
    assert error_of({"users": [{"name": "a", "sources": ["*"]}, {"nme": "b"}]}).startswith(
        "unknown key nme in [[users]] #2")


@pytest.mark.parametrize("kind", sorted(EVERY_SOURCE_KEY))
def test_an_unknown_key_of_each_source_kind(kind: str) -> None:
    keys = {**EVERY_SOURCE_KEY[kind], "colour": "blue"}
    message = error_of(with_source(**keys))
    takes = ", ".join(k for k in SOURCES[kind].keys if k != "kind")
    assert message == f"unknown key colour in [sources.x] (a {kind} source takes: {takes})"


@pytest.mark.parametrize(("data", "expected"), [
    (with_source(kind="postgres", dsn="d", readonly=True),
     "unknown key readonly in [sources.x] (did you mean read_only?)"),
    (with_source(kind="postgres", dsn="d", pool=3),
     "unknown key pool in [sources.x] (did you mean pool_size?)"),
    ({"server": {"prot": 1}}, "unknown key prot in [server] (did you mean port?)"),
    ({"server": {"max_connection": 1}},
     "unknown key max_connection in [server] (did you mean max_connections?)"),
    ({"engine": {"spark_mater": "x"}},
     "unknown key spark_mater in [engine] (did you mean spark_master?)"),
    ({"catalog": {"search_paths": []}},
     "unknown key search_paths in [catalog] (did you mean search_path?)"),
    ({"catalog": {"refresh_second": 1}},
     "unknown key refresh_second in [catalog] (did you mean refresh_seconds?)"),
    ({"source": {}}, "unknown section [source] (did you mean [sources]?)"),
    ({"port": 1}, "port at the top of the file belongs in a section (did you mean [server] port?)"),
    ({"server": {"auth_method": "scram"}, "users": [{"name": "a"}]},
     '[server] auth_method must be one of "trust", "password", "md5" or "scram-sha-256", '
     'not the string "scram" (did you mean "scram-sha-256"?)'),
    (with_source(kind="postgresql", dsn="d"),
     '[sources.x] kind must be one of "duckdb", "postgres", "mysql", "sqlite", "parquet", '
     '"csv", "delta" or "iceberg", not the string "postgresql" (did you mean "postgres"?)'),
])
def test_did_you_mean(data: dict[str, Any], expected: str) -> None:
    assert error_of(data) == expected


def test_a_negative_stall_timeout_is_refused() -> None:
    assert "spark_stall_timeout_s" in error_of({"engine": {"spark_stall_timeout_s": -1}})
    assert "spark_stall_timeout_s" in error_of({"engine": {"spark_stall_timeout_s": "soon"}})


def test_a_key_of_another_kind_is_refused_with_the_reason() -> None:
    assert error_of(with_source(kind="mysql", dsn="d", schema="s")).startswith(
        "[sources.x] schema: a mysql source reads the database its dsn names")
    for kind in ("duckdb", "parquet", "csv", "delta"):
        assert error_of(with_source(kind=kind, path="p", read_only=True)) == (
            f"[sources.x] read_only: {kind} sources are always read-only; remove read_only")
    assert error_of(with_source(kind="sqlite", path="p", dsn="d")).startswith(
        "unknown key dsn in [sources.x] (a sqlite source takes: path, statement_log, read_only, "
        "required)")


@pytest.mark.parametrize(("server", "expected"), [
    ({"tls_cert": "s.crt"}, "[server] tls_cert needs tls_key too"),
    ({"tls_key": "s.key"}, "[server] tls_key needs tls_cert too"),
    ({"tls": "require"}, '[server] tls = "require" needs tls_cert and tls_key'),
    ({"tls": "on"}, '[server] tls = "on" needs tls_cert and tls_key'),
])
def test_tls_needs_both_files(server: dict[str, str], expected: str) -> None:
    assert error_of({"server": server}).startswith(expected)


def test_tls_mode_is_checked() -> None:
    assert error_of({"server": {"tls_cert": "a", "tls_key": "b", "tls": "required"}}) == (
        '[server] tls must be "on" or "require", not the string "required" '
        '(did you mean "require"?)')


def test_tls_defaults_to_on_with_paths_relative_to_the_file(tmp_path: Path) -> None:
    config = parse_config({"server": {"tls_cert": "certs/s.crt", "tls_key": "/abs/s.key"}},
                          base_dir=tmp_path)
    assert config.server.tls == "on"
    assert config.server.tls_cert == str(tmp_path / "certs" / "s.crt")
    assert config.server.tls_key == "/abs/s.key"
    assert parse_config({}).server.tls is None


def test_http_port_is_off_by_default_and_listens_on_the_sql_host() -> None:
    assert parse_config({}).server.http_port == 0
    server = parse_config({"server": {"http_port": 9187}}).server
    assert (server.http_port, server.http_bind_host) == (9187, "127.0.0.1")
    assert error_of({"server": {"metrics_port": 9187}}).startswith("unknown key metrics_port")


def test_an_open_http_port_is_loopback_only() -> None:
    assert error_of({"server": {"http_port": 9187, "http_host": "0.0.0.0"}}) == (
        "[server] http_host 0.0.0.0: without [[users]] the HTTP port is open to anyone, "
        "so it may listen on loopback only")
    users = [{"name": "ann", "password": "pw", "sources": ["*"], "admin": True}]
    assert parse_config({"server": {"http_port": 9187, "http_host": "0.0.0.0"},
                         "users": users}).server.http_bind_host == "0.0.0.0"


def test_http_port_must_not_take_the_sql_port_nor_run_past_65535() -> None:
    assert error_of({"server": {"http_port": 15432}}) == (
        "[server] http_port 15432: port 15432 is the SQL port")
    assert error_of({"server": {"http_port": 65535, "workers": 2}}).startswith(
        "[server] http_port 65535: worker i serves http_port + i")
    assert error_of({"server": {"http_host": "127.0.0.1"}}).startswith(
        "[server] http_host needs http_port")


def test_an_iceberg_source_is_read_only_and_names_its_catalog() -> None:
    assert error_of(with_source(kind="iceberg", catalog_uri="sqlite:///c.db", namespace="n",
                                read_only=True)) == (
        "[sources.x] read_only: iceberg sources are always read-only; remove read_only")
    assert error_of(with_source(kind="iceberg", namespace="n")) == "[sources.x] needs catalog_uri"
    assert error_of(with_source(kind="iceberg", catalog_uri="sqlite:///c.db")) == \
        "[sources.x] needs namespace"


def test_every_source_kind_takes_required() -> None:
    for kind, keys in (("postgres", {"dsn": "d"}), ("mysql", {"dsn": "d"}), ("sqlite", {"path": "p"}),
                       ("duckdb", {"path": "p"}), ("parquet", {"path": "p"}), ("csv", {"path": "p"}),
                       ("delta", {"path": "p"}),
                       ("iceberg", {"catalog_uri": "sqlite:///c.db", "namespace": "n"})):
        config = parse_config(with_source(kind=kind, required=True, **keys))
        assert config.sources[0].options["required"] is True


# --------------------------------------------------------------------------- wrong types


@pytest.mark.parametrize(("data", "expected"), [
    ({"server": {"port": "15434"}},
     '[server] port must be an integer from 1 to 65535, not the string "15434"'),
    ({"server": {"port": 70000}}, "[server] port must be an integer from 1 to 65535, not 70000"),
    ({"server": {"port": 1.5}}, "[server] port must be an integer from 1 to 65535, not 1.5"),
    ({"server": {"port": True}}, "[server] port must be an integer from 1 to 65535, not true"),
    ({"server": {"host": 127}}, "[server] host must be a non-empty string, not 127"),
    ({"server": {"database": ""}},
     '[server] database must be a non-empty string, not the string ""'),
    ({"server": {"max_connections": 0}}, "[server] max_connections must be an integer >= 1, not 0"),
    ({"server": {"statement_timeout_ms": -1}},
     "[server] statement_timeout_ms must be an integer >= 0, not -1"),
    ({"server": {"max_message_bytes": "1MB"}},
     '[server] max_message_bytes must be an integer from 1 to 1073741824, not the string "1MB"'),
    ({"server": {"max_message_bytes": 2048, "max_inflight_message_bytes": 1024}},
     "[server] max_inflight_message_bytes (1024) must be at least max_message_bytes (2048): "
     "one message of the largest size must fit"),
    ({"server": {"auth_failure_delay_ms": -1}},
     "[server] auth_failure_delay_ms must be an integer from 0 to 60000, not -1"),
    ({"server": {"authentication_timeout_s": 0}},
     "[server] authentication_timeout_s must be a number > 0, not 0"),
    ({"server": {"workers": "two"}},
     '[server] workers must be "auto" or an integer from 0 to 64, not the string "two"'),
    ({"server": {"log_format": "xml"}},
     '[server] log_format must be "text" or "json", not the string "xml"'),
    ({"server": {"log_min_duration_ms": -2}},
     "[server] log_min_duration_ms must be an integer >= -1, not -2"),
    ({"engine": {"default": "presto"}},
     '[engine] default must be "duckdb" or "spark", not the string "presto"'),
    ({"engine": {"spark_conf": {"a": [1]}}},
     "[engine] spark_conf must be a table of settings (strings, numbers or booleans), not a table"),
    ({"engine": {"spark_partition_rows": 0}},
     "[engine] spark_partition_rows must be an integer >= 1, not 0"),
    ({"engine": {"spark_threshold_rows": "1e6"}},
     '[engine] spark_threshold_rows must be an integer >= 0, not the string "1e6"'),
    ({"catalog": {"search_path": "demo"}},
     '[catalog] search_path must be an array of strings, not the string "demo"'),
    ({"catalog": {"refresh_seconds": -1}},
     "[catalog] refresh_seconds must be a number >= 0, not -1"),
    ({"demo": {"scale": 0}}, "[demo] scale must be a number > 0, not 0"),
    ({"users": [{"name": "a", "sources": ["*"], "password": 1234}]},
     '[[users]] "a" password must be a string, not 1234'),
    ({"users": [{"name": "a", "sources": "x"}]},
     '[[users]] "a" sources must be an array of strings, not the string "x"'),
    ({"users": [{"password": "x"}]}, "[[users]] #1 needs name"),
    ({"users": [{"name": 5}]}, "[[users]] #1 name must be a non-empty string, not 5"),
    (with_source(kind="postgres", dsn="d", pool_size="10"),
     '[sources.x] pool_size must be an integer >= 1, not the string "10"'),
    (with_source(kind="postgres", dsn="d", pool_mode="statement"),
     '[sources.x] pool_mode must be "session" or "transaction", not the string "statement"'),
    (with_source(kind="postgres", dsn="d", pool_timeout_s=0),
     "[sources.x] pool_timeout_s must be a number > 0, not 0"),
    (with_source(kind="postgres", dsn="d", server_idle_timeout_s=-1),
     "[sources.x] server_idle_timeout_s must be a number >= 0, not -1"),
    (with_source(kind="postgres", dsn="d", server_lifetime_s="1h"),
     '[sources.x] server_lifetime_s must be a number >= 0, not the string "1h"'),
    (with_source(kind="postgres", dsn="d", read_only="yes"),
     '[sources.x] read_only must be true or false, not the string "yes"'),
    (with_source(kind="sqlite", path=["a.db"]),
     "[sources.x] path must be a non-empty string, not an array"),
    (with_source(kind="postgres", dsn=5), "[sources.x] dsn must be a non-empty string, not 5"),
    (with_source(kind="duckdb", schema="main"), "[sources.x] needs path"),
    (with_source(kind="mysql"), "[sources.x] needs dsn"),
    (with_source(dsn="d"), '[sources.x] needs kind (one of "duckdb", "postgres", "mysql", '
                           '"sqlite", "parquet", "csv", "delta" or "iceberg")'),
    ({"server": 5}, "[server] must be a table, not 5"),
    ({"users": {"name": "a"}}, "users must be an array of tables: one [[users]] block per user"),
    ({"sources": {"kind": "duckdb"}},
     "[sources] kind = ... is not a source: each source is a table of its own, "
     "[sources.<name>] with kind = ..."),
])
def test_a_wrong_value_names_its_key(data: dict[str, Any], expected: str) -> None:
    assert error_of(data) == expected


# --------------------------------------------------------------------------- across keys


@pytest.mark.parametrize(("data", "expected"), [
    ({"demo": {"scale": 1}, **with_source(kind="duckdb", path="p")},
     "[demo] is used only when no [sources] are configured; remove [demo]"),
    ({"server": {"auth_method": "md5"}},
     "[server] auth_method applies to [[users]]; without [[users]] every connection is "
     "trusted (loopback only): remove auth_method or add users"),
    ({"engine": {"spark_master": "local[1]", "spark_remote": "sc://h:15002"}},
     "[engine] spark_master and spark_remote: set one, not both (spark_remote, Spark Connect, "
     "would win)"),
    ({"users": [{"name": "a", "sources": ["*"]}, {"name": "a", "sources": ["*"]}]},
     '[[users]] "a" appears twice in [[users]]'),
    ({"users": [{"name": "a", "password": "x"}]}, '[[users]] "a" needs sources'),
    ({"users": [{"name": "a", "sources": ["wh"]}]},
     "[[users]] \"a\" sources names 'wh', which is not a source (the sources: demo)"),
    ({"users": [{"name": "a", "sources": ["*", "demo"]}]},
     '[[users]] "a" sources: "*" means every source; list nothing else with it'),
    ({"users": [{"name": "a", "sources": ["*"], "pool_modes": {"demo": "session"}}]},
     "[[users]] \"a\" pool_modes: 'demo' is a duckdb source; it applies to postgres sources only"),
    ({"users": [{"name": "a", "sources": ["*"], "pool_modes": {"x": "statement"}}]},
     '[[users]] "a" pool_modes must be a table of source names to "session" or "transaction", '
     "not a table"),
    ({"users": [{"name": "a", "sources": ["*"], "source_roles": {"demo": "r"}}]},
     "[[users]] \"a\" source_roles: 'demo' is a duckdb source; a role can be set on "
     "postgres sources only"),
    ({"catalog": {"search_path": ["wh"]}, "sources": {"x": {"kind": "duckdb", "path": "p"}}},
     "[catalog] search_path names 'wh', which is not a source (the sources: x)"),
    ({"server": {"host": "0.0.0.0"}},
     "[server] host: a non-loopback address requires [[users]] (trust is loopback-only)"),
    ({"sources": {"pg_catalog": {"kind": "duckdb", "path": "p"}}},
     "[sources.pg_catalog]: the name pg_catalog is reserved for the system catalog; "
     "choose another"),
])
def test_keys_that_cannot_go_together(data: dict[str, Any], expected: str) -> None:
    assert error_of(data) == expected


# --------------------------------------------------------------------------- from a file


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fedgate.toml"
    path.write_text(text)
    return path


def test_an_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[server]\nport = "15434"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f'{path}: [server] port must be an integer from 1 to 65535, not the string "15434"')


def test_toml_that_does_not_parse_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[sources.pg]   kind = "postgres"\n')
    with pytest.raises(ConfigError, match=f"^{path}: not valid TOML: "):
        load_config(path)


def test_a_command_line_override_is_named_as_the_option(tmp_path: Path) -> None:
    path = write(tmp_path, "[server]\nport = 15000\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, port=0)
    assert str(caught.value) == "--port must be an integer from 1 to 65535, not 0"
    with pytest.raises(ConfigError) as caught:
        load_config(path, host="10.1.2.3")
    assert str(caught.value) == ("--host: a non-loopback address requires [[users]] "
                                 "(trust is loopback-only)")
    assert load_config(path, port=15001).server.port == 15001


def test_a_wrong_value_in_the_file_is_not_hidden_by_an_override(tmp_path: Path) -> None:
    path = write(tmp_path, '[server]\nport = "15434"\n')
    with pytest.raises(ConfigError, match=f'^{path}: \\[server\\] port must be an integer'):
        load_config(path, port=15001)


@pytest.mark.parametrize("kind", ["sqlite", "duckdb", "parquet", "csv", "delta"])
def test_a_missing_source_file_names_the_source(tmp_path: Path, kind: str) -> None:
    path = write(tmp_path, f'[sources.x]\nkind = "{kind}"\npath = "data/missing"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f'{path}: [sources.x] path "data/missing": {tmp_path / "data" / "missing"} does not exist')


@pytest.mark.parametrize(("keys", "expected"), [
    ({"path": "files/", "endpoint": "http://h:9000"},
     '[sources.x] endpoint applies to an s3:// path only; path "files/" is a local one'),
    ({"path": "s3://b/p/", "access_key_id": "k"},
     "[sources.x] access_key_id needs secret_access_key (or set neither: the standard AWS "
     "credentials of the gateway's environment apply)"),
    ({"path": "s3://b/p/", "secret_access_key": "env:S"},
     "[sources.x] secret_access_key needs access_key_id (or set neither: the standard AWS "
     "credentials of the gateway's environment apply)"),
    ({"path": "gs://b/p/"},
     '[sources.x] path "gs://b/p/": only s3:// URLs are read (S3 and S3-compatible stores '
     'such as MinIO)'),
    ({"path": "s3://b/", "endpiont": "http://h"},
     "unknown key endpiont in [sources.x] (did you mean endpoint?)"),
])
def test_object_store_keys_are_checked(keys: dict[str, str], expected: str) -> None:
    for kind in ("parquet", "csv", "delta"):
        assert error_of(with_source(kind=kind, **keys)) == expected


def test_an_s3_path_is_not_a_local_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[sources.x]\nkind = "parquet"\npath = "s3://bucket/prefix/"\n')
    config = load_config(path)  # not looked for on disk: the store is read at start-up
    assert source_path(config, config.sources[0]) == "s3://bucket/prefix/"


def test_secrets_come_from_the_environment_or_a_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.config.object_store import secret
    monkeypatch.setenv("FEDGATE_TEST_SECRET", "from-env")
    (tmp_path / "key.txt").write_text("from-file\n")
    assert secret("[sources.x]", "k", "env:FEDGATE_TEST_SECRET", tmp_path) == "from-env"
    assert secret("[sources.x]", "k", "file:key.txt", tmp_path) == "from-file"
    assert secret("[sources.x]", "k", "plain", tmp_path) == "plain"
    monkeypatch.delenv("FEDGATE_TEST_SECRET")
    with pytest.raises(ConfigError, match=r"^\[sources.x\] k: the environment variable "
                                          r"FEDGATE_TEST_SECRET is not set$"):
        secret("[sources.x]", "k", "env:FEDGATE_TEST_SECRET", tmp_path)
    with pytest.raises(ConfigError, match=r"^\[sources.x\] k: cannot read .*missing.txt"):
        secret("[sources.x]", "k", "file:missing.txt", tmp_path)


def test_a_folder_is_not_a_database_file(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    path = write(tmp_path, '[sources.x]\nkind = "sqlite"\npath = "data"\n')
    with pytest.raises(ConfigError,
                       match=r'\[sources.x\] path "data": .* is not a sqlite database file'):
        load_config(path)


def test_a_statement_log_needs_its_folder(tmp_path: Path) -> None:
    (tmp_path / "app.db").touch()
    path = write(tmp_path, '[sources.x]\nkind = "sqlite"\npath = "app.db"\n'
                           'statement_log = "logs/x.log"\n')
    with pytest.raises(ConfigError, match=r'\[sources.x\] statement_log "logs/x.log": the folder'):
        load_config(path)
    (tmp_path / "logs").mkdir()
    assert load_config(path).sources[0].options["statement_log"] == "logs/x.log"


def test_the_shipped_example_parses_as_shipped_and_with_its_sources_uncommented() -> None:
    example = Path(__file__).resolve().parents[3] / "deploy" / "gateway.example.toml"
    config = load_config(example)
    assert config.uses_demo and config.users[0].name == "alice"
    text = "\n".join(line[2:] if line.startswith(("# [sources", "# kind", "# path", "# dsn",
                                                      "# schema", "# read_only")) else line
                     for line in example.read_text().splitlines())
    data = tomllib.loads(text)
    del data["demo"]
    data["catalog"]["search_path"] = ["pg"]
    data["users"][0]["sources"] = ["pg"]
    kinds = {s.name: s.kind for s in parse_config(data).sources}
    assert kinds == {"wh": "duckdb", "pg": "postgres", "shop": "mysql", "lite": "sqlite",
                     "files": "parquet", "lake": "parquet", "tables": "delta"}


def test_listen_errors_name_the_setting(tmp_path: Path) -> None:
    config = Config(file=tmp_path / "fedgate.toml")
    in_use = OSError(errno.EADDRINUSE, "error while attempting to bind ...")
    assert str(listen_error(config, in_use)) == (
        f"{tmp_path / 'fedgate.toml'}: [server] port: cannot listen on 127.0.0.1:15432: "
        "Address already in use")
    from_option = Config(file=config.file, from_command_line=frozenset({"port"}))
    assert str(listen_error(from_option, in_use)) == (
        "--port: cannot listen on 127.0.0.1:15432: Address already in use")
    unknown_host = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert str(listen_error(config, unknown_host)).endswith(
        "[server] host: cannot listen on 127.0.0.1:15432: Name or service not known")


def test_the_ready_line_says_how_to_connect() -> None:
    from gateway.config import connect_command
    assert connect_command(parse_config({})) == 'psql "postgresql://fedgate@127.0.0.1:15432/fedgate"'
    users = [{"name": "ann", "password": "pw", "sources": ["*"]}]
    config = parse_config({"server": {"host": "0.0.0.0", "port": 5433, "database": "db"},
                           "users": users})
    assert connect_command(config) == 'psql "postgresql://ann@127.0.0.1:5433/db"'
