"""Command line: `skill-trainer <command>` (or `python main.py <command>`).

Exit codes: 0 ok, 1 a run failed, 2 bad input or a refused request (130: Ctrl-C while still
starting, app/launch.py). The commands are thin:
app/commands.py and app/fork_commands.py turn arguments into calls of app/api.py and print.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import signal
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from loguru import logger

from app.errors import STOP_SIGNAL, RunFailed, Stopped, UserError, first_leaf, stop_reason
from app.logging_setup import configure_console
from app.paths import absolute, workspaces_dir
from app.providers.errors import ProviderError
from app.version import package_version

COMMANDS = (
    "demo",
    "init",
    "train",
    "infer",
    "eval",
    "diagnose",
    "promote",
    "report",
    "tui",
    "import-skills",
    "export-skills",
    "fork",
    "rank",
    "export",
    "validate-benchmark",
    "serve",
    "judge-quality",
    "estimate",
    "ingest",
    "check-tools",
    "scorecard",
    "distill",
    "list",
)


class Options:
    """Parent parsers: each command takes only the option groups it uses."""

    def __init__(self) -> None:
        self.verbose = _parent()
        # SUPPRESS: a command that is not given -v leaves the top-level parser's value (`-v`
        # before the command) in place instead of resetting it to False
        self.verbose.add_argument(
            "--verbose",
            "-v",
            action="store_true",
            default=argparse.SUPPRESS,
            help="debug-level console log (before or after the command)",
        )
        self.json = _parent()
        self.json.add_argument(
            "--json",
            action="store_true",
            help="the result as one JSON document on stdout (log lines stay on stderr)",
        )
        self.model = _parent()  # commands that run models read a config and show bars
        self.model.add_argument("--config", type=Path, help="TOML config file (see app/demo.toml)")
        self.model.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override one config key (repeatable), e.g. --set epochs=2 or --set gate.n_max=60",
        )
        self.model.add_argument("--no-progress", action="store_true", help="hide progress bars")
        self.workspace = _parent()
        self.workspace.add_argument(
            "--workspace", "-w", type=Path, required=True, help="workspace folder"
        )
        self.store = _parent()
        self.store.add_argument(
            "--store",
            type=Path,
            help="store of seeds and benchmarks (default: the built-in one; seeds and "
            "benchmarks not found in DIR are looked up there too)",
        )


def _parent() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


def add_command(
    sub: Any, name: str, help: str, example: str, parents: list[argparse.ArgumentParser]
) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with one example."""
    return sub.add_parser(
        name,
        parents=parents,
        help=help,
        description=help,
        epilog=f"example:\n  skill-trainer {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # a prefix is reported with the option meant, never guessed
    )


def add_workspace_alias(p: argparse.ArgumentParser, required: bool) -> None:
    """`-w DIR`, or the workspace as the first positional argument (the older form)."""
    p.add_argument("--workspace", "-w", type=Path, help="workspace folder")
    p.add_argument(
        "workspace_positional", type=Path, nargs="?", metavar="WORKSPACE", help="same as -w"
    )
    p.set_defaults(workspace_required=required)


def build_parser() -> argparse.ArgumentParser:
    o = Options()
    parser = argparse.ArgumentParser(
        prog="skill-trainer",
        allow_abbrev=False,
        description="Train an LLM agent's skill files and prompts "
        "with gated edits. Runs offline on the built-in simulated model by default.",
    )
    parser.add_argument("--version", action="version", version=f"skill-trainer {package_version()}")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug-level console log")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_workspace_commands(sub, o)
    _add_run_commands(sub, o)
    _add_skill_commands(sub, o)
    _add_fork_commands(sub, o)
    _add_format_commands(sub, o)
    _add_serve_commands(sub, o)
    _add_checker_commands(sub, o)
    _add_offline_commands(sub, o)
    _add_ingest_commands(sub, o)
    _add_tools_commands(sub, o)
    _add_webreport_commands(sub, o)
    _add_scorecard_commands(sub, o)
    _add_distill_commands(sub, o)
    _add_list_command(sub, o)
    return parser


def _add_list_command(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "list",
        "list the seeds or benchmarks init can use (--store's, then the built-in ones), or a "
        "workspace's runs",
        "list runs -w workspaces/demo",
        [o.verbose, o.store, o.json],
    )
    p.add_argument("what", choices=("seeds", "benchmarks", "runs"), help="what to list")
    p.add_argument("--workspace", "-w", type=Path, help="the workspace (list runs)")


def _add_distill_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "distill",
        "probe a teacher against a student; if worth it, make the teacher's verified "
        "answers the student's memories, train the student and compare on test "
        "(exit 0 distill, 3 not_worth_it, 4 insufficient_evidence)",
        "distill -w workspaces/distil --teacher sim/basic-strong --student sim/basic",
        [o.verbose, o.workspace, o.model, o.json],
    )
    p.add_argument("--teacher", required=True, metavar="MODEL", help="the strong model")
    p.add_argument("--student", required=True, metavar="MODEL", help="the cheap model")


def _add_offline_commands(sub: Any, o: Options) -> None:
    add_command(
        sub,
        "estimate",
        "expected model calls per role, tokens, cost and wall time of `train`, before it runs",
        "estimate -w workspaces/mine --set epochs=2",
        [o.verbose, o.workspace, o.model, o.json],
    )


def _add_scorecard_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "scorecard",
        "judge a ranked fork's data: yield, verifier flakiness, canary leaks, cost per clean "
        "trajectory, held-out accuracy with its memories vs without (docs/scorecard.md)",
        "scorecard -w workspaces/mine fork-1",
        [o.verbose, o.workspace, o.model, o.json],
    )
    p.add_argument("rollout_id", metavar="ROLLOUT", help="a ranked fork's id")
    p.add_argument(
        "--reruns", type=int, default=3, help="reruns of the verifiers for R_flake (default 3)"
    )
    p.add_argument(
        "--memory-k",
        type=int,
        default=3,
        help="memories of the rollout per held-out question (default 3; 0 skips the test)",
    )


def _add_workspace_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "demo",
        "init + train workspaces/demo on the simulated model and print the learning curve",
        "demo",
        [o.verbose, o.model, o.json],
    )
    p.add_argument(
        "--workspace",
        "-w",
        type=Path,
        default=workspaces_dir() / "demo",
        help="where (default: workspaces/demo; an existing one is archived first)",
    )
    p = add_command(
        sub,
        "init",
        "create a workspace from a seed and a benchmark",
        "init -w workspaces/mine --seed sim-starter --questions sim-basic",
        [o.verbose, o.store, o.json],
    )
    add_workspace_alias(p, required=True)
    p.add_argument(
        "--seed",
        help="seed name in the store (e.g. sim-starter); with "
        "--skills-from, the name of the seed imported (default: the workspace's); "
        "without either: one starter skill file per task type of the benchmark",
    )
    p.add_argument("--questions", required=True, help="benchmark name (e.g. sim-basic)")
    p.add_argument(
        "--skills-from",
        type=Path,
        metavar="DIR",
        help="import a folder of Agent Skills (<name>/SKILL.md) as the seed first",
    )
    p.add_argument(
        "--prompts-from",
        default="sim-starter",
        metavar="SEED",
        help="with --skills-from: the seed whose prompts the import takes "
        "(unless DIR has prompts/system.md); without --seed: the starter's prompts",
    )
    p = add_command(
        sub,
        "report",
        "plain-text summary of a workspace (read-only; works while a run writes)",
        "report -w workspaces/demo",
        [o.verbose],
    )
    add_workspace_alias(p, required=True)
    p.add_argument("--json", action="store_true", help="the summary as JSON")
    p = add_command(
        sub,
        "tui",
        "browse workspaces in the terminal UI (read-only; works while a run writes)",
        "tui -w workspaces/demo",
        [o.verbose],
    )
    add_workspace_alias(p, required=False)


def _add_run_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "train",
        "train skills: epochs of gated edits, probation, held-out test",
        "train -w workspaces/mine --set epochs=2",
        [o.verbose, o.workspace, o.model, o.store, o.json],
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue from checkpoint.json")
    mode.add_argument(
        "--fresh", action="store_true", help="archive the workspace, restart from its seed"
    )
    mode.add_argument(
        "--dry-run",
        action="store_true",
        help="print what `estimate` prints and exit without training",
    )
    p.add_argument(
        "--holdout-task-types",
        metavar="A,B",
        help="task types never trained or prompt-evolved, only tested: the final test shows "
        "how much of the gain reaches them (same as --set holdout_task_types=[...])",
    )
    p = add_command(
        sub,
        "infer",
        "answer the benchmark with the current versions",
        "infer -w workspaces/mine --task-types dates --n-samples 3",
        [o.verbose, o.workspace, o.model, o.json],
    )
    p.add_argument("--task-types", nargs="+", metavar="TYPE", help="only these task types")
    p.add_argument("--n-samples", type=int, default=1, help="answer everything N times")
    p.add_argument(
        "--run-id",
        help="name the run (letters, digits, '_', '-', '.', ':', '+'); "
        "an existing run's id is refused",
    )
    p.add_argument(
        "--overwrite-run",
        action="store_true",
        help="replace an existing infer/eval run of that id (recorded in the new run's provenance)",
    )
    p = add_command(
        sub,
        "eval",
        "evaluate a skills version on the whole benchmark",
        "eval -w workspaces/mine v3",
        [o.verbose, o.workspace, o.model, o.json],
    )
    p.add_argument("version", help="skills version, e.g. v3")
    p.add_argument(
        "--tool-alias",
        action="append",
        metavar="OLD=NEW",
        help="show a built-in tool under a new name (repeatable), e.g. read_context=lookup: "
        "how much of a gain survives a changed tool interface",
    )
    p = add_command(
        sub,
        "diagnose",
        "diagnose a run's failures",
        "diagnose -w workspaces/mine baseline",
        [o.verbose, o.workspace, o.model, o.json],
    )
    p.add_argument("run_id", help="the run whose failures to diagnose (e.g. baseline, eval-1)")


def _add_skill_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "promote",
        "turn a version into a new seed in the store",
        "promote -w workspaces/mine v7 --eval-run eval-v7-v2-1 --name mine-v7",
        [o.verbose, o.workspace, o.store, o.json],
    )
    p.add_argument("version")
    p.add_argument("--eval-run", required=True, help="the eval run that justifies it")
    p.add_argument("--name", required=True, help="name of the new seed")
    p.add_argument(
        "--agent-skills",
        type=Path,
        metavar="OUT",
        help="also write the version as Agent Skills under OUT/.agents/skills/",
    )
    p = add_command(
        sub,
        "import-skills",
        "turn a folder of Agent Skills (<name>/SKILL.md) into a store seed",
        "import-skills examples/agent-skills/sim-vague --name my-skills",
        [o.verbose, o.store, o.json],
    )
    p.add_argument("skills_dir", type=Path)
    p.add_argument("--name", required=True, help="name of the new seed")
    p.add_argument(
        "--prompts-from",
        default="sim-starter",
        metavar="SEED",
        help="the seed whose prompts the import takes (unless the folder has prompts/system.md)",
    )
    p = add_command(
        sub,
        "export-skills",
        "write a skills version as Agent Skills: <out>/.agents/skills/<name>/SKILL.md",
        "export-skills -w workspaces/mine --out ~/my-agent",
        [o.verbose, o.workspace, o.store, o.json],
    )
    p.add_argument(
        "--version", default="best", help="skills version (vN) or 'best' (default: best)"
    )
    p.add_argument(
        "--out", type=Path, required=True, help="folder; skills go to OUT/.agents/skills/<name>/"
    )
    p.add_argument(
        "--eval-run",
        help="eval run whose accuracy goes into metadata (default: "
        "the latest finished eval of the version, else training's final test run)",
    )


def _add_serve_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "serve",
        "serve the workspace's agent at an OpenAI-compatible endpoint (docs/serving.md)",
        "serve -w workspaces/demo --port 8000",
        [o.verbose, o.workspace, o.model],
    )
    p.add_argument(
        "--version",
        help="best (default when recorded, else current), current, or a skills version vN",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    p.add_argument(
        "--token",
        help="bearer token clients must send; required beyond loopback "
        "(or set SKILL_TRAINER_SERVE_TOKEN)",
    )
    p.add_argument("--name", help="model name clients ask for (default: the workspace folder)")
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages from ORIGIN call the API from a browser (CORS; needs --token); "
        "null: a page opened from a file, such as report --html's",
    )
    report = sub.choices["report"]
    report.add_argument(
        "--savings",
        action="store_true",
        help="cost, latency and accuracy of a serve/eval/infer run against a baseline",
    )
    report.add_argument(
        "--run", metavar="ID", help="with --savings: the run (default: latest serve, eval, infer)"
    )
    report.add_argument(
        "--baseline-model", metavar="MODEL", help="with --savings: price the same tokens at MODEL"
    )
    report.add_argument(
        "--baseline-run", metavar="ID", help="with --savings: compare with another logged run"
    )


def _add_checker_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "judge-quality",
        "grade the rubric judge on labelled cases; training warns until one passes",
        "judge-quality -w workspaces/mine --cases judge_cases.jsonl",
        [o.verbose, o.workspace, o.model, o.json],
    )
    p.add_argument("--cases", type=Path, required=True, help="labelled cases (JSONL)")
    p.add_argument(
        "--pass-line", type=float, default=0.9, help="agreement a trustworthy judge reaches"
    )


def _add_tools_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "check-tools",
        "start a benchmark's declared tools once and check its fixtures' oracles",
        "check-tools examples/benchmarks/tools-calc",
        [o.verbose, o.json],
    )
    p.add_argument("questions", type=Path, help="the benchmark folder (with benchmark.toml)")


def _add_webreport_commands(sub: Any, o: Options) -> None:
    sub.choices["report"].add_argument(
        "--html",
        type=Path,
        metavar="OUT",
        help="write the report as one self-contained HTML page (charts, diffs, chat box)",
    )


def _add_fork_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "fork",
        "answer each selected question as N branches (best-of-N rollouts); pass@1 is the mean "
        "over questions of the share of branches right (as the Inspect export scores it), "
        "pass@N the share of questions with a branch right",
        "fork -w workspaces/mine --branches 8 --limit 20",
        [o.verbose, o.workspace, o.model, o.json],
    )
    p.add_argument("--branches", "-n", type=int, default=8, help="branches per question")
    p.add_argument("--temperatures", help="one temperature per branch, comma-separated")
    p.add_argument(
        "--temperature-range",
        metavar="LO:HI",
        help="branch temperatures evenly spaced from LO to HI",
    )
    p.add_argument(
        "--pool", default="diagnosis", help="diagnosis (default), validation, test or all"
    )
    p.add_argument("--task-types", nargs="+", metavar="TYPE", help="only these task types")
    p.add_argument("--questions", nargs="+", metavar="ID", help="only these question ids")
    p.add_argument(
        "--select",
        choices=["informative"],
        help="informative: only questions whose branches disagreed (0 < p-hat < 1) in the "
        "latest fork (docs/scorecard.md#loop-health)",
    )
    p.add_argument("--limit", type=int, help="at most this many questions")
    p.add_argument(
        "--concurrency",
        type=int,
        help="branches in flight over the whole fork (default: config concurrency)",
    )
    p.add_argument("--rollout-id", help="name the rollout (default fork-N)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="finish a killed fork of --rollout-id; finished branches are kept",
    )
    p = add_command(
        sub,
        "rank",
        "verify, judge and rank a fork's branches; remember verified winners",
        "rank -w workspaces/mine fork-1",
        [o.verbose, o.workspace, o.model, o.json],
    )
    p.add_argument("rollout_id", help="the fork to rank (e.g. fork-1)")
    p.add_argument(
        "--verifier",
        action="append",
        default=None,
        metavar="NAME",
        help="checker (default), completed, trajectory, or module:function (repeatable)",
    )
    p.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="KEY=W",
        help="reward weight: objective, judge, bt or module:function (repeatable)",
    )
    p.add_argument(
        "--judge-cap",
        type=int,
        help="judge calls per batch (one question's branches); default judge_max_calls_per_batch",
    )
    p.add_argument("--no-memory", action="store_true", help="do not store winners as memories")
    _add_curation_rank_options(p)
    p = add_command(
        sub,
        "export",
        "write DPO pairs, SFT examples and reward records of ranked forks as JSONL",
        "export -w workspaces/mine fork-1 --out exports/",
        [o.verbose, o.workspace, o.json],
    )
    p.add_argument(
        "rollout_ids",
        nargs="+",
        help="ranked forks to export (e.g. fork-1), or ingest runs (ingest-<hash>: traces by "
        "their feedback); with --format otlp or inspect, any fork or run id (e.g. infer-1, "
        "serve-1)",
    )
    p.add_argument("--out", type=Path, help="folder (default WS/exports/<first rollout>)")
    p.add_argument(
        "--overwrite", action="store_true", help="replace a previous export in the folder"
    )
    p.add_argument(
        "--include-test",
        action="store_true",
        help="also export questions of the test pool (left out by default)",
    )
    p.add_argument(
        "--format",
        choices=("jsonl", "otlp", "inspect"),
        default="jsonl",
        help="jsonl: DPO/SFT/reward files of ranked forks (default); otlp: runs and forks as "
        "OTLP JSON GenAI spans; inspect: an Inspect AI eval log per run",
    )
    p.add_argument(
        "--audited",
        type=Path,
        metavar="IDS_FILE",
        help="ids (ROLLOUT/QUESTION_ID/BRANCH or question ids, one a line) of branches passed "
        "by a rubric judge alone that a person checked: only these become training targets",
    )
    _add_curation_export_options(p)


def _add_format_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "validate-benchmark",
        "check that a benchmark can tell right from wrong (docs/benchmarks.md); writes nothing",
        "validate-benchmark sim-basic --json",
        [o.verbose, o.store, o.json],
    )
    p.add_argument("name", metavar="NAME", help="benchmark name in the store (e.g. sim-basic)")
    p.add_argument(
        "--seed",
        metavar="SEED",
        help="also check that SEED's skill files give each task type its own (as train needs)",
    )


def _add_curation_rank_options(p: Any) -> None:
    """`rank --cascade` (app/harness/data/curation.py)."""
    p.add_argument(
        "--cascade",
        action="store_true",
        help="verifiers cheapest first; a branch stops at its first non-pass",
    )
    p.add_argument(
        "--verifier-cost",
        action="append",
        default=[],
        metavar="NAME=SECONDS",
        help="declared mean cost of a verifier for --cascade (else measured; repeatable)",
    )


def _add_curation_export_options(p: Any) -> None:
    """Curated exports (app/harness/data/export_formats.py); `export verify DIR` checks one."""
    p.add_argument(
        "--mix",
        metavar="CLASS=SHARE,...",
        help="SFT class mix, e.g. pristine=0.65,recovery=0.25; shares are normalised to sum 1 "
        "over the classes named (here 72.2%%, 27.8%%); negatives: preference only",
    )
    p.add_argument(
        "--by", choices=("tokens", "count"), default="tokens", help="what --mix shares count"
    )
    p.add_argument("--mix-total", type=int, help="size of the mix (tokens or records)")
    p.add_argument("--seed", type=int, default=0, help="seed of the mix's down-sampling")
    p.add_argument(
        "--allow-copyleft",
        action="store_true",
        help="export from strong-copyleft sources (GPL, CC-BY-SA, ...)",
    )
    p.add_argument(
        "--allow-restricted",
        action="store_true",
        help="export from sources without a licence or with a proprietary one: data you own "
        "(recorded in the manifest)",
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    _refuse_an_unknown_command(parser, sys.argv[1:] if argv is None else argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's usage, not the top level's, and the option meant if it is close
        command = subparser(parser, args.command)
        command.error(
            f"unrecognized arguments: {' '.join(unknown)}{did_you_mean(command, unknown)}"
        )
    if hasattr(args, "workspace_positional"):
        given = [w for w in (args.workspace, args.workspace_positional) if w is not None]
        if len(given) == 2 and given[0] != given[1]:
            parser.error(f"{args.command}: two workspaces given ({given[0]} and {given[1]})")
        if not given and args.workspace_required:
            parser.error(f"{args.command}: give the workspace with -w DIR")
        args.workspace = given[0] if given else None
    _make_paths_absolute(args)
    return args


def _make_paths_absolute(args: argparse.Namespace) -> None:
    """Every path argument (-w, --out, --store, --config, --file, ...) made absolute here, once,
    so no code below depends on the directory it happens to run in (app/paths.py `absolute`)."""
    for name, value in vars(args).items():
        if isinstance(value, Path):
            setattr(args, name, absolute(value))
        elif isinstance(value, list) and value and all(isinstance(v, Path) for v in value):
            setattr(args, name, [absolute(v) for v in value])


def _refuse_an_unknown_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """argparse (before Python 3.14) lists every command for a typo; name the one meant."""
    typed = next((word for word in argv if not word.startswith("-")), None)
    commands = list(_subcommands(parser))
    if typed is None or typed in commands:
        return
    close = difflib.get_close_matches(typed, commands, n=1, cutoff=0.6)
    meant = f"; did you mean {close[0]}?" if close else f" (commands: {', '.join(commands)})"
    parser.error(f"unknown command {typed!r}{meant}")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    return parser


def did_you_mean(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """`; did you mean --xyz?` for the first unknown option close to one of `parser`'s, or
    to a config key when the command takes `--set` (`--epochs 2` for `--set epochs=2`)."""
    options = [o for o in parser._option_string_actions if o.startswith("--")]
    for word in (w.split("=", 1)[0] for w in unknown if w.startswith("-")):
        close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
        if close:
            return f"; did you mean {close[0]}?"
        if "--set" in options:
            from app.harness.workspace.config import RunConfig

            key = word.lstrip("-").replace("-", "_")
            keys = difflib.get_close_matches(key, list(RunConfig.model_fields), n=1, cutoff=0.8)
            if keys:
                return f"; did you mean --set {keys[0]}=VALUE?"
    return ""


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_console(args.verbose)
    STOP_SIGNAL.clear()
    with _signals_stop_the_command():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command, with every error it may end in turned into one line and an exit code."""
    try:
        try:
            return dispatch(args) or 0
        except BaseExceptionGroup as group:  # anyio task groups wrap what a task raised
            raise first_leaf(group) from None
    except (UserError, RunFailed) as e:
        logger.error("error: {}", e)
        return e.exit_code
    except ProviderError as e:
        logger.error("error: {}", e)
        return 1
    except sqlite3.Error as e:  # the log's own errors name their file; this is the fallback
        logger.error("error: SQLite: {}", e)
        return 1
    except BrokenPipeError:  # `report | head`: the reader left; nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as e:  # disk full, permissions: the writers leave the old state in place
        where = f"{e.filename}: " if e.filename else ""
        hint = "training continues from its last checkpoint with --resume"
        after = f" (fix the cause and rerun; {hint})" if args.command in ("train", "demo") else ""
        logger.error("error: {}{}{}", where, e.strerror or e, after)
        return 1
    except KeyboardInterrupt as e:
        logger.error("{}", stopped_message(args, stop_reason(e)))
        return 1


@contextlib.contextmanager
def _signals_stop_the_command() -> Iterator[None]:
    """SIGTERM stops the command like Ctrl-C; the process's signal state is restored after."""
    sigint = signal.getsignal(signal.SIGINT)
    previous = _stop_on_sigterm()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if sigint is signal.SIG_IGN:  # ignored again before unblocking: a pending Ctrl-C is dropped
            with contextlib.suppress(ValueError):
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


Handler = Callable[[int, FrameType | None], Any] | int | None


def _stop_on_sigterm() -> Handler:
    """SIGTERM stops a command the way Ctrl-C does: runs marked stopped, locks released."""
    sigint_ignored = _keep_sigint_ignored_but_raisable()

    def handler(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
        STOP_SIGNAL["reason"] = "SIGTERM"
        if sigint_ignored:
            _drop_pending_sigint()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            # inside an event loop: its own SIGINT handler cancels the main task and raises
            # KeyboardInterrupt once every task has unwound (raising here would leave a task
            # holding an exception nobody retrieves, and a traceback on stderr)
            signal.raise_signal(signal.SIGINT)
            return
        raise Stopped("SIGTERM")

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (an embedding): leave signals alone
        return signal.getsignal(signal.SIGTERM)


def _keep_sigint_ignored_but_raisable() -> bool:
    """A shell script's `cmd &` starts the command with SIGINT ignored, and then the event
    loop installs no SIGINT handler, so the SIGTERM handler's raise_signal(SIGINT) would do
    nothing and the run would go on. Give SIGINT its default handler (the loop then installs
    its own) but keep it blocked, so Ctrl-C at the terminal still does nothing; the SIGTERM
    handler unblocks it just before raising it. Returns whether SIGINT was ignored."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return False
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread (an embedding): leave signals alone
        return False
    return True


def _drop_pending_sigint() -> None:
    """A Ctrl-C that arrived while SIGINT was blocked waits to be delivered on unblocking;
    with the one the SIGTERM handler raises, the loop would see two interrupts, and its
    second raises KeyboardInterrupt inside whatever task runs (a traceback at exit).
    Setting SIGINT to SIG_IGN discards a pending one (POSIX); the handler is then put back."""
    if signal.SIGINT in signal.sigpending():
        current = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGINT, current)


def stopped_message(args: argparse.Namespace, reason: str) -> str:
    workspace = getattr(args, "workspace", None)
    if args.command not in ("train", "demo") or workspace is None:
        return f"stopped by {reason}; the run is marked stopped"
    if (Path(workspace) / "checkpoint.json").is_file():
        return (
            f"stopped by {reason}; the run is marked stopped and the checkpoint holds the "
            f"last finished step: continue with `train -w {workspace} --resume`"
        )
    return (
        f"stopped by {reason} before the first checkpoint: nothing to resume; "
        f"`train -w {workspace}` starts over"
    )


def _add_ingest_commands(sub: Any, o: Options) -> None:
    p = add_command(
        sub,
        "ingest",
        "read an observability export (OTLP, OpenInference/Phoenix, Langfuse, LangSmith, "
        "Inspect AI, chat-json) into the log; optionally write a benchmark from it",
        "ingest -w workspaces/mine --file traces.jsonl --to-benchmark prod --store workspaces/store",
        [o.verbose, o.workspace, o.store, o.json],
    )
    p.add_argument("--file", type=Path, required=True, help="the export file")
    p.add_argument(
        "--source",
        default="auto",
        choices=(
            "auto",
            "otlp",
            "openinference",
            "langfuse",
            "langsmith",
            "phoenix",
            "inspect",
            "chat-json",
        ),
        help="the export's format (default: detected from its records)",
    )
    p.add_argument(
        "--sample", type=float, default=1.0, metavar="RATE", help="keep this share of families"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of --sample")
    p.add_argument(
        "--to-benchmark", metavar="NAME", help="also write store benchmark NAME (needs --store)"
    )
    p.add_argument(
        "--reference",
        default="feedback",
        choices=("feedback", "final"),
        help="reference answers from feedback only (default), or also each final answer",
    )
    p.add_argument(
        "--task-type", default="ingested", help="the benchmark's task type (default ingested)"
    )
    p.add_argument(
        "--license",
        metavar="EXPR",
        help="the traces' SPDX licence expression, e.g. MIT (kept with the run and written into "
        "--to-benchmark's benchmark.toml; export refuses traces without one unless "
        "--allow-restricted)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


# The module of each command not handled by app/commands.py; only that module is imported.
COMMAND_MODULES = {
    "fork": "app.fork_commands",
    "rank": "app.fork_commands",
    "export": "app.fork_commands",
    "validate-benchmark": "app.validate_commands",
    "serve": "app.serve_commands",
    "judge-quality": "app.checker_commands",
    "estimate": "app.offline_commands",
    "ingest": "app.ingest_commands",
    "check-tools": "app.tools_commands",
    "scorecard": "app.scorecard_commands",
    "distill": "app.distill_commands",
    "list": "app.list_commands",
}


def dispatch(args: argparse.Namespace) -> int:
    # imported here, not at the top, and only the module the command needs: `--help`,
    # `--version` and a refused API key stay fast
    import importlib

    if getattr(args, "dry_run", False):  # `train --dry-run` is `estimate`
        from app import offline_commands

        return offline_commands.HANDLERS["estimate"](args)
    if args.command == "report" and args.html is not None:
        from app import webreport_commands

        return webreport_commands.HANDLERS["report-html"](args)
    if args.command == "report" and (args.savings or args.baseline_model or args.baseline_run):
        from app import serve_commands

        return serve_commands.cmd_savings(args)
    module = importlib.import_module(COMMAND_MODULES.get(args.command, "app.commands"))
    handlers: dict[str, Callable[[argparse.Namespace], int]] = module.HANDLERS
    return handlers[args.command](args)


def entry() -> int:
    """The CLI in a fresh process (called by app.launch.run, the process entry point).

    sqlite-utils imports pandas when it is installed (dev extras pull it in), which costs
    about 1.5 s of start-up that no command here needs. Only a fresh process may do this.
    """
    for name in ("pandas", "numpy"):
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    return main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
