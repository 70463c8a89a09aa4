"""Plotext charts: accuracy per epoch and baseline vs final test per task type (Overview), the
gate's running e-values (Steps)."""

from __future__ import annotations

import math
from typing import Any

from textual_plotext import PlotextPlot

from app.tui.format import log10

# Accuracy is drawn on a fixed 0..1 axis: zooming on the data made 0.21 -> 0.81 look like a
# small step at the top of the chart.
ACCURACY_TICKS = [0.0, 0.25, 0.5, 0.75, 1.0]
MAX_X_TICKS = 8


def whole_ticks(xs: list[int], most: int = MAX_X_TICKS) -> list[int]:
    """At most `most` of the whole numbers `xs`, evenly spaced, the first and last included."""
    if len(xs) <= most:
        return xs
    ticks = xs[:: math.ceil(len(xs) / most)]
    return ticks if ticks[-1] == xs[-1] else [*ticks[:-1], xs[-1]]


class AccuracyChart(PlotextPlot):
    """Validation and test accuracy per epoch (test only where it was measured), epoch 0 being
    the baseline (the seed skills before training) where the log has it."""

    def show(
        self,
        epochs: list[dict[str, Any]],
        baseline_val: float | None = None,
        baseline_test: float | None = None,
    ) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title("accuracy per epoch (0 = baseline)")
        plt.xlabel("epoch")
        val = [(e["epoch"], e["val_acc"]) for e in epochs if e.get("val_acc") is not None]
        test = [(e["epoch"], e["test_acc"]) for e in epochs if e.get("test_acc") is not None]
        if not val and not test:
            plt.text("no epoch finished yet", 0.5, 0.5, alignment="center")
            plt.xlim(0, 1)
            plt.ylim(0, 1)
            self.refresh()
            return
        if baseline_val is not None:
            val = [(0, baseline_val), *val]
        if baseline_test is not None:
            test = [(0, baseline_test), *test]
        for series, label, colour in ((val, "validation", "cyan"), (test, "test", "magenta")):
            if series:
                xs_, ys_ = [x for x, _ in series], [y for _, y in series]
                plt.plot(xs_, ys_, label=label, color=colour, marker="braille")
                plt.scatter(xs_, ys_, color=colour, marker="●")
        plt.ylim(0.0, 1.0)
        plt.yticks(ACCURACY_TICKS)
        xs = sorted({x for x, _ in val + test})
        ticks = whole_ticks(xs)
        plt.xticks([float(x) for x in ticks], [str(x) for x in ticks])
        plt.xlim(xs[0] - 0.5, xs[-1] + 0.5)
        self.refresh()


class TypeChart(PlotextPlot):
    """Baseline vs final held-out test accuracy per task type (analyses/final_test_eval.json),
    side by side on a 0..1 axis."""

    def show(self, per_type: list[dict[str, Any]]) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title("test accuracy by task type: baseline vs final")
        if not per_type:
            plt.text("no final test yet", 0.5, 0.5, alignment="center")
            plt.xlim(0, 1)
            plt.ylim(0, 1)
            self.refresh()
            return
        names = [str(t["task_type"]) for t in per_type]
        base = [t["baseline"] if t["baseline"] is not None else 0.0 for t in per_type]
        final = [t["final"] if t["final"] is not None else 0.0 for t in per_type]
        # plotext's annotations say `label` and one colour; it takes (and documents) `labels`
        # and a colour per series
        plt.multiple_bar(  # type: ignore[call-arg]
            names,
            [base, final],
            labels=["baseline", "final"],
            color=["gray", "green"],  # type: ignore[arg-type]
            width=0.8,
        )
        plt.ylim(0.0, 1.0)
        plt.yticks(ACCURACY_TICKS)
        self.refresh()


class EvidenceChart(PlotextPlot):
    """log10 of the running e-values (win vs harm) over the gate's ladder, against the accept
    level (the step report's `threshold`)."""

    def show(self, evidence: list[dict[str, Any]], threshold: float | None = None) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title("gate e-values (log scale)")
        if not evidence:
            plt.text("no gate evidence", 0.5, 0.5, alignment="center")
            plt.xlim(0, 1)
            plt.ylim(0, 1)
            self.refresh()
            return
        xs = [r["idx"] for r in evidence]
        plt.plot(xs, [log10(r["e_win"]) for r in evidence], label="e_win", color="green")
        plt.plot(xs, [log10(r["e_harm"]) for r in evidence], label="e_harm", color="red")
        plt.horizontal_line(0, color="gray")
        level = log10(threshold)
        if level > 0:
            # drawn as a labelled series, not a faint rule: the line a candidate must cross
            plt.plot(
                [xs[0], xs[-1]],
                [level, level],
                label=f"accept e={threshold:g}",
                color="yellow",
                marker="━",
            )
        whole = sorted({x for x in xs if isinstance(x, int)})
        if whole:
            x_ticks = whole_ticks(whole)
            plt.xticks([float(x) for x in x_ticks], [str(x) for x in x_ticks])
        ys = [log10(r[k]) for r in evidence for k in ("e_win", "e_harm")] + [0.0, level]
        powers = list(range(math.floor(min(ys)), math.ceil(max(ys)) + 1))
        ticks = whole_ticks(powers, most=4)
        # e-values at powers of ten
        plt.yticks([float(k) for k in ticks], [f"{10.0**k:g}" for k in ticks])
        plt.ylim(powers[0], powers[-1])
        plt.xlabel("unit (ladder order)")
        self.refresh()
