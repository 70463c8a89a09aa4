"""One function per CLI command; each returns an exit code."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import anyio
from loguru import logger

from app.cli import make_config
from app.errors import UserError
from app.harness.atomic import write_json_atomic
from app.harness.checkpoint import load_checkpoint
from app.harness.config import RunConfig, build_config, parse_override, recorded_config
from app.harness.session import SIM_NOTICE, Session
from app.harness.store import benchmark_dir, load_seed, seed_dir
from app.harness.workspace import (
    archive_workspace,
    init_workspace,
    list_versions,
    read_manifest,
    train_start_mode,
)
from app.harness.writer_lock import WriterLock
from app.paths import DEMO_CONFIG, WORKSPACES_DIR
from app.progress import Bars
from app.report import format_summary, workspace_summary
from app.sanitize import visible


def out(text: str) -> None:
    """Command output: data in it (names, ids, question text) never drives the terminal."""
    print(visible(text))


def _bars(args: argparse.Namespace) -> Bars:
    return Bars(enabled=False) if args.no_progress else Bars()


def cmd_init(args: argparse.Namespace) -> int:
    if args.skills_from is not None:
        from app.harness.agent_skills import import_skills

        name = args.seed or Path(args.workspace).name
        benchmark_dir(args.store, args.questions)  # a bad benchmark name refuses before import
        ws = Path(args.workspace)
        if ws.exists() and (not ws.is_dir() or any(ws.iterdir())):
            raise UserError(f"{ws}: already exists; choose another path (nothing imported)")
        target = import_skills(
            args.skills_from, args.store, name, seed_dir(args.store, args.prompts_from)
        )
        logger.info("imported {} as seed {}", args.skills_from, target)
        args.seed = name
    if not args.seed:
        raise UserError("init: give --seed NAME or --skills-from DIR")
    seed = load_seed(seed_dir(args.store, args.seed))
    paths = init_workspace(args.workspace, seed, benchmark_dir(args.store, args.questions))
    logger.info(
        "created workspace {} (skills/v1, prompts/v1, questions {})",
        paths.root,
        paths.questions_ref,
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    summary = workspace_summary(args.workspace)
    out(json.dumps(summary, indent=2, default=str) if args.json else format_summary(summary))
    return 0


def _print_result(result, title: str) -> None:
    out(f"{title}: accuracy {result.accuracy:.3f} ({result.correct}/{result.total} units)")
    for task_type, entry in result.per_task_type.items():
        out(f"  {task_type:<12} {entry['accuracy']:.3f}  ({entry['correct']}/{entry['total']})")
    if result.stop_reason_counts:
        out(
            "  stop reasons: "
            + ", ".join(f"{k}={v}" for k, v in sorted(result.stop_reason_counts.items()))
        )


def _notice(session: Session) -> None:
    if session.config.uses_sim:
        out(SIM_NOTICE)


def _next_run_id(session: Session, prefix: str) -> str:
    taken = {r["run_id"] for r in session.log.runs()}
    n = sum(1 for r in taken if r.startswith(prefix)) + 1
    while f"{prefix}{n}" in taken:  # an id given with --run-id may sit in the sequence
        n += 1
    return f"{prefix}{n}"


RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,99}")
TRAINING_RUN_RE = re.compile(r"(baseline|train\d+)(-.*)?")


def _claim_run_id(session: Session, run_id: str, overwrite: bool) -> dict | None:
    """Refuse a run id that would replace another run's rows, unless --overwrite-run is given
    for an infer/eval run; returns what is being overwritten, for the new run's provenance."""
    if not RUN_ID_RE.fullmatch(run_id):
        raise UserError(
            f"--run-id {run_id!r}: use 1-100 letters, digits, '_', '-', '.', ':' "
            "or '+', starting with a letter or digit"
        )
    if TRAINING_RUN_RE.fullmatch(run_id):
        raise UserError(
            f"--run-id {run_id}: ids like 'baseline' and 'trainN...' belong to "
            "training and are never replaced; pick another id"
        )
    old = session.log.run(run_id)
    if old is None:
        return None
    if not overwrite:
        raise UserError(
            f"--run-id {run_id}: a {old['kind']} run of that id already exists "
            f"(started {old['started_at']}, {old['status']}); pick another id, or "
            "add --overwrite-run to replace it"
        )
    logger.warning("replacing run {} ({} run started {})", run_id, old["kind"], old["started_at"])
    return {
        "run_id": run_id,
        "kind": old["kind"],
        "status": old["status"],
        "started_at": old["started_at"],
        "finished_at": old["finished_at"],
    }


def cmd_eval(args: argparse.Namespace) -> int:
    config = make_config(args)
    with (
        WriterLock(args.workspace, "eval"),
        Session(args.workspace, config, _bars(args)) as session,
    ):
        version = args.version.split("/")[-1]
        if version not in list_versions(session.paths.root, "skills"):
            raise UserError(
                f"{args.workspace}: no skills version {version!r} "
                f"(have {list_versions(session.paths.root, 'skills')})"
            )
        prompts = session.agent_prompts(skills_dir=session.paths.root / "skills" / version)
        run_id = _next_run_id(session, f"eval-{version}-{prompts.prompts_version}-")
        calls_before = session.recorder.totals["calls"] - session.recorder.totals["cache_hits"]
        with session.bars.live():
            result = await_(
                session.infer(
                    list(session.benchmark.questions),
                    run_id,
                    "eval",
                    prompts=prompts,
                    label=f"eval {version}",
                )
            )
        new_calls = (
            session.recorder.totals["calls"] - session.recorder.totals["cache_hits"] - calls_before
        )
        report = {
            "run_id": run_id,
            "skills_version": version,
            "prompts_version": prompts.prompts_version,
            "accuracy": result.accuracy,
            "total_units": result.total,
            "per_task_type": result.per_task_type,
            "stop_reason_counts": result.stop_reason_counts,
            "new_model_calls": new_calls,
            "simulated_model": config.uses_sim,
        }
        write_json_atomic(session.paths.analyses / f"eval_{run_id}.json", report)
        _print_result(result, f"eval {version} (run {run_id})")
        out(f"  model calls: {new_calls} new, {session.recorder.totals['cache_hits']} from cache")
        _notice(session)
    return 0


def cmd_infer(args: argparse.Namespace) -> int:
    config = make_config(args)
    with (
        WriterLock(args.workspace, "infer"),
        Session(args.workspace, config, _bars(args)) as session,
    ):
        questions = [
            q
            for q in session.benchmark.questions
            if not args.task_types or q.task_type in args.task_types
        ]
        if not questions:
            raise UserError(f"no questions for task types {args.task_types}")
        base = args.run_id if args.run_id is not None else _next_run_id(session, "infer-")
        run_ids = [base] if args.n_samples == 1 else [f"{base}-s{n}" for n in range(args.n_samples)]
        replaced = {r: _claim_run_id(session, r, args.overwrite_run) for r in run_ids}
        with session.bars.live():
            for sample, run_id in enumerate(run_ids):
                extra = {"overwrote": replaced[run_id]} if replaced[run_id] else None
                result = await_(
                    session.infer(questions, run_id, "infer", sample=sample, provenance=extra)
                )
                _print_result(result, f"infer (run {run_id})")
        _notice(session)
    return 0


def await_(coro):
    async def runner():
        return await coro

    return anyio.run(runner)


def cmd_train(args: argparse.Namespace) -> int:
    command = "train" + (" --resume" if args.resume else "") + (" --fresh" if args.fresh else "")
    # The lock first: the mode, the checkpoint and (for --fresh) the archive are decided and
    # done by the only writer, so no live run can write into what this command sets up.
    with WriterLock(args.workspace, command) as lock:
        mode = train_start_mode(args.workspace, resume=args.resume, fresh=args.fresh)
        if mode == "resume":  # a corrupt or newer checkpoint refuses at once
            config = resume_config(args, load_checkpoint(args.workspace))
        else:
            config = make_config(args)  # validate before anything is archived or opened
        if mode == "fresh":
            _restart_from_seed(args.workspace, args.store, lock)
        from app.harness.runner import Runner

        with Session(args.workspace, config, _bars(args)) as session:
            Runner(session).run_train(resume=mode == "resume")
            _notice(session)
    return 0


def resume_config(args: argparse.Namespace, ckpt: dict) -> RunConfig:
    """The config the run was going with (recorded in its checkpoint), plus `--set`; an
    explicit `--config` file replaces it. Changed decision settings are shown before the
    run continues (Runner), structural ones refuse."""
    if args.config is not None:
        return make_config(args)
    config = recorded_config(
        ckpt["config_fingerprint"], f"{args.workspace}/checkpoint.json (the run's config)"
    )
    overrides = dict(parse_override(s) for s in args.set)
    if overrides:
        config = build_config(overrides, "command line", config)
    if "[REDACTED:" in (config.api_base or "") and not config.uses_sim:
        raise UserError(
            "the run's api_base held credentials, which are never stored; pass it "
            "again with --set api_base=... (or --config)"
        )
    return config


def _restart_from_seed(root: Path, store: Path, lock: WriterLock) -> None:
    manifest = read_manifest(root)
    seed = load_seed(seed_dir(store, manifest["seed"]))
    bench = benchmark_dir(store, manifest["current"]["questions"])
    archived = archive_workspace(root)
    init_workspace(root, seed, bench, lock=lock)
    logger.info("archived the old workspace to {}", archived)


def cmd_demo(args: argparse.Namespace) -> int:
    from app.demo import run_demo

    return run_demo(args.workspace, make_config(args, DEMO_CONFIG), _bars(args))


def cmd_diagnose(args: argparse.Namespace) -> int:
    from app.harness.runner import Runner

    with (
        WriterLock(args.workspace, "diagnose"),
        Session(args.workspace, make_config(args), _bars(args)) as session,
    ):
        summary = Runner(session).diagnose_run(args.run_id)
        out(json.dumps(summary, indent=2))
        _notice(session)
    return 0


def cmd_promote(args: argparse.Namespace) -> int:
    from app.harness.runner import promote

    with WriterLock(args.workspace, "promote"):
        target = promote(args.workspace, args.version, args.eval_run, args.name, args.store)
    out(f"promoted {args.version} to seed {target}")
    if args.agent_skills is not None:
        from app.harness.agent_skills import export_version

        for path in export_version(
            args.workspace, args.version, args.agent_skills, args.eval_run, args.store
        ):
            out(f"wrote {path}")
    return 0


def cmd_import_skills(args: argparse.Namespace) -> int:
    from app.harness.agent_skills import import_skills

    target = import_skills(
        args.skills_dir, args.store, args.name, seed_dir(args.store, args.prompts_from)
    )
    out(f"imported {args.skills_dir} as seed {target}")
    return 0


def cmd_export_skills(args: argparse.Namespace) -> int:
    from app.harness.agent_skills import export_version

    # reads only immutable, sha256-checked versions: no writer lock needed (like `report`)
    for path in export_version(args.workspace, args.version, args.out, args.eval_run, args.store):
        out(f"wrote {path}")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    from app.tui.app import run_tui

    return run_tui(args.workspace, WORKSPACES_DIR)


from app.fork_commands import cmd_export, cmd_fork, cmd_rank  # noqa: E402,F401 - issue 14
