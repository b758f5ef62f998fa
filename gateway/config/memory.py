"""Memory sizes as the configuration and `SET fedgate.statement_memory` write them, and
the memory the process may use.

A size is a number of bytes with a unit ("1GB", "512MB", "256MiB", "2 GiB"; "kB"/"KB",
"MB", "GB", "TB" are powers of 1024, as PostgreSQL's memory units are) or a share ("50%").
`[engine] memory_limit` shares are of the memory the process may use
(`available_bytes`: its memory cgroup's limit, else the machine's RAM) divided among the
worker processes; `fedgate.statement_memory` shares are of memory_limit.

The default memory_limit is `default_memory_limit`: half of what is left of the available
memory once `GATEWAY_RESERVE` is set aside for the rest of the gateway (Python, pyarrow,
the emulated catalog, client buffers, the Arrow batches statements hold), divided among
the workers, and at least `MIN_MEMORY_LIMIT`. The other half is headroom for what
DuckDB's memory_limit does not count (docs/design.md §8, "Memory").
"""

from __future__ import annotations

import os
import re
from pathlib import Path

UNITS = {"b": 1, "kb": 1 << 10, "kib": 1 << 10, "mb": 1 << 20, "mib": 1 << 20,
         "gb": 1 << 30, "gib": 1 << 30, "tb": 1 << 40, "tib": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
GATEWAY_RESERVE = 512 << 20
MIN_MEMORY_LIMIT = 64 << 20
# Where the memory cgroup's limit is read: v2, then v1 (a v1 "no limit" is a huge number).
CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"),
                 Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def parse_size(text: str) -> int | None:
    """Bytes of a size such as "1GB" or "300MB" (a bare number is bytes); None if `text`
    is not one."""
    found = _SIZE.match(text)
    if found is None:
        return None
    unit = found.group(2).lower() or "b"
    if unit not in UNITS:
        return None
    return int(float(found.group(1)) * UNITS[unit])


def parse_share(text: str) -> float | None:
    """The fraction of a share such as "50%" (0 < share <= 100 %); None if not one."""
    found = _SHARE.match(text)
    if found is None:
        return None
    fraction = float(found.group(1)) / 100
    return fraction if 0 < fraction <= 1 else None


def is_size_or_share(text: object) -> bool:
    return isinstance(text, str) and (parse_share(text) is not None or bool(parse_size(text)))


def is_size(text: object) -> bool:
    return isinstance(text, str) and bool(parse_size(text))


def available_bytes() -> int:
    """The memory this process may use: its memory cgroup's limit (v2 or v1) when it has
    one below the machine's RAM, else the RAM."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue  # not this cgroup version, or no cgroup file system mounted
        if text.isdigit() and 0 < int(text) < ram:
            return int(text)
    return ram


def default_memory_limit(workers: int, available: int | None = None) -> int:
    """memory_limit when the key is not written (see the module's docstring)."""
    total = available_bytes() if available is None else available
    return max(MIN_MEMORY_LIMIT, (total - GATEWAY_RESERVE) // 2 // max(1, workers))


def memory_limit_bytes(value: str | None, workers: int, available: int | None = None) -> int:
    """`[engine] memory_limit` (already checked) in bytes, per worker process."""
    if value is None:
        return default_memory_limit(workers, available)
    share = parse_share(value)
    if share is None:
        size = parse_size(value)
        assert size is not None
        return size
    total = available_bytes() if available is None else available
    return max(MIN_MEMORY_LIMIT, int(total * share) // max(1, workers))


def share_bytes(value: str, limit: int) -> int | None:
    """A statement's share (`fedgate.statement_memory`) in bytes of `limit`; None if
    `value` is neither a size nor a share."""
    share = parse_share(value)
    if share is not None:
        return max(1, int(limit * share))
    return parse_size(value) or None


def shown_bytes(n: int) -> str:
    """A size as a message shows it: "256 MB", "1.5 GB" (units of 1024)."""
    for unit, size in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{n} bytes"
