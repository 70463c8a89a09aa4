"""Plotext charts: accuracy per epoch (Overview) and the gate's running e-values (Steps)."""

from __future__ import annotations

from typing import Any

from textual_plotext import PlotextPlot

from app.tui.format import log10


class AccuracyChart(PlotextPlot):
    """Validation and test accuracy per epoch (test only where it was measured)."""

    def show(self, epochs: list[dict[str, Any]]) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title("accuracy per epoch")
        plt.xlabel("epoch")
        val = [(e["epoch"], e["val_acc"]) for e in epochs if e.get("val_acc") is not None]
        test = [(e["epoch"], e["test_acc"]) for e in epochs if e.get("test_acc") is not None]
        xs = sorted({x for x, _ in val + test})
        if not xs:
            plt.text("no epoch finished yet", 0.5, 0.5, alignment="center")
            plt.xlim(0, 1)
            plt.ylim(0, 1)
            self.refresh()
            return
        for series, label, colour in ((val, "validation", "cyan"), (test, "test", "magenta")):
            if series:
                xs_, ys_ = [x for x, _ in series], [y for _, y in series]
                plt.plot(xs_, ys_, label=label, color=colour, marker="braille")
                plt.scatter(xs_, ys_, color=colour, marker="●")
        ys = [y for _, y in val + test]
        pad = max(0.05, (max(ys) - min(ys)) * 0.2)  # zoom on the data: epochs move little
        plt.ylim(max(0.0, min(ys) - pad), min(1.0, max(ys) + pad))
        plt.xticks(xs)
        if len(xs) == 1:
            plt.xlim(xs[0] - 1, xs[0] + 1)
        self.refresh()


class EvidenceChart(PlotextPlot):
    """log10 of the running e-values (win vs harm) over the gate's ladder."""

    def show(self, evidence: list[dict[str, Any]]) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title("gate e-values (log10)")
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
        plt.xlabel("unit (ladder order)")
        self.refresh()
