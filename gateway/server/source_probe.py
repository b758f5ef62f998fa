"""What `fedgate sources` and `fedgate check-config` print: the configured sources with their
locations (passwords masked), and whether each one answers.

A probe opens a source exactly as the gateway does (`open_source`) and lists its tables, the
first thing the gateway asks of every source when it starts.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from dataclasses import dataclass

from gateway.config import Config, SourceConfig
from gateway.server.listener import open_source

MASK = "***"
# user:password@ in a URL, and password=... as a URL query parameter or a libpq keyword.
_URL_PASSWORD = re.compile(r"(?P<head>://[^/@:]*:)[^@/]*(?P<tail>@)")
_KEYWORD_PASSWORD = re.compile(r"(?P<head>\bpassword=)(?:'[^']*'|[^&\s]*)", re.IGNORECASE)


def mask_password(dsn: str) -> str:
    masked = _URL_PASSWORD.sub(lambda m: m["head"] + MASK + m["tail"], dsn)
    return _KEYWORD_PASSWORD.sub(lambda m: m["head"] + MASK, masked)


def location(config: Config, source: SourceConfig) -> str:
    """Where a source's data is: its DSN with the password masked, or its path resolved the
    way the gateway resolves it (relative to the config file)."""
    if "dsn" in source.options:
        return mask_password(str(source.options["dsn"]))
    path = source.options.get("path")
    if path is None:
        return "(no path or dsn)"
    path = str(path)
    return path if os.path.isabs(path) else str(config.base_dir / path)


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str
    reachable: bool
    tables: int | None
    latency_ms: float
    error: str = ""


async def probe_source(config: Config, source: SourceConfig, timeout_s: float) -> Probe:
    started = time.monotonic()

    def elapsed_ms() -> float:
        return (time.monotonic() - started) * 1000

    opened = None
    try:
        opened = await asyncio.to_thread(open_source, config, source.name, source.kind,
                                         source.options)
        tables = await asyncio.wait_for(opened.tables(), timeout_s)
        return Probe(source.name, source.kind, True, len(tables), elapsed_ms())
    except TimeoutError:
        return Probe(source.name, source.kind, False, None, elapsed_ms(),
                     f"no answer within {timeout_s:g}s")
    # A source that cannot be opened (a missing file: a ConfigError naming the source) is a
    # row of the table like one that does not answer: the operator sees every source at once.
    except Exception as exc:  # whatever a source raises is what the operator needs to read
        return Probe(source.name, source.kind, False, None, elapsed_ms(), _one_line(exc))
    finally:
        if opened is not None:
            await opened.close()


def _one_line(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(message).split())


async def probe_sources(config: Config, timeout_s: float) -> list[Probe]:
    """Probe every configured source at once (a slow one does not delay the others)."""
    return list(await asyncio.gather(*(probe_source(config, source, timeout_s)
                                       for source in config.sources)))


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns separated by two spaces, like `kubectl get`."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in [header, *rows]]


def probe_table(probes: list[Probe]) -> list[str]:
    rows = [(p.name, p.kind, "yes" if p.reachable else "no",
             "-" if p.tables is None else str(p.tables), f"{p.latency_ms:.0f} ms", p.error)
            for p in probes]
    return table(("NAME", "KIND", "REACHABLE", "TABLES", "LATENCY", "ERROR"), rows)


def sources_table(config: Config) -> list[str]:
    rows = [(s.name, s.kind, location(config, s)) for s in config.sources]
    return table(("NAME", "KIND", "LOCATION"), rows)


__all__ = ["MASK", "Probe", "location", "mask_password", "probe_source", "probe_sources",
           "probe_table", "sources_table", "table"]
