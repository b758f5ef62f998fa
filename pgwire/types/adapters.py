"""The registry of value codecs every caller uses, filled by each type family module.

To add a type: give it a row in `pgwire.types.pg_type` (and a served `PgType`), write its
family module with the codecs and a `register(registry)`, and list the module here.
"""

from __future__ import annotations

from pgwire.types import (arrays, bits, datetime, floats, integers, interval, money, numeric,
                          regtypes, text, timetz, uuid)
from pgwire.types import bool as booleans
from pgwire.types.registry import Registry

FAMILIES = (booleans, integers, floats, numeric, text, uuid, datetime, interval, arrays, bits,
            timetz, money, regtypes)

REGISTRY = Registry()
for family in FAMILIES:
    family.register(REGISTRY)
