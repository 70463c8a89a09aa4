"""`estimate` (app/estimate.py): counts from dry runs, stored for `report`, and `train --dry-run`
trains nothing. Its pools-too-small warning is validate-benchmark's (one implementation,
core/benchmark_checks.py): tests/app/cli/test_new_user_walkthrough.py checks both say it."""

from __future__ import annotations

import json
from pathlib import Path

from app.cli import main
from app.estimate import ESTIMATE_FILE, _cost
from app.harness.training.call_budget import first_step_calls, ledger_paid_calls
from app.harness.workspace.config import RunConfig
from app.providers.sim.provider import SIM_PRICE_IN_PER_MTOK
from tests.app.oracle_bench import NAME, SEED, write_store
from tests.fakes.fixtures import fake_openai  # noqa: F401 - the fixture
from tests.fakes.openai_server import Reply

ORACLE = ['agent_model="sim/oracle"', 'evolver_model="sim/oracle"', 'judge_model="sim/oracle"']


def _oracle_workspace(tmp_path: Path) -> Path:
    store = write_store(tmp_path / "store")
    ws = tmp_path / "ws"
    assert (
        main(["init", "-w", str(ws), "--seed", SEED, "--questions", NAME, "--store", str(store)])
        == 0
    )
    return ws


def test_estimate_then_train_then_report_estimate_vs_actual(tmp_path: Path, capsys) -> None:
    ws = _oracle_workspace(tmp_path)
    sets = [a for s in [*ORACLE, "epochs=1"] for a in ("--set", s)]
    assert main(["train", "-w", str(ws), "--dry-run", "--no-progress", *sets]) == 0
    out = capsys.readouterr().out
    assert "nothing trained" in out and "calls" in out
    assert not (ws / "checkpoint.json").exists()
    assert main(["estimate", "-w", str(ws), "--json", "--no-progress", *sets]) == 0
    est = json.loads(capsys.readouterr().out)
    assert est["calls_low"] <= est["calls"] <= est["calls_high"] and est["calls"] > 0
    assert est["cost_usd"] > 0 and est["simulated"]
    assert {r["role"] for r in est["roles"]} == {"agent", "evolver", "judge"}
    assert json.loads((ws / "analyses" / ESTIMATE_FILE).read_text())["calls"] == est["calls"]
    assert not (ws / ".staging").exists() or not any((ws / ".staging").iterdir())
    assert main(["train", "-w", str(ws), "--no-progress", *sets]) == 0
    capsys.readouterr()
    assert main(["report", "-w", str(ws)]) == 0
    report = capsys.readouterr().out
    assert "estimate vs actual for train1" in report and "agent    calls" in report
    assert "another config" not in report  # estimated with the config the run used
    pinned = json.loads((ws / "analyses" / ESTIMATE_FILE).read_text())
    assert pinned["train_id"] == "train1" and pinned["same_config"]
    # every role on sim/oracle: the dry run is the run, so its first step cost the same
    paid = ledger_paid_calls(ws / "response_cache.db", "train1")
    actual_first = first_step_calls(paid, "train1")
    assert est["first_step_calls"] == actual_first > 0


def test_a_budget_the_first_step_cannot_close_in_is_warned(tmp_path: Path, capsys) -> None:
    ws = _oracle_workspace(tmp_path)
    sets = [a for s in [*ORACLE, "epochs=1"] for a in ("--set", s)]
    assert main(["estimate", "-w", str(ws), "--no-progress", *sets]) == 0
    out = capsys.readouterr().out
    first = int(out.split("first step: ")[1].split()[0])
    assert "ran out before the stand-in's first step closed" not in out
    small = [*sets, "--set", f"max_calls={first - 1}"]
    assert main(["estimate", "-w", str(ws), "--json", "--no-progress", *small]) == 0
    est = json.loads(capsys.readouterr().out)
    assert est["first_step_calls"] is None
    assert any(f"max_calls = {first - 1} ran out before" in w for w in est["warnings"])
    enough = [*sets, "--set", f"max_calls={first}"]
    assert main(["estimate", "-w", str(ws), "--json", "--no-progress", *enough]) == 0
    assert json.loads(capsys.readouterr().out)["first_step_calls"] == first


def test_cost_sim_configured_litellm_and_unknown() -> None:
    sim = RunConfig()
    cost, note = _cost(sim, "sim/basic", 1_000_000, 0)
    assert cost == SIM_PRICE_IN_PER_MTOK and note == "notional simulated prices"
    priced = RunConfig(price_in_per_mtok=2.0, price_out_per_mtok=8.0)
    assert _cost(priced, "openai/x", 500_000, 250_000) == (3.0, "configured prices")
    cost, note = _cost(sim, "openai/gpt-4o-mini", 1_000_000, 1_000_000)
    assert cost is not None and cost > 0 and note == "litellm price map"
    assert _cost(sim, "openai/no-such-model-xyz", 10, 10) == (
        None,
        "no price known for openai/no-such-model-xyz",
    )


def test_a_real_agent_model_is_sampled_with_real_calls_and_an_unpriced_model_says_so(
    fake_openai,  # noqa: F811 - the fixture
    tmp_path: Path,
    monkeypatch,
    capsys,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_openai.responder = lambda body: Reply.ok("Sure.\nANSWER: 4")
    ws = tmp_path / "ws"
    assert main(["init", "-w", str(ws), "--seed", "real-starter", "--questions", "real-easy"]) == 0
    sets = [
        f'api_base="{fake_openai.base_url}"',
        'agent_model="openai/fake-model"',
        'evolver_model="sim/oracle"',
        'judge_model="sim/oracle"',
        "epochs=1",
    ]
    argv = ["estimate", "-w", str(ws), "--no-progress", *(a for s in sets for a in ("--set", s))]
    assert main(argv) == 0
    out = capsys.readouterr().out
    agent_requests = len(fake_openai.requests)
    assert agent_requests >= 2  # one rollout per task type (arithmetic, capitals), real calls
    assert f"{agent_requests} of them real, paid calls" in out
    assert "cost no price known for openai/fake-model" in out
    assert "cost unknown (a model has no price)" in out
    priced = [*argv, "--set", "price_in_per_mtok=1.0", "--set", "price_out_per_mtok=2.0"]
    assert main(priced) == 0
    out = capsys.readouterr().out
    assert "(configured prices)" in out and "no price known" not in out


def test_estimate_does_not_repeat_inits_warnings(tmp_path: Path, capsys) -> None:
    """The scratch copies `estimate` initialises say nothing: init warned the user once."""
    store = write_store(tmp_path / "store")
    (store / "seeds" / SEED / "skills" / "calendar.md").write_text("# calendar\n")  # no such type
    ws = tmp_path / "ws"
    init = ["init", "-w", str(ws), "--seed", SEED, "--questions", NAME, "--store", str(store)]
    assert main(init) == 0
    assert "skills calendar.md match no task type" in capsys.readouterr().err
    sets = [a for s in [*ORACLE, "epochs=1"] for a in ("--set", s)]
    assert main(["estimate", "-w", str(ws), "--json", "--no-progress", *sets]) == 0
    assert "match no task type" not in capsys.readouterr().err


def test_estimate_warns_as_validate_benchmark_when_no_realistic_edit_can_be_confirmed(
    tmp_path: Path, capsys
) -> None:
    """16 families of 3 per task type (12 in the gate's pools): enough for some edit to be
    accepted, not for a one-rule edit (d = 1/3 a family: 14 needed). Both commands say so in
    the same words (core/benchmark_checks.py `check_edit_power`)."""
    bench = tmp_path / "store" / "questions" / "fam"
    bench.mkdir(parents=True)
    rows = [
        {
            "question_id": f"{t}{i:02d}",
            "task_type": t,
            "question": f"[{t}] What is {i} * 13?",
            "answer": str(i * 13),
            "checker": "numeric",
            "family": f"{t}-f{i // 3}",
        }
        for t in ("a", "b")
        for i in range(48)
    ]
    (bench / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (bench / "benchmark.toml").write_text('name = "fam"\n')
    store = str(tmp_path / "store")
    assert main(["validate-benchmark", "fam", "--store", store]) == 0
    validated = capsys.readouterr().out
    messages = [
        x.split("no_realistic_edit: ", 1)[1]
        for x in validated.splitlines()
        if "no_realistic_edit" in x
    ]
    assert len(messages) == 2 and "needs 14 such families" in messages[0]
    ws = str(tmp_path / "ws")
    assert main(["init", "-w", ws, "--questions", "fam", "--store", store]) == 0
    capsys.readouterr()
    sets = [a for s in [*ORACLE, "epochs=1"] for a in ("--set", s)]
    assert main(["estimate", "-w", ws, "--no-progress", *sets]) == 0
    estimated = capsys.readouterr().out
    assert all(f"warning: {m}" in estimated for m in messages)
