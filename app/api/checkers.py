"""Checks of the checkers: `judge_quality` grades the rubric judge on labelled cases
(docs/checkers.md#judge-quality)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app import paths
from app.api._common import _budget_is_run_failed, _run_sync, _workspace
from app.api.run_ids import next_run_id
from app.api_args import ConfigSource, workspace_config
from app.api_args import expect as _expect
from app.api_args import is_path as _is_path
from app.harness.rollouts.session import Session
from app.harness.workspace.writer_lock import WriterLock
from app.progress import Bars


@dataclass(frozen=True)
class JudgeQualityResult:
    """`judge-quality`: how the rubric judge did on labelled cases (core/judge_quality.py)."""

    run_id: str
    judge_model: str
    cases: int
    judged: int
    agreement: float
    pass_line: float
    passed: bool
    leniency: float
    verbosity_bias: float
    invalid_cases: int
    invalid_replies: int
    by_kind: dict[str, float]
    band_misses: tuple[dict[str, Any], ...]
    record: Path
    simulated_model: bool


def judge_quality(
    workspace: str | Path,
    cases: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    pass_line: float = 0.9,
) -> JudgeQualityResult:
    """Grade the rubric judge (`judge_model`) on the labelled cases of `cases` (JSONL,
    docs/checkers.md#judge-quality) and record the check in `analyses/judge_quality.json`."""
    return _run_sync(
        judge_quality_async, workspace, cases, config, overrides=overrides, pass_line=pass_line
    )


async def judge_quality_async(
    workspace: str | Path,
    cases: str | Path,
    config: ConfigSource = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    pass_line: float = 0.9,
) -> JudgeQualityResult:
    from app.harness.rollouts.judge_quality import (
        judge_cases,
        load_cases,
        quality_summary,
        record_check,
    )
    from app.harness.rollouts.rubric import RubricSettings
    from app.harness.workspace.harness_log import RunStatus
    from core.judge_quality import assess

    root = _workspace(workspace)
    _expect("cases", cases, _is_path(cases), "a JSONL file's path")
    _expect(
        "pass_line",
        pass_line,
        isinstance(pass_line, int | float)
        and not isinstance(pass_line, bool)
        and 0 < pass_line <= 1,
        "a number in (0, 1]",
    )
    run_config = workspace_config(root, config, overrides)
    with WriterLock(root, "judge-quality"), Session(root, run_config, Bars(enabled=False)) as s:
        labelled = load_cases(paths.absolute(cases), s.questions_by_id)
        run_id = next_run_id(s, "judge-quality-")
        s.register(run_id, "judge_quality", s.agent_prompts())
        settings = RubricSettings(
            samples=run_config.rubric_samples, temperature=run_config.rubric_temperature
        )
        with _budget_is_run_failed():
            scores = await judge_cases(
                s.providers["judge"], settings, labelled, run_id, run_config.concurrency
            )
        quality = assess(labelled, scores, float(pass_line))
        s.recorder.flush()
        s.log.finish_run(run_id, RunStatus.DONE, quality_summary(quality))
        entry = record_check(
            s.paths.analyses,
            run_config.judge_model,
            labelled,
            quality,
            paths.absolute(cases),
            run_id,
        )
    return JudgeQualityResult(
        run_id=run_id,
        judge_model=run_config.judge_model,
        cases=quality.cases,
        judged=quality.judged,
        agreement=quality.agreement,
        pass_line=quality.pass_line,
        passed=quality.passed,
        leniency=quality.leniency,
        verbosity_bias=quality.verbosity_bias,
        invalid_cases=quality.invalid_cases,
        invalid_replies=quality.invalid_replies,
        by_kind=dict(quality.by_kind),
        band_misses=tuple(entry["band_misses"]),
        record=s.paths.analyses / "judge_quality.json",
        simulated_model=run_config.judge_model.startswith("sim/"),
    )
