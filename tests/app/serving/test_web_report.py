"""The web report without a browser: `report --html` writes one self-contained page whose
every workspace string is HTML-escaped; `serve` shows it at `/` (with the token, `?token=`
opens it); `--allow-origin` needs a token (docs/serving.md#the-web-report)."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.cli import main
from app.harness.serving.page_data import (
    EpochPoint,
    GateDecision,
    PageData,
    RoleUse,
    TypeAccuracy,
    gather,
)
from app.harness.serving.webpage import render_page

ROOT = Path(__file__).resolve().parents[3]
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
READY = re.compile(r"serving (\S+) at (http://\S+)/v1 ")
TOKEN = "web-token"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("webr") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert main(["train", "-w", str(ws), "--no-progress", "--set", "epochs=1"]) == 0
    return ws


def only_my_script(page: str) -> None:
    """The page's one script is the chat box's; nothing from the workspace became markup."""
    assert page.count("<script") == 1
    assert HOSTILE not in page
    assert "onerror=alert" not in page.replace("onerror=alert(1)&gt;", "")


def test_every_workspace_string_is_escaped_in_text_tables_and_charts():
    decision = GateDecision(1, 0, HOSTILE, "accept", 3, 0, 21.0, HOSTILE, f"+{HOSTILE}\n-old")
    data = PageData(
        workspace=HOSTILE,
        current=HOSTILE,
        best=HOSTILE,
        curve=[EpochPoint(1, 0.5, 0.6)],
        baseline_val=0.2,
        decisions=[decision, GateDecision(1, 1, "t", "reject", 0, 2, 0.5, "", "")],
        decisions_total=2,
        e_threshold=20.0,
        per_type=[TypeAccuracy(HOSTILE, 3, 4, 0.3, 0.95)],
        per_type_source=HOSTILE,
        roles=[RoleUse(HOSTILE, 10, 2, 0.5)],
    )
    page = render_page(data, served=False)
    only_my_script(page)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page  # shown, as text
    assert page.count("<svg") == 5


def test_the_policy_runs_the_chat_script_by_its_hash_and_no_inline_script_else():
    import base64
    import hashlib
    import re

    from app.harness.serving.webpage import CHAT_JS

    page = render_page(PageData(workspace="w", current="v1", best=""), served=True)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    script_src = next(d for d in policy.group(1).split("; ") if d.startswith("script-src"))
    digest = base64.b64encode(hashlib.sha256(CHAT_JS.encode()).digest()).decode()
    assert script_src == f"script-src 'sha256-{digest}'"  # no 'unsafe-inline'
    assert f"<script>{CHAT_JS}</script>" in page  # the hashed text is the text sent


def test_report_html_writes_one_self_contained_page(trained, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", "-w", str(trained), "--html", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    page = out.read_text()
    # nothing to fetch: no src/href/url()/@import anywhere, and the CSP forbids it anyway
    assert not re.search(r"\b(src|href)\s*=|url\(|@import", page, re.I)
    assert "default-src 'none'" in page
    for title in ("Learning curve", "Gate decisions", "Cost and calls per role", "Savings"):
        assert f"<h2>{title}</h2>" in page
    data = gather(trained)
    assert [p.epoch for p in data.curve] == [1] and data.baseline_val is not None
    assert data.decisions and all(d.e_value is not None for d in data.decisions)
    assert {r.role for r in data.roles} >= {"agent", "evolver"}
    assert data.savings is None and "no serve, eval or infer run" in data.savings_missing
    assert page.count("<details><summary>epoch ") == len(data.decisions)
    prompts = [d for d in data.decisions if d.task_type == "prompts"]  # the epoch's prompt gate
    assert len(prompts) == 1 and prompts[0].action in ("prompts kept", "prompts reverted")


def test_a_workspace_that_has_not_run_yet_gets_a_page_that_says_so(tmp_path):
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    assert main(["report", "-w", str(ws), "--html", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    for said in ("No finished epoch yet", "No gate decision yet", "No model call logged yet"):
        assert said in page
    assert "<svg" not in page


def test_a_hostile_skill_text_in_the_log_stays_text(trained, tmp_path):
    """A diff is a skill's text: a `<script>` in it (an evolver's edit, a tampered log) is shown
    escaped, in the edit list and nowhere as markup."""
    db = sqlite3.connect(trained / "harness.db")
    with db:
        row_id, report = db.execute(
            "SELECT id, report_json FROM step_reports WHERE gate_run_id IS NOT NULL LIMIT 1"
        ).fetchone()
        report = json.loads(report)
        report["diff"] = f"--- a/x.md\n+++ b/x.md\n+- {HOSTILE}\n"
        report["summary"] = HOSTILE
        db.execute(
            "UPDATE step_reports SET report_json = ?, task_type = ? WHERE id = ?",
            (json.dumps(report), HOSTILE, row_id),
        )
    db.close()
    out = tmp_path / "r.html"
    assert main(["report", "-w", str(trained), "--html", str(out)]) == 0
    page = out.read_text()
    only_my_script(page)
    assert '<span class="add">+- &lt;script&gt;' in page


def test_report_html_refuses_other_report_flags_and_a_missing_folder(trained, tmp_path, capsys):
    assert main(["report", "-w", str(trained), "--html", str(tmp_path / "a.html"), "--json"]) == 2
    assert "give it alone" in capsys.readouterr().err
    target = tmp_path / "no" / "a.html"
    assert main(["report", "-w", str(trained), "--html", str(target)]) == 2
    assert "no folder" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def start(ws: Path, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "main.py", "serve", "-w", str(ws), "--port", "0", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    found = READY.search(proc.stdout.readline())
    if found is None:
        proc.kill()
        raise AssertionError(f"serve did not start: {proc.communicate()[1]}")
    return proc, found.group(2)


@pytest.fixture(scope="module")
def served(trained: Path) -> Iterator[str]:
    proc, url = start(trained, "--token", TOKEN, "--allow-origin", "null", "--name", "trained")
    yield url
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)


def test_serve_shows_the_page_at_root_behind_the_token(served):
    assert httpx.get(f"{served}/").status_code == 401
    assert httpx.get(f"{served}/?token=wrong").status_code == 401
    page = httpx.get(f"{served}/?token={TOKEN}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<h2>Learning curve</h2>" in page.text and 'id="chat-form"' in page.text
    assert 'id="chat-model" value="trained"' in page.text
    assert TOKEN not in page.text  # the chat box reads it from the address, never the server
    header = httpx.get(f"{served}/", headers={"Authorization": f"Bearer {TOKEN}"})
    assert header.status_code == 200


def test_a_page_from_a_file_may_call_the_api_when_allowed(served):
    preflight = httpx.options(
        f"{served}/v1/chat/completions",
        headers={
            "Origin": "null",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "null"
    other = httpx.options(
        f"{served}/v1/chat/completions",
        headers={"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in other.headers


def test_allow_origin_without_a_token_is_refused(trained, capsys):
    assert main(["serve", "-w", str(trained), "--allow-origin", "null"]) == 2
    assert "--allow-origin null" in capsys.readouterr().err


def _axis_labels(svg: str, axis: str) -> list[str]:
    """The tick labels of a pygal chart's x or y axis."""
    start = svg.index(f'<g class="axis {axis}')
    ends = [i for i in (svg.find('<g class="axis', start + 1), svg.find('class="titles"')) if i > 0]
    section = svg[start : min(ends)] if ends else svg[start:]
    return re.findall(r'<g class="guides">.*?<text[^>]*>([^<]*)</text>', section)


def test_curve_starts_at_epoch_0_with_the_baseline_on_a_0_to_1_axis() -> None:
    from app.harness.serving import charts

    data = PageData("w", "c", "b", curve=[EpochPoint(1, 0.6, 0.65)], baseline_val=0.21)
    svg = charts.learning_curve(data)
    assert _axis_labels(svg, "x")[:2] == ["0", "1"]
    values = re.findall(r'<desc class="value">([^<]*)</desc>', svg)
    assert values[:2] == ["0.21", "0.6"]  # validation: baseline at epoch 0, then epoch 1
    assert {"0", "1"} <= set(_axis_labels(svg, "y"))  # the fixed 0..1 range


def test_gate_chart_has_whole_number_ticks_and_a_heavy_accept_line() -> None:
    from app.harness.serving import charts

    decisions = [GateDecision(1, i, "t", "reject", 0, 1, 0.5 + i, "", "") for i in range(3)]
    svg = charts.gate_chart(decisions, 20.0)
    x = [t for t in _axis_labels(svg, "x") if t.strip()]
    assert x and all(t.isdigit() for t in x), x  # decision numbers, never 0.5 steps
    assert _axis_labels(svg, "y")[:4] == ["0.1", "1", "10", "100"]  # powers of ten
    assert "accept level e=20" in svg
    assert re.search(r"serie-2\{stroke-width:4;stroke-dasharray:10,5\}", svg)
    assert "#111111" in svg  # drawn dark, not in a pale series colour


def test_per_type_bars_show_baseline_beside_final(trained: Path) -> None:
    data = gather(trained)
    final = json.loads((trained / "analyses" / "final_test_eval.json").read_text())
    assert [t.baseline for t in data.per_type] == [
        final["baseline_per_task_type"][t.task_type] for t in data.per_type
    ]
    ckpt = json.loads((trained / "checkpoint.json").read_text())
    assert data.baseline_val == pytest.approx(ckpt["state"]["baseline_val_acc"])
    assert data.baseline_test == pytest.approx(final["baseline_test_accuracy"])
    page = render_page(data, served=False)
    assert "baseline (before training)" in page and "0 (baseline)" in page
