"""deploy/k8s, read without a cluster: the manifests parse, refer to each other by the right
names, agree on ports with the image and the configuration, and run the gateway unprivileged
with probes on what exists (the SQL port)."""

from __future__ import annotations

import re
import string
import tomllib

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
    (container_port,) = gateway_container()["ports"]
    assert container_port["containerPort"] == port
    assert int(stage("runtime").all("EXPOSE")[0].args) == port
    (service_port,) = manifests()["Service"]["spec"]["ports"]
    assert service_port["targetPort"] == container_port["name"]


def test_probes_use_the_sql_port_only():
    """No HTTP endpoint exists yet: every probe is a TCP connect to the SQL port."""
    container = gateway_container()
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert set(container[probe]) - {"periodSeconds", "failureThreshold"} == {"tcpSocket"}
        assert container[probe]["tcpSocket"]["port"] == container["ports"][0]["name"]


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
