"""The `fedgate` command: serve, explain, check-config, sources, hash-password, --version."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from importlib import metadata

from gateway.config import ConfigError, load_config
from pgwire.errors import PgError


def _serve(args: argparse.Namespace) -> int:
    from gateway.server.listener import run
    return run(load_config(args.config, host=args.host, port=args.port, workers=args.workers))


def _explain(args: argparse.Namespace) -> int:
    from gateway.pg_catalog.callable import CALLABLE_FUNCTIONS
    from gateway.server.listener import build_context
    from gateway.state.engine_choice import configured_inlining
    from planner import PlanSettings, plan

    async def explain() -> list[str]:
        config = load_config(args.config)
        ctx = await build_context(config)
        try:
            return plan(args.sql, ctx.catalog, PlanSettings(
                config.search_path, functions=CALLABLE_FUNCTIONS,
                inlining=configured_inlining(config.engine))).explain()
        finally:
            await ctx.close()

    for line in asyncio.run(explain()):
        print(line)
    return 0


def _hash_password(args: argparse.Namespace) -> int:
    from gateway.server.auth import scram_secret
    if args.password is not None:
        # An argument would stay in the shell history and show in `ps`.
        print("fedgate: hash-password reads the password from a prompt or from standard input, "
              "never from the command line", file=sys.stderr)
        return 2
    password = _read_password()
    if password is None:
        return 1
    print(scram_secret(password))
    return 0


def _read_password() -> str | None:
    """The password typed twice at a prompt, or the first line of standard input when it is
    not a terminal (`fedgate hash-password < file`, or piped from a secret store)."""
    if sys.stdin.isatty():
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            print("fedgate: the passwords do not match", file=sys.stderr)
            return None
    else:
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    if not password:
        print("fedgate: the password is empty", file=sys.stderr)
        return None
    return password


def _check_config(args: argparse.Namespace) -> int:
    from gateway.server.source_probe import probe_sources, probe_table
    config = load_config(args.config)
    probes = asyncio.run(probe_sources(config, args.timeout))
    for line in probe_table(probes):
        print(line)
    return 0 if all(p.reachable for p in probes) else 1


def _sources(args: argparse.Namespace) -> int:
    from gateway.server.source_probe import sources_table
    for line in sources_table(load_config(args.config)):
        print(line)
    return 0


def _version() -> str:
    """The version of the installed distribution (pip's answer, the wheel's metadata)."""
    try:
        return metadata.version("fedgate")
    except metadata.PackageNotFoundError:
        return "unknown (fedgate is not installed: pip install -e .)"


def _workers_arg(text: str) -> int | str:
    return text if text == "auto" else int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fedgate", description="A federated SQL gateway that "
                                     "speaks the PostgreSQL wire protocol.")
    parser.add_argument("--version", action="version", version=f"fedgate {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help="TOML config file (default: the embedded DuckDB demo)")
    serve.add_argument("--host", help="listen address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default 15432)")
    serve.add_argument("--workers", type=_workers_arg,
                       help='worker processes sharing the port; 0 or "auto": one per CPU '
                       '(default 1)')
    serve.set_defaults(func=_serve)
    explain = commands.add_parser("explain", help="print the federated plan of a query")
    explain.add_argument("--config", help="TOML config file")
    explain.add_argument("sql", help="the query")
    explain.set_defaults(func=_explain)
    check = commands.add_parser(
        "check-config", help="parse a config file and probe every source it names",
        description="Parse the config, then open each source as the gateway would and list its "
        "tables. Exit 0 when every source answers, 1 when one does not, 2 when the file is wrong. "
        "A config without [sources] checks the embedded demo (generating it on first use).")
    check.add_argument("config", help="TOML config file")
    check.add_argument("--timeout", type=float, default=10.0,
                       help="seconds to wait for each source (default 10)")
    check.set_defaults(func=_check_config)
    sources = commands.add_parser("sources", help="list the configured sources (passwords masked)")
    sources.add_argument("--config", help="TOML config file (default: the embedded DuckDB demo)")
    sources.set_defaults(func=_sources)
    hashpw = commands.add_parser(
        "hash-password", help="print a SCRAM-SHA-256 secret for [[users]]",
        description="Reads the password at a prompt (typed twice), or the first line of standard "
        "input when it is not a terminal.")
    # Accepted only to refuse it with a reason: see _hash_password.
    hashpw.add_argument("password", nargs="?", help=argparse.SUPPRESS)
    hashpw.set_defaults(func=_hash_password)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as exc:
        print(f"fedgate: configuration error: {exc}", file=sys.stderr)
        return 2
    except PgError as exc:
        print(f"fedgate: ERROR {exc.sqlstate}: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
