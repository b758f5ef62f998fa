"""A bind parameter the planner typed as a PostgreSQL source's enum (planner.enum_values).

It is described with the gateway catalog's OID of the enum (gateway.pg_catalog.enums), as a
result column of it is (gateway.executor.enum_types), and its value, sent in either format
(an enum's binary form is its label's text, enum_recv), must be one of the labels:
PostgreSQL's 22P02 otherwise, when it is bound.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError
from pgwire.types.params import decode_param
from planner.source_values import EnumText

TEXT_OID = 25


async def enum_oid(kept: EnumText, oids: Callable[[str], Awaitable[Mapping[int, int]]]) -> int:
    """The gateway's OID of the enum; text's where the catalog has not read it (an enum
    created after its last read, whose columns are presented as text too)."""
    if kept.oid is None:
        return TEXT_OID
    return (await oids(kept.source)).get(kept.oid, TEXT_OID)


def decode_params(types: Sequence[str], oids: Sequence[int], formats: Sequence[int],
                  data: Sequence[bytes | None], timezone: str) -> list[object]:
    """Bind's parameters as values; `types`: the plan's types of them (QueryPlan.param_types)."""
    return [_label(types[i], value) if i < len(types) and isinstance(types[i], EnumText)
            else decode_param(oid, fmt, value, index=i + 1, timezone=timezone)
            for i, (oid, fmt, value) in enumerate(zip(oids, formats, data))]


def _label(kept: EnumText, value: bytes | None) -> str | None:
    if value is None:
        return None
    label = decode_param(TEXT_OID, 0, value)  # text's checks: valid UTF-8, no NUL
    assert isinstance(label, str)
    if label not in kept.labels:
        raise PgError(INVALID_TEXT_REPRESENTATION, f'invalid input value for enum {kept}: "{label}"')
    return label
