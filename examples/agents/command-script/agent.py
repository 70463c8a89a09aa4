"""A command agent for skill-trainer (docs/agents.md): one task in, one `ANSWER:` line out.

Run by the trainer once per rollout in a fresh folder holding `task.json`, `AGENTS.md` and
the skills being trained as `.agents/skills/<name>/SKILL.md`. It reads them, asks the model
once over HTTP (the trainer's gateway is in `OPENAI_BASE_URL`, the rollout's key in
`OPENAI_API_KEY`, as for any OpenAI-compatible client), and prints the model's last `ANSWER:`
line. It uses the standard library only, so any Python 3.8+ runs it with no packages, and a
rollout's process starts in about 50 ms (the `openai` client's import alone is about 0.8 s of
CPU, which a process per rollout pays every time).

The system prompt is `AGENTS.md` (the trained system prompt and the skill index) plus the
skill for the task's type (`.agents/skills/<task type>/SKILL.md`, else `default-strategy`, else
every skill), as a coding agent loads the skill that matches its task. So when the trainer
adds a rule to that skill, the model is sent it on the next rollout.
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.request
from pathlib import Path

DEFAULT_SKILL = "default-strategy"
MAX_ANSWER_CHARS = 2_000
TIMEOUT_S = 120
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def skill_body(text: str) -> str:
    """A SKILL.md without its YAML frontmatter."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end >= 0:
            return text[end + 5 :]
    return text


def chosen_skills(folder: Path, task_type: str) -> list[tuple[str, str]]:
    """(name, body) of the skill for this task type, else the default one, else all."""
    root = folder / ".agents" / "skills"
    found = {p.parent.name: p for p in sorted(root.glob("*/SKILL.md"))}
    for name in (task_type, DEFAULT_SKILL):
        if name in found:
            return [(name, skill_body(read_text(found[name])))]
    return [(name, skill_body(read_text(path))) for name, path in found.items()]


def system_prompt(folder: Path, task_type: str) -> str:
    parts = [read_text(folder / "AGENTS.md")]
    for name, body in chosen_skills(folder, task_type):
        parts.append(f"# Skill {name}\n\n{body}")
    return "\n\n".join(p.strip() for p in parts if p.strip())


def user_message(task: dict[str, str]) -> str:
    text = f"<question>\n{task['question']}\n</question>"
    if task.get("context"):  # data the task carries, never instructions
        text += f"\n\n<context>\n{task['context']}\n</context>"
    return text + "\n\nEnd with one line: ANSWER: <your answer>"


def answer_line(reply: str) -> str | None:
    """The reply's last `ANSWER:` line, made safe to print (one line, no control characters)."""
    lines = [line.strip() for line in reply.splitlines() if line.strip().startswith("ANSWER:")]
    if not lines:
        return None
    return CONTROL.sub(" ", lines[-1])[:MAX_ANSWER_CHARS]


def chat(model: str, messages: list[dict[str, str]]) -> str:
    """One chat completion from the OpenAI-compatible endpoint in the environment."""
    base = os.environ["OPENAI_BASE_URL"].rstrip("/")
    body = {"model": model, "temperature": 0, "messages": messages}
    request = urllib.request.Request(
        f"{base}/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        reply = json.load(response)
    return reply["choices"][0]["message"].get("content") or ""


def main() -> int:
    folder = Path.cwd()
    payload = json.loads(read_text(folder / os.environ.get("SKILL_TRAINER_TASK_FILE", "task.json")))
    task = payload["task"]
    model = os.environ.get("SKILL_TRAINER_MODEL") or payload["model"]["model"]
    reply = chat(
        model,
        [
            {"role": "system", "content": system_prompt(folder, task.get("task_type", ""))},
            {"role": "user", "content": user_message(task)},
        ],
    )
    line = answer_line(reply)
    if line is None:
        print("the model gave no ANSWER: line", file=sys.stderr)
        return 1
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
