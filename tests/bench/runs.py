"""What every benchmark script notes about the run it made: the machine's load before and
after, the date, the CPUs and the versions of the engines measured."""

from __future__ import annotations

import datetime as dt
import os
import platform


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as the tables quote them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run_facts(load_before: str, **extra: object) -> dict[str, object]:
    """The facts a section's header quotes, with the load now as `load_after`."""
    import duckdb
    import pyspark

    return {"date": dt.date.today().isoformat(), "cpus": os.cpu_count(),
            "load_before": load_before, "load_after": load_average(),
            "python": platform.python_version(), "duckdb": duckdb.__version__,
            "pyspark": pyspark.__version__, **extra}
