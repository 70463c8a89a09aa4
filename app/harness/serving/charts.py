"""The web report's charts as inline SVG, drawn by pygal (pure Python, no browser needed to
draw them, no JavaScript needed to see them).

pygal's SVG carries a <script> with its config for pygal.js tooltips; the page loads no
pygal.js (nothing from the network), so that script is dropped, and so are its comments
(they hold the rendering date). Labels are escaped by pygal's XML writer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import pygal
from pygal.style import Style

from app.harness.serving.page_data import GateDecision, PageData

_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)

STYLE = Style(
    background="white",
    plot_background="white",
    foreground="#222",
    foreground_strong="#111",
    foreground_subtle="#888",
    font_family="sans-serif",
    colors=("#1f6fb4", "#e07b16", "#2a9d3a", "#c0392b", "#7d3c98", "#555555"),
    title_font_size=18,
    label_font_size=13,
    major_label_font_size=13,
    legend_font_size=13,
)


def _config(title: str, **extra: object) -> dict[str, object]:
    return {
        "title": title,
        "style": STYLE,
        "js": [],
        "disable_xml_declaration": True,
        "width": 760,
        "height": 340,
        "explicit_size": True,
        "legend_at_bottom": True,
        "print_values": False,
        **extra,
    }


def _svg(chart: Any) -> str:  # pygal ships no types
    svg = chart.render(is_unicode=True)
    return _COMMENT.sub("", _SCRIPT.sub("", svg))


def learning_curve(data: PageData) -> str:
    chart = pygal.Line(
        **_config("Learning curve: accuracy by epoch", range=(0, 1), x_title="epoch", dots_size=4)
    )
    chart.x_labels = [str(p.epoch) for p in data.curve]
    chart.add("validation", [p.val_acc for p in data.curve])
    chart.add("test", [p.test_acc for p in data.curve])
    n = len(data.curve)
    for label, value in (("baseline (validation)", data.baseline_val),) + (
        ("baseline (test)", data.baseline_test),
    ):
        if value is not None:
            chart.add(
                label, [value] * n, stroke_style={"dasharray": "6,4", "width": 2}, dots_size=0
            )
    return _svg(chart)


def _log10(e: float | None) -> float | None:
    return math.log10(e) if e is not None and e > 0 else None


def gate_chart(decisions: Sequence[GateDecision], threshold: float | None) -> str:
    """Each decision's e-value (log10) in the order made, accepted apart from rejected."""
    chart = pygal.XY(
        **_config(
            "Gate decisions: e-value over time (log10)",
            stroke=False,
            x_title="decision (in order)",
            y_title="log10 e-value",
            dots_size=5,
        )
    )
    accepted: list[tuple[int, float]] = []
    rejected: list[tuple[int, float]] = []
    for i, d in enumerate(decisions, 1):
        y = _log10(d.e_value)
        if y is not None:
            (accepted if d.accepted else rejected).append((i, y))
    chart.add("accepted", accepted)
    chart.add("rejected", rejected)
    if threshold and threshold > 0 and decisions:
        line = math.log10(threshold)
        chart.add(
            f"accept level e={threshold:g}",
            [(1, line), (len(decisions), line)],
            stroke=True,
            show_dots=False,
            stroke_style={"dasharray": "6,4", "width": 2},
        )
    return _svg(chart)


def per_type_chart(data: PageData) -> str:
    chart = pygal.Bar(**_config("Test accuracy by task type (95% Wilson interval)", range=(0, 1)))
    chart.x_labels = [t.task_type for t in data.per_type]
    chart.add(
        "accuracy",
        [{"value": t.accuracy, "ci": {"low": t.low, "high": t.high}} for t in data.per_type],
    )
    return _svg(chart)


def roles_chart(data: PageData) -> str:
    chart = pygal.HorizontalBar(**_config("Model calls per role"))
    chart.x_labels = [r.role for r in data.roles]
    chart.add("paid calls", [r.calls - r.cache_hits for r in data.roles])
    chart.add("cache hits", [r.cache_hits for r in data.roles])
    return _svg(chart)


def cost_chart(data: PageData) -> str:
    chart = pygal.HorizontalBar(**_config("Cost per role (USD)"))
    chart.x_labels = [r.role for r in data.roles]
    chart.add("cost", [r.cost_usd for r in data.roles])
    return _svg(chart)
