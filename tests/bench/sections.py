"""BENCHMARKS.md is shared: each benchmark script owns the section between its markers.

`write_section("bench_x", text)` replaces that section (or appends it when missing) and
leaves every other section as it is.
"""

from __future__ import annotations

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "BENCHMARKS.md"
HEADER = ("# Benchmarks\n\nFigures come from the scripts under tests/bench, run on the 2-core "
          "CI-class machine; the ratios matter more than the absolute numbers.\n")


def write_section(name: str, section: str, path: Path = BENCHMARKS) -> None:
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text() if path.exists() else HEADER
    block = f"{begin}\n{section.rstrip(chr(10))}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)
