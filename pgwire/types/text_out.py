"""Kept for callers of `format_interval`; interval output lives in `pgwire.types.interval`."""

from __future__ import annotations

from pgwire.types.interval import format_interval

__all__ = ["format_interval"]
