"""Overview: versions, progress, run status, accuracy per epoch, step decisions, cost."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Header, ProgressBar, Static

from app.harness.training.run_progress import progress_view
from app.harness.training.vocabulary import Count
from app.tui import format as fmt
from app.tui.data import Overview
from app.tui.screens.base import BaseScreen
from app.tui.widgets.charts import AccuracyChart, TypeChart
from app.tui.widgets.key_bar import KeyBar
from app.tui.widgets.nav import NavTabs

SIM_BANNER = (
    "SIMULATED MODEL: these runs used the built-in simulated world (sim/*), not a "
    "real LLM; the figures show the harness working, not real-model quality."
)
ORACLE_BANNER = (
    " sim/oracle answered at a set rate whatever the skills said: the figures check plumbing, "
    "formats, checkers and cost, not learning."
)
COUNT_ROWS = (
    (Count.ACCEPTED, "accepted", "green"),
    (Count.PROVISIONAL, "provisional", "yellow"),
    (Count.REJECTED, "rejected", "red"),
    (Count.ROLLED_BACK, "rolled back", "magenta"),
    (Count.COOLDOWN, "cooldown", "cyan"),
    (Count.SKIPPED, "skipped", "dim"),
    (Count.EVOLVE_FAILED, "evolve failed", "red"),
)
# The epochs table's count columns, from each epoch report's counts.
EPOCH_COUNT_COLUMNS = (
    Count.ACCEPTED,
    Count.PROVISIONAL,
    Count.REJECTED,
    Count.ROLLED_BACK,
    Count.SKIPPED,
    Count.COOLDOWN,
)


class OverviewScreen(BaseScreen):
    WATCH = frozenset(
        {"checkpoint", "manifest", "status", "steps", "epochs", "calls", "runs", "versions"}
    )

    def __init__(self) -> None:
        super().__init__(id="overview")
        self.overview: Overview | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield NavTabs("overview")
        yield Static(SIM_BANNER, id="sim-banner")
        with Horizontal(id="cards"):
            yield Static(id="versions-card", classes="card")
            with Vertical(id="progress-card", classes="card"):
                yield Static(id="status-line", markup=False)
                yield Static(id="progress-line", markup=False)
                yield ProgressBar(id="progress-bar", show_eta=False)
            yield Static(id="counts-card", classes="card")
        with Horizontal(id="middle"):
            yield AccuracyChart(id="accuracy-chart")
            yield TypeChart(id="type-chart")
            yield DataTable(id="epochs-table", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="calls-table", cursor_type="row", zebra_stripes=True)
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#versions-card").border_title = "Versions"
        self.query_one("#progress-card").border_title = "Progress"
        self.query_one("#counts-card").border_title = "Step decisions"
        self.query_one("#accuracy-chart").border_title = "Accuracy"
        self.query_one("#type-chart").border_title = "Test by task type"
        self.query_one("#epochs-table").border_title = "Epochs"
        self.query_one("#calls-table").border_title = "Tokens and cost by role"
        self.query_one("#sim-banner").display = False
        epochs = self.query_one("#epochs-table", DataTable)
        # fixed widths (as for the cost table below): under load the rows can arrive after
        # Textual sized the columns from the headers, which cut "0.583" to "0.5"
        for label, key, width in (
            ("epoch", "epoch", 5),
            ("val", "val", 5),
            ("test", "test", 5),
            ("accepted", "acc", 8),
            ("prov.", "prov", 5),
            ("rejected", "rej", 8),
            ("rolled back", "rb", 11),
            ("skipped", "skip", 7),
            ("cooldown", "cool", 8),
            ("probations", "prob", 10),
            ("prompts", "prompts", 7),
            ("run", "run", 24),
        ):
            epochs.add_column(label, key=key, width=width)
        calls = self.query_one("#calls-table", DataTable)
        # fixed widths: the table fills from its own worker, and a layout that waits for the
        # content would jump when the totals arrive
        for label, key, width in (
            ("role", "role", 9),
            ("calls", "calls", 12),
            ("cached", "cached", 12),
            ("tokens in", "tin", 14),
            ("tokens out", "tout", 14),
            ("cost", "cost", 12),
        ):
            calls.add_column(label, key=key, width=width)
        super().on_mount()

    def reload(self, live: bool = False) -> None:
        # two fetches: the cost totals may take seconds the first time on a huge log, and
        # must not hold back the rest of the screen
        self.fetch(lambda: self.data.overview(with_calls=False), self.show, group="overview")
        if not live:
            self.query_one("#calls-table", DataTable).border_subtitle = "summing model calls…"
        self.fetch(self.data.call_totals, self._calls, group="overview-calls")

    # -- rendering ------------------------------------------------------------------------
    def show(self, ov: Overview) -> None:
        self.overview = ov
        banner = self.query_one("#sim-banner", Static)
        banner.display = ov.simulated
        banner.update(SIM_BANNER + (ORACLE_BANNER if ov.oracle else ""))
        self.query_one("#versions-card", Static).update(self._versions(ov))
        self._progress(ov)
        self.query_one("#counts-card", Static).update(self._counts(ov.counts))
        self.query_one(AccuracyChart).show(ov.epochs, ov.baseline_val, ov.baseline_test)
        self.query_one(TypeChart).show(ov.per_type)
        self._epochs(ov.epochs)

    @staticmethod
    def _versions(ov: Overview) -> Table:
        m = ov.manifest
        cur = m.get("current", {})
        best = m.get("best") or {}
        t = Table.grid(padding=(0, 1))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("current", Text(f"{cur.get('skills', '?')}  {cur.get('prompts', '?')}"))
        if best:
            t.add_row("best", Text(f"{best.get('skills')}  {best.get('prompts')}"))
            t.add_row("", f"val {fmt.acc(best.get('val_acc'))}  epoch {best.get('epoch')}")
        else:
            t.add_row("best", Text("none yet", style="dim"))
        t.add_row("questions", Text(str(cur.get("questions", "?"))))
        t.add_row(
            "versions",
            f"{ov.n_versions.get('skills', 0)} skills, {ov.n_versions.get('prompts', 0)} prompts",
        )
        if m.get("seed"):
            t.add_row("seed", Text(str(m["seed"])))
        return t

    def _progress(self, ov: Overview) -> None:
        st = ov.status
        line = Text("status ")
        line.append_text(fmt.status(st.state))
        if st.detail:
            line.append(f"  {st.detail}", style="dim")
        self.query_one("#status-line", Static).update(line)
        progress = (ov.checkpoint or {}).get("progress") or {}
        bar = self.query_one("#progress-bar", ProgressBar)
        if progress:
            view = progress_view(progress)
            text = view.text
            done, total = view.bar()
            bar.update(total=total, progress=done)
        else:
            text = "no checkpoint yet (training has not finished a step)"
            bar.update(total=1, progress=0)  # never indeterminate: no animation
        self.query_one("#progress-line", Static).update(text)

    @staticmethod
    def _counts(counts: dict[str, int]) -> Table:
        t = Table.grid(padding=(0, 1))
        t.add_column(justify="right")
        t.add_column()
        for key, label, style in COUNT_ROWS:
            t.add_row(Text(f"{counts.get(key, 0):,}", style=f"bold {style}"), label)
        return t

    def _epochs(self, epochs: list[dict[str, Any]]) -> None:
        table = self.query_one("#epochs-table", DataTable)
        table.clear()
        for e in epochs:
            rep = e.get("report") or {}
            c = rep.get("counts") or {}
            table.add_row(
                *fmt.cells(
                    [
                        str(e["epoch"]),
                        fmt.acc(e.get("val_acc")),
                        fmt.acc(e.get("test_acc")),
                        *(fmt.num(c.get(k)) for k in EPOCH_COUNT_COLUMNS),
                        fmt.num(len(rep.get("probations") or [])),
                        "changed" if rep.get("prompts_changed") else "–",
                        fmt.short(e.get("run_id"), 24),
                    ]
                ),
                key=str(e["epoch"]),
            )

    def _calls(self, calls: list[dict[str, Any]]) -> None:
        table = self.query_one("#calls-table", DataTable)
        table.border_subtitle = "" if calls else "no model calls logged yet"
        table.clear()
        totals = dict.fromkeys(("calls", "cache_hits", "tokens_in", "tokens_out", "cost_usd"), 0)
        for c in calls:
            for k in totals:
                totals[k] += c.get(k) or 0
            table.add_row(
                *fmt.cells(
                    [
                        c["role"],
                        fmt.num(c["calls"]),
                        fmt.num(c["cache_hits"]),
                        fmt.num(c["tokens_in"]),
                        fmt.num(c["tokens_out"]),
                        fmt.cost(c["cost_usd"]),
                    ]
                ),
                key=c["role"],
            )
        if calls:
            table.add_row(
                *fmt.cells(
                    [
                        Text("total", style="bold"),
                        fmt.num(totals["calls"]),
                        fmt.num(totals["cache_hits"]),
                        fmt.num(totals["tokens_in"]),
                        fmt.num(totals["tokens_out"]),
                        fmt.cost(totals["cost_usd"]),
                    ]
                ),
                key="__total__",
            )
