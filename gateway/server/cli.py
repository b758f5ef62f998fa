"""The `fedgate` command: serve, explain, hash-password."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys

from gateway.config import ConfigError, load_config
from pgwire.errors import PgError


def _serve(args: argparse.Namespace) -> int:
    from gateway.server.listener import run
    return run(load_config(args.config, host=args.host, port=args.port, workers=args.workers))


def _explain(args: argparse.Namespace) -> int:
    from gateway.pg_catalog.callable import CALLABLE_FUNCTIONS
    from gateway.server.listener import build_context
    from planner import PlanSettings, plan

    async def explain() -> list[str]:
        config = load_config(args.config)
        ctx = await build_context(config)
        try:
            return plan(args.sql, ctx.catalog, PlanSettings(
                config.search_path, functions=CALLABLE_FUNCTIONS)).explain()
        finally:
            await ctx.close()

    for line in asyncio.run(explain()):
        print(line)
    return 0


def _hash_password(args: argparse.Namespace) -> int:
    from gateway.server.auth import scram_secret
    password = args.password if args.password is not None else getpass.getpass("password: ")
    print(scram_secret(password))
    return 0


def _workers_arg(text: str) -> int | str:
    return text if text == "auto" else int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fedgate", description="A federated SQL gateway that "
                                     "speaks the PostgreSQL wire protocol.")
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
    hashpw = commands.add_parser("hash-password", help="print a SCRAM-SHA-256 secret for [[users]]")
    hashpw.add_argument("password", nargs="?", help="the password (prompted for when omitted)")
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
