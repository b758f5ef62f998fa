"""Readers for the deploy files: the Dockerfile's stages, the compose file, the Kubernetes
manifests and the gateway configurations they carry."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "compose.yaml"
K8S = DEPLOY / "k8s"


@dataclass(frozen=True)
class Instruction:
    op: str  # upper case: FROM, RUN, COPY, ...
    args: str

    def words(self) -> list[str]:
        return shlex.split(self.args)


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, op: str) -> list[Instruction]:
        return [i for i in self.instructions if i.op == op]


def dockerfile_instructions(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comments left out (as Docker does:
    a comment line inside a continued instruction is dropped)."""
    instructions, pending = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = (pending + stripped).strip()
        pending = ""
        if whole:
            op, _, args = whole.partition(" ")
            instructions.append(Instruction(op.upper(), args.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return instructions


def dockerfile_stages(text: str | None = None) -> list[Stage]:
    """The build stages, with ARGs declared before the first FROM substituted in FROM lines."""
    text = DOCKERFILE.read_text() if text is None else text
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in dockerfile_instructions(text):
        if instruction.op == "FROM":
            words = instruction.words()
            base = re.sub(r"\$\{(\w+)\}", lambda m: global_args[m[1]], words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(name, base))
        elif not stages:
            assert instruction.op == "ARG", f"{instruction.op} before the first FROM"
            key, _, value = instruction.args.partition("=")
            global_args[key] = value
        else:
            stages[-1].instructions.append(instruction)
    return stages


def stage(name: str) -> Stage:
    found = {s.name: s for s in dockerfile_stages()}
    assert name in found, f"the Dockerfile has no stage {name!r}"
    return found[name]


def flags_and_rest(words: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """`--name=value` flags of COPY/RUN, and the words after them."""
    flags: dict[str, list[str]] = {}
    while words and words[0].startswith("--"):
        key, _, value = words.pop(0)[2:].partition("=")
        flags.setdefault(key, []).append(value)
    return flags, words


def user_of(stage_name: str) -> str:
    """The USER an image built to `stage_name` runs as (following its FROM chain)."""
    stages = {s.name: s for s in dockerfile_stages()}
    current: Stage | None = stages[stage_name]
    while current is not None:
        users = current.all("USER")
        if users:
            return users[-1].args
        current = stages.get(current.base)
    return "0"  # Docker's default


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def k8s_documents() -> dict[str, dict[str, Any]]:
    """Every manifest in deploy/k8s by kind (one object of each kind)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            assert document["kind"] not in found, f"two {document['kind']} manifests"
            found[document["kind"]] = document
    return found


def toml_file(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


def lock_versions() -> dict[str, str]:
    """requirements.lock as {normalized name: version}."""
    versions = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            versions[normalize(name)] = version.strip()
    return versions


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
