"""deploy/compose.yaml, read without a Docker engine: it parses, what it mounts and builds
exists, its ports and credentials agree with the gateway configuration it mounts."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from tests.deploy.files import (DEPLOY, REPO, compose, dockerfile_stages, lock_versions,
                                stage, toml_file)

COMPOSE_CONFIG = DEPLOY / "compose" / "gateway.toml"
SPARK_SERVICES = ("spark-master", "spark-worker", "spark-connect")


def services() -> dict:
    return compose()["services"]


def test_the_services():
    assert set(services()) == {"gateway", "postgres", "mariadb", *SPARK_SERVICES}
    assert services()["postgres"]["image"] == "postgres:15"
    assert services()["mariadb"]["image"].startswith("mariadb:")


def test_every_service_has_a_health_check_and_waits_for_healthy_dependencies():
    for name, service in services().items():
        assert service["healthcheck"]["test"], name
        for dependency, condition in service.get("depends_on", {}).items():
            assert dependency in services(), (name, dependency)
            assert condition == {"condition": "service_healthy"}, (name, dependency)
    assert set(services()["gateway"]["depends_on"]) == {"postgres", "mariadb", "spark-connect"}


def test_builds_name_existing_stages_of_the_dockerfile():
    stage_names = {s.name for s in dockerfile_stages()}
    for name, service in services().items():
        build = service.get("build")
        if build is None:
            continue
        context = (DEPLOY / build["context"]).resolve()
        assert context == REPO, name
        assert (context / build["dockerfile"]).is_file(), name
        assert build["target"] in stage_names, name
    assert services()["gateway"]["build"]["target"] == "gateway"
    pyspark = lock_versions()["pyspark"]
    for name in SPARK_SERVICES:
        assert services()[name]["build"]["target"] == "spark"
        assert services()[name]["image"].endswith(f":{pyspark}")


def bind_mounts(service: dict) -> list[tuple[Path, str]]:
    mounts = []
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            mounts.append((DEPLOY / source, target))
    return mounts


def test_every_mounted_file_exists():
    mounted = 0
    for name, service in services().items():
        for source, _ in bind_mounts(service):
            assert source.is_file(), f"{name} mounts {source}, which does not exist"
            mounted += 1
    assert mounted == 3
    named = {v.split(":")[0] for s in services().values() for v in s.get("volumes", [])
             if not v.startswith(".")}
    assert named == set(compose()["volumes"])


def test_the_gateway_serves_its_mounted_config_on_the_published_port():
    gateway = services()["gateway"]
    (source, target), = bind_mounts(gateway)
    assert source == COMPOSE_CONFIG
    assert gateway["command"] == ["serve", "--config", target]
    port = toml_file(COMPOSE_CONFIG)["server"]["port"]
    exposed = int(stage("runtime").all("EXPOSE")[0].args)
    published = gateway["ports"][0].rsplit(":", 1)
    assert int(published[-1]) == port == exposed
    assert f"('127.0.0.1', {port})" in " ".join(gateway["healthcheck"]["test"])


def test_spark_connect_is_where_the_gateway_looks_for_it():
    remote = urlsplit(toml_file(COMPOSE_CONFIG)["engine"]["spark_remote"])
    assert remote.scheme == "sc"
    assert remote.hostname == "spark-connect" and services()[remote.hostname]
    connect = " ".join(services()["spark-connect"]["command"])
    assert f"spark.connect.grpc.binding.port={remote.port}" in connect
    assert f"/dev/tcp/127.0.0.1/{remote.port}" in " ".join(
        services()["spark-connect"]["healthcheck"]["test"])
    master = " ".join(services()["spark-master"]["command"])
    port = re.search(r"--port (\d+)", master)[1]
    assert f"spark://spark-master:{port}" in " ".join(services()["spark-worker"]["command"])
    assert f"spark://spark-master:{port}" in connect


def test_the_sources_use_the_databases_compose_starts():
    sources = toml_file(COMPOSE_CONFIG)["sources"]
    pg = urlsplit(sources["pg"]["dsn"])
    env = services()["postgres"]["environment"]
    assert (pg.hostname, pg.port) == ("postgres", 5432)
    assert (pg.username, pg.password, pg.path) == (
        env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], "/" + env["POSTGRES_DB"])
    maria = urlsplit(sources["maria"]["dsn"])
    env = services()["mariadb"]["environment"]
    assert (maria.hostname, maria.port) == ("mariadb", 3306)
    assert (maria.username, maria.password, maria.path) == (
        env["MARIADB_USER"], env["MARIADB_PASSWORD"], "/" + env["MARIADB_DATABASE"])


def test_the_gateway_image_is_the_project_version():
    version = toml_file(REPO / "pyproject.toml")["project"]["version"]
    assert services()["gateway"]["image"] == f"fedgate:{version}"
