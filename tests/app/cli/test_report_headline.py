"""`report` opens with the held-out result (`test accuracy: baseline -> final`) and lists it per
task type, in text and in `--json` (app/report.py `headline`)."""

from __future__ import annotations

import json
from pathlib import Path

from app.cli import main

FINAL = {
    "run_id": "train1-final-test",
    "baseline_test_accuracy": 0.216,
    "test_accuracy": 0.809,
    "units": 324,
    "per_task_type": {
        "dates": {"accuracy": 50 / 54, "correct": 50, "total": 54},
        "ledger": {"accuracy": 37 / 54, "correct": 37, "total": 54},
    },
    "baseline_per_task_type": {"dates": 0.259, "ledger": 0.167},
}


def _workspace(tmp_path: Path, final: dict | None) -> Path:
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    if final is not None:
        (ws / "analyses").mkdir(exist_ok=True)
        (ws / "analyses" / "final_test_eval.json").write_text(json.dumps(final))
    return ws


def test_report_opens_with_baseline_to_final_and_lists_it_per_task_type(tmp_path, capsys):
    ws = _workspace(tmp_path, FINAL)
    capsys.readouterr()
    assert main(["report", str(ws)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "test accuracy: baseline 0.216 -> final 0.809 (324 held-out units)"
    at = lines.index("test accuracy by task type (baseline -> final, run train1-final-test)")
    assert lines[at + 1].split() == ["dates", "0.259", "->", "0.926", "(+0.667)", "50/54"]
    assert lines[at + 2].split() == ["ledger", "0.167", "->", "0.685", "(+0.518)", "37/54"]

    assert main(["report", str(ws), "--json"]) == 0
    head = json.loads(capsys.readouterr().out)["headline"]
    assert (head["baseline_test_accuracy"], head["test_accuracy"]) == (0.216, 0.809)
    assert [(t["task_type"], t["baseline"], t["correct"]) for t in head["per_task_type"]] == [
        ("dates", 0.259, 50),
        ("ledger", 0.167, 37),
    ]


def test_before_the_final_test_the_headline_says_so(tmp_path, capsys):
    ws = _workspace(tmp_path, None)
    capsys.readouterr()
    assert main(["report", str(ws)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("test accuracy: no final test yet")


def test_a_damaged_figure_reads_as_missing_not_as_a_number(tmp_path, capsys):
    ws = _workspace(tmp_path, {**FINAL, "test_accuracy": "0.9", "baseline_test_accuracy": 7})
    capsys.readouterr()
    assert main(["report", str(ws)]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("test accuracy: no final test yet")
