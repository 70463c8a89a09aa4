"""Secrets that user code can still read do not land in harness.db.

User code (a checker, a verifier, a tool) runs as the harness's child, so it can read the
harness's own environment from /proc/<ppid>/environ, which no allow-list can change after the
harness started (docs/checkers.md#what-user-code-can-reach). What it hands back is redacted by
value before it is stored, and a tool's output before the model sees it. The harness here is a real process started with canary keys whose
names the old `*API_KEY`/`*_TOKEN` rule missed; each kind of user code reads
/proc/<ppid>/environ and returns it: a checker as its reason, a verifier as its reason, a
python tool as its output. Then every byte of harness.db is searched for the canaries."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from core.redact import placeholder

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "tests" / "app" / "tools" / "data" / "bench"

PEEK = """
    import os

    def _environ():
        return open(f"/proc/{os.getppid()}/environ", "rb").read().decode(errors="replace")

    def check(question, prediction):
        return {"score": 1.0, "reason": _environ().replace("\\0", " ")[-450:]}

    def verify(question, branch):
        return {"status": "pass", "reason": _environ().replace("\\0", " ")[-450:]}
"""

TOOL = """
    import os

    def peek() -> str:
        \"\"\"The parent's environment.\"\"\"
        return open(f"/proc/{os.getppid()}/environ", "rb").read().decode(errors="replace")
"""

HARNESS = """
    import sys
    from pathlib import Path

    import anyio

    from app.harness.data.verifiers import verify_rollout
    from app.harness.rollouts.checking import AnswerChecker
    from app.harness.rollouts.custom_checkers import CheckerPool
    from app.harness.rollouts.inference import AgentSettings, run_inference
    from app.harness.tools.runtime import ToolRuntime
    from app.harness.workspace.harness_log import HarnessLog
    from tests.support.log_rows import insert_rows
    from app.harness.workspace.store import load_benchmark
    from core.types import Question, ToolCall
    from tests.app.rollouts.test_inference import prompts, reply, scripted

    tmp = Path(sys.argv[1])
    bench = load_benchmark(tmp / "bench")
    tables = dict(bench.tool_tables)
    tables["tools"] = [
        *tables["tools"],
        {"name": "peek", "kind": "python", "target": "peektool:peek", "default": True},
    ]
    q = Question("s1", "count", "[s1] peek", "3", checker="leash_peek:check")
    rt = ToolRuntime.for_benchmark(tables, [q], tmp / "bench", tmp / "ws" / ".tools")
    provider = scripted({"s1": [reply("", ToolCall("a", "peek", {})), reply("ANSWER: 3")]})
    checker = AnswerChecker(judge=provider, pool=CheckerPool(1, 10))
    with HarnessLog(tmp / "harness.db") as log:
        try:
            anyio.run(
                lambda: run_inference(
                    [q], provider=provider, prompts=prompts(), log=log, run_id="r1",
                    settings=AgentSettings(concurrency=1, checker=checker, tools=rt),
                )
            )
        finally:
            rt.close()
            checker.close()
        insert_rows(
            log,
            "branches",
            [{"run_id": "f1", "question_id": "s1", "branch_index": 0, "stop_reason": "final"}],
        )
        verify_rollout(log, "f1", {"s1": q}, ["leash_peek:verify"])
        rows = log.query("SELECT check_reason, steps_json FROM predictions")
        verdicts = log.query("SELECT reason FROM verdicts")
    import os

    canaries = [v for k, v in os.environ.items() if "-canary-" in v]
    assert len(canaries) == 3
    shown = repr([r.messages for r in provider.requests])
    assert "REDACTED" in shown and not any(c in shown for c in canaries)  # the model's view
    assert "REDACTED" in rows[0]["check_reason"], rows
    assert "REDACTED" in rows[0]["steps_json"], rows
    assert "REDACTED" in verdicts[0]["reason"], verdicts
    print("stored")
"""


def test_canaries_user_code_reads_from_the_harness_environ_are_not_stored(
    tmp_path: Path,
) -> None:
    shutil.copytree(BENCH, tmp_path / "bench")
    (tmp_path / "bench" / "tools" / "peektool.py").write_text(textwrap.dedent(TOOL))
    (tmp_path / "leash_peek.py").write_text(textwrap.dedent(PEEK))
    (tmp_path / "harness.py").write_text(textwrap.dedent(HARNESS))
    tag = secrets.token_hex(8)
    canaries = {
        "AWS_SECRET_ACCESS_KEY": f"aws-canary-{tag}",
        "WATSONX_APIKEY": f"watsonx-canary-{tag}",
        "SKILL_TRAINER_LINEAGE_KEY": f"lineage-canary-{tag}",
    }
    # the canaries last: the peeks return the end of the environment
    env = {k: v for k, v in os.environ.items() if k not in canaries}
    env |= {"PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}", **canaries}
    done = subprocess.run(
        [sys.executable, str(tmp_path / "harness.py"), str(tmp_path)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "stored" in done.stdout, done.stderr[-3000:]
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("harness.db*"))
    for name, value in canaries.items():
        assert value.encode() not in stored, f"{name} stored in clear"
        assert placeholder(value).encode() in stored, f"{name} not seen: the peek missed it"
