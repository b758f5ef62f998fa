"""deploy/render_config.py (the image's fedgate-render-config): Secret values into the TOML
template, escaped, with every placeholder required."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tomllib

import pytest

from tests.deploy.files import DEPLOY

SCRIPT = DEPLOY / "render_config.py"


def render(tmp_path, template: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    source = tmp_path / "template.toml"
    source.write_text(template)
    return subprocess.run([sys.executable, str(SCRIPT), str(source), str(tmp_path / "out.toml")],
                          env={"PATH": os.environ["PATH"], **env}, capture_output=True,
                          text=True, timeout=60, check=False)


def test_values_are_escaped_for_toml_strings(tmp_path):
    awkward = 'p"a\\s$s\nword'
    res = render(tmp_path, 'dsn = "postgresql://u:${PW}@h/db"\ncost = "$$5"\n', {"PW": awkward})
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out.toml"
    assert tomllib.loads(out.read_text()) == {"dsn": f"postgresql://u:{awkward}@h/db", "cost": "$5"}
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_a_missing_variable_is_an_error(tmp_path):
    res = render(tmp_path, 'a = "${ONE}"\nb = "${TWO}"\n', {"ONE": "1"})
    assert res.returncode == 1
    assert "TWO" in res.stderr
    assert not (tmp_path / "out.toml").exists()


def test_the_output_must_be_toml(tmp_path):
    res = render(tmp_path, "a = ${ONE}\n", {"ONE": "not a toml value"})
    assert res.returncode == 1
    assert "not valid TOML" in res.stderr


@pytest.mark.parametrize("argv", [[], ["only-one"]])
def test_usage(argv):
    res = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode == 2 and "usage" in res.stderr
