"""The Python API: everything the CLI does, as functions that return typed results.

    from app import api

    api.init_workspace("workspaces/mine", seed="sim-starter", questions="sim-basic")
    result = api.train("workspaces/mine", overrides={"epochs": 2})
    print(f"test accuracy {result.baseline_test_accuracy:.3f} -> {result.test_accuracy:.3f}")

Functions that run a model have an async twin (`train_async`, `evaluate_async`,
`infer_async`, `demo_async`, `diagnose_async`, `fork_async`, `rank_async`) for callers that
already run an event loop; the plain ones start their own. Every writer takes the workspace's writer lock, as the CLI does.

Errors are named: `UserError` (bad input or a refused request, e.g. a second writer),
`RunFailed` (a run started but could not finish: budget, provider, full disk), and
`ProviderError` from a model that keeps failing. Their message is one line meant for people.
`progress=True` shows progress bars on stderr (None: when stderr is a terminal).

Log lines go through loguru; importing this module makes every record's message scrubbed of
API keys and control characters (`app.logging_setup.scrub_log_records`), so loguru's default
stderr handler, and any the caller adds, never print a secret.

The functions live in one module per domain; this package re-exports them all, so
`from app import api; api.train(...)` and `from app.api import X` are the way in:

    workspace.py     init_workspace; promote, import_skills, export_skills (seeds, Agent Skills)
    training.py      train, demo, resume_config
    evaluation.py    evaluate, infer, diagnose
    reports.py       report, html_report
    benchmarks.py    validate_benchmark, check_tools (a benchmark checked before training)
    best_of_n.py     fork, rank (answer each question N times, verify and rank the branches)
    curation.py      trajectory classes, the verifier cascade, an export's curation mix
    exports.py       export (training data), export_traces (OTLP, Inspect), export_verify
    scorecards.py    scorecard (judge a ranked fork's data)
    checkers.py      judge_quality (grade the rubric judge)
    serving.py       serve, serve_config, savings
    estimates.py     estimate (cost and time of `train` before it runs)
    trace_ingest.py  ingest (an observability export into the workspace's log)
    distillation.py  distill (teacher to student)
    store.py         find_seed, find_benchmark, writable_store (where seeds and benchmarks live)
    run_ids.py       next_run_id, claim_run_id
    _common.py       what every domain shares: the sync-over-async bridge, argument checks

Config resolution and the argument checks a CLI command needs before the harness loads stay in
app/api_args.py, outside this package (importing any module here loads all of it). A test that
replaces a name a function looks up replaces it in that function's module, e.g.
`app.api.training.Runner`, not on `app.api`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# `X as X`: reachable as `api.X` as before the split, though not in `__all__`, whose functions are
# exactly the API table of docs/python-api.md (tests/app/api/test_api_commands.py).
from app import paths as paths
from app.api.benchmarks import BenchmarkValidation, validate_benchmark
from app.api.benchmarks import check_tools as check_tools
from app.api.benchmarks import check_tools_async as check_tools_async
from app.api.best_of_n import (
    ForkResult,
    JudgeStats,
    MemoryStats,
    PairedStats,
    RankResult,
    fork,
    fork_async,
    rank,
    rank_async,
)
from app.api.best_of_n import PairwiseBias as PairwiseBias
from app.api.checkers import JudgeQualityResult as JudgeQualityResult
from app.api.checkers import judge_quality, judge_quality_async
from app.api.curation import CascadeReport as CascadeReport
from app.api.curation import CascadeStage as CascadeStage
from app.api.curation import CurationSummary as CurationSummary
from app.api.curation import TrajectoryClasses as TrajectoryClasses
from app.api.distillation import distill as distill
from app.api.distillation import distill_async as distill_async
from app.api.estimates import estimate, estimate_async
from app.api.evaluation import (
    DiagnoseResult,
    EvalResult,
    InferResult,
    TaskTypeScore,
    diagnose,
    diagnose_async,
    evaluate,
    evaluate_async,
    infer,
    infer_async,
)
from app.api.exports import (
    ExportedFile,
    ExportResult,
    SourceVersion,
    TraceExportResult,
    TraceFile,
    export,
    export_traces,
)
from app.api.exports import ExportVerifyResult as ExportVerifyResult
from app.api.exports import export_verify as export_verify
from app.api.reports import WorkspaceReport, report
from app.api.reports import html_report as html_report
from app.api.run_ids import TRAINING_RUN_RE as TRAINING_RUN_RE
from app.api.run_ids import claim_run_id as claim_run_id
from app.api.run_ids import next_run_id as next_run_id
from app.api.scorecards import ScorecardFigure as ScorecardFigure
from app.api.scorecards import ScorecardResult as ScorecardResult
from app.api.scorecards import scorecard, scorecard_async
from app.api.serving import savings, serve, serve_async
from app.api.serving import serve_config as serve_config
from app.api.store import find_benchmark as find_benchmark
from app.api.store import find_seed as find_seed
from app.api.store import writable_store as writable_store
from app.api.trace_ingest import ingest
from app.api.training import DEMO_QUESTIONS as DEMO_QUESTIONS
from app.api.training import DEMO_SEED as DEMO_SEED
from app.api.training import DEMO_WORLD as DEMO_WORLD
from app.api.training import EpochPoint, TrainResult, demo, demo_async, train, train_async
from app.api.training import resume_config as resume_config
from app.api.workspace import (
    ExportSkillsResult,
    ImportResult,
    PromoteResult,
    WorkspaceInfo,
    export_skills,
    import_skills,
    init_workspace,
    promote,
)
from app.api_args import AgentChoice
from app.api_args import ConfigSource as ConfigSource
from app.api_args import resolve_config as resolve_config
from app.api_args import workspace_config as workspace_config
from app.errors import DamagedFile as DamagedFile
from app.errors import RunFailed, UserError
from app.harness.tools.check import ToolsCheck as ToolsCheck
from app.logging_setup import scrub_log_records
from app.providers.errors import ProviderError

if TYPE_CHECKING:  # each loads with the command that needs it (uvicorn and FastAPI for `serve`)
    from app.distill import DistillOutcome as DistillOutcome
    from app.estimate import Estimate as Estimate
    from app.harness.ingest.service import IngestSummary as IngestSummary
    from app.harness.serving.savings import SavingsReport as SavingsReport
    from app.harness.serving.server import ServeOutcome as ServeOutcome
    from app.harness.serving.server import ServeReady as ServeReady

scrub_log_records()

__all__ = [
    "AgentChoice",
    "BenchmarkValidation",
    "DiagnoseResult",
    "EpochPoint",
    "EvalResult",
    "ExportResult",
    "ExportSkillsResult",
    "ExportedFile",
    "ForkResult",
    "ImportResult",
    "InferResult",
    "JudgeStats",
    "MemoryStats",
    "PairedStats",
    "PromoteResult",
    "ProviderError",
    "RankResult",
    "RunFailed",
    "SourceVersion",
    "TaskTypeScore",
    "TrainResult",
    "UserError",
    "WorkspaceInfo",
    "WorkspaceReport",
    "demo",
    "demo_async",
    "diagnose",
    "diagnose_async",
    "estimate",
    "estimate_async",
    "evaluate",
    "evaluate_async",
    "export",
    "export_skills",
    "fork",
    "fork_async",
    "import_skills",
    "infer",
    "ingest",
    "infer_async",
    "init_workspace",
    "judge_quality",
    "judge_quality_async",
    "promote",
    "rank",
    "rank_async",
    "report",
    "savings",
    "scorecard",
    "scorecard_async",
    "serve",
    "serve_async",
    "train",
    "train_async",
    "validate_benchmark",
    "TraceExportResult",
    "TraceFile",
    "export_traces",
]
