"""Statements the session answers itself: SET/SHOW/RESET, transaction control, DISCARD ...

Each handler returns a `UtilityResult`: a command tag, and rows for the ones that return
rows (SHOW, EXPLAIN). Transaction control only moves the session's status byte for now:
no source takes part in a transaction until writes arrive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from pgwire.errors import (FEATURE_NOT_SUPPORTED, INVALID_SQL_STATEMENT_NAME,
                            NO_ACTIVE_SQL_TRANSACTION, SYNTAX_ERROR, UNDEFINED_OBJECT, PgError)
from gateway.relay.pool import POOL_COLUMNS, pool_rows
from gateway.state.pg_settings import shown_default
from gateway.state.settings import DEFAULTS, canonical
from gateway.state.statements import Utility

if TYPE_CHECKING:
    from gateway.session.core import SessionCore


@dataclass
class UtilityResult:
    tag: str
    rows: pa.RecordBatch | None = None
    notices: list[str] = field(default_factory=list)  # WARNING texts, sent before the tag


def text_rows(names: list[str], rows: list[tuple[str | None, ...]]) -> pa.RecordBatch:
    columns = [pa.array([r[i] for r in rows], pa.string()) for i in range(len(names))]
    return pa.RecordBatch.from_arrays(columns, names=names)


def json_plan_field() -> pa.Field:
    """EXPLAIN (FORMAT JSON)'s one column: "QUERY PLAN" of type json, as PostgreSQL's."""
    return pa.field("QUERY PLAN", pa.string(), metadata={b"pg_type": b"json"})


def json_rows(document: object) -> pa.RecordBatch:
    import json  # only EXPLAIN (FORMAT JSON) needs it
    return pa.RecordBatch.from_arrays([pa.array([json.dumps(document, indent=2)], pa.string())],
                                      schema=pa.schema([json_plan_field()]))


def result_schema(utility: Utility) -> pa.Schema | None:
    """The row shape a utility returns, known before running it (for Describe)."""
    if utility.kind == "show":
        if utility.name == "all":
            return pa.schema([("name", pa.string()), ("setting", pa.string()), ("description", pa.string())])
        return pa.schema([(utility.name or "", pa.string())])
    if utility.kind == "explain":
        return pa.schema([json_plan_field()]) if "JSON" in utility.options \
            else pa.schema([("QUERY PLAN", pa.string())])
    return None


_NOT_IN_BLOCK = "SET TRANSACTION can only be used in transaction blocks"
_LOCAL_NOT_IN_BLOCK = "SET LOCAL can only be used in transaction blocks"


def _role_refused(statement: str) -> PgError:
    """SET ROLE would be accepted and ignored: the sources would not run under it."""
    return PgError(FEATURE_NOT_SUPPORTED, f"{statement} is not supported by fedgate",
                   detail="Each user's statements run under the role [[users]] source_roles "
                          "maps for each source; a session cannot change it.")


def _read_only_words(value: str) -> str | None:
    """"on" or "off" when a SET TRANSACTION / CHARACTERISTICS value says READ ONLY/WRITE."""
    words = value.upper().replace(",", " ").split()
    for first, second in zip(words, words[1:]):
        if first == "READ" and second in ("ONLY", "WRITE"):
            return "on" if second == "ONLY" else "off"
    return None


_ISOLATION_LEVELS = ("serializable", "repeatable read", "read committed", "read uncommitted")


def _transaction_modes(value: str) -> tuple[str | None, str | None, str | None]:
    """SET TRANSACTION's modes: (isolation level, "on"/"off" for READ ONLY/WRITE,
    "DEFERRABLE"/"NOT DEFERRABLE"), each None when not given; 42601 for other words, as
    PostgreSQL's grammar has it (SNAPSHOT: 0A000)."""
    written = value.replace(",", " ").split()
    words = [word.lower() for word in written]
    level = read_only = deferrable = None
    at = 0
    while at < len(words):
        pair = " ".join(words[at:at + 2])
        if pair == "isolation level" and " ".join(words[at + 2:at + 4]) in _ISOLATION_LEVELS:
            level, at = " ".join(words[at + 2:at + 4]), at + 4
        elif pair == "isolation level" and at + 2 < len(words) and words[at + 2] == "serializable":
            level, at = "serializable", at + 3
        elif pair in ("read only", "read write"):
            read_only, at = "on" if pair == "read only" else "off", at + 2
        elif words[at] == "deferrable" or pair == "not deferrable":
            deferrable = "DEFERRABLE" if words[at] == "deferrable" else "NOT DEFERRABLE"
            at += 1 if words[at] == "deferrable" else 2
        elif words[at] == "snapshot":
            raise PgError(FEATURE_NOT_SUPPORTED, "SET TRANSACTION SNAPSHOT is not supported by fedgate")
        else:
            wrong = at + 2 if pair == "isolation level" else at  # the word after LEVEL
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{written[wrong]}"'
                          if wrong < len(written) else "syntax error at end of input")
    return level, read_only, deferrable


def run_set(session: SessionCore, utility: Utility) -> UtilityResult:
    assert utility.name is not None and utility.value is not None
    value = utility.value
    if utility.name == "role":
        if value.lower() != "none":
            raise _role_refused("SET ROLE")
        return UtilityResult("SET")  # SET ROLE NONE: the session's own user, as now
    if utility.name == "authorization":  # SET SESSION AUTHORIZATION
        if value.upper() != "DEFAULT":
            raise _role_refused("SET SESSION AUTHORIZATION")
        return UtilityResult("SET")
    if utility.name == "characteristics":  # SET SESSION CHARACTERISTICS AS TRANSACTION ...
        words = value.replace(",", " ").split(None, 2)  # the value came as a list: "AS, TRANSACTION, ..."
        if [w.upper() for w in words[:2]] != ["AS", "TRANSACTION"]:
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{words[0] if words else value}"')
        level, read_only, deferrable = _transaction_modes(words[2] if len(words) > 2 else "")
        # The defaults of the session's next transactions: a source's BEGIN takes the
        # isolation and DEFERRABLE from them (gateway.state.settings.is_forwarded).
        if level is not None:
            session.set_setting("default_transaction_isolation", level)
        if deferrable is not None:
            session.set_setting("default_transaction_deferrable", "on" if deferrable == "DEFERRABLE" else "off")
        if read_only is not None:
            session.set_setting("default_transaction_read_only", read_only)
        return UtilityResult("SET")
    if utility.name == "transaction":  # SET TRANSACTION modes
        level, read_only, deferrable = _transaction_modes(value)
        if not session.in_block:  # no lasting effect; PostgreSQL warns
            return UtilityResult("SET", notices=[_NOT_IN_BLOCK])
        if level is not None or deferrable is not None:  # with the block's BEGIN to its sources
            session.links.set_transaction(" ".join(filter(None, (
                level and f"ISOLATION LEVEL {level.upper()}", deferrable))))
            if level is not None:
                session.set_setting("transaction_isolation", level, local=True)
        if read_only is not None:
            session.set_setting("transaction_read_only", read_only)
        return UtilityResult("SET")
    if utility.name == "transaction_read_only":
        if not session.in_block:  # no lasting effect
            return UtilityResult("SET")
        session.set_setting("transaction_read_only", value)
        return UtilityResult("SET")
    if utility.local and not session.in_block:  # no lasting effect, as PostgreSQL warns
        return UtilityResult("SET", notices=[_LOCAL_NOT_IN_BLOCK])
    if value.upper() == "DEFAULT":
        session.reset_setting(utility.name, local=utility.local)
    else:
        session.set_setting(utility.name, value, local=utility.local)
    return UtilityResult("SET")


def run_show(session: SessionCore, utility: Utility) -> UtilityResult:
    assert utility.name is not None
    if utility.name == "all":
        rows = sorted((k, v, "") for k, v in session.settings.values.items())
        return UtilityResult("SHOW", text_rows(["name", "setting", "description"], rows))
    if utility.name.lower() == "fedgate.pools":  # this worker's relay pools, one row each
        return UtilityResult("SHOW", text_rows(POOL_COLUMNS, [tuple(map(str, row))
                                                            for row in pool_rows(session.ctx.pools)]))
    value = session.settings.get(utility.name)
    if utility.name.lower() == "fedgate.express_statements":  # read-only: what the lane ran
        value = str(session.lane.taken if session.lane is not None else 0)
    elif utility.name.lower() == "fedgate.express_repeats":  # read-only: of them, the repeats'
        value = str(session.lane.repeated if session.lane is not None else 0)
    elif utility.name.lower() == "fedgate.plan_cache":  # read-only: this worker's plan cache
        plans = session.ctx.plans
        value = f"hits={plans.hits} misses={plans.misses} shape_hits={plans.shape_hits}"
    if value is None:
        value = shown_default(utility.name)  # one of PostgreSQL's the session never set
    if value is None:
        raise PgError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{utility.name}"')
    return UtilityResult("SHOW", text_rows([utility.name], [(value,)]))


def run_transaction(session: SessionCore, utility: Utility) -> UtilityResult:
    kind = utility.kind
    if kind == "begin":
        if session.in_block:
            return UtilityResult("BEGIN", notices=["there is already a transaction in progress"])
        # BEGIN READ ONLY / READ WRITE (the session set begin_sql to this statement).
        read_only = _read_only_words(session.links.begin_sql)
        session.begin_block(None if read_only is None else read_only == "on")
        return UtilityResult("BEGIN")
    if kind in ("commit", "rollback"):
        if not session.in_block:
            return UtilityResult(kind.upper(), notices=["there is no transaction in progress"])
        failed = session.failed
        session.end_block(committed=kind == "commit")
        return UtilityResult("ROLLBACK" if failed or kind == "rollback" else "COMMIT")
    if not session.in_block:
        raise PgError(NO_ACTIVE_SQL_TRANSACTION,
                      f"{kind.upper().replace('_', ' ')} can only be used in transaction blocks")
    if kind == "savepoint":
        session.savepoint(utility.name or "")
        return UtilityResult("SAVEPOINT")
    session.end_savepoint(utility.name or "", rolled_back=kind == "rollback_to")
    return UtilityResult("RELEASE" if kind == "release" else "ROLLBACK")


def run_discard(session: SessionCore, utility: Utility) -> UtilityResult:
    if utility.name == "ALL":
        if session.in_block:
            raise PgError("25001", "DISCARD ALL cannot run inside a transaction block")
        session.discard_all()
    return UtilityResult(f"DISCARD {utility.name}")


def run_deallocate(session: SessionCore, utility: Utility) -> UtilityResult:
    name = utility.name or ""
    if name == "all":
        for each in [k for k in session.statements if k != ""]:  # in place: see SessionState
            del session.statements[each]
    elif session.statements.pop(name, None) is None:
        raise PgError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{name}" does not exist')
    return UtilityResult("DEALLOCATE ALL" if name == "all" else "DEALLOCATE")


HANDLERS = {
    "set": run_set, "show": run_show, "begin": run_transaction, "commit": run_transaction,
    "rollback": run_transaction, "savepoint": run_transaction, "release": run_transaction,
    "rollback_to": run_transaction, "discard": run_discard, "deallocate": run_deallocate,
}



def run_reset(session: SessionCore, utility: Utility) -> UtilityResult:
    name = utility.name or ""
    if name == "role":  # back to the session's own user, which it never left
        return UtilityResult("RESET")
    if name != "all" and canonical(name) not in DEFAULTS and session.settings.get(name) is None:
        raise PgError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{name}"')
    session.reset_setting(name)
    return UtilityResult("RESET")


HANDLERS["reset"] = run_reset


def unsupported(kind: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, f"{kind} is not supported by fedgate yet")
