"""Facts the README and docs state that the code decides: every command of the CLI has a row
in the README's command table, `distill`'s exit codes are the ones core/distill.py returns,
and the pass threshold docs/checkers.md gives is the one a benchmark row gets."""

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
from core.checkers import pass_threshold
from core.distill import EXIT_CODES, Verdict

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


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


def test_every_cli_command_has_a_row_in_the_readme_command_table() -> None:
    commands = cli_commands()
    assert set(COMMANDS) == commands
    listed = command_table_commands(README)
    assert commands - listed == set(), "commands missing from the README's command table"
    assert listed - commands - {"command"} == set(), "rows naming no command"


def test_the_readme_names_every_command_that_takes_json() -> None:
    text = " ".join(README.split())
    sentence = re.search(
        r"Every command but ((?:`[a-z-]+`(?:, | and ))*`[a-z-]+`) takes `--json`", text
    )
    assert sentence, "the Commands section says which commands take --json"
    named = set(re.findall(r"`([a-z-]+)`", sentence.group(1)))
    lacking = {n for n, p in subcommands().items() if "--json" not in p._option_string_actions}
    assert named == lacking


def test_the_readme_states_distills_exit_codes() -> None:
    text = " ".join(README.split())
    assert EXIT_CODES[Verdict.DISTILL] == 0
    for verdict in (Verdict.NOT_WORTH_IT, Verdict.INSUFFICIENT_EVIDENCE):
        code = EXIT_CODES[verdict]
        assert f"{code} (`{verdict.value}`" in text, "the exit codes paragraph of Commands"
        assert f"{code} `{verdict.value}`" in text, "distill's row of the command table"


def test_docs_give_the_pass_threshold_a_benchmark_row_gets() -> None:
    row = {"question_id": "q", "task_type": "t", "question": "?", "answer": "a"}
    custom = row_to_question({**row, "checker": "mychecks:ok"}, CheckerDefaults(), "q.jsonl:1")
    assert pass_threshold(custom) == DEFAULT_PASS_THRESHOLD
    checkers = (ROOT / "docs" / "checkers.md").read_text(encoding="utf-8")
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert f"(default {DEFAULT_PASS_THRESHOLD}, the benchmark's" in checkers
    assert f"`[checker] pass_threshold` ({DEFAULT_PASS_THRESHOLD})" in benchmarks
