"""A Session opens one workspace for one command: log, cache, providers, benchmark."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from loguru import logger

from app.errors import UserError, first_leaf, is_stop, stop_reason
from app.harness.agents.training_seam import ExternalRollouts, external_agent
from app.harness.rollouts.agent_prompts import AgentPrompts
from app.harness.rollouts.checking import AnswerChecker
from app.harness.rollouts.custom_checkers import CheckerPool, PoolSettings, configure_user_pool
from app.harness.rollouts.inference import AgentSettings, run_inference
from app.harness.rollouts.model_io import ModelIO, tool_mode_warning
from app.harness.rollouts.rubric import RubricSettings
from app.harness.rollouts.telemetry import LogRecorder
from app.harness.tools.runtime import ToolRuntime
from app.harness.workspace.config import RunConfig
from app.harness.workspace.harness_log import HarnessLog, RunStatus
from app.harness.workspace.store import Benchmark, load_benchmark
from app.harness.workspace.workspace import (
    WorkspacePaths,
    advance_version,
    content_sha256,
    read_version_files,
    resolve_paths,
    update_manifest,
)
from app.logging_setup import add_workspace_log
from app.progress import NO_BARS, Bars
from app.provenance import run_provenance
from app.providers.cache import ResponseCache
from app.providers.factory import check_sim_worlds, make_providers
from app.providers.litellm_provider import CostBudget
from core.types import InferenceResult, Question


class Session:
    def __init__(
        self, root: Path, config: RunConfig, bars: Bars = NO_BARS, *, calls_models: bool = True
    ) -> None:
        self.config = config
        self.bars = bars
        self.paths: WorkspacePaths = resolve_paths(root)
        self._log_sink = add_workspace_log(self.paths.log_file)
        self.log = HarnessLog(self.paths.db)
        self.log.check_integrity()  # a bit-rotted log is refused before anything is added
        self.cache = ResponseCache(self.paths.cache_db)
        self.recorder = LogRecorder(self.log)
        self.budget = CostBudget(config.max_cost_usd)
        self.benchmark: Benchmark = load_benchmark(self.paths.questions_dir)
        self.providers = make_providers(
            config, self.cache, self.recorder, self.budget, self.benchmark.questions
        )
        self.model_io = ModelIO(self.paths.root, config)
        self.checker = AnswerChecker(
            judge=self.providers["judge"],
            rubric=RubricSettings(
                samples=config.rubric_samples, temperature=config.rubric_temperature
            ),
            pool=CheckerPool(
                config.checker_workers, config.checker_timeout_s, env_allow=config.checker_env
            ),
        )
        # fork verifiers and rank rewards run in a pool of the same settings
        configure_user_pool(
            PoolSettings(config.checker_workers, config.checker_timeout_s, config.checker_env)
        )
        if (warning := tool_mode_warning(config)) is not None:
            logger.warning(warning)
        self.questions_by_id: dict[str, Question] = {
            q.question_id: q for q in self.benchmark.questions
        }
        self.tools: ToolRuntime | None = None
        self.external: ExternalRollouts | None = None
        try:
            # the configured outside agent (docs/agents.md); None runs the built-in loop. A
            # session that makes no model calls (export) has no rollouts to run it in.
            self.external = external_agent(config) if calls_models else None
            # the benchmark's declared tools and fixtures (docs/tools.md), started on first use
            self.tools = ToolRuntime.for_benchmark(
                self.benchmark.tool_tables,
                self.benchmark.questions,
                self.paths.questions_dir,
                self.paths.root / ".tools",
                concurrency=config.concurrency,
            )
            if calls_models:  # before any call and any write: a mismatched world trains to 0
                check_sim_worlds(config, self.benchmark.questions, self.benchmark.name)
        except UserError:
            self.close()
            raise

    def close(self) -> None:
        if self.external is not None:
            self.external.close()
        self.checker.close()
        if self.tools is not None:
            self.tools.close()
        self.recorder.flush()
        self.log.close()
        self.cache.close()
        logger.remove(self._log_sink)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def charge_run(self, owner: str, spent_before: float = 0.0) -> float:
        """Make `owner` the run every call is charged to, and carry what it already spent
        (by earlier, killed or stopped processes) into this process's cost budget."""
        self.recorder.flush()
        self.recorder.owner = owner
        prior = max(spent_before, self.cache.spend_total(owner))
        self.budget.charge(prior, calls=0)
        return prior

    def refresh_paths(self) -> WorkspacePaths:
        self.paths = resolve_paths(self.paths.root)
        return self.paths

    def agent_prompts(
        self, skills_dir: Path | None = None, prompts_dir: Path | None = None
    ) -> AgentPrompts:
        prompts = AgentPrompts.load(
            skills_dir or self.paths.skills_dir,
            prompts_dir or self.paths.prompts_dir,
            self.config.skill_mode,
        )
        # verified memories (app/harness/rollouts/memory.py) go before the system prompt
        if self.config.memory_k > 0:
            from app.harness.rollouts.memory import with_memories

            prompts = with_memories(
                prompts,
                self.log,
                self.config.memory_k,
                dedupe=self.config.memory_dedupe,
                retire_after=self.config.memory_retire_after_versions,
            )
        return prompts

    @property
    def agent_settings(self) -> AgentSettings:
        c = self.config
        return AgentSettings(
            max_steps=c.max_steps,
            temperature=c.temperature,
            max_tokens=c.agent_max_tokens or c.max_tokens,
            concurrency=c.concurrency,
            answer_fallbacks=self.benchmark.answer_fallbacks,
            checker=self.checker,
            tools=self.tools,
            external=self.external,
        )

    def provenance(self, prompts: AgentPrompts) -> dict[str, Any]:
        c = self.config
        return run_provenance(
            skills_version=prompts.skills_version,
            prompts_version=prompts.prompts_version,
            skills_sha=content_sha256(prompts.skills),
            prompts_sha=content_sha256({"system.md": prompts.system, **prompts.tool_docs}),
            benchmark_hash=self.benchmark.content_hash,
            models=c.models,
            sampling={
                "temperature": c.temperature,
                "max_tokens": c.max_tokens,
                # only when set: a run without it keeps the provenance it always had
                **({"agent_max_tokens": c.agent_max_tokens} if c.agent_max_tokens else {}),
            },
            simulated=c.uses_sim,
        )

    def register(
        self,
        run_id: str,
        kind: str,
        prompts: AgentPrompts,
        parent_run_id: str | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> None:
        self.log.register_run(
            run_id,
            kind=kind,
            skills_version=prompts.skills_version,
            prompts_version=prompts.prompts_version,
            questions_ref=self.benchmark.name,
            parent_run_id=parent_run_id,
            config=self.config.model_dump(mode="json"),
            provenance={**self.provenance(prompts), **(provenance or {})},
        )

    async def infer(
        self,
        questions: list[Question],
        run_id: str,
        kind: str,
        prompts: AgentPrompts | None = None,
        label: str = "questions",
        parent_run_id: str | None = None,
        guard: bool = True,
        sample: int = 0,
        provenance: dict[str, Any] | None = None,
    ) -> InferenceResult:
        """Register a run, answer the questions, record the summary."""
        prompts = prompts or self.agent_prompts()
        self.register(run_id, kind, prompts, parent_run_id, provenance)
        try:
            result = await run_inference(
                questions,
                provider=self.providers["agent"],
                prompts=prompts,
                log=self.log,
                run_id=run_id,
                settings=replace(self.agent_settings, sample=sample),
                bars=self.bars,
                label=label,
                guard=guard,
            )
        except BaseException as e:
            from app.secrets import scrub

            self.recorder.flush()
            leaf = first_leaf(e)
            if is_stop(leaf):
                self.log.finish_run(
                    run_id,
                    RunStatus.STOPPED,
                    {"stop_reason": stop_reason(leaf), "reason": f"stopped by {stop_reason(leaf)}"},
                )
            else:
                self.log.finish_run(
                    run_id,
                    RunStatus.FAILED,
                    {"reason": scrub(f"{type(leaf).__name__}: {leaf}")[:500]},
                )
            raise
        self.recorder.flush()
        self.log.finish_run(
            run_id,
            RunStatus.DONE,
            summary={
                "accuracy": result.accuracy,
                "total": result.total,
                "correct": result.correct,
                "per_task_type": result.per_task_type,
                "stop_reason_counts": result.stop_reason_counts,
                # only when a checker failed or gave no verdict: earlier summaries unchanged
                **(
                    {"check_counts": result.check_counts, "check_reasons": result.check_reasons}
                    if set(result.check_counts) - {"ok"}
                    else {}
                ),
            },
        )
        return result

    def publish_version(
        self, kind: str, files: dict[str, str], *, source: str, description: str, run_id: str
    ) -> str:
        """A new immutable version as a child of the current one, made current."""
        parent = self.paths.skills_version if kind == "skills" else self.paths.prompts_version
        version = advance_version(
            self.paths.root, kind, files, source=source, parent=parent, description=description
        )
        update_manifest(self.paths.root, run_id=run_id, **{kind: version})
        self.refresh_paths()
        return version

    def version_files(self, kind: str, version: str) -> dict[str, str]:
        return read_version_files(self.paths.root / kind / version)
