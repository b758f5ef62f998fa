"""Types served as PostgreSQL's own text: their binary form is computed from that text.

bit, varbit, timetz, money and the reg* types reach the gateway only as the text a
PostgreSQL source printed (the DuckDB engine refuses them: connectors.dialects), or for
the reg* types the text the emulated catalog's regclass_out etc. print, kept in a string
column whose `pg_type` metadata names the type. Text output sends that text as
it is; binary output parses each value into its *send layout, per value (these columns
are rare), with the family's `send` function.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from pgwire.types.columns import Encoded
from pgwire.types.pg_type import PgType
from pgwire.types.registry import unsupported_binary
from pgwire.types.text import STRING_TYPES, string_text

Send = Callable[[str], bytes]


def binary_from_text(arr: pa.Array, pgtype: PgType, send: Send) -> Encoded:
    """The *send bytes of each value of a string column holding the type's text."""
    if arr.type not in STRING_TYPES:
        raise unsupported_binary(arr, pgtype)
    sent = [None if value is None else send(value) for value in arr.to_pylist()]
    return string_text(pa.array(sent, pa.binary()))
