"""The web report: one self-contained HTML page (inline CSS and SVG, no fonts, scripts or
images from anywhere) that `report --html` writes and `serve` shows at `/`.

Everything is readable without JavaScript; only the chat box needs it. Every string from the
workspace goes through `esc` (HTML-escaped); the chat script puts replies in with
`textContent`, never as markup. A Content-Security-Policy keeps the page from loading anything
and runs only the chat script, named by its sha256.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable

from app.harness.serving import charts
from app.harness.serving.page_data import MAX_DECISIONS, PROMPTS_STEP, GateDecision, PageData, clean
from core.savings import Figure

STATIC_SERVER = "http://127.0.0.1:8000"


def esc(text: object) -> str:
    return html.escape(clean(text), quote=True)


def script_hash(script: str) -> str:
    """The CSP source that lets exactly this inline script run (and no other: a script that
    got into the page some other way has another hash)."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"sha256-{base64.b64encode(digest).decode()}"


def render_page(data: PageData, *, served: bool, model: str = "") -> str:
    """The whole page. `served`: the chat box talks to the page's own origin; otherwise it
    has a field for the server's URL (a file:// page needs `serve --allow-origin null`)."""
    title = f"skill-trainer report: {data.workspace}"
    connect = "'self'" if served else "'self' http: https:"
    csp = (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src '{script_hash(CHAT_JS)}'; "
        f"img-src data:; connect-src {connect}; base-uri 'none'; form-action 'none'"
    )
    body = "\n".join(
        [
            _header(data),
            _curve(data),
            _gates(data),
            _per_type(data),
            _roles(data),
            _savings(data),
            _chat(data, served=served, model=model),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n"
        f"<script>{CHAT_JS}</script>\n</body></html>\n"
    )


def _header(data: PageData) -> str:
    best = f" &middot; best {esc(data.best)}" if data.best else ""
    sim = (
        '<p class="note">Runs here used the built-in SIMULATED model (sim/*): the figures show '
        "the harness working, not a real model's quality; prices are notional.</p>"
        if data.simulated
        else ""
    )
    return (
        f"<header><h1>skill-trainer report: {esc(data.workspace)}</h1>"
        f"<p>current {esc(data.current)}{best}</p>{sim}</header>"
    )


def _section(sid: str, title: str, content: str) -> str:
    return f'<section id="{sid}"><h2>{esc(title)}</h2>\n{content}\n</section>'


def _figure(chart_id: str, svg: str) -> str:
    return f'<figure class="chart" id="{chart_id}">{svg}</figure>'


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _table(head: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """Cells are already escaped (or built from numbers)."""
    th = "".join(f"<th>{h}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _curve(data: PageData) -> str:
    if not data.curve:
        return _section("curve", "Learning curve", "<p>No finished epoch yet.</p>")
    base = (
        f"<p>Epoch 0 is the baseline (the seed skills, before training): validation "
        f"{_pct(data.baseline_val)}, test {_pct(data.baseline_test)}.</p>"
    )
    rows = [("0 (baseline)", _pct(data.baseline_val), _pct(data.baseline_test))]
    rows += [(str(p.epoch), _pct(p.val_acc), _pct(p.test_acc)) for p in data.curve]
    return _section(
        "curve",
        "Learning curve",
        _figure("chart-curve", charts.learning_curve(data))
        + base
        + _table(("epoch", "validation", "test"), rows),
    )


def _evidence(d: GateDecision) -> str:
    parts = []
    if d.w is not None and d.l is not None:
        parts.append(f"W={d.w} L={d.l}")
    if d.e_value is not None:
        parts.append(f"e={d.e_value:.2f}")
    return " ".join(parts) or "-"


def _diff_html(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        cls = ""
        if line.startswith(("+++", "---")):
            cls = "fn"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        lines.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def _step(d: GateDecision) -> str:
    return "end" if d.step == PROMPTS_STEP else f"step {d.step}"


def _edit_list(decisions: list[GateDecision], accepted: bool) -> str:
    chosen = [d for d in decisions if d.accepted == accepted]
    if not chosen:
        return "<p>None.</p>"
    items = []
    for d in chosen:
        head = (
            f"epoch {d.epoch} {_step(d)} &middot; {esc(d.task_type)} &middot; "
            f"{esc(d.action)} &middot; {esc(_evidence(d))}"
        )
        diff = _diff_html(d.diff) if d.diff else "<p>(no diff recorded)</p>"
        items.append(f"<details><summary>{head}</summary><p>{esc(d.summary)}</p>{diff}</details>")
    return "\n".join(items)


def _gates(data: PageData) -> str:
    if not data.decisions:
        return _section("gates", "Gate decisions", "<p>No gate decision yet.</p>")
    rows = [
        (
            str(i),
            str(d.epoch),
            _step(d).removeprefix("step "),
            esc(d.task_type),
            f'<span class="{"acc" if d.accepted else "rej"}">{esc(d.action)}</span>',
            esc(_evidence(d)),
        )
        for i, d in enumerate(data.decisions, 1)
    ]
    shown = len(data.decisions)
    more = (
        f"<p>The latest {shown} decisions of {data.decisions_total} step reports.</p>"
        if data.decisions_total > shown and shown >= MAX_DECISIONS
        else ""
    )
    accepted = sum(d.accepted for d in data.decisions)
    return _section(
        "gates",
        "Gate decisions",
        _figure("chart-gates", charts.gate_chart(data.decisions, data.e_threshold))
        + f"<p>{accepted} accepted, {shown - accepted} rejected. Evidence: wins and losses "
        "over paired families (W/L) and the e-value against the accept level.</p>"
        + more
        + "<details><summary>every decision</summary>"
        + _table(("#", "epoch", "step", "task type", "decision", "evidence"), rows)
        + "</details>"
        + "<h3>Accepted edits</h3>"
        + _edit_list(data.decisions, True)
        + "<h3>Rejected edits</h3>"
        + _edit_list(data.decisions, False),
    )


def _per_type(data: PageData) -> str:
    if not data.per_type:
        return _section("per-type", "Accuracy by task type", "<p>No final test evaluation yet.</p>")
    rows = [
        (
            esc(t.task_type),
            _pct(t.baseline),
            _pct(t.accuracy),
            f"[{t.low:.3f}, {t.high:.3f}]",
            f"{t.correct}/{t.total}",
        )
        for t in data.per_type
    ]
    return _section(
        "per-type",
        "Accuracy by task type",
        _figure("chart-types", charts.per_type_chart(data))
        + f"<p>Held-out test of run {esc(data.per_type_source)}.</p>"
        + _table(("task type", "baseline", "final", "95% Wilson interval (final)", "units"), rows),
    )


def _roles(data: PageData) -> str:
    if not data.roles:
        return _section("roles", "Cost and calls per role", "<p>No model call logged yet.</p>")
    rows = [
        (esc(r.role), str(r.calls), str(r.cache_hits), f"${r.cost_usd:.4f}") for r in data.roles
    ]
    return _section(
        "roles",
        "Cost and calls per role",
        _figure("chart-roles", charts.roles_chart(data))
        + _figure("chart-cost", charts.cost_chart(data))
        + _table(("role", "calls", "cache hits", "cost"), rows),
    )


def _figure_value(f: Figure) -> str:
    if f.value is None:
        return "-"
    if f.unit == "USD":
        text = f"${f.value:,.6f}"
    elif f.unit == "s":
        text = f"{f.value * 1000:.1f} ms"
    elif f.unit == "share":
        text = f"{f.value:.3f}"
    else:
        text = f"{f.value:g} {esc(f.unit)}"
    if f.interval is not None:
        text += f" [{f.interval[0]:.3f}, {f.interval[1]:.3f}]"
    return text


def _savings(data: PageData) -> str:
    report = data.savings
    if report is None:
        return _section("savings", "Savings", f"<p>{esc(data.savings_missing)}</p>")
    u = report.run
    rows = [(esc(f.name), _figure_value(f), esc(f.basis)) for f in report.figures]
    text = (
        f"<p>Run {esc(u.run_id)} ({esc(u.kind)}, {esc(', '.join(u.models) or 'no calls')})."
        " Every figure with its basis; a missing price omits the figure.</p>"
        + _table(("figure", "value", "basis"), rows)
    )
    if report.baseline:
        base_rows = [(esc(f.name), _figure_value(f), esc(f.basis)) for f in report.baseline_figures]
        text += f"<h3>Against {esc(report.baseline)}</h3>" + _table(
            ("figure", "value", "basis"), base_rows
        )
    return _section("savings", "Savings", text)


def _chat(data: PageData, *, served: bool, model: str) -> str:
    server = "" if served else STATIC_SERVER
    where = (
        "This page's own server answers."
        if served
        else "Give the URL of a running <code>serve</code> (started with "
        "<code>--allow-origin null</code> so a page opened from a file may call it)."
    )
    types = "".join(f'<option value="{esc(t.task_type)}">' for t in data.per_type)
    return _section(
        "chat",
        "Chat with the served agent",
        f"<noscript><p>The chat box needs JavaScript; the rest of the page does not.</p></noscript>"
        f"<p>{where}</p>"
        '<form id="chat-form">'
        f'<label>server URL <input id="chat-url" value="{esc(server)}" '
        'placeholder="(this server)" size="32"></label> '
        f'<label>model <input id="chat-model" value="{esc(model)}" size="16" '
        'placeholder="(ask /v1/models)"></label> '
        '<label>token <input id="chat-token" type="password" size="12"></label><br>'
        f'<label>task type <input id="chat-task-type" list="chat-types" size="16"></label>'
        f'<datalist id="chat-types">{types}</datalist><br>'
        '<textarea id="chat-message" rows="3" cols="80" placeholder="your question"></textarea><br>'
        '<button id="chat-send" type="submit">Send</button> <span id="chat-status"></span>'
        "</form>"
        '<h3>Answer</h3><pre id="chat-answer"></pre>'
        '<p>Skills opened: <span id="chat-skills">-</span></p>',
    )


CSS = """
body{font-family:sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#222}
h1{font-size:26px}h2{font-size:22px;border-bottom:1px solid #ccc;padding-bottom:4px}
section{margin-bottom:28px}
figure.chart{margin:8px 0;width:760px;height:340px}
figure.chart svg{width:760px;height:340px}
table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;font-size:14px}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;white-space:pre-wrap;font-size:13px}
.diff .add{color:#1a7f37}.diff .del{color:#b42318}.diff .hunk{color:#0969da}
.diff .fn{font-weight:bold}.acc{color:#1a7f37}.rej{color:#b42318}
.note{background:#fff4d6;padding:6px}
details{margin:4px 0}summary{cursor:pointer}
"""

CHAT_JS = """
(function () {
  var form = document.getElementById("chat-form");
  if (!form) return;
  var get = function (id) { return document.getElementById(id); };
  var query = new URLSearchParams(window.location.search);
  if (query.get("token")) get("chat-token").value = query.get("token");
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    var base = get("chat-url").value.trim().replace(/\\/+$/, "");
    var headers = {"Content-Type": "application/json"};
    var token = get("chat-token").value;
    if (token) headers["Authorization"] = "Bearer " + token;
    var status = get("chat-status");
    status.textContent = "asking...";
    get("chat-answer").textContent = "";
    get("chat-skills").textContent = "-";
    try {
      var model = get("chat-model").value.trim();
      if (!model) {
        var listed = await (await fetch(base + "/v1/models", {headers: headers})).json();
        model = listed.data[0].id;
        get("chat-model").value = model;
      }
      var body = {model: model, messages: [{role: "user", content: get("chat-message").value}]};
      var taskType = get("chat-task-type").value.trim();
      if (taskType) body.skill_trainer = {task_type: taskType};
      var reply = await fetch(base + "/v1/chat/completions",
        {method: "POST", headers: headers, body: JSON.stringify(body)});
      var data = await reply.json();
      if (!reply.ok) {
        status.textContent = "error " + reply.status + ": " + ((data.error || {}).message || "");
        return;
      }
      get("chat-answer").textContent = data.choices[0].message.content;
      var extra = data.skill_trainer || {};
      var opened = extra.skills_opened || [];
      get("chat-skills").textContent = opened.length ? opened.join(", ") : "(none)";
      status.textContent = "answered by " + model +
        (extra.task_type ? " as task type " + extra.task_type : "");
    } catch (e) {
      status.textContent = "could not reach " + (base || "this server") + ": " + e;
    }
  });
})();
"""
