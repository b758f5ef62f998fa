#!/usr/bin/env python3
"""Render a fedgate TOML template: every ${NAME} becomes the value of environment variable NAME.

    fedgate-render-config TEMPLATE OUTPUT

The Kubernetes manifests keep the configuration in a ConfigMap and the passwords (DSNs and
[[users]] secrets) in a Secret; an init container renders the two into the file the gateway
reads. Placeholders go inside double-quoted TOML strings, and values are escaped for them,
so a password may hold any character (a DSN still needs its own URL encoding). A name
without a variable is an error, never an empty string; `$$` is a literal dollar sign.
The output is checked to be valid TOML and written readable by its owner only.
"""

from __future__ import annotations

import os
import string
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path


class RenderError(ValueError):
    pass


def toml_escape(value: str) -> str:
    """`value` as the inside of a TOML basic string."""
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def render(template: str, environ: Mapping[str, str]) -> str:
    names = {m.group("named") or m.group("braced")
             for m in string.Template.pattern.finditer(template)
             if m.group("named") or m.group("braced")}
    missing = sorted(n for n in names if n not in environ)
    if missing:
        raise RenderError(f"no environment variable for {', '.join(missing)}")
    rendered = string.Template(template).substitute(
        {name: toml_escape(environ[name]) for name in names})
    try:
        tomllib.loads(rendered)
    except tomllib.TOMLDecodeError as exc:
        raise RenderError(f"the rendered configuration is not valid TOML: {exc}") from exc
    return rendered


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: fedgate-render-config TEMPLATE OUTPUT", file=sys.stderr)
        return 2
    template, output = Path(argv[0]), Path(argv[1])
    try:
        rendered = render(template.read_text(), os.environ)
    except (OSError, RenderError, ValueError) as exc:
        print(f"fedgate-render-config: {exc}", file=sys.stderr)
        return 1
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
