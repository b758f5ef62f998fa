"""The status page: live sessions and their statements, source health, the last slow or
failed statements, each federated plan drawn as a graph (`plan_svg`).

Plain HTML rendered here, every value escaped; no script (a link reloads
it). The cancel button posts the session's pid with the cancel token
(`access.cancel_token`); `site` checks it and cancels through `ServerContext.cancel`,
the path a CancelRequest takes.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from html import escape
from typing import Any

from gateway.config.memory import shown_bytes
from gateway.relay.pool import POOL_COLUMNS, pool_rows
from gateway.server.http.health import Health
from gateway.server.http.plan_svg import plan_svg
from gateway.state.activity import activity_of
from gateway.state.context import ServerContext
from gateway.state.session import SessionState
from planner.explain_json import plan_document

QUERY_CHARS = 2000  # a query longer than this is cut on the page

_STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#202124}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #dadce0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f4}
td.sql,pre{font-family:monospace;white-space:pre-wrap;word-break:break-word;max-width:60em}
.up{color:#137333;font-weight:bold}.down{color:#c5221f;font-weight:bold}
.err{color:#c5221f}.muted{color:#5f6368}
details{margin:.3em 0}summary{cursor:pointer;color:#1a73e8}
svg.plan{background:#fff;border:1px solid #dadce0;margin:.4em 0}
button{background:#c5221f;color:#fff;border:0;border-radius:4px;padding:3px 10px}
"""


def _ago(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def _query(sql: str) -> str:
    shown = sql if len(sql) <= QUERY_CHARS else sql[:QUERY_CHARS] + " …"
    return escape(shown)


def _graph(document: list[dict[str, Any]], open_: bool = False) -> str:
    return (f"<details{' open' if open_ else ''}><summary>plan graph</summary>"
            f"{plan_svg(document)}</details>")


def _sessions(ctx: ServerContext, token: str) -> str:
    rows = []
    now = time.time()
    for pid, target in sorted(ctx.sessions.items()):
        if not isinstance(target, SessionState):
            continue
        activity = activity_of(target)
        running = activity.state == "active" and activity.started is not None
        duration = _ago(now - activity.started) if running and activity.started else ""
        graph = ""
        if running and activity.plan is not None:
            engine, why = target.engine_for(activity.plan)
            graph = _graph(plan_document(activity.plan, engine, why), open_=True)
        cancel = (f'<form method="post" action="/cancel"><input type="hidden" name="pid" value="{pid}">'
                  f'<input type="hidden" name="token" value="{escape(token)}">'
                  '<button type="submit">cancel</button></form>') if running else ""
        rows.append(f"<tr class=\"session\"><td>{pid}</td><td>{escape(target.user)}</td>"
                    f"<td>{escape(target.database)}</td><td>{escape(activity.state)}</td>"
                    f"<td>{escape(', '.join(activity.sources))}</td><td>{duration}</td>"
                    f"<td class=\"sql\">{_query(activity.query)}{graph}</td><td>{cancel}</td></tr>")
    if not rows:
        return '<p class="muted">no sessions</p>'
    return ("<table><tr><th>pid</th><th>user</th><th>database</th><th>state</th><th>sources</th>"
            "<th>running for</th><th>query</th><th></th></tr>" + "".join(rows) + "</table>")


def _kind(kind: str, options: dict) -> str:
    """A source's kind, with the store it reads when that is object storage (the URL
    only: the endpoint and credentials stay in the configuration)."""
    path = options.get("path")
    return f"{kind} in {path}" if isinstance(path, str) and path.startswith("s3://") else kind


def _health(ctx: ServerContext, health: Health) -> str:
    required = set(health.required)
    rows = []
    for name in health.names:
        state = health.sources.get(name)
        if state is None:
            status, since, error = '<span class="muted">not probed yet</span>', "", ""
        else:
            status = '<span class="up">up</span>' if state.up else '<span class="down">down</span>'
            since = datetime.fromtimestamp(state.since, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            error = escape(state.last_error or "")
        kind = next((_kind(s.kind, s.options) for s in ctx.config.sources if s.name == name), "")
        rows.append(f"<tr><td>{escape(name)}</td><td>{escape(kind)}</td>"
                    f"<td>{'yes' if name in required else 'no'}</td><td>{status}</td>"
                    f"<td>{since}</td><td class=\"err\">{error}</td></tr>")
    return ("<table><tr><th>source</th><th>kind</th><th>required</th><th>state</th><th>since</th>"
            "<th>last error</th></tr>" + "".join(rows) + "</table>")


def _pools(ctx: ServerContext) -> str:
    """The relay's pools, as SHOW fedgate.pools lists them."""
    rows = ["<tr class=\"pool\">" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>"
            for row in pool_rows(ctx.pools)]
    if not rows:
        return '<p class="muted">no connection relayed yet</p>'
    return ("<table><tr>" + "".join(f"<th>{escape(c)}</th>" for c in POOL_COLUMNS) + "</tr>"
            + "".join(rows) + "</table>")


def _recent(ctx: ServerContext) -> str:
    rows = []
    for index, (number, entry) in enumerate(ctx.recent.listed()):
        when = datetime.fromtimestamp(entry.finished, timezone.utc).strftime("%H:%M:%S")
        outcome = (f'<span class="err">{escape(entry.sqlstate or "")} {escape(entry.message or "")}</span>'
                   if entry.sqlstate else "ok")
        graph = _graph(plan_document(entry.plan, entry.engine, entry.engine_why, entry.figures), open_=index == 0) \
            if entry.plan is not None else ""
        rows.append(f"<tr class=\"recent\" id=\"s{number}\"><td>{when}</td><td>{escape(entry.user)}</td>"
                    f"<td>{escape(entry.path)}</td><td>{escape(', '.join(entry.sources))}</td>"
                    f"<td>{_ago(entry.seconds)}</td><td>{outcome}</td>"
                    f"<td class=\"sql\">{_query(entry.sql)}{graph}</td></tr>")
    if not rows:
        return '<p class="muted">none yet</p>'
    return ("<table><tr><th>ended</th><th>user</th><th>road</th><th>sources</th><th>took</th>"
            "<th>outcome</th><th>query</th></tr>" + "".join(rows) + "</table>")


def _memory(ctx: ServerContext) -> str:
    """The engine's memory: the pool's figures, then each running engine statement's."""
    pool = ctx.memory
    if pool is None:
        return '<p class="muted">not counted</p>'
    used = ""
    if pool.engine is not None:
        in_use, spilled = pool.engine.memory_in_use()
        used = f" · DuckDB uses {shown_bytes(in_use)}, spilled {shown_bytes(spilled)}"
    head = (f'<p class="memory">memory_limit {shown_bytes(pool.limit)} · shares taken '
            f"{shown_bytes(pool.reserved)} · fragment rows held {shown_bytes(pool.held)}{used}"
            f" · waiting for a share: {pool.waiting}</p>")
    rows = [f"<tr class=\"statement-memory\"><td>{escape(s.label or f'#{n}')}</td>"
            f"<td>{shown_bytes(s.share) if s.pool is not None else 'none (light)'}</td>"
            f"<td>{shown_bytes(s.held)}</td><td>{shown_bytes(s.peak)}</td></tr>"
            for n, s in sorted(pool.statements.items())]
    if not rows:
        return head + '<p class="muted">no engine statement running</p>'
    return (head + "<table><tr><th>statement</th><th>share</th><th>held now</th><th>peak</th></tr>"
            + "".join(rows) + "</table>")


def render(ctx: ServerContext, health: Health, token: str) -> bytes:
    worker = f" (worker {ctx.worker_index} of {ctx.worker_count})" if ctx.worker_count > 1 else ""
    page = (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<link rel=\"icon\" href=\"data:,\"><title>fedgate status</title><style>{_STYLE}</style></head><body>"
            f"<h1>fedgate status: database {escape(ctx.config.server.database)}{escape(worker)}</h1>"
            '<p><a href="/">refresh</a> · <a href="/metrics">metrics</a> · '
            '<a href="/readyz">readiness</a></p>'
            f"<h2>Sessions</h2>{_sessions(ctx, token)}"
            f"<h2>Engine memory</h2>{_memory(ctx)}"
            f"<h2>Sources</h2>{_health(ctx, health)}"
            f"<h2>Relay pools</h2>{_pools(ctx)}"
            f"<h2>Recent slow or failed statements</h2>{_recent(ctx)}"
            "</body></html>")
    return page.encode("utf-8")
