"""pg_cancel_backend(pid) and pg_terminate_backend(pid) on the gateway's own sessions.

The pids clients see (BackendKeyData, pg_backend_pid(), pg_stat_activity) are the
gateway's sessions, so these functions act on them, as PostgreSQL's act on its backends:
a user may signal its own sessions, an admin (`[[users]] admin = true`) any session;
anyone else gets PostgreSQL's 42501. Cancel stops the session's running statement (an
idle session has nothing to stop; the answer is still true, the signal was sent);
terminate ends the session with FATAL 57P01. A pid that is no session of this process is
a WARNING and false, as PostgreSQL answers for a pid that is not a backend.

The statement is recognised in its plain form only (`SELECT pg_cancel_backend(123)` or
`($1)`, see gateway.state.statements); inside a larger query these functions are refused
(planner.access), since they would otherwise reach a source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from gateway.state.portals import Portal
from pgwire.errors import INSUFFICIENT_PRIVILEGE, INVALID_PARAMETER_VALUE, PgError
from pgwire.protocol import encoder

if TYPE_CHECKING:
    from gateway.session.core import SessionCore

_REFUSED = {
    "cancel": ("permission denied to cancel query",
               "Only roles with privileges of the role whose query is being canceled or with "
               'privileges of the "pg_signal_backend" role may cancel this query.'),
    "terminate": ("permission denied to terminate process",
                  "Only roles with privileges of the role whose process is being terminated or "
                  'with privileges of the "pg_signal_backend" role may terminate this process.'),
}


def result_schema(kind: str) -> pa.Schema:
    return pa.schema([(f"pg_{kind}_backend", pa.bool_())])


def target_pid(portal: Portal, written: str) -> int | None:
    """The pid the statement names: a literal, or its one (decoded) parameter; None for
    NULL (the function is strict: no signal, a NULL answer)."""
    value = int(written) if written != "$1" else portal.params[0]
    if value is None:
        return None
    if not -2**31 <= int(value) < 2**31:
        raise PgError("22003", "integer out of range")
    return int(value)


def signal(session: SessionCore, kind: str, pid: int | None) -> pa.RecordBatch:
    """Cancel or terminate session `pid`; the one-row result PostgreSQL returns."""
    if kind not in _REFUSED:
        raise PgError(INVALID_PARAMETER_VALUE, f"unknown signal {kind}")
    if pid is None:
        return pa.RecordBatch.from_arrays([pa.array([None], pa.bool_())], schema=result_schema(kind))
    target = session.ctx.sessions.get(pid)
    if target is None:
        session.write(encoder.notice_response(
            "WARNING", "01000", f"PID {pid} is not a PostgreSQL backend process"))
        sent = False
    else:
        if not (session.access.admin or target.user == session.user):
            message, detail = _REFUSED[kind]
            raise PgError(INSUFFICIENT_PRIVILEGE, message, detail=detail)
        if kind == "cancel":
            target.cancel()
        else:
            target.terminate()
        sent = True
    return pa.RecordBatch.from_arrays([pa.array([sent], pa.bool_())], schema=result_schema(kind))
