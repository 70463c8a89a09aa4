"""A new user's walk-through, from the section "Your own benchmark, start to finish" of
docs/own-data.md alone (the page the README's "Your own data in five commands" links): the
section's shell blocks run in order in an empty folder, as written (files written by heredocs,
the section's own script that writes the benchmark, then validate-benchmark, init, estimate,
train on sim/oracle and report through the CLI), each step's output checked. A step of the
page that does not work as written fails here, and so does a task type that does not train:
every task type of the section's benchmark must reach the gate and get an edit accepted."""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

from app.cli import main

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "own-data.md"
SECTION = "## Your own benchmark, start to finish"
PREFIX = ".venv/bin/python main.py "
HEREDOC = re.compile(r"^(cat > (\S+)|\.venv/bin/python -) <<'(\w+)'$")


def page_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:] if end == -1 else text[start:end]


def test_the_readme_sends_a_new_user_to_the_walk_through() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/own-data.md)" in readme
    assert "tests/app/cli/test_new_user_walkthrough.py" in page_section()


def sh_steps(section: str) -> list[tuple[str, object]]:
    """The section's `sh` blocks as steps: ("mkdir", path), ("write", (path, text)),
    ("python", code) and ("main", argv). Any other line fails: the test must know it."""
    steps: list[tuple[str, object]] = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].split("  #", 1)[0].strip()
            i += 1
            heredoc = HEREDOC.match(line)
            if heredoc:
                end = lines.index(heredoc.group(3), i)
                body = "\n".join(lines[i:end]) + "\n"
                i = end + 1
                if heredoc.group(2):
                    steps.append(("write", (heredoc.group(2), body)))
                else:
                    steps.append(("python", body))
            elif line.startswith("mkdir -p "):
                steps.append(("mkdir", line.removeprefix("mkdir -p ")))
            elif line.startswith(PREFIX):
                steps.append(("main", shlex.split(line[len(PREFIX) :])))
            else:
                assert not line, f"a step the walk-through does not know: {line!r}"
    return steps


def run(argv: list[str], capsys) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, f"{' '.join(argv)} exited {code}: {captured.err[-2000:]}"
    return captured.out + captured.err


def test_a_new_user_follows_the_page_from_benchmark_to_report(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)  # the user's folder: workspaces/mychecks.py imports from here
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    seen: dict[str, str] = {}
    for kind, arg in sh_steps(page_section()):
        if kind == "mkdir":
            Path(str(arg)).mkdir(parents=True, exist_ok=True)
        elif kind == "write":
            path, body = arg  # type: ignore[misc]
            Path(path).write_text(body, encoding="utf-8")
        elif kind == "python":
            subprocess.run([sys.executable, "-"], input=str(arg), text=True, check=True)
        else:
            argv = list(arg)  # type: ignore[call-overload]
            if argv[0] in ("estimate", "train"):  # the page's config as written
                argv = [*argv, "--no-progress"]
            seen[" ".join(argv[: 3 if argv[1] == "-w" else 2])] = run(argv, capsys)

    validated = seen["validate-benchmark mine"]
    assert "0 error(s), 0 warning(s)" in validated and "120 questions, 2 task types" in validated
    assert "skills_not_checked" in validated  # no seed: said, not silently passed
    initialised = seen["init -w workspaces/mine"]
    assert "starter skills refunds.md, replies.md" in initialised
    estimated = seen["estimate -w workspaces/mine"]
    assert re.search(r"total +calls \d+ \(range \d+-\d+\)", estimated)
    assert "warning:" not in estimated
    trained = seen["train -w workspaces/mine"]
    assert "sim/oracle" in trained and "not training task type" not in trained
    first, final = map(float, re.findall(r"baseline ([\d.]+) -> final ([\d.]+)", trained)[0])
    assert final >= first + 0.2, trained[-600:]  # it learns
    assert "estimate vs actual for train1" in seen["report -w workspaces/mine"]

    ws = tmp_path / "workspaces" / "mine"
    manifest = json.loads((ws / "manifest.json").read_text(encoding="utf-8"))
    best = ws / manifest["best"]["skills"]
    for task_type in ("refunds", "replies"):  # every task type trained: its own file edited
        start = (ws / "skills" / "v1" / f"{task_type}.md").read_text(encoding="utf-8")
        assert (best / f"{task_type}.md").read_text(encoding="utf-8") != start, task_type
    con = sqlite3.connect(ws / "harness.db")
    statuses = dict(
        con.execute("SELECT check_status, COUNT(*) FROM predictions GROUP BY check_status")
    )
    assert statuses.get("ok", 0) > 0 and statuses.get("check_error", 0) == 0, statuses
    gated = {t for (t,) in con.execute("SELECT DISTINCT task_type FROM gate_evidence")}
    assert {"refunds", "replies"} <= gated
    assert con.execute("SELECT COUNT(*) FROM llm_calls WHERE role = 'judge'").fetchone()[0] > 0
