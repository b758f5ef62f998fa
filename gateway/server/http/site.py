"""The HTTP side port: which path answers what, and the listener.

    GET  /          the status page (access.authenticate first)
    GET  /metrics   Prometheus text exposition
    GET  /healthz   200 while the process serves
    GET  /readyz    200 when every `required = true` source answers and no statement waits
                    for engine memory, else 503 with JSON
    POST /cancel    cancel a session's statement (the form's pid and token)

/healthz and /readyz answer without authentication (orchestrators probe them) and say
nothing but source names and states; everything else needs `access.authenticate`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl

from gateway.config import ConfigError
from gateway.server.http import access, status_page
from gateway.server.http.health import Health
from gateway.server.http.metrics_page import exposition, metrics_registry
from gateway.server.http.protocol import (MAX_HEAD_BYTES, BadRequest, Request, Response,
                                          encode_response, read_request)
from gateway.state.context import ServerContext

log = logging.getLogger("fedgate.http")
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
# Connections served at once; each lives at most protocol.READ_TIMEOUT_S before answering.
MAX_CONNECTIONS = 64


class Site:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self.health = Health(ctx)
        self.registry = metrics_registry(ctx, self.health)
        self.open_connections = 0

    async def answer(self, request: Request) -> Response:
        if request.path == "/healthz":
            return Response(200, b"ok\n")
        if request.path == "/readyz":
            return await self.readyz()
        if request.path not in ("/", "/metrics", "/cancel"):
            return Response(404, b"not found\n")
        user, refusal = await access.authenticate(self.ctx.config, request)
        if refusal is not None:
            return refusal
        if request.path == "/cancel":
            if request.method != "POST":
                return Response(405, b"POST only\n", headers={"Allow": "POST"})
            return self.cancel(user, request)
        if request.method not in ("GET", "HEAD"):
            return Response(405, b"GET only\n", headers={"Allow": "GET, HEAD"})
        if request.path == "/metrics":
            return Response(200, exposition(self.registry), PROMETHEUS_TEXT)
        return Response(200, status_page.render(self.ctx, self.health, access.cancel_token(user)),
                        "text/html; charset=utf-8")

    async def readyz(self) -> Response:
        required = self.health.required
        await self.health.check(required)
        # Names only: /readyz needs no authentication, and a driver's error can name hosts
        # (the reasons are on the status page).
        failing = [name for name in required if not self.health.sources[name].up]
        # Out of memory: statements wait for a share of the engine's memory (its pool is
        # committed), so new clients are better served by another replica.
        waiting = self.ctx.memory.waiting if self.ctx.memory is not None else 0
        body = {"ready": not failing and not waiting, "required": required, "failing": failing,
                "waiting_for_memory": waiting}
        return Response(503 if failing or waiting else 200, json.dumps(body).encode() + b"\n",
                        "application/json")

    def cancel(self, user: str | None, request: Request) -> Response:
        form = request.form()
        if not access.token_ok(user, form.get("token", "")):
            return Response(403, b"bad or missing cancel token: reload the status page\n")
        try:
            pid = int(form.get("pid", ""))
        except ValueError:
            return Response(400, b"pid must be a number\n")
        session = self.ctx.sessions.get(pid)
        if session is None:
            return Response(404, b"no such session in this process\n")
        log.info("status page: %s cancels the statement of session %d", user or "(trust)", pid)
        self.ctx.cancel(pid, session.key)  # the path CancelRequest takes
        return Response(303, b"", headers={"Location": "/"})

    async def serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.open_connections >= MAX_CONNECTIONS:
            writer.close()  # a flood of idle connections must not pile up
            return
        self.open_connections += 1
        try:
            try:
                request = await read_request(reader)
                response = await self.answer(request)
                head_only = request.method == "HEAD"
            except BadRequest as bad:
                response, head_only = Response(bad.status, f"{bad}\n".encode()), False
            except TimeoutError:
                return
            writer.write(encode_response(response, head_only))
            await writer.drain()
        except ConnectionError:
            pass  # the client left; nothing to answer
        except Exception:  # a bug of ours: log it, keep serving others
            log.exception("HTTP request failed")
        finally:
            self.open_connections -= 1
            writer.close()


async def serve_http(ctx: ServerContext, ssl_context: ssl.SSLContext | None = None
                     ) -> tuple[asyncio.Server, asyncio.Task[None]]:
    """Listen on `[server] http_host`:`http_port` (+ the worker's index); with an SSL
    context (the SQL port's TLS configuration), HTTPS. Returns the server and the task
    that probes the sources; the caller closes and cancels them."""
    server_config = ctx.config.server
    site = Site(ctx)
    port = server_config.http_port + ctx.worker_index
    try:
        server = await asyncio.start_server(site.serve_one, server_config.http_bind_host, port,
                                            limit=MAX_HEAD_BYTES, ssl=ssl_context)
    except OSError as exc:
        raise ConfigError(f"[server] http_port: cannot listen on {server_config.http_bind_host}:"
                          f"{port}: {os.strerror(exc.errno) if exc.errno else exc}",
                          ctx.config.file) from exc
    log.info("HTTP port on %s:%d (/metrics, /healthz, /readyz, status page at /)",
             server_config.http_bind_host, port)
    return server, asyncio.ensure_future(site.health.run_periodically())
