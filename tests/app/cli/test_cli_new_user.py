"""What a new user meets first: a mistyped option, `-v` anywhere, `--json` on every command
that reports a result, `init`'s result on stdout, and a missing API key refused before litellm
is imported (app/cli/, app/cli/_output.py `model_config_from`, app/providers/key_check.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main, parse_args
from app.providers.key_check import missing_key

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def template_ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("newuser") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws


@pytest.fixture
def ws(template_ws: Path, tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(template_ws, target)
    return target


# -- mistyped options and -v ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["train", "-w", "W", "--sett", "epochs=2"], "did you mean --set?"),
        (["train", "-w", "W", "--epochs", "2"], "did you mean --set epochs=VALUE?"),
        (["fork", "-w", "W", "--branchs", "3"], "did you mean --branches?"),
        (["init", "W", "--questions", "q", "--skill-from", "d"], "did you mean --skills-from?"),
    ],
)
def test_a_mistyped_option_shows_the_commands_usage_and_the_option_meant(
    capsys, argv: list[str], meant: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith(f"usage: skill-trainer {argv[0]} "), err
    assert err.strip().splitlines()[-1].endswith(meant), err


def test_an_unknown_option_with_nothing_close_still_names_it(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["report", "W", "--zzz"])
    err = capsys.readouterr().err
    assert err.startswith("usage: skill-trainer report ")
    assert err.strip().splitlines()[-1].endswith("unrecognized arguments: --zzz")


@pytest.mark.parametrize(
    ("argv", "verbose"),
    [
        (["-v", "report", "W"], True),
        (["--verbose", "report", "W"], True),
        (["report", "-v", "W"], True),
        (["report", "W", "--verbose"], True),
        (["report", "W"], False),
    ],
)
def test_verbose_goes_before_or_after_the_command(argv: list[str], verbose: bool) -> None:
    assert parse_args(argv).verbose is verbose


def test_verbose_before_the_command_turns_on_the_verbose_format(ws, capsys) -> None:
    assert main(["-v", "report", "-w", str(ws / "missing")]) == 2
    assert capsys.readouterr().err.startswith("ERROR ")  # the verbose format names the level


# -- init's result --------------------------------------------------------------------------------


def test_init_prints_the_created_workspace_on_stdout(tmp_path, capsys) -> None:
    assert (
        main(["init", str(tmp_path / "w"), "--seed", "sim-starter", "--questions", "sim-basic"])
        == 0
    )
    out, err = capsys.readouterr()
    assert out.startswith(f"created workspace {tmp_path / 'w'} ") and "seed sim-starter" in out
    assert "created workspace" not in err


# -- --json -------------------------------------------------------------------------------------


def json_out(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    out = capsys.readouterr().out
    return json.loads(out)  # one document and nothing else on stdout


def test_every_result_command_takes_json(ws, capsys) -> None:
    w = ["-w", str(ws)]
    ev = json_out(capsys, ["eval", *w, "v1", "--no-progress", "--json"])
    assert ev["skills_version"] == "v1" and ev["total"] > 0 and 0 <= ev["accuracy"] <= 1
    assert ev["per_task_type"]["dates"]["total"] > 0 and ev["simulated_model"] is True
    inf = json_out(
        capsys,
        ["infer", *w, "--task-types", "dates", "--n-samples", "2", "--no-progress", "--json"],
    )
    assert [s["run_id"] for s in inf["samples"]] == ["infer-1-s0", "infer-1-s1"]
    assert set(inf["samples"][0]["per_task_type"]) == {"dates"}
    diag = json_out(capsys, ["diagnose", *w, ev["run_id"], "--no-progress", "--json"])
    assert diag["run_id"] == ev["run_id"] and diag["failures"] == sum(diag["by_category"].values())
    assert diag["failures"] > 0 and diag["simulated_model"] is True
    fork = json_out(
        capsys, ["fork", *w, "--branches", "2", "--limit", "3", "--no-progress", "--json"]
    )
    assert (fork["rollout_id"], fork["questions"], fork["branches"]) == ("fork-1", 3, 6)
    assert 0 <= fork["pass_at_1"] <= fork["pass_at_n"] <= 1
    rank = json_out(capsys, ["rank", *w, "fork-1", "--no-progress", "--json"])
    assert (rank["rollout_id"], rank["questions"], rank["branches"]) == ("fork-1", 3, 6)
    assert "top_vs_branch0" in rank and "judge" in rank
    export = json_out(capsys, ["export", *w, "fork-1", "--json"])
    assert export["out"] == str(ws / "exports" / "fork-1")
    for name, manifest in export["files"].items():
        assert (ws / "exports" / "fork-1" / name).is_file() and manifest["file"] == name
        assert manifest["rollout_ids"] == ["fork-1"]


def test_diagnose_prints_lines_for_people_by_default(ws, capsys) -> None:
    ev = json_out(capsys, ["eval", "-w", str(ws), "v1", "--no-progress", "--json"])
    assert main(["diagnose", "-w", str(ws), ev["run_id"], "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"diagnose {ev['run_id']}: ") and "failures diagnosed" in lines[0]
    assert lines[1].startswith("  by category: ") and "skill_gap" in lines[1]
    assert not any(line.lstrip().startswith(("{", '"')) for line in lines)


# -- a missing API key ----------------------------------------------------------------------------

MISSING_KEY = """
import sys
from app.cli import main
code = main(sys.argv[1:])
print("litellm imported:", "litellm" in sys.modules)
# the harness is about a second of imports: a refused key must not wait for it
print("harness imported:", "app.harness.training.runner" in sys.modules)
sys.exit(code)
"""


def test_a_missing_api_key_is_refused_before_litellm_or_the_harness_is_imported(ws) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    argv = ["eval", "-w", str(ws), "v1", "--set", 'agent_model="openai/gpt-4o-mini"']
    proc = subprocess.run(
        [sys.executable, "-c", MISSING_KEY, *argv, "--no-progress"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        "error: OPENAI_API_KEY not set: needed by model openai/gpt-4o-mini "
        "(export it, or set api_key_env / api_base in the config)"
    )
    assert proc.stdout.splitlines() == ["litellm imported: False", "harness imported: False"]


def test_which_models_need_a_key_from_the_environment(monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert "OPENAI_API_KEY not set" in (missing_key("openai/gpt-4o-mini", None, None) or "")
    assert "GEMINI_API_KEY (or GOOGLE_API_KEY) not set" in (
        missing_key("gemini/gemini-2.0-flash", None, None) or ""
    )
    assert missing_key("openai/gpt-4o-mini", "http://localhost:8080/v1", None) is None
    assert missing_key("ollama/llama3", None, None) is None  # a local provider
    assert missing_key("someprovider/x", None, None) is None  # left to litellm's preflight
    assert missing_key("openai/gpt-4o-mini", None, "MY_KEY") == (
        "MY_KEY is not set (the API key for model openai/gpt-4o-mini)"
    )
    monkeypatch.setenv("MY_KEY", "k")
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    assert missing_key("openai/gpt-4o-mini", None, "MY_KEY") is None
    assert missing_key("gemini/gemini-2.0-flash", None, None) is None


def test_an_abbreviated_option_is_refused_not_guessed(capsys) -> None:
    """argparse's prefix matching would take `--no-progres` for `--no-progress` silently; a
    prefix that a later option could also start would then change meaning."""
    with pytest.raises(SystemExit) as exit_:
        main(["train", "-w", "W", "--no-progres"])
    assert exit_.value.code == 2
    assert "did you mean --no-progress?" in capsys.readouterr().err


@pytest.mark.parametrize(("typed", "meant"), [("trian", "train"), ("reprot", "report")])
def test_a_mistyped_command_names_the_command_meant(capsys, typed: str, meant: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["-v", typed, "-w", "W"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert (
        err.strip().splitlines()[-1].endswith(f"unknown command {typed!r}; did you mean {meant}?")
    )
