"""Checks of bench/acceptance.py's new counts: useless lines in the final skills, the null edits
its gates accepted, and the noisy setting reaching the simulated world.

The harness log here has the real schema (HarnessLog creates it) and rows shaped as
app/harness/training/step.py and slow_update.py write them: an evolution under run
`<prefix>evolve`, its step report under `<prefix>report`, a probation verdict in the epoch
report naming the version the provisional accept produced.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from app.harness.workspace.config import RunConfig
from app.harness.workspace.harness_log import HarnessLog
from app.providers.sim.evolver import USELESS_LINES
from app.providers.sim.provider import NOISE_SHARE
from app.providers.sim.world import build_world
from tests.support.log_rows import insert_rows

BENCH = Path(__file__).resolve().parents[2] / "bench"
RULE = build_world().rules["dates.r1"]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def acc():
    return _load("acceptance")


def test_useless_lines_counted_per_skill_file(acc, tmp_path: Path) -> None:
    (tmp_path / "dates.md").write_text(
        f"# Dates\n## Rules\n{USELESS_LINES[0]}\n- {RULE.statement}\n"
        f"-   {USELESS_LINES[1][2:].upper()}\n",  # other case and spacing: still that line
        encoding="utf-8",
    )
    (tmp_path / "units.md").write_text(f"## Rules\n{USELESS_LINES[0]}\n", encoding="utf-8")
    (tmp_path / "_meta.json").write_text(json.dumps({"note": USELESS_LINES[2]}), "utf-8")
    assert acc.useless_in(tmp_path) == 3  # two in dates.md, one in units.md; not the metadata


def _evolution(prefix: str, task_type: str, contents: list[str], applied: list[bool], result):
    edits = [{"op": "add", "section": "Rules", "content": c} for c in contents]
    report = [{"index": i, "applied": a} for i, a in enumerate(applied)]
    return {
        "run_id": f"{prefix}evolve",
        "task_type": task_type,
        "target_kind": "skill",
        "edits_json": json.dumps(edits),
        "apply_report_json": json.dumps(report),
        "result_version": result,
    }


def _report(prefix: str, task_type: str, action: str) -> dict:
    return {"run_id": f"{prefix}report", "task_type": task_type, "action": action}


def test_null_edit_tally_from_the_harness_log(acc, tmp_path: Path) -> None:
    useless, rule = USELESS_LINES[1], f"- {RULE.statement}"
    cases = [  # (step, task type, contents, applied, gate action, version produced)
        (0, "dates", [useless], [True], "reject", None),  # tested, rejected
        (0, "units", [useless], [True], "accept", "v2"),  # tested, accepted
        (1, "dates", [useless], [True], "accept_provisional", "v3"),  # kept at epoch end
        (1, "units", [useless], [True], "accept_provisional", "v4"),  # rolled back
        (2, "dates", [useless], [True], "accept_provisional", "v5"),  # never settled
        (2, "units", [rule], [True], "accept", "v6"),  # a real rule: not a null edit
        (3, "dates", [useless, rule], [True, True], "accept", "v7"),  # mixed: not null
        (3, "units", [useless, rule], [True, False], "reject", None),  # only the line applied
        (4, "dates", [useless], [False], "skip_no_change", None),  # nothing applied, no gate
        (4, "units", [useless], [True], "skip_cooldown", None),  # no gate ran
    ]
    log = HarnessLog(tmp_path / "harness.db")
    for step, task_type, contents, applied, action, version in cases:
        prefix = f"train1-e1-s{step}-"
        insert_rows(log, "evolutions", [_evolution(prefix, task_type, contents, applied, version)])
        insert_rows(log, "step_reports", [_report(prefix, task_type, action)])
    probations = [
        {"task_type": "dates", "verdict": "keep", "accepted_version": "v3"},
        {"task_type": "units", "verdict": "rollback", "accepted_version": "v4"},
    ]
    insert_rows(
        log,
        "epoch_reports",
        [{"run_id": "train1-e1-slow-report", "epoch": 1, "report_json": json.dumps({})}]
        + [
            {
                "run_id": "train1-e2-slow-report",
                "epoch": 2,
                "report_json": json.dumps({"probations": probations}),
            }
        ],
    )
    conn = sqlite3.connect(tmp_path / "harness.db")
    try:
        tally = acc.null_edit_tally(conn)
    finally:
        conn.close()
    # tested: s0 dates, s0 units, s1 dates, s1 units, s2 dates, s3 units
    assert tally == acc.NullTally(tested=6, accepted=3, provisional=3)


def test_rejected_counts_and_the_mcnemar_share(acc, tmp_path: Path, capsys) -> None:
    log = HarnessLog(tmp_path / "harness.db")
    rows = [  # (action, W, L): only rejections after some evidence count
        ("reject", 5, 0),  # exact one-sided McNemar p = 1/32: a fixed test accepts it
        ("reject", 4, 0),  # p = 1/16: not at 0.05
        ("reject", 0, 0),  # no evidence: left out
        ("accept", 6, 0),  # not a rejection
    ]
    insert_rows(
        log,
        "step_reports",
        [
            {"run_id": f"train1-e1-s{i}-report", "task_type": "dates", "action": a, "w": w, "l": n}
            for i, (a, w, n) in enumerate(rows)
        ],
    )
    conn = sqlite3.connect(tmp_path / "harness.db")
    try:
        counts = acc.rejected_counts(conn)
    finally:
        conn.close()
    assert counts == [(5, 0), (4, 0)]
    assert acc.mcnemar_confirmable(counts, 0.05) == 1
    assert acc.mcnemar_confirmable(counts, 0.07) == 2
    outcomes = [_outcome(acc, "default", "eprocess", 1, rejected=2, rejected_mcnemar=1)]
    acc.report_setting(outcomes, "default", ["eprocess"])
    assert "RESULT acceptance.default.eprocess.rejected_mcnemar_confirmable 0.500 share" in (
        capsys.readouterr().out
    )


def test_noisy_setting_sets_the_world_noise_share(acc) -> None:
    job = acc.Job("noisy0.3", "eprocess", 1, 72, "store", "q", "ws", 60.0, False)
    assert job.shares() == {
        "harmful": 0.2,
        "useless": 0.15,
        "adversarial": 0.0,
        "noise": 0.3,
        "bundled_decoy": 0.0,
    }
    default = acc.Job("default", "eprocess", 1, 72, "store", "q", "ws", 60.0, False)
    assert default.shares()["noise"] == NOISE_SHARE == RunConfig().sim_noise_share
    # the bench's defaults are the config's: the settings that do not name a share keep it
    config = RunConfig()
    for key, value in acc.DEFAULT_SHARES.items():
        assert getattr(config, f"sim_{key}_share") == value, key
    decoys = acc.Job("decoys0.5", "eprocess", 1, 72, "store", "q", "ws", 60.0, False)
    assert decoys.shares() == {**acc.DEFAULT_SHARES, "bundled_decoy": 0.5}
    for key in default.shares():  # every share the bench sets is a config key it can --set
        assert f"sim_{key}_share" in RunConfig.model_fields


def _outcome(acc, setting: str, strategy: str, seed: int, **figures):
    job = acc.Job(setting, strategy, seed, 72, "store", "q", "ws", 60.0, False)
    return acc.Outcome(job, True, 1.0, final_test=0.5, **figures)


def test_report_prints_the_new_results_and_targets(acc, capsys) -> None:
    outcomes = [
        _outcome(acc, setting, strategy, seed, useless=useless, null_tested=4, null_accepted=acc_n)
        for setting in ("noisy0.3", "adversarial0.2")
        for strategy, useless, acc_n in (("eprocess", 0, 0), ("accept_all", 3, 4))
        for seed in (1, 2)
    ]
    missed = acc.report_setting(outcomes, "noisy0.3", ["eprocess", "accept_all"])
    out = capsys.readouterr().out
    result = _load("run_all").RESULT
    lines = {m.group(1): m.groups()[1:] for line in out.splitlines() if (m := result.match(line))}
    assert lines["acceptance.noisy0.3.eprocess.useless_in_final"] == ("0.00", "rules", "==", "0")
    assert lines["acceptance.noisy0.3.accept_all.useless_in_final"][0] == "3.00"
    assert lines["acceptance.noisy0.3.eprocess.null_accept_rate"][:2] == ("0.0000", "rate")
    assert lines["acceptance.noisy0.3.accept_all.null_accept_rate"][0] == "1.0000"  # 8 of 8
    assert re.search(r"accept_all .* 8/8 \(0\)", out)
    assert "target noisy0.3 useless_in_final: MET" in out
    assert "noisy0.3 useless_in_final" not in missed

    acc.report_setting(outcomes, "adversarial0.2", ["eprocess", "accept_all"])
    out = capsys.readouterr().out
    assert "target adversarial0.2 harmful_in_final: MET" in out
    assert not re.search(r"target adversarial0.2 (final_test|total_calls|useless)", out)
    assert re.search(
        r"RESULT acceptance.adversarial0.2.eprocess.final_test \S+ accuracy$", out, re.M
    )


def test_run_all_gives_the_large_acceptance_bench_its_floor() -> None:
    """`make bench` passes --timeout 1200; 100 trainings on 216-unit worlds need more."""
    run_all = _load("run_all")
    assert run_all.timeout_for("acceptance_large", 1200, tiny=False) >= 2400
    assert run_all.timeout_for("acceptance_large", 3600, tiny=False) == 3600
    assert run_all.timeout_for("acceptance_large", 600, tiny=True) == 600  # --tiny: seconds
    assert run_all.timeout_for("log_write", 1200, tiny=False) == 1200


def test_only_eprocess_gets_the_line_check_unless_asked(acc) -> None:
    job = acc.Job("default", "mcnemar", 1, 72, "store", "q", "ws", 60.0, False)
    assert acc.line_check(replace(job, strategy="eprocess")) is True
    assert acc.line_check(job) is False
    assert acc.line_check(replace(job, extra_sets=("gate.bundle_check=true",))) is True
    off = replace(job, strategy="eprocess", extra_sets=("gate.bundle_check = false",))
    assert acc.line_check(off) is False
