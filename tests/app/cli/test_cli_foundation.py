"""The CLI foundation: help, one-line user errors, train flags, secrets never written or
printed, and `report` (docs/architecture.md#commands-and-the-tui)."""

from __future__ import annotations

import io
import json
import re
import secrets
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from app.cli import COMMANDS, main
from app.harness.workspace.workspace import advance_version, update_manifest
from app.paths import builtin_store
from app.secrets import process_secrets
from core.redact import placeholder, redact, secret_values

ROOT = Path(__file__).resolve().parents[3]


def run_main_py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def template_ws(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("template") / "ws"
    assert main(["init", str(ws), "--seed", "sim-starter", "--questions", "sim-basic"]) == 0
    return ws


@pytest.fixture
def ws(template_ws: Path, tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(template_ws, target)
    return target


# -- help and errors through a real process ------------------------------------------------------


def test_help_lists_every_command() -> None:
    proc = run_main_py("--help")
    assert proc.returncode == 0, proc.stderr
    listed = set(re.findall(r"^\s{4}([\w-]+)\s", proc.stdout, flags=re.MULTILINE))
    # a command is the module of app/cli/ named after it (app/cli/__init__.py)
    modules = (ROOT / "app" / "cli").glob("*.py")
    expected = {m.stem.replace("_", "-") for m in modules if not m.name.startswith("_")}
    assert {"train", "report", "judge-quality"} <= expected
    assert expected <= listed, proc.stdout
    assert set(COMMANDS) == expected


def test_user_error_in_a_real_process_is_one_line_without_traceback(tmp_path: Path) -> None:
    proc = run_main_py("report", str(tmp_path / "nothing-here"))
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and "not a workspace" in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    proc = run_main_py(
        "init", str(tmp_path / "ws"), "--seed", "no-such-seed", "--questions", "sim-basic"
    )
    assert proc.returncode == 2
    assert len(error_lines(proc.stderr)) == 1 and "unknown seed 'no-such-seed'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "ws").exists()


def test_usage_error_exits_2() -> None:
    proc = run_main_py("train")  # --workspace is required
    assert proc.returncode == 2
    assert "--workspace" in proc.stderr and "Traceback" not in proc.stderr


# -- train flags through the CLI (the Runner is replaced: no training happens) --------------------


class FakeRunner:
    calls: list[tuple[Path, bool]] = []

    def __init__(self, session) -> None:
        self.session = session

    async def train_async(self, *, resume: bool) -> None:
        FakeRunner.calls.append((self.session.paths.root, resume))


@pytest.fixture
def fake_runner(monkeypatch) -> type[FakeRunner]:
    import app.api.training

    FakeRunner.calls = []
    monkeypatch.setattr(app.api.training, "Runner", FakeRunner)
    return FakeRunner


CHECKPOINT = {
    "schema": 1,
    "progress": {
        "epoch": 1,
        "phase": "in_epoch",
        "step_completed": 2,
        "global_step": 2,
        "total_steps": 8,
        "train_id": "train1",
    },
    "state": {
        "train_id": "train1",
        "correctness": {},
        "best": {
            "skills": "skills/v1",
            "prompts": "prompts/v1",
            "val_acc": 0.0,
            "run_id": "baseline",
            "epoch": 0,
        },
        "baseline_val_acc": 0.0,
        "baseline_versions": {},
    },
    "versions_max": {"skills": 1, "prompts": 1},
    "manifest": {
        "current": {"skills": "skills/v1", "prompts": "prompts/v1", "questions": "sim-basic"}
    },
    "config_fingerprint": {"structural": {}, "decision": {}},
}


def put_checkpoint(ws: Path) -> None:
    (ws / "checkpoint.json").write_text(json.dumps(CHECKPOINT))


def archives(ws: Path) -> list[Path]:
    return sorted(ws.parent.glob(f"{ws.name}.archived-*"))


def train(ws: Path, *flags: str) -> int:
    return main(["train", "-w", str(ws), "--no-progress", *flags])


def test_train_resume_and_fresh_together_is_usage_error(ws, fake_runner, capsys) -> None:
    put_checkpoint(ws)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        train(ws, "--resume", "--fresh")
    assert exit_.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--resume" in last and "--fresh" in last and "not allowed" in last
    assert fake_runner.calls == [] and archives(ws) == []
    assert json.loads((ws / "checkpoint.json").read_text()) == CHECKPOINT


def test_train_resume_without_checkpoint_refuses(ws, fake_runner, capsys) -> None:
    capsys.readouterr()
    assert train(ws, "--resume") == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1
    assert "no checkpoint.json: refusing to silently retrain from scratch" in lines[0]
    assert fake_runner.calls == [] and archives(ws) == []


def test_train_without_flag_on_progress_names_both_flags(ws, fake_runner, capsys) -> None:
    put_checkpoint(ws)
    capsys.readouterr()
    assert train(ws) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "--resume" in lines[0] and "--fresh" in lines[0]
    assert fake_runner.calls == [] and archives(ws) == []
    assert json.loads((ws / "checkpoint.json").read_text()) == CHECKPOINT


def test_train_fresh_archives_then_restarts_from_seed(ws, fake_runner) -> None:
    put_checkpoint(ws)
    advance_version(
        ws, "skills", {"x.md": "trained"}, source="test", parent="v1", description="progress"
    )
    update_manifest(ws, skills="v2")
    assert train(ws, "--fresh") == 0
    [archived] = archives(ws)
    assert re.fullmatch(r"ws\.archived-\d{8}T\d{6}(-\d+)?", archived.name)
    assert json.loads((archived / "checkpoint.json").read_text()) == CHECKPOINT
    assert (archived / "skills" / "v2").is_dir()
    manifest = json.loads((ws / "manifest.json").read_text())
    assert manifest["current"]["skills"] == "skills/v1"
    assert not (ws / "checkpoint.json").exists() and not (ws / "skills" / "v2").exists()
    assert fake_runner.calls == [(ws, False)]


def test_train_start_and_resume_reach_the_runner(ws, fake_runner) -> None:
    assert train(ws) == 0
    put_checkpoint(ws)
    assert train(ws, "--resume") == 0
    assert fake_runner.calls == [(ws, False), (ws, True)]
    assert archives(ws) == []


def test_train_fresh_with_bad_config_changes_nothing(ws, fake_runner, capsys) -> None:
    put_checkpoint(ws)
    capsys.readouterr()
    assert train(ws, "--fresh", "--set", "epochs=0") == 2
    assert "epochs" in capsys.readouterr().err
    assert archives(ws) == []
    assert json.loads((ws / "checkpoint.json").read_text()) == CHECKPOINT


# -- secrets -------------------------------------------------------------------------------------


def test_secret_values_pick_secret_names_longest_first() -> None:
    env = {
        "OPENAI_API_KEY": "sk-abcdefgh",
        "GITHUB_TOKEN": "ghp_0123456789abcdef",
        "db_password": "hunter2hunter2",
        "MY_SECRET": "s3cr3t-value",
        "ANTHROPIC_API_KEY": "short",
        "PATH": "/usr/bin:/bin",
        "HOME": "/root/secret",
        "API_KEY_FILE": "/etc/keys/api.key",
        "TOKENIZER": "tiktoken-cl100k",
    }
    values = secret_values(env)
    assert set(values) == {"sk-abcdefgh", "ghp_0123456789abcdef", "hunter2hunter2", "s3cr3t-value"}
    assert [len(v) for v in values] == sorted((len(v) for v in values), reverse=True)


def test_redact_replaces_every_occurrence_with_stable_placeholder() -> None:
    secret = "sk-canary-" + secrets.token_hex(8)
    text = f"key={secret}; again {secret}."
    out = redact(text, [secret])
    assert secret not in out and secret[3:] not in out
    assert out == f"key={placeholder(secret)}; again {placeholder(secret)}."
    assert placeholder(secret) == placeholder(secret) != placeholder(secret + "x")
    assert secret not in placeholder(secret)
    assert redact("nothing here", [secret, ""]) == "nothing here"


def test_redact_with_overlapping_secrets_leaks_no_tail() -> None:
    short, long = "abcdefgh", "abcdefgh-0123456789"
    ordered = secret_values({"A_TOKEN": short, "B_TOKEN": long})
    assert ordered == (long, short)
    out = redact(f"{long} and {short}", ordered)
    assert "0123456789" not in out and short not in out


def test_console_and_file_logs_are_scrubbed(tmp_path: Path, monkeypatch, capsys) -> None:
    from loguru import logger

    from app.logging_setup import add_workspace_log, configure_console

    canary = "sk-canary-" + secrets.token_hex(12)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    process_secrets.cache_clear()
    try:
        configure_console()
        sink = add_workspace_log(tmp_path / "logs" / "run.log")
        logger.info("calling with key {}", canary)
        logger.remove(sink)
    finally:
        monkeypatch.undo()  # the environment as it was, then forget the cached secrets
        process_secrets.cache_clear()
    err = capsys.readouterr().err
    assert "calling with key [REDACTED:" in err and canary not in err
    text = (tmp_path / "logs" / "run.log").read_text()
    assert "calling with key [REDACTED:" in text and canary not in text


@pytest.fixture(scope="module")
def canary_run(tmp_path_factory):
    """init + eval v1 (sim model, offline) with a secret in the environment and, to make
    leaking possible at all, in one benchmark question and one seed skill file of a private
    store copy."""
    base = tmp_path_factory.mktemp("canary")
    token = secrets.token_hex(12)
    canary = f"sk-canary-{token}"
    store = base / "store"
    shutil.copytree(builtin_store(), store)
    jsonl = store / "questions" / "sim-basic" / "questions.jsonl"
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    rows[0]["question"] += f" (billing key {canary})"
    rows[0]["context"] = f"api key: {canary}"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert canary in jsonl.read_text()
    skill = store / "seeds" / "sim-starter" / "skills" / "ledger.md"
    skill.write_text(skill.read_text() + f"\nNever print the key {canary}.\n")
    ws = base / "ws"
    out, err = io.StringIO(), io.StringIO()
    report_out = io.StringIO()
    report_json = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", canary)
        process_secrets.cache_clear()
        try:
            with redirect_stdout(out), redirect_stderr(err):
                codes = [
                    main(
                        [
                            "init",
                            str(ws),
                            "--seed",
                            "sim-starter",
                            "--questions",
                            "sim-basic",
                            "--store",
                            str(store),
                        ]
                    ),
                    main(["eval", "v1", "-w", str(ws), "--no-progress", "-v"]),
                ]
            with redirect_stdout(report_out), redirect_stderr(err):
                codes.append(main(["report", str(ws)]))
            with redirect_stdout(report_json), redirect_stderr(err):
                codes.append(main(["report", str(ws), "--json"]))
        finally:
            process_secrets.cache_clear()
    return {
        "ws": ws,
        "canary": canary,
        "token": token,
        "codes": codes,
        "out": out.getvalue(),
        "err": err.getvalue(),
        "report": report_out.getvalue(),
        "report_json": report_json.getvalue(),
    }


def test_canary_secret_never_reaches_workspace_or_console(canary_run) -> None:
    assert canary_run["codes"] == [0, 0, 0, 0], canary_run["err"]
    ws, canary, token = canary_run["ws"], canary_run["canary"], canary_run["token"]
    files = [p for p in ws.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"harness.db", "manifest.json", "skill-trainer.log", "questions.jsonl"} <= names
    assert any(p.parent.name == "analyses" for p in files)
    for path in files:
        data = path.read_bytes()
        assert canary.encode() not in data, f"secret in {path}"
        assert token.encode() not in data, f"part of the secret in {path}"
    for stream in ("out", "err", "report", "report_json"):
        assert token not in canary_run[stream], f"secret on {stream}"
    # the frozen question was scrubbed, not dropped
    frozen = (ws / "questions" / "questions.jsonl").read_text()
    assert f"(billing key {placeholder(canary)})" in frozen
    assert (
        f"Never print the key {placeholder(canary)}."
        in (ws / "skills" / "v1" / "ledger.md").read_text()
    )
    assert "eval v1" in canary_run["out"]  # the eval really ran and printed


# -- report --------------------------------------------------------------------------------------


def test_report_text_shows_current_versions_and_runs(canary_run) -> None:
    text = canary_run["report"]
    ws = canary_run["ws"]
    assert f"workspace  {ws}" in text
    assert re.search(
        r"^current\s+skills/v1\s+prompts/v1\s+questions=sim-basic$", text, flags=re.MULTILINE
    ), text
    run_line = next(line for line in text.splitlines() if "eval-v1-v1-1" in line)
    assert "eval" in run_line.split() and "done" in run_line.split()
    assert "v1/v1" in run_line and re.search(r"acc=0\.\d{3}", run_line)
    assert "skills versions" in text and "prompts versions" in text
    assert "calls[agent]" in text
    assert "SIMULATED" in text


def test_report_json_lists_the_run(canary_run) -> None:
    summary = json.loads(canary_run["report_json"])
    [run] = summary["runs"]
    assert run["run_id"] == "eval-v1-v1-1" and run["kind"] == "eval"
    assert run["status"] == "done" and 0.0 <= run["accuracy"] <= 1.0
    assert run["simulated_model"] is True
    assert summary["current"] == {
        "skills": "skills/v1",
        "prompts": "prompts/v1",
        "questions": "sim-basic",
    }
    eval_file = canary_run["ws"] / "analyses" / "eval_eval-v1-v1-1.json"
    assert json.loads(eval_file.read_text())["accuracy"] == run["accuracy"]


def test_report_follows_manifest_best_and_progress(ws: Path, capsys) -> None:
    from app.harness.workspace.workspace import update_best

    advance_version(
        ws, "skills", {"a.md": "a"}, source="test", parent="v1", description="edited skills"
    )
    update_manifest(ws, skills="v2", run_id="train-1")
    update_best(ws, skills="v2", prompts="v1", val_acc=0.5, run_id="train-1", epoch=2)
    put_checkpoint(ws)
    capsys.readouterr()
    assert main(["report", str(ws)]) == 0
    text = capsys.readouterr().out
    assert re.search(r"^current\s+skills/v2\s+prompts/v1", text, flags=re.MULTILINE), text
    assert re.search(
        r"^best\s+skills/v2\s+prompts/v1\s+val_acc=0\.500", text, flags=re.MULTILINE
    ), text
    assert "progress   epoch 1 (in_epoch, step 2 done)  2/8 steps" in text
    assert re.search(r"^\s+v2\s.*test\s.*parent=v1\s+edited skills", text, flags=re.MULTILINE)


def test_a_reader_that_leaves_early_ends_a_read_only_command_quietly(ws: Path) -> None:
    """`report | head -1`: the closed pipe ends the command without an error message (and
    without the training hint an OSError gets)."""
    proc = subprocess.Popen(
        [sys.executable, "main.py", "report", "-w", str(ws)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 1
    assert err == ""
