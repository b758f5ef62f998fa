"""deploy/Dockerfile, read without a Docker engine: its stages, the files it copies, the user
its images run as, and that it installs what `make` installs from the same lock file."""

from __future__ import annotations

import fnmatch
import re
import tomllib

from packaging.markers import default_environment
from packaging.requirements import Requirement

from tests.deploy.files import (DEPLOY, DOCKERFILE, REPO, dockerfile_stages, flags_and_rest,
                                lock_versions, normalize, stage, user_of)

SHIPPED = ("gateway", "gateway-spark")


def test_the_default_target_is_the_slim_gateway():
    stages = dockerfile_stages()
    assert stages[-1].name == "gateway"  # `docker build` without --target builds the last stage
    assert {"build", "runtime", "spark", "gateway-spark", "gateway"} <= {s.name for s in stages}


def test_python_base_image_and_spark_version():
    stages = {s.name: s for s in dockerfile_stages()}
    for name in ("build", "runtime", "jdbc-drivers"):
        assert stages[name].base == "python:3.11-slim"
    # The Spark image is the version PySpark is locked to (the Connect client and server
    # must agree).
    assert stages["spark"].base == f"apache/spark:{lock_versions()['pyspark']}"


def test_images_run_as_an_unprivileged_numeric_user():
    for name in SHIPPED:
        user = user_of(name)
        uid, _, gid = user.partition(":")
        # Numeric: Kubernetes' runAsNonRoot can only verify a numeric user.
        assert uid.isdigit() and int(uid) > 0, (name, user)
        assert not gid or (gid.isdigit() and int(gid) > 0), (name, user)
    assert "useradd --uid 10001" in " ".join(
        i.args for i in stage("runtime").all("RUN"))


def copy_sources() -> list[str]:
    """Every file or folder of the build context a COPY or a bind mount reads."""
    sources = []
    for s in dockerfile_stages():
        for instruction in s.all("COPY"):
            flags, words = flags_and_rest(instruction.words())
            if "from" not in flags:
                sources += words[:-1]
        for instruction in s.all("RUN"):
            for mount in re.findall(r"--mount=(\S+)", instruction.args):
                options = dict(part.partition("=")[::2] for part in mount.split(","))
                if options.get("type") == "bind" and "from" not in options:
                    sources.append(options["source"])
    return sources


def test_every_copied_file_exists_and_is_not_ignored():
    sources = copy_sources()
    assert "requirements.lock" in sources and "pyproject.toml" in sources
    ignore = DEPLOY / "Dockerfile.dockerignore"
    patterns = [line.strip() for line in ignore.read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    for source in sources:
        assert (REPO / source).exists(), f"COPY {source}: no such file in the repository"
        for pattern in patterns:
            assert not fnmatch.fnmatch(source.rstrip("/"), pattern.rstrip("/")), \
                f"{source} is copied but {ignore.name} ignores it ({pattern})"


def test_the_wheel_holds_every_package_the_project_declares():
    """The build stage copies each top-level package that pyproject.toml packages."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    packaged = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    copied = {source.rstrip("/") for source in copy_sources()}
    assert packaged <= copied


def test_installs_from_the_lock_file_make_uses():
    makefile = (REPO / "Makefile").read_text()
    assert "-r requirements.lock" in makefile
    runtime = " ".join(i.args for i in stage("runtime").all("RUN"))
    assert "source=/src/requirements.lock" in runtime
    assert "--constraint /tmp/requirements.lock" in runtime
    build = " ".join(i.args for i in stage("build").all("RUN"))
    assert "pip wheel" in build and "--no-deps" in build  # fedgate itself, nothing resolved


def runtime_closure() -> set[str]:
    """fedgate's runtime dependencies and theirs, as installed (the lock's venv)."""
    from importlib import metadata

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    environment = default_environment()
    pending = [(Requirement(text), ()) for text in project["dependencies"]]
    seen: set[str] = set()
    while pending:
        requirement, extras = pending.pop()
        marker_env = [{**environment, "extra": extra} for extra in (extras or ("",))]
        if requirement.marker and not any(requirement.marker.evaluate(e) for e in marker_env):
            continue
        name = normalize(requirement.name)
        key = name + "[" + ",".join(sorted(requirement.extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        for text in metadata.requires(requirement.name) or []:
            pending.append((Requirement(text), tuple(requirement.extras)))
    return {key.partition("[")[0] for key in seen}


def test_the_lock_pins_every_runtime_dependency():
    """As constraints the lock gives exact versions only to what it names: every package the
    image installs must be in it, or the image would float."""
    missing = runtime_closure() - set(lock_versions())
    assert not missing, f"not pinned in requirements.lock: {sorted(missing)}"


def test_jdbc_drivers_are_the_ones_the_gateway_looks_for():
    from connectors.engines.spark_jdbc import JARS

    drivers = " ".join(i.args for i in stage("jdbc-drivers").all("RUN"))
    for jar in JARS.values():
        assert jar in drivers
    assert [i.args for i in stage("spark").all("COPY")] == ["--from=jdbc-drivers /jars/ /opt/spark/jars/"]
    makefile = (REPO / "Makefile").read_text()
    for package in ("libpostgresql-jdbc-java", "libmariadb-java"):
        assert package in makefile
        for name in ("jdbc-drivers", "gateway-spark"):
            assert package in " ".join(i.args for i in stage(name).all("RUN"))
    assert "default-jre-headless" in " ".join(i.args for i in stage("gateway-spark").all("RUN"))
    assert "default-jre-headless" not in DOCKERFILE.read_text().split("AS gateway-spark")[0]


def test_exposes_the_port_of_the_example_configs():
    exposed = [i.args for i in stage("runtime").all("EXPOSE")]
    assert exposed == ["15432"]
