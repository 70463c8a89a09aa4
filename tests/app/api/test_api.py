"""The Python API (app/api/): the README's example (also on docs/python-api.md), async twins,
typed results, and the CLI's refusals arriving as named exceptions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from app import api
from app.cli import main

ROOT = Path(__file__).resolve().parents[3]
SMALL = {"epochs": 1, "task_types": ["ledger", "units"]}


def python_block(path: Path, section: str) -> str:
    text = path.read_text(encoding="utf-8").split(section, 1)[1]
    return re.search(r"```python\n(.*?)```", text, flags=re.DOTALL).group(1)


def readme_api_example() -> str:
    return python_block(ROOT / "README.md", "## From Python")


def test_the_api_page_shows_the_readme_example() -> None:
    assert python_block(ROOT / "docs" / "python-api.md", "# The Python API") == (
        readme_api_example()
    )


@pytest.mark.slow
def test_the_readme_example_runs_and_prints_the_learning(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_api_example(), "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    before, after = map(float, re.fullmatch(r"test (\S+) -> (\S+)", lines[0]).groups())
    assert after > before
    assert 0.0 < float(lines[1]) <= 1.0
    assert (tmp_path / "workspaces" / "api" / "checkpoint.json").is_file()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return api.init_workspace(tmp_path / "ws", seed="sim-starter", questions="sim-basic").root


def test_an_early_stop_is_done_with_its_reason(ws):
    """All epochs run: no reason; an early stop: done, and the reason names the last epoch."""
    from app import paths

    result = api.train(ws, paths.demo_config(), overrides={"epochs": 6})
    assert result.status == "done" and 2 <= result.epochs_run < 6
    assert result.reason == (
        f"finished after epoch {result.epochs_run} of 6: early stop, no new best validation "
        "accuracy for 2 epochs"
    )


def test_train_returns_what_the_run_recorded(ws):
    result = api.train(ws, overrides=SMALL)
    final = json.loads((ws / "analyses" / "final_test_eval.json").read_text())
    assert result.status == "done" and result.reason is None
    assert result.train_id == final["train_id"] == "train1"
    assert result.test_accuracy == final["test_accuracy"]
    assert [p.epoch for p in result.curve] == [1] and result.epochs_run == 1
    assert result.best_skills_version == final["skills_version"]
    assert result.model_calls > result.cache_hits >= 0 and result.simulated_model


def test_the_async_twin_reaches_the_same_state_inside_a_running_loop(tmp_path, ws):
    twin = api.init_workspace(tmp_path / "twin", seed="sim-starter", questions="sim-basic").root

    async def both() -> tuple[api.TrainResult, api.EvalResult]:
        trained = await api.train_async(twin, overrides=SMALL)
        return trained, await api.evaluate_async(twin, "v1")

    trained, evaluated = anyio.run(both)
    sync = api.train(ws, overrides=SMALL)
    assert (trained.test_accuracy, trained.curve) == (sync.test_accuracy, sync.curve)
    assert evaluated.skills_version == "v1"
    assert evaluated.total == sum(s.total for s in evaluated.per_task_type.values()) > 0


def test_evaluate_and_infer_return_typed_scores_and_write_the_eval_report(ws):
    result = api.evaluate(ws, "skills/v1")
    report = json.loads((ws / "analyses" / f"eval_{result.run_id}.json").read_text())
    assert report["accuracy"] == result.accuracy and report["total_units"] == result.total
    assert sum(s.total for s in result.per_task_type.values()) == result.total
    assert result.new_model_calls > 0
    again = api.evaluate(ws, "v1")
    assert again.accuracy == result.accuracy and again.new_model_calls == 0  # response cache
    samples = api.infer(ws, task_types=["dates"], n_samples=2, run_id="mine").samples
    assert [s.run_id for s in samples] == ["mine-s0", "mine-s1"]
    assert all(set(s.per_task_type) == {"dates"} for s in samples)


def test_report_is_the_json_the_cli_prints(ws, capsys):
    api.train(ws, overrides=SMALL)
    report = api.report(ws)
    capsys.readouterr()
    assert main(["report", "-w", str(ws), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["best"] == report.best and printed["spent_usd"] == report.spent_usd
    assert "finished after epoch 1" in report.text


def test_refusals_are_named_exceptions(ws):
    with pytest.raises(api.UserError, match="no skills version 'v9'"):
        api.evaluate(ws, "v9")
    with pytest.raises(api.UserError, match="nonsense"):
        api.train(ws, overrides={"nonsense": 1})
    with pytest.raises(api.UserError, match="resume and fresh"):
        api.train(ws, resume=True, fresh=True)
    with pytest.raises(api.UserError, match="n_samples"):
        api.infer(ws, n_samples=0)


def test_a_bad_key_is_reported_before_the_workspace_state(ws, capsys):
    """`train --set nonsense=1` on a workspace with progress names the key, not the progress."""
    api.train(ws, overrides=SMALL)
    capsys.readouterr()
    assert main(["train", "-w", str(ws), "--set", "nonsense=1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "nonsense" in err and "--resume" not in err
