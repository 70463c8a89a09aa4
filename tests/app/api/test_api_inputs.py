"""The Python API at its boundary: what a caller gets back from a spent budget, a running
event loop, a bad argument or a broken file is one named exception with a one-line message."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from app import api
from app.cli import main


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return api.init_workspace(tmp_path / "ws", seed="sim-starter", questions="sim-basic").root


def one_line(error: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(error.value)
    assert "\n" not in text and text
    return text


# -- 1. a spent budget --------------------------------------------------------------------------
@pytest.mark.parametrize("run", [api.evaluate, api.infer])
def test_a_spent_budget_in_evaluate_or_infer_is_run_failed_as_in_train(ws, run):
    args = (ws, "v1") if run is api.evaluate else (ws,)
    with pytest.raises(api.RunFailed) as error:
        run(*args, overrides={"max_cost_usd": 0.0001})
    assert "max_cost_usd" in one_line(error)


# -- 2. a sync function inside a running loop ---------------------------------------------------
@pytest.mark.parametrize(
    ("name", "args"),
    [("train", ("ws",)), ("evaluate", ("ws", "v1")), ("infer", ("ws",)), ("demo", ("ws",))],
)
def test_a_sync_function_inside_a_running_loop_says_to_await_its_twin(tmp_path, name, args):
    async def inside() -> None:
        getattr(api, name)(*(tmp_path / a if a == "ws" else a for a in args))

    with pytest.raises(api.UserError) as error:
        anyio.run(inside)
    assert f"await {name}_async()" in one_line(error)
    assert not (tmp_path / "ws").exists()  # refused before anything was written


# -- 7. cache hits per sample -------------------------------------------------------------------
def test_each_samples_cache_hits_are_its_own_like_its_new_model_calls(ws):
    api.infer(ws, task_types=["dates"], n_samples=2, run_id="first")
    samples = api.infer(ws, task_types=["dates"], n_samples=2).samples  # answered from cache
    with sqlite3.connect(ws / "harness.db") as db:
        logged = [
            db.execute(
                "SELECT SUM(cache_hit = 0), SUM(cache_hit = 1) FROM llm_calls WHERE run_id = ?",
                (s.run_id,),
            ).fetchone()
            for s in samples
        ]
    assert all(s.cache_hits > 0 for s in samples)
    assert [(s.new_model_calls, s.cache_hits) for s in samples] == [tuple(r) for r in logged]


# -- 4. seed and benchmark names ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("seed", "questions", "named"),
    [
        ("../seeds/sim-starter", "sim-basic", "seed"),
        (str(Path(api.paths.builtin_store(), "seeds", "sim-starter")), "sim-basic", "seed"),
        ("sim-starter", "../questions/sim-basic", "questions"),
        ("sim-starter", "/etc", "questions"),
    ],
)
def test_a_seed_or_benchmark_name_that_is_a_path_is_refused(tmp_path, seed, questions, named):
    with pytest.raises(api.UserError) as error:
        api.init_workspace(tmp_path / "ws", seed=seed, questions=questions)
    assert one_line(error).startswith(named) and "names a folder" in str(error.value)
    assert not (tmp_path / "ws").exists()


def test_the_cli_init_refuses_a_path_as_seed_name(tmp_path, capsys):
    argv = ["init", "-w", str(tmp_path / "ws"), "--seed", "../seeds/sim-starter"]
    assert main([*argv, "--questions", "sim-basic"]) == 2
    assert "names a folder" in capsys.readouterr().err and not (tmp_path / "ws").exists()


# -- 3. what demo archives ----------------------------------------------------------------------
def test_demo_refuses_a_folder_or_file_that_is_not_a_workspace_and_moves_nothing(tmp_path):
    folder, plain = tmp_path / "mine", tmp_path / "notes.txt"
    (folder / "keep").mkdir(parents=True)
    plain.write_text("mine")
    for target in (folder, plain):
        with pytest.raises(api.UserError) as error:
            api.demo(target)
        assert "not a workspace" in one_line(error)
    assert (folder / "keep").is_dir() and plain.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "notes.txt"]


def test_a_refused_demo_config_leaves_the_previous_demo_in_place(ws):
    before = sorted(p.name for p in ws.parent.iterdir())
    with pytest.raises(api.UserError) as error:
        api.demo(ws, overrides={"task_types": ["nope"]})
    assert "nope" in one_line(error)
    assert sorted(p.name for p in ws.parent.iterdir()) == before
    assert (ws / "manifest.json").is_file()


# -- 5. files that are not what they should be --------------------------------------------------
def test_a_file_in_the_workspace_path_is_a_user_error_naming_it(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    for where in (afile, afile / "ws"):
        with pytest.raises(api.UserError) as error:
            api.init_workspace(where, seed="sim-starter", questions="sim-basic")
        assert str(afile) in one_line(error)
    assert afile.read_text() == "mine"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.mkdir(), "cannot read"),
        (lambda p: p.write_bytes(b"\xff\xfe"), "not UTF-8"),
    ],
)
def test_a_config_that_is_a_folder_or_not_text_is_a_user_error_naming_it(tmp_path, make, says):
    config = tmp_path / "run.toml"
    make(config)
    with pytest.raises(api.UserError) as error:
        api.resolve_config(config)
    assert str(config) in one_line(error) and says in str(error.value)


def test_report_on_an_emptied_harness_log_is_a_user_error_naming_it(ws):
    (ws / "harness.db").write_bytes(b"")
    with pytest.raises(api.UserError) as error:
        api.report(ws)
    assert "harness.db" in one_line(error)


# -- 6. arguments of the wrong type -------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda ws: api.train(ws, overrides={1: 2}), "overrides"),
        (lambda ws: api.evaluate(ws, "v1", overrides="epochs=2"), "overrides"),
        (lambda ws: api.evaluate(ws, None), "version"),
        (lambda ws: api.infer(ws, n_samples="2"), "n_samples"),
        (lambda ws: api.infer(ws, n_samples=2.5), "n_samples"),
        (lambda ws: api.infer(ws, task_types=[1]), "task_types"),
        (lambda ws: api.infer(ws, run_id=7), "run_id"),
        (lambda ws: api.init_workspace(ws.parent / "new", seed=5, questions="sim-basic"), "seed"),
        (lambda ws: api.init_workspace(ws.parent / "new", questions=["sim-basic"]), "questions"),
        (
            lambda ws: api.init_workspace(
                ws.parent / "new", seed="sim-starter", questions="sim-basic", store=3
            ),
            "store",
        ),
        (
            lambda ws: api.init_workspace(ws.parent / "new", questions="sim-basic", skills_from=1),
            "skills_from",
        ),
        (
            lambda ws: api.init_workspace(
                ws.parent / "new", questions="sim-basic", skills_from=ws, prompts_from=None
            ),
            "prompts_from",
        ),
        (lambda ws: api.train(ws, fresh=True, store=3), "store"),
        (lambda ws: api.resolve_config(5), "config"),
        (lambda ws: api.report(None), "workspace"),
    ],
)
def test_an_argument_of_the_wrong_type_is_a_user_error_naming_it(ws, call, named):
    with pytest.raises(api.UserError) as error:
        call(ws)
    assert one_line(error).split(":")[0].split()[0] == named  # the message starts with its name
    assert not (ws.parent / "new").exists()


def test_a_str_task_types_is_one_task_type_never_a_substring_match(ws):
    (sample,) = api.infer(ws, task_types="dates").samples
    assert set(sample.per_task_type) == {"dates"}
    with pytest.raises(api.UserError, match="no questions"):
        api.infer(ws, task_types="datesledger")


# -- 8. refusals name the API's argument as well as the CLI's option ----------------------------
def test_refusals_through_the_api_name_the_argument_beside_the_option(ws):
    api.train(ws, overrides={"epochs": 1, "task_types": ["ledger", "units"]})
    with pytest.raises(api.UserError) as error:
        api.train(ws)
    assert "--resume (resume=True)" in one_line(error) and "fresh=True" in str(error.value)
    api.infer(ws, task_types=["dates"], run_id="mine")
    with pytest.raises(api.UserError) as error:
        api.infer(ws, task_types=["dates"], run_id="mine")
    assert "--overwrite-run (overwrite_run=True)" in one_line(error)
