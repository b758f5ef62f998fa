"""deploy/k8s, read without a cluster: the manifests parse, refer to each other by the right
names, agree on ports with the image and the configuration, and run the gateway unprivileged
with the startup and liveness probes on the SQL port and readiness on /readyz of the HTTP
side port, which the configuration turns on."""

from __future__ import annotations

import re
import string
import tomllib

from gateway.config import parse_config
from gateway.server.http.health import PROBE_TIMEOUT_S as HEALTH_TIMEOUT_S
from tests.deploy.files import REPO, k8s_documents, stage, user_of

KINDS = {"ConfigMap", "Secret", "Deployment", "Service", "PodDisruptionBudget"}


def manifests() -> dict:
    return k8s_documents()


def pod_spec() -> dict:
    return manifests()["Deployment"]["spec"]["template"]["spec"]


def gateway_container() -> dict:
    containers = pod_spec()["containers"]
    assert [c["name"] for c in containers] == ["gateway"]
    return containers[0]


def config_template() -> str:
    return manifests()["ConfigMap"]["data"]["gateway.toml"]


def test_the_manifests():
    assert set(manifests()) == KINDS


def test_service_and_budget_select_the_pods():
    deployment = manifests()["Deployment"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert manifests()["Service"]["spec"]["selector"].items() <= labels.items()
    budget = manifests()["PodDisruptionBudget"]["spec"]
    assert budget["selector"]["matchLabels"].items() <= labels.items()
    assert 0 < budget["minAvailable"] < deployment["spec"]["replicas"]


def test_ports_agree_with_the_image_and_the_config():
    port = tomllib.loads(config_template())["server"]["port"]
    container_port, _http = gateway_container()["ports"]
    assert container_port["containerPort"] == port
    assert int(stage("runtime").all("EXPOSE")[0].args) == port
    (service_port,) = manifests()["Service"]["spec"]["ports"]
    assert service_port["targetPort"] == container_port["name"]


def test_startup_and_liveness_probe_the_sql_port():
    """The port listens once the sources are open; a restart would not cure a source down
    or a gateway short of memory, so liveness stays a TCP connect."""
    container = gateway_container()
    for probe in ("startupProbe", "livenessProbe"):
        assert set(container[probe]) - {"periodSeconds", "failureThreshold"} == {"tcpSocket"}
        assert container[probe]["tcpSocket"]["port"] == container["ports"][0]["name"]


def test_readiness_is_readyz_on_the_http_port_the_config_turns_on():
    container = gateway_container()
    probe = container["readinessProbe"]
    assert set(probe) - {"periodSeconds", "failureThreshold", "timeoutSeconds"} == {"httpGet"}
    assert probe["httpGet"]["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    server = tomllib.loads(config_template())["server"]
    assert ports[probe["httpGet"]["port"]] == server["http_port"] != server["port"]
    # The kubelet reaches it on the pod's address, in plain HTTP (no TLS configured).
    assert server["http_host"] == "0.0.0.0" and "tls_cert" not in server
    assert probe["httpGet"].get("scheme", "HTTP") == "HTTP"
    # /readyz may probe the required sources for up to HEALTH_TIMEOUT_S.
    assert probe["timeoutSeconds"] > HEALTH_TIMEOUT_S


def test_the_config_template_is_a_valid_gateway_configuration():
    """With its placeholders filled, the gateway accepts it (every key known and valid;
    the HTTP port on a non-loopback address needs [[users]], which it has)."""
    filled = string.Template(config_template()).substitute(
        FEDGATE_PASSWORD="secret", PG_DSN="postgresql://u@pg/db", MARIADB_DSN="mysql://u@maria/db")
    config = parse_config(tomllib.loads(filled))
    assert config.server.http_port == 8080 and config.engine.temp_directory is None
    # DuckDB spills into the system's temporary folder: a volume of its own, larger than
    # the spill limit.
    volumes = {m["name"]: m["mountPath"] for m in gateway_container()["volumeMounts"]}
    assert volumes["tmp"] == "/tmp"
    (tmp,) = [v for v in pod_spec()["volumes"] if v["name"] == "tmp"]
    size_limit = int(tmp["emptyDir"]["sizeLimit"].removesuffix("Gi"))
    assert size_limit > int(config.engine.temp_directory_max_size.removesuffix("GB"))


def test_shutdown_has_time_to_drain():
    pre_stop = gateway_container()["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    assert pod_spec()["terminationGracePeriodSeconds"] > int(pre_stop[1]) + 30


def test_runs_unprivileged_as_the_image_user():
    security = pod_spec()["securityContext"]
    assert security["runAsNonRoot"] is True
    uid, _, gid = user_of("gateway").partition(":")
    assert (security["runAsUser"], security["runAsGroup"]) == (int(uid), int(gid))
    for container in [*pod_spec()["initContainers"], gateway_container()]:
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]


def test_the_config_is_rendered_from_the_configmap_and_the_secret():
    (init,) = pod_spec()["initContainers"]
    volumes = {v["name"]: v for v in pod_spec()["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
    template_volume = volumes["config-template"]["configMap"]["name"]
    assert template_volume == manifests()["ConfigMap"]["metadata"]["name"]
    assert init["envFrom"] == [{"secretRef": {"name": manifests()["Secret"]["metadata"]["name"]}}]
    command, template, rendered = init["command"]
    assert command == "fedgate-render-config"
    assert template == f"{mounts['config-template']}/gateway.toml"
    assert rendered.startswith(mounts["config"] + "/")
    gateway_mounts = {m["name"]: m["mountPath"] for m in gateway_container()["volumeMounts"]}
    assert gateway_mounts["config"] == mounts["config"]
    assert gateway_container()["args"] == ["serve", "--config", rendered]
    # The same image serves and renders: the Dockerfile installs the render script.
    assert init["image"] == gateway_container()["image"]
    copies = " ".join(i.args for i in stage("runtime").all("COPY"))
    assert re.search(r"deploy/render_config\.py \S*/bin/fedgate-render-config", copies)


def test_every_placeholder_has_a_secret_key():
    placeholders = {m.group("braced") or m.group("named")
                    for m in string.Template.pattern.finditer(config_template())
                    if m.group("braced") or m.group("named")}
    keys = set(manifests()["Secret"]["stringData"])
    assert placeholders == keys
    assert placeholders >= {"FEDGATE_PASSWORD", "PG_DSN", "MARIADB_DSN"}


def test_the_image_is_the_project_version():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert gateway_container()["image"] == f"fedgate:{project['project']['version']}"
