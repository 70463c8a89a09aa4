"""The sandbox pool: limits, timeouts, output bounds, process-group kills, no stray process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from app.harness.tools.sandbox import Limits, Outcome, SandboxPool, group_members
from tests.app.tools.conftest import processes_with

FAST = Limits(timeout_s=2.0, cpu_s=5, output_bytes=1 << 20)


def _py(code: str, marker: str = "") -> list[str]:
    # the marker rides along as an argument so every forked copy still shows it in /proc
    return [sys.executable, "-c", code, marker]


def run(pool: SandboxPool, argv: list[str], cwd: Path, limits: Limits = FAST):
    return anyio.run(lambda: pool.run_command(argv, cwd, limits=limits))


@pytest.fixture
def pool(tmp_path: Path) -> SandboxPool:
    return SandboxPool(tmp_path / "sandbox", concurrency=2, limits=FAST)


def test_a_plain_command_runs_in_its_private_folder_without_inherited_secrets(
    pool: SandboxPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    cwd = pool.workdir("q1")
    code = "import os,json; print(json.dumps([os.getcwd(), sorted(os.environ)]))"
    result = run(pool, _py(code), cwd)
    assert result.outcome == Outcome.OK, result
    seen_cwd, names = __import__("json").loads(result.stdout)
    assert Path(seen_cwd) == cwd
    assert "OPENAI_API_KEY" not in names and "HOME" in names


def test_a_hanging_tool_times_out_and_its_group_is_gone(
    pool: SandboxPool, tmp_path: Path, marker: str
) -> None:
    code = "import subprocess,sys,time; subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)',sys.argv[1]]); time.sleep(60)"
    started = time.perf_counter()
    result = run(pool, _py(code, marker), pool.workdir("hang"), Limits(timeout_s=0.5))
    assert result.outcome == Outcome.TIMEOUT and "timed out" in result.reason
    assert time.perf_counter() - started < 5
    assert processes_with(marker) == []
    assert pool.live_groups() == set()


def test_a_tool_printing_100_mb_is_cut_off_at_the_output_limit(
    pool: SandboxPool, marker: str
) -> None:
    code = "import sys; b=b'x'*(1<<20)\nfor _ in range(100): sys.stdout.buffer.write(b)"
    result = run(pool, _py(code, marker), pool.workdir("loud"))
    assert result.outcome == Outcome.OUTPUT_LIMIT, result.reason
    assert len(result.stdout) <= FAST.output_bytes
    assert processes_with(marker) == []


def test_a_fork_bomb_is_killed_with_its_whole_group(pool: SandboxPool, marker: str) -> None:
    code = "import os,time\nwhile True:\n    try: os.fork()\n    except OSError: time.sleep(0.01)"
    limits = Limits(timeout_s=1.0, processes=0 if os.geteuid() == 0 else 200)
    result = run(pool, _py(code, marker), pool.workdir("bomb"), limits)
    assert result.outcome == Outcome.TIMEOUT
    time.sleep(0.05)
    assert processes_with(marker) == []


def test_a_background_child_of_a_finished_tool_is_killed_too(
    pool: SandboxPool, marker: str
) -> None:
    code = "import subprocess,sys; subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)',sys.argv[1]]); print('done')"
    result = run(pool, _py(code, marker), pool.workdir("bg"))
    assert result.outcome == Outcome.OK and result.stdout.strip() == "done"
    assert processes_with(marker) == []


def test_the_file_size_and_cpu_limits_hold(pool: SandboxPool) -> None:
    big = "open('big','wb').write(b'x'*(8<<20))"
    result = run(pool, _py(big), pool.workdir("fsize"), Limits(timeout_s=5, file_bytes=1 << 20))
    # Python ignores SIGXFSZ, so the write fails with EFBIG instead of killing it
    assert result.outcome == Outcome.EXIT and "File too large" in result.stderr
    assert (pool.workdir("fsize") / "big").stat().st_size <= 1 << 20
    spin = "while True: pass"
    result = run(pool, _py(spin), pool.workdir("cpu"), Limits(timeout_s=10, cpu_s=1))
    assert result.outcome == Outcome.EXIT and "CPU limit" in result.reason


def test_stop_kills_running_children_and_refuses_new_ones(pool: SandboxPool, marker: str) -> None:
    async def main() -> list:
        results: list = []
        async with anyio.create_task_group() as tg:

            async def one() -> None:
                results.append(
                    await pool.run_command(
                        _py("import time; time.sleep(30)", marker),
                        pool.workdir("s"),
                        limits=Limits(timeout_s=20),
                    )
                )

            tg.start_soon(one)
            tg.start_soon(one)
            await anyio.sleep(0.5)
            assert len(pool.live_groups()) == 2
            pool.stop()
        results.append(await pool.run_command(["true"], pool.workdir("s")))
        return results

    results = anyio.run(main)
    assert [r.outcome for r in results] == [Outcome.STOPPED] * 3
    assert processes_with(marker) == [] and all(not group_members(g) for g in pool.live_groups())


def test_a_missing_program_is_a_recorded_failure(pool: SandboxPool) -> None:
    result = run(pool, ["/nonexistent/tool"], pool.workdir("missing"))
    assert result.outcome == Outcome.EXIT and result.exit_code == 127
    assert "cannot run '/nonexistent/tool'" in result.stderr


def test_a_killed_harness_takes_its_running_tool_with_it(tmp_path: Path, marker: str) -> None:
    harness = (
        "import sys, anyio; from pathlib import Path\n"
        "from app.harness.tools.sandbox import Limits, SandboxPool\n"
        "pool = SandboxPool(Path(sys.argv[1]))\n"
        "print('started', flush=True)\n"
        "anyio.run(lambda: pool.run_command(['sleep', '60', sys.argv[2]], pool.workdir('k'),"
        " limits=Limits(timeout_s=60)))\n"
    )
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-c", harness, str(tmp_path / "sb"), marker],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"started"
    deadline = time.monotonic() + 10
    while not processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker), "the tool never started"
    proc.kill()  # SIGKILL: no cleanup code of the harness runs
    proc.wait()
    deadline = time.monotonic() + 5
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []


def test_at_most_concurrency_children_run_at_once(pool: SandboxPool) -> None:
    seen: list[int] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(pool.run_command, ["sleep", "0.3"], pool.workdir(f"c{i}"))
            for _ in range(30):
                seen.append(len(pool.live_groups()))
                await anyio.sleep(0.03)

    anyio.run(main)
    assert max(seen) == pool.concurrency == 2


ESCAPEE = """
import sys
from pathlib import Path

import anyio

from app.harness.tools.sandbox import Limits, SandboxPool

tmp = Path(sys.argv[1])
pool = SandboxPool(tmp / "sandbox", limits=Limits(timeout_s=0.5))
tool = (
    "import subprocess, sys; "
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)', sys.argv[1]], "
    "start_new_session=True); "
    "open(sys.argv[2], 'w').write(str(p.pid))"
)
argv = [sys.executable, "-c", tool, sys.argv[2], str(tmp / "escapee.pid")]
result = anyio.run(lambda: pool.run_command(argv, pool.workdir("t")))
print(result.outcome)
"""


def test_a_grandchild_that_escapes_with_setsid_leaves_a_quiet_exit(
    tmp_path: Path, marker: str
) -> None:
    """It keeps the pipes open past the call (a documented limit): the call times out, and the
    harness's exit prints no "Event loop is closed" traceback for it."""
    script = tmp_path / "harness.py"
    script.write_text(ESCAPEE)
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    try:
        done = subprocess.run(
            [sys.executable, str(script), str(tmp_path), marker],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        for pid in processes_with(marker):  # the escapee, by design out of the sweep's reach
            os.kill(pid, 9)
    assert done.returncode == 0, done.stderr
    assert "timeout" in done.stdout
    assert "Event loop is closed" not in done.stderr and "Traceback" not in done.stderr
