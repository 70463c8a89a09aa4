"""Facts the docs state that the code decides: every command of the CLI has a row in the command
table of docs/cli.md (the README links the pages instead of keeping a table), `distill`'s exit
codes are the ones core/distill.py returns, the gate's one-sentence guarantee in
docs/training.md states the level the gate's parameters set, the README's real-model config
loads, and the pass threshold docs/checkers.md gives is the one a benchmark row gets."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from markdown_it import MarkdownIt

from app.cli import COMMANDS, build_parser
from app.harness.workspace.benchmark_format import (
    DEFAULT_PASS_THRESHOLD,
    CheckerDefaults,
    row_to_question,
)
from app.harness.workspace.config import load_config
from core.checkers import pass_threshold
from core.distill import EXIT_CODES, Verdict
from core.evolution.gate import GateParams

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI_PAGE = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    actions = build_parser()._subparsers._group_actions  # type: ignore[union-attr]
    sub = next(a for a in actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def cli_commands() -> set[str]:
    return set(subcommands())


def command_table_commands(markdown: str) -> set[str]:
    """The first word of each code span in the first column of the table headed `command`."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    found: set[str] = set()
    in_table = first_cell = False
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            header = tokens[i + 3]  # table_open thead_open tr_open th_open inline
            in_table = tokens[i + 4].content == "command" if header.type == "th_open" else False
        elif token.type == "table_close":
            in_table = False
        elif in_table and token.type == "tr_open":
            first_cell = True
        elif in_table and token.type == "inline" and first_cell:
            first_cell = False
            spans = [c.content for c in token.children or () if c.type == "code_inline"]
            found |= {span.split()[0] for span in spans}
    return found


def test_every_cli_command_has_a_row_in_the_command_table() -> None:
    commands = cli_commands()
    assert set(COMMANDS) == commands
    listed = command_table_commands(CLI_PAGE)
    assert commands - listed == set(), "commands missing from docs/cli.md's command table"
    assert listed - commands - {"command"} == set(), "rows naming no command"


def test_the_readme_links_the_command_pages_and_keeps_no_table() -> None:
    assert command_table_commands(README) == set(), "the command table lives in docs/cli.md"
    assert "](docs/commands.md)" in README and "](docs/cli.md)" in README


def test_the_cli_page_names_every_command_that_takes_json() -> None:
    text = " ".join(CLI_PAGE.split())
    sentence = re.search(
        r"Every command but ((?:`[a-z-]+`(?:, | and ))*`[a-z-]+`) takes `--json`", text
    )
    assert sentence, "docs/cli.md says which commands take --json"
    named = set(re.findall(r"`([a-z-]+)`", sentence.group(1)))
    lacking = {n for n, p in subcommands().items() if "--json" not in p._option_string_actions}
    assert named == lacking


def test_the_docs_state_distills_exit_codes() -> None:
    text = " ".join(CLI_PAGE.split())
    distill = " ".join((ROOT / "docs" / "distill.md").read_text(encoding="utf-8").split())
    assert EXIT_CODES[Verdict.DISTILL] == 0
    assert "exit 0 `distill`" in distill
    for verdict in (Verdict.NOT_WORTH_IT, Verdict.INSUFFICIENT_EVIDENCE):
        code = EXIT_CODES[verdict]
        assert f"{code} (`{verdict.value}`" in text, "the exit codes paragraph of docs/cli.md"
        assert f"{code} `{verdict.value}`" in text, "distill's row of the command table"
        assert f"{code} `{verdict.value}`" in distill, "docs/distill.md's example"


def test_the_gate_page_states_the_gates_level() -> None:
    """The one-sentence guarantee is the gate's null: its level is 1/e_confirm."""
    page = " ".join((ROOT / "docs" / "training.md").read_text(encoding="utf-8").split())
    sentence = re.search(r"\*\*One sentence\.\*\* (.*?)\n?\*\*What it counts", page)
    assert sentence, "docs/training.md keeps the gate's one-sentence guarantee"
    level = f"{100 / GateParams().e_confirm:g}%"
    assert (
        "If the questions an edit is tested on are independent of each other and the edit raises"
        f" the expected accuracy of none of them, the gate accepts it with probability at most {level}"
        in sentence.group(1)
    )
    assert "](docs/training.md)" in README, "the README links the gate's page"


def test_the_readmes_real_model_config_loads(tmp_path: Path) -> None:
    """The README's config block for a real model is a config `train --config` takes."""
    block = re.search(r"```toml\n(.*?)```", README, flags=re.DOTALL)
    assert block, "the README shows how to point at a real model"
    path = tmp_path / "real.toml"
    path.write_text(block.group(1), encoding="utf-8")
    config = load_config(path)
    assert not config.agent_model.startswith("sim/") and config.max_cost_usd is not None


def test_docs_give_the_pass_threshold_a_benchmark_row_gets() -> None:
    row = {"question_id": "q", "task_type": "t", "question": "?", "answer": "a"}
    custom = row_to_question({**row, "checker": "mychecks:ok"}, CheckerDefaults(), "q.jsonl:1")
    assert pass_threshold(custom) == DEFAULT_PASS_THRESHOLD
    checkers = (ROOT / "docs" / "checkers.md").read_text(encoding="utf-8")
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert f"(default {DEFAULT_PASS_THRESHOLD}, the benchmark's" in checkers
    assert f"`[checker] pass_threshold` ({DEFAULT_PASS_THRESHOLD})" in benchmarks
