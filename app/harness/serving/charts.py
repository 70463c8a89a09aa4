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
    """Validation and test accuracy by epoch on a fixed 0..1 axis, epoch 0 being the baseline
    (the seed skills before training), so a curve's rise is read against where it began."""
    chart = pygal.Line(
        **_config(
            "Learning curve: accuracy by epoch",
            range=(0, 1),
            x_title="epoch (0 = baseline, before training)",
            dots_size=4,
        )
    )
    chart.x_labels = ["0", *(str(p.epoch) for p in data.curve)]
    chart.add("validation", [data.baseline_val, *(p.val_acc for p in data.curve)])
    chart.add("test", [data.baseline_test, *(p.test_acc for p in data.curve)])
    return _svg(chart)


def _log10(e: float | None) -> float | None:
    return math.log10(e) if e is not None and e > 0 else None


# accepted green, rejected red, the accept level a heavy dark dashed line (gate_chart)
GATE_STYLE = Style(**{**STYLE.to_dict(), "colors": ("#2a9d3a", "#c0392b", "#111111")})


def int_ticks(lo: float, hi: float, most: int = 10) -> list[int]:
    """Whole-number ticks covering [lo, hi], at a step of 1, 2 or 5 times a power of ten
    chosen so there are at most `most` of them."""
    first, last = math.floor(lo), math.ceil(hi)
    step = next(
        m * 10**e for e in range(12) for m in (1, 2, 5) if (last - first) // (m * 10**e) < most
    )
    return list(range(first - first % step, last + step, step))


def gate_chart(decisions: Sequence[GateDecision], threshold: float | None) -> str:
    """Each decision's e-value (log scale) in the order made, accepted apart from rejected,
    against the accept level; whole-number ticks (decision numbers, powers of ten)."""
    accepted: list[tuple[int, float]] = []
    rejected: list[tuple[int, float]] = []
    for i, d in enumerate(decisions, 1):
        y = _log10(d.e_value)
        if y is not None:
            (accepted if d.accepted else rejected).append((i, y))
    line = math.log10(threshold) if threshold and threshold > 0 and decisions else None
    ys = [y for _, y in accepted + rejected] + ([line] if line is not None else [])
    lo, hi = min([-1.0, *ys]), max([1.0, *ys])
    y_ticks = list(range(math.floor(lo), math.ceil(hi + 0.3) + 1))  # powers of ten
    x_ticks = int_ticks(1, max(1, len(decisions)))
    chart = pygal.XY(
        **{
            **_config(
                "Gate decisions: e-value over time",
                stroke=False,
                x_title="decision (in order)",
                y_title="e-value (log scale)",
                dots_size=5,
                range=(y_ticks[0], y_ticks[-1]),
                xrange=(0, max(len(decisions) + 1, x_ticks[-1])),
            ),
            "style": GATE_STYLE,
        }
    )
    chart.x_labels = x_ticks
    chart.y_labels = [{"label": f"{10.0**k:g}", "value": k} for k in y_ticks]
    chart.add("accepted", accepted)
    chart.add("rejected", rejected)
    if line is not None:
        assert threshold is not None  # line is set only from a positive threshold
        chart.add(
            f"accept level e={threshold:g}",
            [(0, line), (len(decisions) + 1, line)],
            stroke=True,
            show_dots=False,
            stroke_style={"dasharray": "10,5", "width": 4},
        )
    return _svg(chart)


def per_type_chart(data: PageData) -> str:
    """Baseline vs final test accuracy per task type, side by side (the final one with its
    95% Wilson interval)."""
    chart = pygal.Bar(**_config("Test accuracy by task type: baseline vs final", range=(0, 1)))
    chart.x_labels = [t.task_type for t in data.per_type]
    if any(t.baseline is not None for t in data.per_type):
        chart.add("baseline (before training)", [t.baseline for t in data.per_type])
    chart.add(
        "final",
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
