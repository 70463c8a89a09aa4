"""The README's shell blocks, and those of the docs pages its sections moved to, run as written,
in order, in a fresh checkout (a copy of the files git tracks, with this checkout's `.venv`
linked in): each block, run by bash with `-e -o pipefail`, must exit 0, so no example writes into
the checkout, collides with another's workspace or names a run that does not exist. The pages
run in the order of PAGES, the order the README once held their sections in, since later
examples use what earlier ones made (the demo's workspace, a fork's rollouts).

To stay cheap, the test changes the blocks in these ways only, and nothing else:

- `train` and `demo` commands get `--set epochs=1 --no-progress` appended (the last `--set` of
  a key wins), and so does `distill`, which trains its student; `make demo` runs the
  Makefile's own recipe (read with `make -n`) the same way; `make test` is only checked with
  `make -n` (it is the suite this test belongs to);
- `serve` runs in the background on a free port (every `8000` of the block becomes that port)
  and gets SIGTERM once the block's other lines ran; it must then exit 0;
- `tui` lines are left out: the terminal UI waits for keys (tests/tui drive it);
- the blocks of SKIPPED_SECTIONS are left out, each for its stated reason.

That run costs several minutes of CPU, too much for the suite's budget, so it runs only when
asked: `SKILL_TRAINER_README_BLOCKS=1 .venv/bin/python -m pytest tests/test_readme_blocks.py`.
Every run checks the cheap part: each command line of those pages parses with the CLI's own
parser, no two examples create the same workspace, and every path a command names is under
`workspaces/` or in the repository.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from app.cli import parse_args

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ".venv/bin/python"
MAIN = f"{PYTHON} main.py "
FAST = " --set epochs=1 --no-progress"
TRAINING = ("train", "demo", "distill")
BLOCK_TIMEOUT_S = 300
# The README first, then the pages that hold the examples it once held, in its old order.
PAGES = (
    "README.md",
    "docs/getting-started.md",
    "docs/agent-skills.md",
    "docs/own-data.md",
    "docs/tui.md",
    "docs/best-of-n.md",
    "docs/serving.md",
    "docs/distill.md",
    "docs/traces-export.md",
    "docs/curation.md",
    "docs/scorecard.md",
    "docs/checkers.md",
    "docs/offline.md",
    "docs/ingest.md",
    "docs/tools.md",
    "docs/tools-world.md",
    "docs/real-models.md",
    "docs/real-learning.md",
)
SKIPPED_SECTIONS = {
    ("docs/real-models.md", "A local OpenAI-compatible server (tested recipe)"): "needs the "
    "network and a 30-minute build of llama-cpp-python (`make real-model` runs it)",
    ("docs/ingest.md", "Trace ingest"): "the command's synopsis (`skill-trainer ingest -w WS "
    "...`), not an example",
}


@dataclass(frozen=True)
class Block:
    section: str
    line: int  # of the opening fence in its page
    text: str
    page: str = "README.md"

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def shell_blocks(markdown: str, page: str = "README.md") -> list[Block]:
    blocks = []
    section = ""
    tokens = MarkdownIt("commonmark").parse(markdown)
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            section = tokens[i + 1].content
        elif token.type == "fence" and token.info.strip() == "sh" and token.map:
            blocks.append(Block(section, token.map[0] + 1, token.content, page))
    return blocks


def page_blocks(root: Path = ROOT) -> list[Block]:
    """The shell blocks of every page of PAGES, in order."""
    return [
        block
        for page in PAGES
        for block in shell_blocks((root / page).read_text(encoding="utf-8"), page)
    ]


def logical_lines(text: str) -> list[str]:
    """Lines with their `\\` continuations joined and trailing `  # comments` cut."""
    joined = re.sub(r"[ \t]*\\\n\s*", " ", text)
    return [line.split("  #", 1)[0].rstrip() for line in joined.splitlines()]


def makefile_recipe(checkout: Path, target: str) -> list[str]:
    """What `make TARGET` runs, without running it (setup is assumed done: .venv is linked).
    `--no-print-directory`: under `make test` (CI) a nested make would print directory lines."""
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "--assume-old=.venv/.installed", target],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def command_of(line: str) -> str:
    rest = line[len(MAIN) :].split() if line.startswith(MAIN) else []
    return rest[0] if rest else ""


def script(block: Block, checkout: Path, port: int) -> str:
    """The block as a bash script, changed only as the module docstring says."""
    out = ["set -e -o pipefail"]
    serving = False
    for line in logical_lines(block.text.replace("8000", str(port))):
        if line.startswith("make test"):
            makefile_recipe(checkout, "test")
            continue
        if line.startswith("make demo"):
            (line,) = makefile_recipe(checkout, "demo")
        command = command_of(line)
        if command == "tui":
            continue
        if command in TRAINING:
            line += FAST
        if command == "serve":  # stopped on any exit, so a failed block leaves no server
            out += [
                f"{line} & SERVE_PID=$!",
                "trap 'kill -TERM $SERVE_PID 2>/dev/null || true' EXIT",
                f"{PYTHON} -c {shlex.quote(wait_for_port(port))}",
            ]
            serving = True
            continue
        out.append(line)
    if serving:
        out.append("kill -TERM $SERVE_PID; wait $SERVE_PID")
    return "\n".join(out) + "\n"


def wait_for_port(port: int) -> str:
    """Python that waits for the server's /healthz (or gives up after 60 s)."""
    return (
        "import time, urllib.request\n"
        "deadline = time.monotonic() + 60\n"
        "while True:\n"
        "    try:\n"
        f"        urllib.request.urlopen('http://127.0.0.1:{port}/healthz', timeout=1); break\n"
        "    except OSError:\n"
        "        if time.monotonic() > deadline: raise SystemExit('serve: no /healthz in 60 s')\n"
        "        time.sleep(0.1)\n"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_block(text: str, checkout: Path, env: dict[str, str]) -> tuple[int, str]:
    """bash runs the block in its own process group, killed whole if it overruns."""
    proc = subprocess.Popen(
        ["bash", "-c", text],
        cwd=checkout,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return -1, f"killed after {BLOCK_TIMEOUT_S} s\n{output[-6000:]}"
    return proc.returncode, output[-6000:]


def fresh_checkout(into: Path) -> Path:
    """The files git tracks, as they are in this working tree, plus a link to its .venv."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a file deleted in the working tree is still listed
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name, follow_symlinks=False)
    (into / ".venv").symlink_to((ROOT / ".venv").resolve())
    return into


def child_env(checkout: Path) -> dict[str, str]:
    """A plain environment: no API keys or workspace folder of the caller's."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return {**env, "PYTHONPATH": str(checkout), "NO_COLOR": "1"}


def test_blocks_parse_from_the_pages() -> None:
    blocks = page_blocks()
    sections = {(b.page, b.section) for b in blocks}
    assert set(SKIPPED_SECTIONS) <= sections, "a skip names a section no page has"
    assert len(blocks) > 10 and blocks[0].text.startswith("make demo")
    assert all(b.page == "README.md" for b in blocks[:2]), "the README's own blocks come first"
    moved = {page for page in PAGES if f"]({page})" in (ROOT / "README.md").read_text("utf-8")}
    assert moved == set(PAGES) - {"README.md"}, "the README links every page whose blocks run"


def test_the_script_changes_only_what_the_docstring_says(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("demo:\n\t.venv/bin/python main.py demo\n")
    text = (
        "make demo   # the demo\n"
        ".venv/bin/python main.py train -w w --set epochs=8 \\\n    --set x=1\n"
        ".venv/bin/python main.py tui -w w\n"
        ".venv/bin/python main.py serve -w w --port 8000     # stops on SIGTERM\n"
        "curl -s http://127.0.0.1:8000/v1/models\n"
    )
    whole = script(Block("s", 1, text), tmp_path, 1234)
    lines = whole.splitlines()
    assert lines[:3] == [
        "set -e -o pipefail",
        ".venv/bin/python main.py demo" + FAST,
        ".venv/bin/python main.py train -w w --set epochs=8 --set x=1" + FAST,
    ]
    assert lines[3] == ".venv/bin/python main.py serve -w w --port 1234 & SERVE_PID=$!"
    assert lines[4] == "trap 'kill -TERM $SERVE_PID 2>/dev/null || true' EXIT"
    assert lines[5].startswith(".venv/bin/python -c ") and "1234/healthz" in whole
    assert "main.py tui" not in whole
    assert lines[-2:] == [
        "curl -s http://127.0.0.1:1234/v1/models",
        "kill -TERM $SERVE_PID; wait $SERVE_PID",
    ]


def readme_command_lines(blocks: list[Block]) -> Iterator[tuple[Block, list[str]]]:
    """Each `main.py` line of the shell blocks as its arguments, `$VAR`s of the block's own
    `VAR="..."` lines expanded."""
    for block in blocks:
        variables: dict[str, str] = {}
        for line in logical_lines(block.text):
            assignment = re.fullmatch(r'(\w+)="([^"]*)"', line)
            if assignment:
                variables[assignment[1]] = assignment[2]
            elif line.startswith(MAIN):
                for name, value in variables.items():
                    line = line.replace(f"${name}", value)
                yield block, shlex.split(line[len(MAIN) :])


def path_problems(argv: list[str]) -> list[str]:
    """What a README command writes goes under workspaces/; what it reads is there or in the
    repository (a folder the reader would have to make in the checkout is neither)."""
    args = parse_args(argv)
    problems = []
    for key, value in vars(args).items():
        for path in value if isinstance(value, list) else [value]:
            if not isinstance(path, Path):
                continue
            if path.is_absolute() and path.is_relative_to(ROOT):  # parse_args made it absolute
                path = path.relative_to(ROOT)
            inside = path.as_posix().startswith("workspaces/")
            if key in ("workspace", "out", "html") and not inside:
                problems.append(f"--{key} {path} writes outside workspaces/")
            elif not inside and not (ROOT / path).exists():
                problems.append(f"{path} is neither under workspaces/ nor in the repository")
    return problems


def test_every_readme_command_parses_and_keeps_to_workspaces(capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # the pages' commands run from the checkout
    problems: list[str] = []
    created: dict[str, str] = {}
    for block, argv in readme_command_lines(page_blocks()):
        where = f"{block.where} `{' '.join(argv)[:80]}`"
        try:
            problems += [f"{where}: {p}" for p in path_problems(argv)]
        except SystemExit:
            problems.append(f"{where}: {capsys.readouterr().err.strip().splitlines()[-1]}")
            continue
        if argv[0] in ("init", "demo"):
            parsed = parse_args(argv).workspace
            workspace = str(parsed.relative_to(ROOT) if parsed else "workspaces/demo")
            if workspace in created:
                problems.append(f"{where}: {workspace} is created at {created[workspace]}")
            created[workspace] = block.where
    assert len(created) > 8, "the examples create their workspaces"
    assert problems == [], "\n".join(problems)


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("SKILL_TRAINER_README_BLOCKS"),
    reason="minutes of CPU: set SKILL_TRAINER_README_BLOCKS=1 to run the pages' blocks",
)
def test_the_readme_shell_blocks_run_in_order_in_a_fresh_checkout(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to copy the tracked files from")
    checkout = fresh_checkout(tmp_path / "checkout")
    env = child_env(checkout)
    timings = []
    for block in page_blocks(checkout):
        if (block.page, block.section) in SKIPPED_SECTIONS:
            continue
        started = time.monotonic()
        code, output = run_block(script(block, checkout, free_port()), checkout, env)
        timings.append(f"{time.monotonic() - started:5.1f}s {block.where}")
        assert code == 0, f"{block.where} ({block.section}) exited {code}:\n{output}"
    print("\n".join(timings))
    assert untracked_files(checkout) == [], "the pages' commands wrote outside workspaces/"


def untracked_files(checkout: Path) -> list[str]:
    """Files in the checkout that git does not track, outside .venv, workspaces/ and caches."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    tracked = set(listed.stdout.splitlines())
    found = []
    for folder, dirs, files in os.walk(checkout):
        dirs[:] = [d for d in dirs if d not in {".venv", "workspaces", "__pycache__"}]
        for name in files:
            path = (Path(folder) / name).relative_to(checkout).as_posix()
            if path not in tracked:
                found.append(path)
    return sorted(found)
