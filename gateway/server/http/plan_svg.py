"""A federated plan drawn as SVG, server-side, from EXPLAIN (FORMAT JSON)'s structure
(planner.explain_json): the engine at the top, the fragments it reads below it, each box
with its source and SQL, each edge with the rows and time EXPLAIN ANALYZE measured.

The plan is a tree, so a layered layout is enough: a node's layer is its depth, a leaf
takes the next free column, a parent is centred over its children. Every text is
escaped; nothing is scripted.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any

BOX_WIDTH = 380
CHARS_PER_LINE = 48
MAX_SQL_LINES = 9
LINE_HEIGHT = 15
PAD = 10
GAP_X = 30
GAP_Y = 70
COLOURS = {"Engine": "#e8f0fe", "Remote Fragment": "#e6f4ea", "Relay": "#fef7e0"}


@dataclass
class Box:
    node: Mapping[str, Any]
    lines: list[tuple[str, str]]  # (css class, text)
    children: list[Box] = field(default_factory=list)
    x: float = 0.0
    y: float = 0.0

    @property
    def height(self) -> float:
        return 2 * PAD + LINE_HEIGHT * len(self.lines)


def _lines(node: Mapping[str, Any]) -> list[tuple[str, str]]:
    kind = str(node.get("Node Type", "?"))
    if kind == "Engine":
        title = f"Engine {node.get('Engine', '')}"
        sql = str(node.get("Residual SQL") or "")
    elif kind == "Remote Fragment":
        title = f"{node.get('Fragment', '')} on {node.get('Source', '')}"
        sql = str(node.get("Remote SQL") or "")
    else:
        title = f"{kind} to {node.get('Source', '')}"
        sql = str(node.get("Remote SQL") or "")
    wrapped = textwrap.wrap(" ".join(sql.split()), CHARS_PER_LINE) or [""]
    if len(wrapped) > MAX_SQL_LINES:
        wrapped = wrapped[:MAX_SQL_LINES - 1] + [wrapped[MAX_SQL_LINES - 1][:CHARS_PER_LINE - 1] + "…"]
    lines = [("title", title)] + [("sql", line) for line in wrapped]
    if kind == "Engine" and "Actual Rows" in node:
        lines.append(("figure", f"{node['Actual Rows']} rows out, {node.get('Actual Total Time', 0)} ms"))
    return lines


def _build(node: Mapping[str, Any]) -> Box:
    return Box(node, _lines(node), [_build(child) for child in node.get("Plans", ())])


def _layout(box: Box, depth: int, next_x: list[float], layer_tops: list[float]) -> None:
    box.y = layer_tops[depth]
    if not box.children:
        box.x = next_x[0]
        next_x[0] += BOX_WIDTH + GAP_X
        return
    for child in box.children:
        _layout(child, depth + 1, next_x, layer_tops)
    box.x = (box.children[0].x + box.children[-1].x) / 2


def _layers(box: Box, depth: int, heights: list[float]) -> None:
    if len(heights) <= depth:
        heights.append(0.0)
    heights[depth] = max(heights[depth], box.height)
    for child in box.children:
        _layers(child, depth + 1, heights)


def _edge_label(node: Mapping[str, Any]) -> str:
    if "Actual Rows" not in node:
        return ""
    label = f"{node['Actual Rows']} rows"
    if "Bytes" in node:
        label += f", {node['Bytes']} B"
    if "Actual Total Time" in node:
        label += f", {node['Actual Total Time']} ms"
    return label


def _draw(box: Box, out: list[str]) -> None:
    fill = COLOURS.get(str(box.node.get("Node Type")), "#f1f3f4")
    out.append(f'<g class="node"><rect x="{box.x:.0f}" y="{box.y:.0f}" width="{BOX_WIDTH}" '
               f'height="{box.height:.0f}" rx="6" fill="{fill}" stroke="#5f6368"/>')
    for i, (css, text) in enumerate(box.lines):
        y = box.y + PAD + LINE_HEIGHT * (i + 1) - 3
        out.append(f'<text class="{css}" x="{box.x + PAD:.0f}" y="{y:.0f}">{escape(text)}</text>')
    out.append("</g>")
    for child in box.children:
        x1, y1 = box.x + BOX_WIDTH / 2, box.y + box.height
        x2, y2 = child.x + BOX_WIDTH / 2, child.y
        out.append(f'<line x1="{x2:.0f}" y1="{y2:.0f}" x2="{x1:.0f}" y2="{y1:.0f}" '
                   'stroke="#5f6368" marker-end="url(#arrow)"/>')
        label = _edge_label(child.node)
        if label:
            out.append(f'<text class="edge" x="{(x1 + x2) / 2 + 6:.0f}" y="{(y1 + y2) / 2:.0f}">'
                       f"{escape(label)}</text>")
        _draw(child, out)


def plan_svg(document: list[Mapping[str, Any]]) -> str:
    """The SVG of a plan document as EXPLAIN (FORMAT JSON) returns it."""
    root = _build(document[0]["Plan"])
    heights: list[float] = []
    _layers(root, 0, heights)
    tops = [PAD + sum(heights[:i]) + GAP_Y * i for i in range(len(heights))]
    next_x = [float(PAD)]
    _layout(root, 0, next_x, tops)
    width = max(next_x[0] - GAP_X + PAD, BOX_WIDTH + 2 * PAD)
    height = tops[-1] + heights[-1] + PAD
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plan" width="{width:.0f}" '
           f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
           'aria-label="query plan">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
           'fill="#5f6368"/></marker></defs>',
           "<style>text{font:12px monospace;fill:#202124}text.title{font-weight:bold;"
           "font-family:sans-serif}text.edge{fill:#1a73e8;font-family:sans-serif;stroke:#fff;stroke-width:4px;paint-order:stroke}"
           "text.figure{fill:#1a73e8}</style>"]
    _draw(root, out)
    out.append("</svg>")
    return "".join(out)
