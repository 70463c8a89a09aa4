"""Any executable as the agent: one process per rollout, in a private folder, on a leash.

For each rollout the agent gets a fresh temporary folder holding the skills version as an
Agent Skills tree (`.agents/skills/<name>/SKILL.md`, written by
app/harness/skills/agent_skills.py, as coding-agent CLIs read it), an `AGENTS.md` index
(system prompt, skills, tools) and `task.json`; the same JSON arrives on stdin. It runs under
the tool sandbox (app/harness/tools/sandbox.py: wall-clock timeout, CPU/memory/file limits,
its own process group killed at the end, an allow-listed environment) with only
`OPENAI_BASE_URL` and `OPENAI_API_KEY` (and `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`)
added, the gateway's URL and the rollout's own key: the harness's API keys never reach it.

The answer is the last `ANSWER:` line of stdout, or the declared answer file. A crash, a
hang, a non-zero exit, a flood of output or an answer that is not there is one `AgentResult`
with its `Failure`; stdout is bounded (past the bound the process is killed) and only the
end of stderr is kept.

`SKILL_TRAINER_TRACE_FILE` names a file in the folder where the agent may write its own
instrumentor's spans; its tool spans join the trajectory (app/harness/agents/agent_trace.py).
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio

from app.harness.agents.agent_trace import TRACE_FILE, read_trace_file
from app.harness.agents.protocol import (
    AgentResult,
    AgentTask,
    FailureKind,
    ModelEndpoint,
    SkillsVersion,
    clean_answer,
    empty_trace,
    failed,
    task_json,
)
from app.harness.skills.agent_skills import SKILL_FILE, catalog, skill_documents
from app.harness.tools.sandbox import Limits, Outcome, RunResult, SandboxPool
from app.sanitize import visible
from app.secrets import scrub

ANSWER_PREFIX = "ANSWER:"
TASK_FILE = "task.json"
INDEX_FILE = "AGENTS.md"
SKILLS_DIR = ".agents/skills"
ANSWER_FILE_MAX_BYTES = 256 << 10


class CommandAgentError(ValueError):
    """A command agent declared wrongly (no argv, an answer file outside its folder)."""


@dataclass(frozen=True)
class CommandSettings:
    """How to run the agent. `env`: extra variables the user declares (never secrets of the
    harness: only these names and the sandbox's allow-list reach the process)."""

    argv: tuple[str, ...]
    # where in its folder the skills go, as Agent Skills trees (the first is AGENTS.md's)
    skills_dirs: tuple[str, ...] = (SKILLS_DIR,)
    timeout_s: float = 300.0
    answer_file: str | None = None  # relative to the agent's folder; else stdout's ANSWER:
    stdout_bytes: int = 1 << 20  # past this the process group is killed: a flood
    stderr_keep_bytes: int = 64 << 10  # the end of stderr kept in the result
    memory_bytes: int = 4 << 30  # address space; a Node CLI reserves gigabytes
    env: Mapping[str, str] = field(default_factory=dict)
    root: Path | None = None  # where the per-rollout folders go (default: the system's temp)
    concurrency: int = 8  # processes at once; an agent mostly waits on its model
    keep_folder: bool = False  # leave the folder for inspection


class CommandAgent:
    """`Agent` for an executable (app/harness/agents/protocol.py)."""

    def __init__(self, settings: CommandSettings) -> None:
        if not settings.argv:
            raise CommandAgentError("command agent: give the command to run")
        if settings.answer_file is not None:
            _check_relative(settings.answer_file)
        self.settings = settings
        root = settings.root or Path(tempfile.gettempdir())
        self.pool = SandboxPool(root, concurrency=settings.concurrency, limits=self._limits())

    def _limits(self) -> Limits:
        s = self.settings
        return Limits(
            timeout_s=s.timeout_s,
            # CPU seconds above wall seconds: an agent's threads may all run at once
            cpu_s=max(1, math.ceil(s.timeout_s * 2)),
            memory_bytes=s.memory_bytes,
            output_bytes=max(s.stdout_bytes, s.stderr_keep_bytes),
        )

    async def run(
        self, task: AgentTask, skills: SkillsVersion, endpoint: ModelEndpoint
    ) -> AgentResult:
        # the folder's file work runs in a worker thread: creating and removing its dozen
        # entries blocked the event loop (and every other rollout) for tens of ms on a busy disk
        folder = Path(tempfile.mkdtemp(prefix="agent-", dir=self.pool.root))
        try:
            payload = task_json(task, skills, endpoint)
            await anyio.to_thread.run_sync(
                prepare_folder, folder, skills, payload, self.settings.skills_dirs
            )
            result = await self.pool.run_command(
                self.settings.argv,
                folder,
                stdin=payload.encode(),
                env=self._environment(endpoint, folder),
            )
            trace_file = await anyio.to_thread.run_sync(read_trace_file, folder)
            return replace(self._result(result, folder), agent_trace=trace_file)
        finally:
            if not self.settings.keep_folder:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(_remove, folder)

    def _environment(self, endpoint: ModelEndpoint, folder: Path) -> dict[str, str]:
        return {
            **self.settings.env,
            "OPENAI_BASE_URL": endpoint.base_url,
            "OPENAI_API_KEY": endpoint.api_key,
            # the same gateway and key for Anthropic clients (Claude Code, the anthropic SDK)
            "ANTHROPIC_BASE_URL": endpoint.anthropic_base_url,
            "ANTHROPIC_API_KEY": endpoint.api_key,
            "SKILL_TRAINER_MODEL": endpoint.model,
            "SKILL_TRAINER_TASK_FILE": TASK_FILE,
            # where the agent may write its own OTLP/OpenInference spans (agent_trace.py)
            "SKILL_TRAINER_TRACE_FILE": str(folder / TRACE_FILE),
        }

    def _result(self, run: RunResult, folder: Path) -> AgentResult:
        stderr = _tail(run.stderr, self.settings.stderr_keep_bytes)
        latency_s, code = run.latency_ms / 1000, run.exit_code

        def failure(kind: FailureKind, detail: str) -> AgentResult:
            return failed(kind, detail, latency_s=latency_s, exit_code=code, stderr=stderr)

        if run.outcome == Outcome.TIMEOUT:
            return failure(FailureKind.TIMEOUT, run.reason)
        if run.outcome == Outcome.OUTPUT_LIMIT:
            return failure(FailureKind.FLOOD, run.reason)
        if run.outcome != Outcome.OK:  # non-zero exit, could not start, pool stopped
            last = _last_line(stderr)
            return failure(FailureKind.CRASH, f"{run.reason}: {last}" if last else run.reason)
        answer, why = self._answer(run.stdout, folder)
        if answer is None:
            return failure(FailureKind.GARBAGE, why)
        return AgentResult(
            answer, empty_trace(), latency_s=latency_s, exit_code=code, stderr=stderr
        )

    def _answer(self, stdout: str, folder: Path) -> tuple[str | None, str]:
        if self.settings.answer_file is not None:
            return read_answer_file(folder, self.settings.answer_file)
        return answer_from_stdout(stdout)


def prepare_folder(
    folder: Path,
    skills: SkillsVersion,
    payload: str,
    skills_dirs: tuple[str, ...] = (SKILLS_DIR,),
) -> None:
    """The skills as an Agent Skills tree (as `export-skills` writes it) in each of
    `skills_dirs`, the AGENTS.md index and task.json, in `folder`, a fresh private folder (so
    written directly, not staged)."""
    documents = _skill_tree(tuple(sorted(skills.skills.items())), skills.version)
    for skills_dir in skills_dirs:
        for name, text in documents:
            skill_folder = folder / skills_dir / name
            skill_folder.mkdir(parents=True)
            (skill_folder / SKILL_FILE).write_text(text, encoding="utf-8")
    (folder / INDEX_FILE).write_text(agents_index(skills, skills_dirs[0]), encoding="utf-8")
    (folder / TASK_FILE).write_text(payload, encoding="utf-8")


@functools.lru_cache(maxsize=64)
def _skill_tree(files: tuple[tuple[str, str], ...], version: str) -> tuple[tuple[str, str], ...]:
    """The SKILL.md documents of a skills version, rendered once: a run's rollouts share a
    handful of versions, and rendering (YAML frontmatter) took a third of a rollout's CPU."""
    skills = dict(files)
    if not any(name.endswith(".md") for name in skills):
        return ()
    return tuple(skill_documents(skills, {"skills-version": version}))


def agents_index(skills: SkillsVersion, skills_dir: str = SKILLS_DIR) -> str:
    """AGENTS.md: the system prompt, then where each skill is and what it is for, then the
    tools' descriptions."""
    lines = ["# Instructions", "", skills.system_prompt.strip() or "(none)", "", "## Skills", ""]
    for _file, name, description in catalog(dict(skills.skills)):
        lines.append(f"- `{name}` ({skills_dir}/{name}/SKILL.md): {description}")
    if skills.tool_descriptions:
        lines += ["", "## Tools", ""]
        for tool, text in sorted(skills.tool_descriptions.items()):
            lines.append(f"- `{tool}`: {text.strip()}")
    return "\n".join(lines) + "\n"


def answer_from_stdout(stdout: str) -> tuple[str | None, str]:
    """The text after the last line starting with `ANSWER:` (or None and why)."""
    for line in reversed(stdout.splitlines()):
        stripped = line.strip()
        if stripped.startswith(ANSWER_PREFIX):
            return clean_answer(stripped[len(ANSWER_PREFIX) :])
    return None, f"no line starting with {ANSWER_PREFIX!r} on stdout"


def read_answer_file(folder: Path, name: str) -> tuple[str | None, str]:
    """The declared answer file's text: a regular file inside the folder, not a link."""
    path = folder / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        return None, f"answer file {name}: {e.strerror or e}"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None, f"answer file {name}: not a regular file"
        raw = handle.read(ANSWER_FILE_MAX_BYTES + 1)
    if len(raw) > ANSWER_FILE_MAX_BYTES:
        return None, f"answer file {name}: larger than {ANSWER_FILE_MAX_BYTES} bytes"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"answer file {name}: not UTF-8 text"
    return clean_answer(text)


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _check_relative(name: str) -> None:
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or not parts:
        raise CommandAgentError(f"answer file {name!r}: give a path inside the agent's folder")


def _tail(text: str, keep: int) -> str:
    """The end of `text`, at most `keep` bytes, without control characters."""
    data = text.encode("utf-8", "replace")
    if len(data) > keep:
        text = "[... start cut]\n" + data[-keep:].decode("utf-8", "replace")
    return visible(scrub(text))


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
