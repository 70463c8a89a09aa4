"""Data never drives the terminal: one sanitiser for the CLI, the log lines and the TUI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rich.text import Text

from app.sanitize import markup_safe, visible, visible_tree
from app.tui.data import WorkspaceData
from tests.app.test_hostile_inputs import make_store, sim_lines

ROOT = Path(__file__).resolve().parents[3]
EVIL_NAME = "ev\x1b]0;pwned\x07il[bold]x[/bold]"
EVIL_QUESTION = "\x1b[2J\x1b]0;title\x07 clear \x9b31m [red]markup[/red] \u202eevil"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", *args], cwd=ROOT, capture_output=True, timeout=300
    )


def assert_inert(raw: bytes) -> None:
    text = raw.decode("utf-8")
    for bad in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert bad not in text, f"{bad!r} reached the terminal: {text[:300]!r}"


def test_visible_turns_controls_into_printable_text():
    shown = visible("a\x1b[2Jb\x1b]0;t\x07c\x00\x7f\x9b\u202e\nd\te")
    assert shown == "a␛[2Jb␛]0;t␇c␀␡<U+009B><U+202E>\nd\te"
    assert json.loads(visible(json.dumps({"k": "x\x9by"}, ensure_ascii=False))) == {
        "k": "x<U+009B>y"
    }, "sanitised JSON text must stay valid JSON"
    assert visible_tree({"a\x1b": ["\x07", 1]}) == {"a␛": ["␇", 1]}


def test_markup_in_data_is_shown_literally():
    assert Text.from_markup(markup_safe("[red]x[/red] \x1b")).plain == "[red]x[/red] ␛"


def test_cli_and_tui_show_hostile_names_and_questions_as_text(tmp_path):
    questions = sim_lines(limit=40)
    questions[0] = {**questions[0], "question": EVIL_QUESTION + questions[0]["question"]}
    store = make_store(tmp_path, "evil", questions)
    toml = store / "questions" / "evil" / "benchmark.toml"
    toml.write_text(toml.read_text().replace('name = "evil"', f"name = {json.dumps(EVIL_NAME)}"))
    ws = tmp_path / "ws"
    init = run(
        "init", str(ws), "--seed", "sim-starter", "--questions", "evil", "--store", str(store)
    )
    assert init.returncode == 0, init.stderr
    assert_inert(init.stdout + init.stderr)
    assert "ev␛]0;pwned␇il[bold]x[/bold]" in init.stderr.decode()
    infer = run("infer", "-w", str(ws), "--no-progress")
    assert infer.returncode == 0, infer.stderr
    assert_inert(infer.stdout + infer.stderr)
    report = run("report", str(ws))
    assert report.returncode == 0, report.stderr
    assert_inert(report.stdout + report.stderr)
    assert "questions=ev␛]0;pwned␇il" in report.stdout.decode()

    data = WorkspaceData(ws)
    assert data.manifest()["current"]["questions"] == visible(EVIL_NAME)
    shown = data.question(questions[0]["question_id"])["question"]
    assert shown.startswith("␛[2J␛]0;title␇ clear <U+009B>31m [red]markup[/red] <U+202E>evil")
    page = data.runs_page()
    assert page.rows, "the infer run is listed"

    import sqlite3

    conn = sqlite3.connect(ws / "harness.db")
    with conn:
        conn.execute(
            "UPDATE predictions SET prediction = ?, steps_json = ? WHERE id = 1",
            ("\x1b]0;x\x07", json.dumps([{"type": "model", "text": "\x1b[2J"}])),
        )
    conn.close()
    pred = data.prediction(1)
    assert pred["prediction"] == "␛]0;x␇" and pred["steps"][0]["text"] == "␛[2J"
