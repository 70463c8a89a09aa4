"""The API functions behind `diagnose`, `promote`, `import-skills`, `export-skills`, `fork`,
`rank` and `export` (app/api/evaluation.py, workspace.py, best_of_n.py, exports.py): typed
results that match what the commands write, async twins, and bad arguments refused in one line
before anything is written."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import anyio
import pytest

from app import api
from app.cli import main
from app.harness.data.export import LAYOUTS
from app.harness.data.export_formats import CURATED_LAYOUTS
from app.harness.workspace.harness_log import HarnessLog
from app.harness.workspace.store import load_seed

ROOT = Path(__file__).resolve().parents[3]
SMALL = {"epochs": 1, "task_types": ["ledger", "units"]}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """One small trained workspace with a fork `f1` of 3 questions x 2 branches, ranked."""
    root = tmp_path_factory.mktemp("api-commands") / "ws"
    api.init_workspace(root, seed="sim-starter", questions="sim-basic")
    api.train(root, overrides=SMALL)
    api.fork(root, branches=2, limit=3, rollout_id="f1")
    api.rank(root, "f1")
    return root


@pytest.fixture
def ws(trained: Path, tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(trained, target)
    return target


def as_json(result: object) -> object:
    """What `--json` prints for a typed result (app/cli/_output.py `out_json`)."""
    return json.loads(json.dumps(dataclasses.asdict(result), default=str))  # type: ignore[arg-type]


# -- diagnose -----------------------------------------------------------------------------------
def test_diagnose_returns_the_counts_of_the_diagnoses_it_logged(ws):
    result = api.diagnose(ws, "baseline")
    assert isinstance(result, api.DiagnoseResult) and result.run_id == "baseline"
    assert result.failures == sum(result.by_category.values()) > 0
    assert result.simulated_model
    with HarnessLog(ws / "harness.db", readonly=True) as log:
        rows = log.query("SELECT category FROM diagnoses WHERE run_id LIKE 'baseline-diagnose-%'")
    assert len(rows) == result.failures


def test_diagnose_json_is_the_typed_result(ws, capsys):
    result = api.diagnose(ws, "baseline")
    assert main(["diagnose", "-w", str(ws), "baseline", "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out) == as_json(result)


# -- promote and Agent Skills -------------------------------------------------------------------
def test_promote_writes_the_seed_and_the_agent_skills(ws, tmp_path):
    evaluated = api.evaluate(ws, "v1")
    store, out = tmp_path / "store", tmp_path / "out"
    result = api.promote(
        ws, "v1", eval_run=evaluated.run_id, name="p1", store=store, agent_skills=out
    )
    assert result.seed == store / "seeds" / "p1"
    assert load_seed(result.seed).name == "p1"
    assert result.agent_skills and all(p.is_file() for p in result.agent_skills)
    assert {p.parent.parent for p in result.agent_skills} == {out / ".agents" / "skills"}


def test_a_seed_that_cannot_be_written_takes_the_agent_skills_back(ws, tmp_path):
    run_id, store, out = api.evaluate(ws, "v1").run_id, tmp_path / "store", tmp_path / "out"
    api.promote(ws, "v1", eval_run=run_id, name="p1", store=store)
    with pytest.raises(api.UserError, match="seed 'p1' already exists"):
        api.promote(ws, "v1", eval_run=run_id, name="p1", store=store, agent_skills=out)
    assert not list(out.rglob("SKILL.md"))


def test_import_skills_makes_a_seed_that_a_workspace_starts_from(tmp_path):
    store = tmp_path / "store"
    result = api.import_skills(ROOT / "examples/agent-skills/sim-vague", name="sv", store=store)
    assert result.seed == store / "seeds" / "sv"
    info = api.init_workspace(tmp_path / "w", seed="sv", questions="sim-basic", store=store)
    assert info.seed == "sv" and info.skills_version == "v1"


def test_export_skills_writes_the_best_version(ws, tmp_path):
    result = api.export_skills(ws, out=tmp_path / "out")
    assert result.files and all(p.name == "SKILL.md" and p.is_file() for p in result.files)
    assert all(p.parent.parent == tmp_path / "out" / ".agents" / "skills" for p in result.files)


# -- fork, rank, export -------------------------------------------------------------------------
def test_fork_counts_its_branches_and_resume_skips_the_finished_ones(ws):
    result = api.fork(ws, branches=2, temperatures=[0.0, 1.0], limit=2, rollout_id="f2")
    assert (result.rollout_id, result.questions, result.branches) == ("f2", 2, 4)
    assert (result.ran, result.skipped) == (4, 0)
    assert 0.0 <= result.pass_at_1 <= result.pass_at_n <= 1.0 and result.simulated_model
    again = api.fork(ws, rollout_id="f2", resume=True)
    assert (again.ran, again.skipped, again.branches) == (0, 4, 4)
    assert (again.pass_at_1, again.pass_at_n) == (result.pass_at_1, result.pass_at_n)


def test_fork_numbers_its_rollouts_when_no_id_is_given(ws):
    assert api.fork(ws, branches=1, limit=1).rollout_id == "fork-1"


def test_rank_result_is_the_report_it_writes(ws):
    result = api.rank(ws, "f1")
    assert isinstance(result.judge, api.JudgeStats)
    assert isinstance(result.top_vs_branch0, api.PairedStats)
    assert isinstance(result.memories, api.MemoryStats)
    assert (result.questions, result.branches) == (3, 6)
    written = json.loads((ws / "analyses" / "rank_f1.json").read_text())
    assert as_json(result) == written


def test_rank_weights_go_over_the_defaults_and_remember_false_stores_nothing(ws):
    result = api.rank(ws, "f1", weights={"judge": 0.0}, remember=False)
    assert result.weights == {"objective": 1.0, "judge": 0.0, "bt": 0.3, "check": 0.5}
    assert result.memories is None


def test_export_returns_the_manifests_it_writes(ws):
    result = api.export(ws, "f1")
    assert result.out == ws / "exports" / "f1"
    assert set(result.files) == set(LAYOUTS) | set(CURATED_LAYOUTS)
    for name, exported in result.files.items():
        manifest = json.loads((result.out / f"{name}.manifest.json").read_text())
        assert as_json(exported) == manifest
        assert exported.rollout_ids == ("f1",)
        assert len((result.out / name).read_text().splitlines()) == exported.count


def test_export_json_is_the_typed_result(ws, tmp_path, capsys):
    out = tmp_path / "exp"
    assert main(["export", "-w", str(ws), "f1", "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["out"] == str(out)
    again = api.export(ws, ["f1"], out=out, overwrite=True)
    assert printed["files"].keys() == again.files.keys()
    for name, exported in again.files.items():
        assert {**printed["files"][name], "created_at": ""} == {
            **as_json(exported),
            "created_at": "",
        }


# -- async twins and refusals -------------------------------------------------------------------
def test_the_async_twins_run_inside_an_event_loop(ws):
    async def run() -> tuple[api.ForkResult, api.RankResult, api.DiagnoseResult]:
        forked = await api.fork_async(ws, branches=2, limit=2, rollout_id="a1")
        ranked = await api.rank_async(ws, "a1")
        return forked, ranked, await api.diagnose_async(ws, "baseline")

    forked, ranked, diagnosed = anyio.run(run)
    assert (forked.branches, ranked.branches, ranked.rollout_id) == (4, 4, "a1")
    assert diagnosed == api.diagnose(ws, "baseline")

    async def sync_inside_a_loop() -> None:
        api.rank(ws, "a1")

    with pytest.raises(api.UserError, match=r"await rank_async\(\)"):
        anyio.run(sync_inside_a_loop)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda w: api.diagnose(w, 3), "run_id: expected a run id"),
        (lambda w: api.fork(w, branches="2"), "branches: expected a whole number"),
        (lambda w: api.fork(w, temperatures="0.2,1"), "temperatures: expected a list"),
        (lambda w: api.fork(w, concurrency=0), r"--concurrency must be >= 1 \(got 0\)"),
        (lambda w: api.fork(w, resume=True), "--resume needs --rollout-id"),
        (lambda w: api.rank(w, "f1", verifiers="checker"), "verifiers: expected a list"),
        (lambda w: api.rank(w, "f1", weights={"jduge": 1}), "weights: unknown key 'jduge'"),
        (lambda w: api.rank(w, "nope"), "no fork run 'nope'"),
        (lambda w: api.export(w, []), "rollout_ids: expected at least one"),
        (lambda w: api.export(w, "f1", out=3), "out: expected a folder's path"),
        (lambda w: api.promote(w, "v1", eval_run=None, name="p"), "eval_run: expected"),
        (lambda w: api.export_skills(w, out=None), "out: expected a folder's path"),
        (lambda w: api.import_skills(w, name=None), "name: expected the new seed's name"),
    ],
)
def test_bad_arguments_are_refused_in_one_line_and_change_nothing(ws, call, message):
    before = sorted(p.relative_to(ws) for p in ws.rglob("*") if "harness.db" not in p.name)
    with pytest.raises(api.UserError, match=message) as refused:
        call(ws)
    assert "\n" not in str(refused.value)
    after = sorted(p.relative_to(ws) for p in ws.rglob("*") if "harness.db" not in p.name)
    assert after == before


def test_the_api_page_lists_every_api_function():
    section = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(\w+)\(", section, flags=re.MULTILINE))
    functions = {n for n in api.__all__ if n[0].islower() and not n.endswith("_async")}
    assert listed == functions
    assert all(callable(getattr(api, f"{n}_async", None)) for n in ("diagnose", "fork", "rank"))
