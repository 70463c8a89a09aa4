"""User code under one leash (docs/checkers.md#what-user-code-can-reach): checkers, fork
verifiers and rank rewards run in worker processes of their own session, with a timeout,
output to /dev/null and an allow-listed environment; every kill is of the whole group.
The hostile modules are written by each test into tmp_path."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from app.errors import UserError
from app.harness.data.verifiers import load_verifier, run_verifier
from app.harness.rollouts.custom_checkers import (
    CheckerPool,
    PoolSettings,
    configure_user_pool,
    user_pool,
)
from app.secrets import process_secrets
from core.checkers import CheckStatus
from core.types import Question

QUESTION = Question(question_id="q1", task_type="t", question="What?", answer="42", checker="exact")


def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> str:
    """`name` written into tmp_path and importable by the workers (they get our sys.path)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z")


def wait_dead(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


SPAWNS = """
    import subprocess, sys, time

    def spawns(question, prediction):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open(prediction, "w").write(str(child.pid))
        return True

    def spawns_and_hangs(question, prediction):
        spawns(question, prediction)
        time.sleep(60)
"""


def test_what_a_checker_started_dies_with_its_worker_on_close(tmp_path, monkeypatch) -> None:
    mod = module(tmp_path, monkeypatch, "leash_spawns_a", SPAWNS)
    pool = CheckerPool(workers=1, timeout_s=10)
    pid_file = tmp_path / "pid"
    try:
        assert pool.check(f"{mod}:spawns", QUESTION, str(pid_file)).score == 1.0
        grandchild = int(pid_file.read_text())
        assert alive(grandchild)
    finally:
        pool.close()
    assert wait_dead(grandchild), "the checker's child outlived the pool"


def test_what_a_timed_out_checker_started_dies_with_it(tmp_path, monkeypatch) -> None:
    mod = module(tmp_path, monkeypatch, "leash_spawns_b", SPAWNS)
    pool = CheckerPool(workers=1, timeout_s=1.0)
    pid_file = tmp_path / "pid"
    try:
        result = pool.check(f"{mod}:spawns_and_hangs", QUESTION, str(pid_file))
        assert result.status == CheckStatus.CHECK_ERROR and "timed out" in result.reason
        assert wait_dead(int(pid_file.read_text())), "the timed-out checker's child survived"
    finally:
        pool.close()


def test_a_worker_slow_to_restart_is_one_check_error_not_a_dead_run(tmp_path, monkeypatch) -> None:
    marker = tmp_path / "loaded-once"
    mod = module(
        tmp_path,
        monkeypatch,
        "leash_slow_restart",
        f"""
        import os, time
        if os.path.exists({str(marker)!r}):
            time.sleep(30)  # the second import: a restart that takes too long
        open({str(marker)!r}, "w").close()

        def hangs(question, prediction):
            time.sleep(60)
        """,
    )
    pool = CheckerPool(workers=1, timeout_s=0.5, start_timeout_s=1.5)
    try:
        first = pool.check(f"{mod}:hangs", QUESTION, "x")
        assert "timed out" in first.reason
        second = pool.check(f"{mod}:hangs", QUESTION, "x")  # its worker must start again
        assert second.status == CheckStatus.CHECK_ERROR
        assert "did not load it in 1.5s" in second.reason
    finally:
        pool.close()


def test_a_checker_that_never_loads_in_time_is_still_bad_input(tmp_path, monkeypatch) -> None:
    mod = module(tmp_path, monkeypatch, "leash_never_loads", "import time\ntime.sleep(30)\n")
    pool = CheckerPool(workers=1, timeout_s=0.5, start_timeout_s=1.0)
    try:
        with pytest.raises(UserError, match="did not load it"):
            pool.check(f"{mod}:f", QUESTION, "x")
    finally:
        pool.close()


HOSTILE_VERIFIERS = """
    import os, signal, sys, time

    def ignores_sigterm_and_hangs(question, branch):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)

    def exits_zero(question, branch):
        os._exit(0)

    def system_exit(question, branch):
        raise SystemExit(5)

    def prints(question, branch):
        for _ in range(20):
            print("LEAKED-VERIFIER-OUTPUT " * 5000)
        return {"status": "pass", "reason": "r" * 100000}

    def returns_list(question, branch):
        return [1, 2]
"""


@pytest.fixture
def fast_pool():
    configure_user_pool(PoolSettings(workers=1, timeout_s=1.0))
    yield user_pool()
    configure_user_pool(PoolSettings())


def test_a_hostile_verifier_is_one_unknown_verdict_each(
    tmp_path, monkeypatch, capfd, fast_pool
) -> None:
    mod = module(tmp_path, monkeypatch, "leash_verifiers", HOSTILE_VERIFIERS)
    branch = {"stop_reason": "final", "prediction": "42"}
    got = {}
    for name in (
        "ignores_sigterm_and_hangs",
        "exits_zero",
        "system_exit",
        "prints",
        "returns_list",
    ):
        got[name] = run_verifier(load_verifier(f"{mod}:{name}"), QUESTION, branch)
    assert got["ignores_sigterm_and_hangs"].status == "unknown"
    assert "timed out after 1s" in got["ignores_sigterm_and_hangs"].reason
    assert "process died (exit code 0)" in got["exits_zero"].reason
    assert got["system_exit"].status == "unknown" and "SystemExit" in got["system_exit"].reason
    assert got["prints"].status == "pass" and len(got["prints"].reason) <= 500
    assert "returned list" in got["returns_list"].reason
    assert "LEAKED-VERIFIER-OUTPUT" not in capfd.readouterr().out


def test_a_verifier_in_the_current_folder_imports_like_a_checker(
    tmp_path, monkeypatch, fast_pool
) -> None:
    (tmp_path / "leash_cwd_verifier.py").write_text(
        "def ok(question, branch):\n    return True\n\n\nok.cost_s = 0.5\n"
    )
    monkeypatch.chdir(tmp_path)  # not on sys.path: only the current folder has it
    fn = load_verifier("leash_cwd_verifier:ok")
    assert run_verifier(fn, QUESTION, {}).status == "pass"
    assert getattr(fn, "cost_s", None) == 0.5  # a declared cost still reaches curation.py
    with pytest.raises(UserError, match="--verifier leash_cwd_verifier:nope"):
        load_verifier("leash_cwd_verifier:nope")


ENV_PEEK = """
    import os

    def peek(question, prediction):
        names = ("AWS_SECRET_ACCESS_KEY", "WATSONX_APIKEY", "LEASH_ALLOWED", "PATH")
        return {"score": 1.0, "reason": ",".join(n for n in names if n in os.environ)}
"""


def test_user_code_gets_an_allow_listed_environment(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leash-canary-aws-0123456789")
    monkeypatch.setenv("WATSONX_APIKEY", "leash-canary-watsonx-0123456789")
    monkeypatch.setenv("LEASH_ALLOWED", "yes")
    mod = module(tmp_path, monkeypatch, "leash_env_peek", ENV_PEEK)
    plain, allowing = CheckerPool(workers=1), CheckerPool(workers=1, env_allow=["LEASH_ALLOWED"])
    try:
        assert plain.check(f"{mod}:peek", QUESTION, "x").reason == "PATH"
        assert allowing.check(f"{mod}:peek", QUESTION, "x").reason == "LEASH_ALLOWED,PATH"
    finally:
        plain.close()
        allowing.close()


def test_a_secret_value_user_code_returns_is_redacted_before_it_comes_back(
    tmp_path, monkeypatch
) -> None:
    """It can read the harness's environment (/proc/<ppid>/environ), so its value is hidden
    here, before a reason is shown to anyone or stored."""
    canary = "leash-canary-lineage-0123456789"
    monkeypatch.setenv("SKILL_TRAINER_LINEAGE_KEY", canary)
    process_secrets.cache_clear()
    mod = module(
        tmp_path,
        monkeypatch,
        "leash_leaks",
        f"def leak(question, prediction):\n    return {{'score': 1.0, 'reason': {canary!r}}}\n",
    )
    pool = CheckerPool(workers=1)
    try:
        reason = pool.check(f"{mod}:leak", QUESTION, "x").reason
    finally:
        pool.close()
        monkeypatch.delenv("SKILL_TRAINER_LINEAGE_KEY")
        process_secrets.cache_clear()
    assert canary not in reason and "REDACTED" in reason
