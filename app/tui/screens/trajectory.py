"""One prediction's trajectory, turn by turn: model messages, tool calls, tool results as the
model saw them, errors, and the checker's verdict."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from app.sanitize import markup_safe
from app.tui import format as fmt
from app.tui.screens.base import BaseScreen
from app.tui.widgets.key_bar import KeyBar
from app.tui.widgets.nav import NavTabs

MAX_EVENTS = 500
MAX_TEXT = 20_000


def _clip(text: Any) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + f"\n… ({len(s) - MAX_TEXT:,} more chars)"


def _count(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    ok = isinstance(value, int) and not isinstance(value, bool)
    return f"{value:,} chars" if ok else "–"


def recoveries(steps: list[Any]) -> set[int]:
    """Indices of the tool steps that recovered: the first clean call of a tool after a call
    of the same tool that failed or had a fault injected (docs/tools.md#faults)."""
    failed: set[str] = set()
    out: set[int] = set()
    for i, s in enumerate(steps):
        if not isinstance(s, dict) or s.get("type") != "tool":
            continue
        name = str(s.get("name"))
        if s.get("fault") or s.get("status") != "ok":
            failed.add(name)
        elif name in failed:
            failed.discard(name)
            out.add(i)
    return out


def _tool_head(event: dict[str, Any], recovered: bool) -> Text:
    status = event.get("status") or "?"
    head = Text(f"{event.get('name')}({fmt.pretty_args(event.get('arguments'))})", style="bold")
    head.append(f"  [{status}]", style="green" if status == "ok" else "red")
    if isinstance(event.get("latency_ms"), int | float):
        head.append(f"  {event['latency_ms']:.0f} ms", style="dim")
    if event.get("fault"):
        head.append(f"  fault injected: {event['fault']}", style="bold red")
    if event.get("error"):
        head.append(f"  error: {_clip(event['error'])[:200]}", style="red")
    if recovered:
        head.append("  recovered (retry after a failed call)", style="bold green")
    return head


def _fixture_row(t: Table, event: dict[str, Any]) -> None:
    fixture = event.get("fixture")
    if isinstance(fixture, dict):
        parts = [
            f"{fixture.get('name')}: oracle {'passed' if fixture.get('oracle_passed') else 'failed'}",
            f"reset {fixture.get('reset')} {fixture.get('reset_ms')} ms",
        ]
        if fixture.get("tampered"):
            parts.append(f"TAMPERED: {', '.join(map(str, fixture['tampered']))[:200]}")
        t.add_row("fixture", Text(" · ".join(parts)))
    if event.get("tools_offered"):
        t.add_row("tools offered", Text(", ".join(map(str, event["tools_offered"]))))


def event_widget(event: dict[str, Any], recovered: bool = False) -> Static:
    """One trajectory event as a bordered block (class = its type, for the styles);
    `recovered`: a tool step that recovered from an earlier failed call (`recoveries`)."""
    kind = event.get("type", "?")
    turn = event.get("turn")
    where = f"turn {turn}" if turn is not None else ""
    if kind == "model":
        parts: list[Any] = [Text(_clip(event.get("text")) or "(no text)")]
        for call in event.get("tool_calls") or []:
            line = Text("→ tool call ", style="bold magenta")
            line.append(str(call.get("name")), style="bold")
            line.append(f"({fmt.pretty_args(call.get('arguments'))})")
            if call.get("id"):
                line.append(f"  id={call['id']}", style="dim")
            parts.append(line)
        title = f"model · {where}"
        body: Any = Group(*parts)
    elif kind == "tool":
        body = Group(_tool_head(event, recovered), Text(_clip(event.get("output"))))
        title = f"tool result · {where}"
    elif kind == "error":
        body = Text(_clip(event.get("error")), style="red")
        title = f"error · {where}"
    elif kind == "verdict":
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("verdict", fmt.correct(event.get("correct")))
        t.add_row("prediction", Text(_clip(event.get("prediction")) or "(none)"))
        t.add_row("answer", Text(_clip(event.get("answer"))))
        t.add_row("checker", Text(str(event.get("checker") or "–")))
        t.add_row("stop reason", Text(str(event.get("stop_reason") or "–")))
        _fixture_row(t, event)
        body, title = t, "checker's verdict"
    elif kind == "request":  # a served request (app/harness/serving/agent.py)
        body = Group(
            Text(_clip(event.get("task")) or "(no text)"),
            Text(
                f"task type {event.get('task_type') or '–'}, context {_count(event, 'context_chars')}",
                style="dim",
            ),
        )
        title = "request"
    elif isinstance(event.get("text", event.get("content")), str):
        # a message under its role (system, user, ...: app/harness/ingest/service.py)
        body = Text(_clip(event.get("text", event.get("content"))) or "(no text)")
        title = f"{kind} · {where}" if where else str(kind)
    else:
        body, title = Text(_clip(fmt.pretty_args(event))), f"{kind} · {where}"
    widget = Static(body, classes=f"event event-{kind}")
    widget.border_title = markup_safe(title)
    return widget


class TrajectoryScreen(BaseScreen):
    BINDINGS = [
        Binding("n", "step(1)", "Next prediction"),
        Binding("p", "step(-1)", "Prev prediction"),
    ]

    def __init__(self, pred_id: int, neighbours: list[int] | None = None) -> None:
        super().__init__(id="trajectory")
        self.pred_id = pred_id
        self.neighbours = neighbours or [pred_id]
        self.prediction: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield NavTabs("runs")
        yield Static("", markup=False, id="trajectory-title", classes="title")
        yield VerticalScroll(id="turns")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#turns").focus()
        super().on_mount()

    def reload(self, live: bool = False) -> None:
        pred_id = self.pred_id

        def query() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
            pred = self.data.prediction(pred_id)
            question = self.data.question(pred["question_id"]) if pred else None
            return pred, question

        self.fetch(query, self._show, group="trajectory")

    def _show(self, result: tuple[dict[str, Any] | None, dict[str, Any] | None]) -> None:
        pred, question = result
        self.prediction = pred
        title = self.query_one("#trajectory-title", Static)
        turns = self.query_one("#turns", VerticalScroll)
        turns.remove_children()
        if pred is None:
            title.update(f"prediction {self.pred_id} is gone (its step was re-run)")
            return
        head = Text()
        head.append(f"{pred['question_id']}", style="bold")
        head.append(f"  {pred['task_type']}  unit {pred['unit_id']}  ")
        head.append_text(fmt.correct(pred["correct"]))
        head.append(
            f"  stop {pred['stop_reason']}  tokens {fmt.num(pred['tokens_in'])}/"
            f"{fmt.num(pred['tokens_out'])}  cost {fmt.cost(pred['cost_usd'])}  "
            f"run {pred['run_id']}  skills {pred['skills_version']} prompts "
            f"{pred['prompts_version']}"
        )
        if len(self.neighbours) > 1 and self.pred_id in self.neighbours:
            head.append(
                f"  ({self.neighbours.index(self.pred_id) + 1}/{len(self.neighbours)})", style="dim"
            )
        title.update(head)
        widgets: list[Static] = []
        if question:
            q = Static(Text(_clip(question.get("question"))), classes="event event-question")
            q.border_title = "question (as asked)"
            widgets.append(q)
        steps = pred["steps"]
        recovered = recoveries(steps[:MAX_EVENTS])
        for i, event in enumerate(steps[:MAX_EVENTS]):
            widgets.append(
                event_widget(
                    event if isinstance(event, dict) else {"type": "?", "value": event},
                    recovered=i in recovered,
                )
            )
        if len(steps) > MAX_EVENTS:
            widgets.append(
                Static(f"… {len(steps) - MAX_EVENTS} more events not shown", classes="event")
            )
        turns.mount_all(widgets)
        turns.scroll_home(animate=False)

    def action_step(self, delta: int) -> None:
        if self.pred_id not in self.neighbours:
            return
        i = self.neighbours.index(self.pred_id) + delta
        if 0 <= i < len(self.neighbours):
            self.pred_id = self.neighbours[i]
            self.reload()
