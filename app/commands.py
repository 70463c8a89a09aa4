"""One handler per CLI command: arguments in, a call of app/api.py, lines out, an exit code."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from app.cli_support import (
    model_config_from,
    notice_if_simulated,
    out,
    out_json,
    overrides_from,
)
from app.demo import demo_summary, outcome_line
from app.errors import UserError
from app.offline_commands import train_models
from app.scorecard_commands import holdout_lines

if TYPE_CHECKING:
    from app import api


def cmd_init(args: argparse.Namespace) -> int:
    from app import api

    info = api.init_workspace(
        args.workspace,
        questions=args.questions,
        seed=args.seed,
        store=args.store,
        skills_from=args.skills_from,
        prompts_from=args.prompts_from,
    )
    if args.json:
        out_json(info)
        return 0
    # the result, so on stdout (log lines, warnings included, stay on stderr)
    out(
        f"created workspace {info.root} ({info.skills_version} of skills, {info.prompts_version} "
        f"of prompts, seed {info.seed}, questions {info.questions})"
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from app import api

    report = api.report(args.workspace)
    if args.json:
        out_json(report.summary)
    else:
        out(report.text)
    return 0


def print_result(result: api.EvalResult, title: str) -> None:
    out(f"{title}: accuracy {result.accuracy:.3f} ({result.correct}/{result.total} units)")
    for task_type, score in result.per_task_type.items():
        out(f"  {task_type:<12} {score.accuracy:.3f}  ({score.correct}/{score.total})")
    if result.stop_reason_counts:
        out(
            "  stop reasons: "
            + ", ".join(f"{k}={v}" for k, v in sorted(result.stop_reason_counts.items()))
        )


def memories_line(result: api.EvalResult, k: int) -> None:
    """Say when answers drew on stored memories (memory_k > 0), or that there were none."""
    if result.memories_stored is None:
        return
    if result.memories_stored == 0:
        out(f"  memories: none stored yet, so memory_k={k} added nothing (`rank` stores them)")
    else:
        out(f"  memories: up to {k} per question, from {result.memories_stored} stored (memory_k)")


def parse_tool_aliases(items: list[str]) -> dict[str, str]:
    """`--tool-alias OLD=NEW` items (api.evaluate checks the names)."""
    aliases: dict[str, str] = {}
    for item in items:
        real, sep, shown = item.partition("=")
        if not sep or not real or not shown:
            raise UserError(f"--tool-alias {item!r}: expected OLD=NEW, e.g. read_context=lookup")
        aliases[real] = shown
    return aliases


def cmd_eval(args: argparse.Namespace) -> int:
    config = model_config_from(args)
    from app import api

    aliases = parse_tool_aliases(getattr(args, "tool_alias", None) or [])
    result = api.evaluate(
        args.workspace, args.version, config, progress=_progress(args), tool_aliases=aliases
    )
    if args.json:
        out_json(result)
        return 0
    print_result(result, f"eval {result.skills_version} (run {result.run_id})")
    if result.tool_aliases:
        shown = ", ".join(f"{k} shown as {v}" for k, v in result.tool_aliases.items())
        out(f"  renamed tools: {shown}")
    out(f"  model calls: {result.new_model_calls} new, {result.cache_hits} from cache")
    memories_line(result, config.memory_k)
    notice_if_simulated(config.uses_sim, config.models.values())
    return 0


def cmd_infer(args: argparse.Namespace) -> int:
    config = model_config_from(args)
    from app import api

    result = api.infer(
        args.workspace,
        config,
        task_types=args.task_types,
        n_samples=args.n_samples,
        run_id=args.run_id,
        overwrite_run=args.overwrite_run,
        progress=_progress(args),
    )
    if args.json:
        out_json(result)
        return 0
    for sample in result.samples:
        print_result(sample, f"infer (run {sample.run_id})")
    memories_line(result.samples[-1], config.memory_k)
    notice_if_simulated(config.uses_sim, config.models.values())
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    if not args.resume:  # a resumed run's config is its checkpoint's, checked once read
        model_config_from(args, recorded=False)  # a new run's is the one given or the defaults
    from app import api

    overrides = overrides_from(args)
    if getattr(args, "holdout_task_types", None):
        overrides["holdout_task_types"] = [
            t.strip() for t in args.holdout_task_types.split(",") if t.strip()
        ]
    result = api.train(
        args.workspace,
        args.config,
        overrides=overrides,
        resume=args.resume,
        fresh=args.fresh,
        store=args.store,
        progress=_progress(args),
    )
    if args.json:
        out_json(result)
        return 0
    out(outcome_line(result))
    for line in holdout_lines(result.workspace):
        out(line)
    notice_if_simulated(result.simulated_model, train_models(result.workspace, result.train_id))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from app import api

    result = api.demo(
        args.workspace,
        args.config,
        overrides=overrides_from(args),
        progress=_progress(args),
    )
    if args.json:
        out_json(result)
        return 0
    out(demo_summary(result))
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    config = model_config_from(args)
    from app import api

    result = api.diagnose(args.workspace, args.run_id, config, progress=_progress(args))
    if args.json:
        out_json(result)
        return 0
    for line in diagnose_lines(result):
        out(line)
    notice_if_simulated(result.simulated_model, config.models.values())
    return 0


def diagnose_lines(result: api.DiagnoseResult) -> list[str]:
    """`diagnose`'s result as lines for people."""

    def counts(by_name: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(by_name.items())) or "none"

    unparsed = f" ({result.degraded} did not parse)" if result.degraded else ""
    return [
        f"diagnose {result.run_id}: {result.failures} failures diagnosed{unparsed}",
        f"  by category: {counts(result.by_category)}",
        f"  decided by: {counts(result.decided_by)} (rules before the judge)",
        f"  case packs (failures sampled for the evolver): skills {counts(result.skill_packs)}",
        f"    system prompt {result.system_pack}; tools {counts(result.tool_packs)}",
    ]


def cmd_promote(args: argparse.Namespace) -> int:
    from app import api

    result = api.promote(
        args.workspace,
        args.version,
        eval_run=args.eval_run,
        name=args.name,
        store=args.store,
        agent_skills=args.agent_skills,
    )
    if args.json:
        out_json(result)
        return 0
    out(f"promoted {args.version} to seed {result.seed}")
    for path in result.agent_skills:
        out(f"wrote {path}")
    return 0


def cmd_import_skills(args: argparse.Namespace) -> int:
    from app import api

    result = api.import_skills(
        args.skills_dir, name=args.name, store=args.store, prompts_from=args.prompts_from
    )
    if args.json:
        out_json(result)
        return 0
    out(f"imported {args.skills_dir} as seed {result.seed}")
    return 0


def cmd_export_skills(args: argparse.Namespace) -> int:
    from app import api

    result = api.export_skills(
        args.workspace,
        out=args.out,
        version=args.version,
        eval_run=args.eval_run,
        store=args.store,
    )
    if args.json:
        out_json(result)
        return 0
    for path in result.files:
        out(f"wrote {path}")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    from app.paths import workspaces_dir
    from app.tui.app import run_tui

    return run_tui(args.workspace, workspaces_dir())


def _progress(args: argparse.Namespace) -> bool | None:
    return False if args.no_progress else None  # None: bars when stderr is a terminal


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": cmd_demo,
    "init": cmd_init,
    "train": cmd_train,
    "infer": cmd_infer,
    "eval": cmd_eval,
    "diagnose": cmd_diagnose,
    "promote": cmd_promote,
    "report": cmd_report,
    "tui": cmd_tui,
    "import-skills": cmd_import_skills,
    "export-skills": cmd_export_skills,
}
