"""A new user's walk-through, from the README's "Bring your own benchmark" section alone: a
benchmark of their own with a custom checker and a rubric question, in the format the section
shows; then the section's own commands, read from the README, run one after the other through
the CLI (validate-benchmark, estimate, init, train on sim/oracle, report), each step's output
checked. A step of the README that does not work as written fails here."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from app.cli import main

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Bring your own benchmark"
PREFIX = ".venv/bin/python main.py "


def readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return text[start:end]


def fenced(section: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section, re.S)


def readme_commands(section: str) -> list[list[str]]:
    """The `main.py` command lines of the section's walk-through block (the one that writes
    the offline config), in order."""
    commands = []
    for block in fenced(section, "sh"):
        if "oracle.toml" not in block:
            continue
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith(PREFIX):
                commands.append(shlex.split(line[len(PREFIX) :]))
    return commands


def readme_heredocs(section: str) -> dict[str, str]:
    """Files the section writes with `cat > PATH <<'EOF'` ... `EOF`."""
    found = re.findall(r"cat > (\S+) <<'(\w+)'\n(.*?)\n\2\n", section, re.S)
    return {path: body + "\n" for path, _, body in found}


def readme_row(section: str, checker: str) -> dict:
    """The section's example row with this kind of checker (a `module:function` for "custom")."""
    for block in fenced(section, "json"):
        for line in block.splitlines():
            row = json.loads(line)
            kind = row.get("checker", "exact")
            if kind == checker or (checker == "custom" and ":" in kind):
                return row
    raise AssertionError(f"the README section shows no {checker} row")


def write_benchmark(store: Path, name: str, section: str) -> None:
    """A benchmark in the README's format: its custom-checker row and its rubric row, varied
    into families (two questions each), and its benchmark.toml."""
    custom, rubric = readme_row(section, "custom"), readme_row(section, "rubric")
    rows = []
    for i in range(14):
        for j in range(2):
            n = 2 * i + j
            rows.append(
                {
                    **custom,
                    "question_id": f"refund-{n:02d}",
                    "question": f"A customer paid {12 * (n + 2)} EUR for {n + 2} mugs of one "
                    "price and returned one. How many EUR are refunded?",
                    "answer": "12",
                    "family": f"refund-f{i}",
                }
            )
    for i in range(3):  # too few families on purpose: validate and estimate both say so
        item = ("mug", "plate", "bowl")[i]
        rows.append(
            {
                **rubric,
                "question_id": f"reply-{i:02d}",
                "question": rubric["question"].replace("mug", item),
                "answer": rubric["answer"].replace("mug", item),
                "family": f"reply-f{i}",
            }
        )
    bench = store / "questions" / name
    bench.mkdir(parents=True)
    (bench / "questions.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    toml = next(b for b in fenced(section, "toml") if "format_version" in b)
    toml = re.sub(r'(?m)^name = "[^"]*"', f'name = "{name}"', toml)
    (bench / "benchmark.toml").write_text(toml, encoding="utf-8")


def run(argv: list[str], capsys) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, f"{' '.join(argv)} exited {code}: {captured.err[-2000:]}"
    return captured.out + captured.err


def test_a_new_user_follows_the_readme_from_benchmark_to_report(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    section = readme_section()
    monkeypatch.chdir(tmp_path)  # the user's folder: their checker module is importable here
    for path, body in readme_heredocs(section).items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(body, encoding="utf-8")
    checker = next(b for b in fenced(section, "python") if "def " in b)
    module = re.search(r"#\s*(\S+\.py)", checker)
    assert module, "the README's checker block names its file"
    Path(module.group(1)).parent.mkdir(parents=True, exist_ok=True)
    Path(module.group(1)).write_text(checker, encoding="utf-8")
    pythonpath = re.search(r"export PYTHONPATH=(\S+)", section)  # where the README puts it
    monkeypatch.syspath_prepend(str(tmp_path / pythonpath.group(1)) if pythonpath else ".")
    store = re.search(r"--store (\S+)", " ".join(" ".join(c) for c in readme_commands(section)))
    assert store, "the walk-through names its store"
    write_benchmark(tmp_path / store.group(1), "mine", section)

    commands = readme_commands(section)
    names = [c[0] for c in commands]
    assert names == ["validate-benchmark", "init", "estimate", "train", "report"], names
    seen: dict[str, str] = {}
    for argv in commands:
        if argv[0] in ("estimate", "train"):  # fast settings, the same for both
            argv = [*argv, "--no-progress", "--set", "epochs=1"]
        seen[argv[0]] = run(argv, capsys)

    validated = seen["validate-benchmark"]
    assert "0 error(s)" in validated and "31 questions, 2 task types" in validated
    too_small = [line for line in validated.splitlines() if "pools_too_small" in line]
    assert too_small and "'replies'" in too_small[0]
    message = too_small[0].split("pools_too_small: ", 1)[1]
    assert "created workspace" in seen["init"].lower() or "workspaces/mine" in seen["init"]
    estimated = seen["estimate"]
    assert re.search(r"total +calls \d+ \(range \d+-\d+\)", estimated)
    assert f"warning: {message}" in estimated  # one check, the same words
    assert "sim/oracle" in seen["train"]  # every output says it is the offline model
    report = seen["report"]
    assert "estimate vs actual for train1" in report
    # the custom checker and the judge both ran: predictions carry their scores
    import sqlite3

    con = sqlite3.connect(tmp_path / "workspaces" / "mine" / "harness.db")
    rows = con.execute(
        "SELECT p.check_status, COUNT(*) FROM predictions p GROUP BY p.check_status"
    ).fetchall()
    statuses = dict(rows)
    assert statuses.get("ok", 0) > 0 and statuses.get("check_error", 0) == 0, statuses
    judged = con.execute("SELECT COUNT(*) FROM llm_calls WHERE role = 'judge'").fetchone()[0]
    assert judged > 0
