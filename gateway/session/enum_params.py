"""A bind parameter the planner typed as a PostgreSQL source's enum (planner.enum_values).

It is described with the gateway catalog's OID of the enum (gateway.pg_catalog.enums), as a
result column of it is (gateway.executor.enum_types), and its value, sent in either format
(an enum's binary form is its label's text, enum_recv), must be one of the labels:
PostgreSQL's 22P02 otherwise, when it is bound. So must each element of one typed as an
array of the enum (`st = ANY($1)`), described with the catalog's array type of the enum.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from pgwire.errors import INVALID_TEXT_REPRESENTATION, PgError
from pgwire.types.params import decode_param
from planner.source_enums import EnumArray, EnumText

TEXT_OID = 25
TEXT_ARRAY_OID = 1009


async def enum_oid(kept: EnumText | EnumArray, oids: Callable[[str], Awaitable[Mapping[int, int]]]) -> int:
    """The gateway's OID of the enum (or of its array); text's (text[]'s) where the catalog
    has not read it (an enum created after its last read, whose columns are presented as
    text too)."""
    if isinstance(kept, EnumArray):
        element = kept.element
        found = (await oids(element.source)).get(element.array_oid) if element.array_oid else None
        return found or TEXT_ARRAY_OID
    if kept.oid is None:
        return TEXT_OID
    return (await oids(kept.source)).get(kept.oid, TEXT_OID)


def decode_params(types: Sequence[str], oids: Sequence[int], formats: Sequence[int],
                  data: Sequence[bytes | None], timezone: str) -> list[object]:
    """Bind's parameters as values; `types`: the plan's types of them (QueryPlan.param_types)."""
    return [_label(types[i], value) if i < len(types) and isinstance(types[i], EnumText)
            else _labels(types[i].element, fmt, value, i + 1) if i < len(types) and isinstance(types[i], EnumArray)
            else decode_param(oid, fmt, value, index=i + 1, timezone=timezone)
            for i, (oid, fmt, value) in enumerate(zip(oids, formats, data))]


def _labels(kept: EnumText, fmt: int, value: bytes | None, index: int) -> list | None:
    """An array of the enum (`st = ANY($1)`): array_in's text, or array_recv's layout, whose
    elements are enum_recv's (the label's text); each a label or NULL (22P02 otherwise)."""
    if value is None:
        return None
    if fmt == 1 and len(value) >= 12:
        # the element type the client looked up is the catalog's enum: read as text, as its
        # binary form is (enum_recv)
        value = value[:8] + TEXT_OID.to_bytes(4, "big") + value[12:]
    items = decode_param(TEXT_ARRAY_OID, fmt, value, index=index)
    assert isinstance(items, list)
    for item in _flat(items):
        if item is not None and item not in kept.labels:
            raise PgError(INVALID_TEXT_REPRESENTATION, f'invalid input value for enum {kept}: "{item}"')
    return items


def _flat(items: list) -> list:
    return [x for item in items for x in (_flat(item) if isinstance(item, list) else [item])]


def _label(kept: EnumText, value: bytes | None) -> str | None:
    if value is None:
        return None
    label = decode_param(TEXT_OID, 0, value)  # text's checks: valid UTF-8, no NUL
    assert isinstance(label, str)
    if label not in kept.labels:
        raise PgError(INVALID_TEXT_REPRESENTATION, f'invalid input value for enum {kept}: "{label}"')
    return label
