"""Microsoft SkillOpt's own trainer against this project's trainer, at equal paid model calls.

A benchmark, not a test: it prints figures. SkillOpt (PyPI `skillopt` 0.2.0, a bench extra) is
the closest public design: epochs, batches, an edit-budget schedule, a rejected-edit buffer, a
slow update at epoch ends and a strict-improvement validation gate. Its own loop,
`skillopt.engine.trainer.ReflACTTrainer.train`, runs unchanged; this file gives it an
environment adapter over the simulated world and answers its optimizer model's requests.

For every world seed W (sim world W, U units per task type) it runs, in fresh workspaces:

- `trainer` / `trainer_full`: `main.py train --config app/demo.toml` (the demo's settings, the
  default e-process gate) with `evolve_prompts=false` (skill files only) / as it is (also the
  system prompt and the tool descriptions), through bench/acceptance.py `train_one`;
- `skillopt` / `skillopt_full`: `ReflACTTrainer.train` with SkillOpt's documented defaults
  (SKILLOPT_DEFAULTS below, from `configs/_base_/default.yaml` at its v0.2.0 tag: 4 epochs,
  batch 40, reflection minibatches of 8, edit budget 4 decaying to 2 on a cosine schedule,
  patch updates, the step buffer of rejected edits, the slow update every epoch and the
  meta skill on, the `hard` strict-improvement gate on the whole validation split);
  `skillopt` holds the skill files, `skillopt_full` also the system prompt and the offered
  tools' descriptions;
- `ceiling`: bench/acceptance.py `write_oracle_seed` (the world's rules written where training
  can put them: each task type's skill, the system prompt, the read_context description),
  answered on the test pool once;
- the null evolver (`sim_useless_share = 1`, `sim_harmful_share = 0`: every skill edit the
  simulated evolver proposes is one of app/providers/sim/evolver.py `USELESS_LINES`, which
  change nothing the world rewards), skills only: once through the trainer (its gate's null
  tally, bench/acceptance.py `null_edit_tally`) and once through SkillOpt's loop; at the
  world's default answer noise (0.03), and (not with --tiny) again at bench/acceptance.py's
  `noisy0.3` (`..._noisy0.3` RESULT names), where a null candidate and its baseline disagree
  by chance on about a fifth of the units.

Same world, splits and models for all: SkillOpt's workspace is opened with the configuration
the trainer's train run recorded (bench/gepa_compare.py `trainer_config`), and its splits are
the trainer's pools (bench/gepa_compare.py `trainer_pools`): train = the diagnosis pool,
val = the validation pool, test = the test pool, as question units (a unit is right only when
every member is). SkillOpt's items are units; its `hard` score is the unit's correctness.

The adapter (`SimEnv`, SkillOpt's `EnvAdapter`, with `SimSplits`, its `SplitDataLoader` with
the splits given rather than read from disk, so its own epoch planning and batch sampling run):
- SkillOpt optimizes ONE skill document. Ours is the components' texts in order, each under a
  line `<!-- FILE: name -->` (the skill files the trained task types read,
  core/evolution/budget.py `resolve_skill_file`; for `_full` also `prompts/system.md` and
  `prompts/tool_<name>.md`). The agent reads it split back: each question sees its own skill
  file's section (as the trainer's agent does) plus SkillOpt's protected regions (its slow
  update guidance, which it appends to the document's end) appended to every skill file, and
  the system and tool sections as its system prompt and tool descriptions.
- `rollout`: the agent loop of bench/gepa_compare.py `SkillAdapter` (app/harness/rollouts/
  inference.py `answer_question`) on the document's texts; a result per unit (`hard` 1 when
  every member passes its checker, `soft` the share that passes), and for train-phase batches
  a `conversation.json` per unit (the questions, the answers, the checker's verdict with the
  reference answer), which SkillOpt's reflection and slow update read.

The translation: `skillopt.model.azure_openai.chat_optimizer` (the optimizer endpoint SkillOpt's
default `openai_chat` backend calls) is replaced, for the run only, by `Translator.chat`, which
answers each stage itself, so SkillOpt's prompt text never reaches a model. The prompt files
its stages load are placeholders written at run time (`PLACEHOLDER`; the 0.2.0 wheel ships
none, and nothing from SkillOpt's prompt files is in this repository). Per stage:
- `analyst` on failed trajectories: the unit ids are read from the request; the failures are
  grouped by the component they read; for each group, largest first, ONE simulated evolver
  request, the trainer's own (prompts/evolve_skill.md through core/evolution/evolve.py, as
  bench/gepa_compare.py `SkillAdapter._evolve` sends it, with the case pack built from those
  failures, the analyst's budget L); for `_full` also one prompts/evolve_system.md request and
  one prompts/evolve_tool.md request per tool, with all the minibatch's failures. Each
  component's change, as a line diff, becomes SkillOpt edits, one per line: an added line is
  `insert_after` the component's FILE line, a removed line is `delete`. The reply lists the
  skill files' edits first (the file with most failures first), then the prompt files';
  SkillOpt truncates to the first L itself;
- `analyst` on successful trajectories: no edits, answered without a model (the simulated
  evolver proposes nothing from a pack without failures: evolver.py `evolve_skill`);
- `merge`: the patches' edits, identical ones (op, target, content) merged with their support
  summed, most supported first; `ranking`: the `max_edits` most supported, first-proposed
  first on a tie. Both without a model (the simulated evolver has no such task);
- `slow_update`: ONE simulated evolver request, the trainer's momentum prompt
  (prompts/momentum.md, the trainer's own epoch-end comparison of the previous and current
  skill on the same sample) with the previous and current documents and SkillOpt's
  comparison samples; its guidance (core/evolution/evolve.py `momentum_guidance`) is the
  `slow_update_content`. SkillOpt force-accepts it (its default);
- `meta_skill`: no content (the translation ignores optimizer-side memory, nothing reads it).

Model calls, the same unit for every arm: one request a method sends to a model. For the
trainer: every row of its `llm_calls` with `cache_hit = 0` (agent, judge, evolver), leaving out
its test measurements (the `holdout` and final `test` runs, and the test-pool questions of its
`baseline` run, counted from that run's model turns). For SkillOpt: the agent's paid rows of its
train, validation and slow-update rollouts, plus ONE call per optimizer request of SkillOpt's
(every stage above, whether or not the translation asked the simulated evolver: a real
SkillOpt pays one model call per request); the simulated evolver's own rows, several per
analyst request when the failures read several files, are not counted (shown as
`evolver requests`). Both sides run behind a fresh response cache per workspace, so an
identical request is free for both.

Curves: for budgets N in BUDGETS that an arm's run reaches, `final_test@N` is the test-pool
accuracy of that arm's candidate when its count first reached N: SkillOpt's `best_skill`
(its val-best so far, what it returns) at that moment; the trainer's current versions at that
moment (the skills and prompts its gate had accepted; the trainer's own best-by-validation
choice is made at epoch ends). SkillOpt is stopped once it reaches max(BUDGETS) (its last
curve point), before its own final tests. RESULT values are means over the world seeds that
reached N (a RESULT only when all did); `# ` lines give each seed's value and a Wilson 95%
interval over that seed's test units, and a pooled one over all seeds' test units. The
trainer's runs end by themselves (at 72 units below 3000 calls), so each trainer arm also
prints `final_test_at_end`: its own final test (its best version by validation) at its
`model_calls`.

Null-accept rates: the gate decisions on null candidates over those taken. SkillOpt: every
step whose candidate the gate judged and to which at least one edit applied (with the null
evolver every such candidate adds only useless lines; the force-accepted slow update is not a
gate decision and is not counted). The trainer: bench/acceptance.py `null_edit_tally`.

    .venv/bin/python bench/skillopt_compare.py [--seeds 1 2 3 4 5] [--units 72 216]
        [--budgets 150 300 1000 3000] [--parts skills full null null_noisy0.3] [--jobs 2]
        [--timeout 900] [--keep] [--tiny]

`--tiny`: world seed 1, 72 units, the trainer runs one epoch, budget 300 only, no noisy0.3
null run: it shows the bench runs end to end (about 30 s), its figures measure nothing. The
full grid (5 worlds x 2 sizes x 4 tasks) took 32 min on the shared 2-core machine (load 15). Without the `skillopt` package (the
project's `bench` extra) the bench exits 2. Figures come from the simulated model.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import hashlib
import io
import json
import math
import re
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's app/ and bench/

import anyio  # noqa: E402

from bench import acceptance  # noqa: E402
from bench.acceptance import (  # noqa: E402
    SEED_NAME,
    Job,
    fmt,
    generate_world,
    mean,
    run_child,
    tail,
    train_one,
    write_oracle_seed,
)
from bench.gepa_compare import (  # noqa: E402
    PROMPT_PREFIX,
    SkillAdapter,
    case_pack,
    evolve_templates,
    init_workspace,
    reflective_records,
    seed_candidate,
    skill_components,
    trainer_config,
    trainer_pools,
)

EXTRA_NAME = "bench"
BUDGETS = (150, 300, 1000, 3000)
TINY_BUDGETS = (300,)
DEFAULT_UNITS = (72, 216)
TINY_UNITS = 72
# bench/acceptance.py SETTINGS this bench adds: the null evolver at the world's default answer
# noise (0.03) and at acceptance.py's noisy0.3, where a null candidate and its baseline disagree
# by chance on about a fifth of the units (full mode only)
NULL_SETTINGS = {
    "null": {"harmful": 0.0, "useless": 1.0},
    "null_noisy0.3": {"harmful": 0.0, "useless": 1.0, "noise": 0.3},
}
for _name, _shares in NULL_SETTINGS.items():
    acceptance.SETTINGS.setdefault(_name, _shares)
SKILLS_ONLY = ("evolve_prompts=false",)
OPT_RUN = "skillopt-opt"  # SkillOpt's train, validation and slow-update rollouts
EVOLVER_RUN = "skillopt-evolver"  # the simulated evolver's answers to its optimizer requests
TEST_RUN = "skillopt-test"  # test-pool measurements (not counted)
FILE_LINE = "<!-- FILE: {} -->"
FILE_RE = re.compile(r"^<!-- FILE: (.+?) -->$", re.M)

# SkillOpt 0.2.0's documented defaults: configs/_base_/default.yaml at the v0.2.0 tag of
# github.com/microsoft/SkillOpt (its per-benchmark configs change only data and model keys).
# `sel_env_num` / `test_env_num` 0 = the whole split; the gate metric is the code's default
# `hard` (configs/features/soft_gate.yaml: "not a default SkillOpt setting").
SKILLOPT_DEFAULTS: dict[str, Any] = {
    "num_epochs": 4,
    "batch_size": 40,
    "accumulation": 1,
    "seed": 42,
    "minibatch_size": 8,
    "merge_batch_size": 8,
    "analyst_workers": 16,
    "max_analyst_rounds": 3,
    "failure_only": False,
    "edit_budget": 4,
    "min_edit_budget": 2,
    "lr_scheduler": "cosine",
    "lr_control_mode": "fixed",
    "skill_update_mode": "patch",
    "use_slow_update": True,
    "slow_update_samples": 20,
    "slow_update_gate_with_selection": False,
    "longitudinal_pair_policy": "mixed",
    "use_meta_skill": True,
    "use_skill_aware_reflection": False,
    "skill_aware_appendix_source": "both",
    "skill_aware_consolidate_threshold": 0,
    "use_gate": True,
    "sel_env_num": 0,
    "test_env_num": 0,
    "eval_test": True,
    "reasoning_effort": "medium",
    "rewrite_reasoning_effort": "",
    "rewrite_max_completion_tokens": 64000,
    "model_backend": "azure_openai",
    "optimizer_backend": "openai_chat",
    "target_backend": "openai_chat",
}
# every prompt file SkillOpt 0.2.0's stages load by name (skillopt/prompts/*.md in its repository)
PLACEHOLDER_NAMES = (
    "analyst_error",
    "analyst_success",
    "analyst_error_rewrite",
    "analyst_success_rewrite",
    "analyst_error_full_rewrite",
    "analyst_success_full_rewrite",
    "merge_failure",
    "merge_success",
    "merge_final",
    "merge_failure_rewrite",
    "merge_success_rewrite",
    "merge_final_rewrite",
    "merge_failure_full_rewrite",
    "merge_success_full_rewrite",
    "merge_final_full_rewrite",
    "ranking",
    "ranking_rewrite",
    "rewrite_skill",
    "slow_update",
    "meta_skill",
    "lr_autonomous",
)


def placeholder_text(name: str) -> str:
    return (
        f"PLACEHOLDER stage={name}\n"
        "Written by bench/skillopt_compare.py. This request is answered by its translation "
        "layer over the project's simulated evolver; no model reads this text.\n"
    )


def write_placeholders(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in PLACEHOLDER_NAMES:
        (folder / f"{name}.md").write_text(placeholder_text(name), encoding="utf-8")
    return folder


# -- the one document ------------------------------------------------------------------------
def join_document(texts: Mapping[str, str]) -> str:
    return "\n\n".join(f"{FILE_LINE.format(n)}\n{t.rstrip()}" for n, t in texts.items()) + "\n"


def protected_regions() -> tuple[tuple[str, str], ...]:
    from skillopt.optimizer.skill import _PROTECTED_REGIONS

    return tuple(_PROTECTED_REGIONS)


def split_document(doc: str) -> dict[str, str]:
    """Component texts of a document: each FILE section, SkillOpt's protected regions (slow
    update guidance, appendix) taken out and appended to every skill file's text."""
    shared = []
    for start, end in protected_regions():
        while (i := doc.find(start)) != -1 and (j := doc.find(end, i)) != -1:
            shared.append(doc[i : j + len(end)].strip())
            doc = doc[:i] + doc[j + len(end) :]
    parts = FILE_RE.split(doc)
    texts = {}
    for name, text in zip(parts[1::2], parts[2::2], strict=True):
        body = text.strip("\n") + "\n"
        if shared and not name.startswith(PROMPT_PREFIX):
            body += "\n" + "\n".join(shared) + "\n"
        texts[name] = body
    return texts


def section(doc: str, name: str) -> str:
    """A component's own text in the document (no shared regions)."""
    for start, end in protected_regions():
        while (i := doc.find(start)) != -1 and (j := doc.find(end, i)) != -1:
            doc = doc[:i] + doc[j + len(end) :]
    parts = FILE_RE.split(doc)
    return dict(zip(parts[1::2], parts[2::2], strict=True)).get(name, "").strip("\n") + "\n"


def line_edits(name: str, old: str, new: str) -> list[dict[str, str]]:
    """A component's change as SkillOpt edits, one per changed line (an edit budget counts
    rules, as the trainer's does): each added line `insert_after` the component's FILE line,
    each removed line `delete`d."""
    a, b = old.splitlines(), new.splitlines()
    edits: list[dict[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            edits += [{"op": "delete", "target": ln} for ln in a[i1:i2] if ln.strip()]
        if op in ("insert", "replace"):
            target = FILE_LINE.format(name)
            edits += [
                {"op": "insert_after", "target": target, "content": ln}
                for ln in b[j1:j2]
                if ln.strip()
            ]
    return edits


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# -- the bridge: rollouts, the translation, the count ------------------------------------------
class CapReached(Exception):
    """SkillOpt reached the last budget: stop its loop (every curve point is taken)."""


class Bridge:
    """Runs the simulated agent for SkillOpt's rollouts, answers its optimizer requests, and
    counts its model calls."""

    def __init__(
        self,
        session: Any,
        components: Mapping[str, Sequence[str]],
        units: Mapping[str, Any],  # unit_id -> QuestionUnit
        budgets: Sequence[int],
        out_root: Path,
        init_doc: str,
    ) -> None:
        from app.paths import read_prompt

        self.session = session
        self.components = {k: list(v) for k, v in components.items()}
        self.units = dict(units)
        self.gepa = SkillAdapter(session, self.components, evolve_templates(), 4)
        self.momentum_template = read_prompt("momentum.md")
        self.budgets = sorted(budgets)
        self.out_root = out_root
        self.init_doc = init_doc
        self.lock = threading.Lock()
        self.rollouts: dict[tuple[str, str], Any] = {}  # (doc digest, unit id) -> UnitRollout
        self.agent_calls = 0  # paid agent rows of train/val/slow rollouts
        self.optimizer_requests: dict[str, int] = {}  # per stage
        self.evolver_requests = 0  # simulated evolver requests the translation made
        self.evolver_paid = 0
        self.snapshots: dict[int, str] = {}  # budget -> best skill document at that moment
        self.stop = False

    # the count
    @property
    def spent(self) -> int:
        return self.agent_calls + sum(self.optimizer_requests.values())

    def paid_now(self) -> int:
        t = self.session.recorder.totals
        return int(t["calls"] - t["cache_hits"])

    def best_now(self) -> str:
        path = self.out_root / "best_skill.md"
        return path.read_text(encoding="utf-8") if path.is_file() else self.init_doc

    def after(self, best_before: str) -> None:
        for n in self.budgets:
            if n not in self.snapshots and self.spent >= n:
                self.snapshots[n] = best_before
        if len(self.snapshots) == len(self.budgets):
            self.stop = True

    # rollouts
    def rollout(self, units: list[Any], doc: str, run_id: str) -> list[Any]:
        self.gepa.run_id = run_id
        return anyio.run(self.gepa._rollouts, units, split_document(doc))

    def skillopt_rollout(self, env: Any, doc: str, out_dir: str) -> list[dict]:
        if self.stop:
            raise CapReached
        units = [self.units[str(item["id"])] for item in env]
        test = getattr(env, "split", "") == "valid_unseen"
        with self.lock:
            best = self.best_now()
            before = self.paid_now()
            rollouts = self.rollout(units, doc, TEST_RUN if test else OPT_RUN)
            if not test:
                self.agent_calls += self.paid_now() - before
                self.after(best)
        key = digest(doc)
        results = []
        for r in rollouts:
            self.rollouts[(key, r.unit.unit_id)] = r
            results.append(result_row(r))
            if getattr(env, "phase", "") == "train":
                write_conversation(Path(out_dir), r)
        return results

    # the optimizer endpoint
    def chat(self, system: str, user: str, *args: Any, stage: str = "optimizer", **kw: Any):
        name = re.search(r"PLACEHOLDER stage=(\w+)", system)
        kind = name.group(1) if name else stage
        with self.lock:
            best = self.best_now()
            self.optimizer_requests[kind] = self.optimizer_requests.get(kind, 0) + 1
            before = self.paid_now()
            try:
                reply = self.answer(kind, user)
            finally:
                self.evolver_paid += self.paid_now() - before
                self.after(best)
        return json.dumps(reply), {"prompt_tokens": 0, "completion_tokens": 0}

    def answer(self, kind: str, user: str) -> dict[str, Any]:
        if kind.startswith("analyst_error"):
            return self.analyst(user)
        if kind.startswith("analyst_success"):
            return {"reasoning": "no failures: the simulated evolver proposes none", "patch": {}}
        if kind.startswith("merge"):
            return merge_answer(user)
        if kind.startswith("ranking"):
            return ranking_answer(user)
        if kind == "slow_update":
            return self.slow_update(user)
        if kind == "meta_skill":
            return {"reasoning": "optimizer memory is not translated", "meta_skill_content": ""}
        return {}

    def analyst(self, user: str) -> dict[str, Any]:
        from core.evolution.budget import resolve_skill_file

        rest = user.split("## Current Skill\n", 1)[-1]
        doc = re.split(r"\n\n## \w+ Budget\n", rest, maxsplit=1)[0]
        budget = int(m.group(1)) if (m := re.search(r"Produce at most L=(\d+)", user)) else 4
        key = digest(doc)
        ids = re.findall(r"^### Trajectory \d+ \(id=(.+?)\)$", user, flags=re.M)
        failed = [self.rollouts[(key, i)] for i in ids if (key, i) in self.rollouts]
        skills = {n: "" for n in self.components if not n.startswith(PROMPT_PREFIX)}
        groups: dict[str, list[Any]] = {}
        for r in failed:
            groups.setdefault(resolve_skill_file(r.unit.task_type, skills), []).append(r)
        order = sorted(groups, key=lambda n: (-len(groups[n]), n))
        order += [n for n in self.components if n.startswith(PROMPT_PREFIX)]
        edits: list[dict[str, str]] = []
        for name in order:
            rollouts = groups.get(name, failed)
            types = self.components[name]
            pack = case_pack(name, reflective_records(rollouts, types), self.gepa.answers)
            if pack is None:
                continue
            text = section(doc, name)
            self.gepa.budget = budget
            self.gepa.run_id = EVOLVER_RUN
            self.evolver_requests += 1
            record = anyio.run(self.gepa._evolve, name, text, pack)
            if record.changed:
                edits += line_edits(name, text, record.evolved)
        reasoning = f"simulated evolver over {len(failed)} failure(s) in {len(groups)} file(s)"
        return {"reasoning": reasoning, "patch": {"reasoning": reasoning, "edits": edits}}

    def slow_update(self, user: str) -> dict[str, Any]:
        from string import Template

        from app.harness.rollouts.telemetry import calls_logged_as
        from core.evolution.evolve import momentum_guidance

        previous = between(user, "## Previous Epoch's Skill\n", "\n\n## Current Epoch's Skill\n")
        current = between(user, "## Current Epoch's Skill\n", "\n\n## Previous Slow Update")
        lines = []
        pattern = r"^#### Task (\S+?): .*?\n- Prev epoch: (PASS|FAIL).*?\n- Curr epoch: (PASS|FAIL)"
        for uid, prev, cur in re.findall(pattern, user, flags=re.M):
            if uid not in self.units:
                continue
            for q in self.units[uid].questions:
                was = "right" if prev == "PASS" else "wrong"
                now = "right" if cur == "PASS" else "wrong"
                lines.append(f"- {q.question} | previous: {was}, current: {now}")
        prompt = Template(self.momentum_template).safe_substitute(
            task_type="every trained task type (one skill document)",
            previous=previous,
            current=current,
            samples="\n".join(lines),
        )

        async def ask() -> Any:
            with calls_logged_as(EVOLVER_RUN):
                return await self.session.providers["evolver"].complete(
                    [{"role": "user", "content": prompt}], role="evolver"
                )

        self.evolver_requests += 1
        guidance = momentum_guidance(anyio.run(ask).text) or ""
        return {"reasoning": "the trainer's momentum guidance", "slow_update_content": guidance}


def between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i)
    return text[i : j if j >= 0 else len(text)]


def merge_answer(user: str) -> dict[str, Any]:
    """Identical edits merged (support summed); most supported first, then by their place in
    their patch (an analyst lists its most supported file first), then by text: the order
    SkillOpt's analysts finish in (threads) never matters."""
    header = max(user.find("## Patches to merge"), user.find("## Two pre-merged"))
    start = user.find("\n[", header)
    patches, _ = json.JSONDecoder().raw_decode(user, start + 1)
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    place: dict[tuple[str, str, str], int] = {}
    for patch in patches:
        for i, e in enumerate(patch.get("edits") or []):
            key = (str(e.get("op")), str(e.get("target", "")), str(e.get("content", "")).strip())
            place[key] = min(place.get(key, i), i)
            if key in merged:
                merged[key]["support_count"] += int(e.get("support_count") or 1)
            else:
                merged[key] = {**e, "support_count": int(e.get("support_count") or 1)}
    order = sorted(merged, key=lambda k: (-merged[k]["support_count"], place[k], k))
    return {"reasoning": f"{len(order)} distinct edit(s)", "edits": [merged[k] for k in order]}


def ranking_answer(user: str) -> dict[str, Any]:
    budget = int(m.group(1)) if (m := re.search(r"budget=(\d+)\)", user)) else 1
    pool = re.findall(r"^\[(\d+)\] (.*)$", user, flags=re.M)
    support = {
        int(i): int(m.group(1)) if (m := re.search(r"support=(\d+)", line)) else 1
        for i, line in pool
    }
    chosen = sorted(support, key=lambda i: (-support[i], i))[:budget]
    return {"reasoning": "most supported first", "selected_indices": chosen}


def result_row(r: Any) -> dict[str, Any]:
    preds = r.predictions
    wrong = [
        f"expected {q.answer}, said {p.prediction or '(no answer)'}"
        for q, p in zip(r.unit.questions, preds, strict=True)
        if not p.correct
    ]
    return {
        "id": r.unit.unit_id,
        "hard": int(r.correct),
        "soft": sum(p.correct for p in preds) / max(1, len(preds)),
        "task_type": r.unit.task_type,
        "task_description": " / ".join(q.question for q in r.unit.questions),
        "question": " / ".join(q.question for q in r.unit.questions),
        "predicted_answer": " / ".join(p.prediction or "" for p in preds),
        "fail_reason": "" if r.correct else "wrong: " + "; ".join(wrong),
        "n_turns": len(preds),
    }


def write_conversation(out_dir: Path, r: Any) -> None:
    conv = []
    for q, p in zip(r.unit.questions, r.predictions, strict=True):
        verdict = "correct" if p.correct else f"wrong: the expected answer is {q.answer}"
        conv += [
            {"role": "user", "content": q.question},
            {"role": "assistant", "content": p.prediction or "(no answer)"},
            {"role": "system", "content": f"checker: {verdict}"},
        ]
    folder = out_dir / "predictions" / r.unit.unit_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conversation.json").write_text(json.dumps(conv), encoding="utf-8")


def make_adapter(bridge: Bridge, splits: Mapping[str, list[dict]], task_types: Sequence[str]):
    """SkillOpt's EnvAdapter and SplitDataLoader over the bridge (classes built here: the
    module imports without `skillopt`)."""
    from skillopt.datasets.base import BatchSpec, SplitDataLoader
    from skillopt.envs.base import EnvAdapter

    class Items(list):
        def __init__(self, items: list, split: str, phase: str) -> None:
            super().__init__(items)
            self.split, self.phase = split, phase

    class SimSplits(SplitDataLoader):
        def setup(self, cfg: dict) -> None:  # the trainer's pools, not a split folder
            self._splits = {k: list(v) for k, v in splits.items()}

    class SimEnv(EnvAdapter):
        def __init__(
            self,
            analyst_workers: int = 16,
            failure_only: bool = False,
            minibatch_size: int = 8,
            edit_budget: int = 4,
            seed: int = 42,
        ) -> None:
            self.analyst_workers = analyst_workers
            self.failure_only = failure_only
            self.minibatch_size = minibatch_size
            self.edit_budget = edit_budget
            self.dataloader = SimSplits(split_mode="split_dir", seed=seed)

        def setup(self, cfg: dict) -> None:
            super().setup(cfg)
            self.dataloader.setup(cfg)

        def get_dataloader(self) -> Any:
            return self.dataloader

        def build_env_from_batch(self, batch: BatchSpec, **kwargs: Any) -> Any:
            return Items(list(batch.payload or []), batch.split, batch.phase)

        def build_train_env(self, batch_size: int, seed: int, **kwargs: Any) -> Any:
            batch = self.dataloader.build_train_batch(batch_size=batch_size, seed=seed)
            return self.build_env_from_batch(batch)

        def build_eval_env(self, env_num: int, split: str, seed: int, **kwargs: Any) -> Any:
            batch = self.dataloader.build_eval_batch(env_num=env_num, split=split, seed=seed)
            return self.build_env_from_batch(batch)

        def rollout(self, env_manager: Any, skill_content: str, out_dir: str, **kw: Any):
            return bridge.skillopt_rollout(env_manager, skill_content, out_dir)

        def get_task_types(self) -> list[str]:
            return list(task_types)

    cfg = SKILLOPT_DEFAULTS
    return SimEnv(
        cfg["analyst_workers"],
        cfg["failure_only"],
        cfg["minibatch_size"],
        cfg["edit_budget"],
        cfg["seed"],
    )


def unit_item(unit: Any) -> dict[str, Any]:
    return {
        "id": unit.unit_id,
        "task_type": unit.task_type,
        "question": " / ".join(q.question for q in unit.questions),
    }


@contextlib.contextmanager
def translated(bridge: Bridge, prompts_dir: Path):
    """SkillOpt's optimizer endpoint and prompt folder, for this run only."""
    import skillopt.prompts as sp
    from skillopt.model import azure_openai

    saved = (azure_openai.chat_optimizer, sp._PROMPTS_DIR)
    azure_openai.chat_optimizer = bridge.chat
    sp._PROMPTS_DIR = str(prompts_dir)
    sp.clear_cache()
    try:
        yield
    finally:
        azure_openai.chat_optimizer, sp._PROMPTS_DIR = saved
        sp.clear_cache()


# -- one SkillOpt run ------------------------------------------------------------------------
@dataclass
class Arm:
    """One arm's run on one world: its curve and counts."""

    ok: bool
    curve: dict[int, float] = field(default_factory=dict)  # budget -> test accuracy
    test_units: int = 0
    calls: int = 0  # its count at the end (or where it was stopped)
    seconds: float = math.nan
    note: str = ""
    error: str = ""
    null_tested: int = 0
    null_accepted: int = 0
    final: float = math.nan  # the trainer's own final test (analyses/final_test_eval.json)


def run_skillopt(
    ws: Path, trainer_ws: Path, budgets: Sequence[int], with_prompts: bool, null: bool = False
) -> Arm:
    from skillopt.engine.trainer import ReflACTTrainer

    from app.harness.rollouts.question_units import build_units
    from app.harness.rollouts.session import Session

    start = time.perf_counter()
    config = trainer_config(trainer_ws)
    out_root = ws / "skillopt-out"
    log = io.StringIO()
    with Session(ws, config) as session:
        pools, task_types = trainer_pools(session)
        seed = seed_candidate(session, pools, task_types, with_prompts)
        components = skill_components(task_types, session.agent_prompts().skills)
        components.update({k: sorted(task_types) for k in seed if k.startswith(PROMPT_PREFIX)})
        texts = {n: seed[n] for n in components}
        doc = join_document(texts)
        splits = {
            "train": build_units(pools.diagnosis),
            "val": build_units(pools.validation),
            "test": build_units(pools.test),
        }
        units = {u.unit_id: u for us in splits.values() for u in us}
        bridge = Bridge(session, components, units, budgets, out_root, doc)
        adapter = make_adapter(
            bridge, {k: [unit_item(u) for u in v] for k, v in splits.items()}, task_types
        )
        out_root.mkdir(parents=True)
        (ws / "skill_init.md").write_text(doc, encoding="utf-8")
        cfg = {
            **SKILLOPT_DEFAULTS,
            "env": "skill_trainer_sim",
            "skill_init": str(ws / "skill_init.md"),
            "out_root": str(out_root),
            "optimizer_model": config.evolver_model,
            "target_model": config.agent_model,
            "train_size": len(splits["train"]),
        }
        stopped = "ran to its end"
        with translated(bridge, write_placeholders(ws / "placeholder-prompts")):
            try:
                with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                    ReflACTTrainer(cfg, adapter).train()
            except CapReached:
                stopped = f"stopped at {bridge.spent} calls (last budget reached)"
            except Exception as e:
                raise RuntimeError(f"{type(e).__name__}: {e}\n{tail(log.getvalue())}") from e
        if bridge.stop is False:  # ran out before the last budget: its end is its last point
            for n in budgets:
                if n not in bridge.snapshots and bridge.spent >= n:
                    bridge.snapshots[n] = bridge.best_now()
        spent = bridge.spent
        curve = {}
        for n, best in sorted(bridge.snapshots.items()):
            rollouts = bridge.rollout(splits["test"], best, TEST_RUN)
            curve[n] = sum(r.correct for r in rollouts) / max(1, len(rollouts))
        session.recorder.flush()
        path = out_root / "history.json"
        history = json.loads(path.read_text("utf-8")) if path.is_file() else []
    tested = [
        h
        for h in history
        if h.get("action") in ("accept", "accept_new_best", "reject")
        and (h.get("edit_apply_summary") or {}).get("applied", 0) > 0
    ]
    accepts = sum(h["action"] != "reject" for h in tested)
    requests = ", ".join(f"{k} {v}" for k, v in sorted(bridge.optimizer_requests.items()))
    note = (
        f"{len(history)} steps ({sum('accept' in h.get('action', '') for h in history)} "
        f"accepted); {stopped}; agent calls {bridge.agent_calls}, optimizer requests "
        f"{sum(bridge.optimizer_requests.values())} ({requests}); evolver requests "
        f"{bridge.evolver_requests} ({bridge.evolver_paid} paid, not counted)"
    )
    return Arm(
        True,
        curve,
        len(splits["test"]),
        spent,
        time.perf_counter() - start,
        note,
        null_tested=len(tested) if null else 0,
        null_accepted=accepts if null else 0,
    )


# -- the trainer's curve and the ceiling -------------------------------------------------------
CLEAN = re.compile(r"v\d+")


def trainer_curve(ws: Path, budgets: Sequence[int]) -> Arm:
    """The trainer's count over its log and, at each budget it reached, its current versions
    answered on the test pool."""
    from app.harness.rollouts.session import Session

    config = trainer_config(ws)
    conn = sqlite3.connect(f"file:{ws / 'harness.db'}?mode=ro", uri=True)
    try:
        runs = {
            r: (k, s or "", p or "")
            for r, k, s, p in conn.execute(
                "SELECT run_id, kind, skills_version, prompts_version FROM _runs"
            )
        }
        rows = conn.execute(
            "SELECT id, run_id, COALESCE(cache_hit, 0) FROM llm_calls ORDER BY id"
        ).fetchall()
        baseline_rows = [i for i, r, _ in rows if r == "baseline"]
        steps = conn.execute(
            "SELECT question_id, steps_json FROM predictions WHERE run_id = 'baseline'"
        ).fetchall()
    finally:
        conn.close()
    with Session(ws, config) as session:
        pools, _ = trainer_pools(session)
        test_ids = {q.question_id for q in pools.test}
        test_share = sum(
            sum(s.get("type") == "model" for s in json.loads(js or "[]"))
            for qid, js in steps
            if qid in test_ids
        )
        last_baseline = max(baseline_rows, default=0)
        spent, current = 0, ("v1", "v1")
        at: dict[int, tuple[str, str]] = {}
        for row_id, run_id, hit in rows:
            kind, s, p = runs.get(run_id, ("", "", ""))
            if kind in ("holdout", "test"):
                continue
            if CLEAN.fullmatch(s) and CLEAN.fullmatch(p) and not run_id.endswith("-r2"):
                current = (s, p)
            spent += 0 if hit else 1
            if row_id == last_baseline:
                spent -= test_share
            for n in budgets:
                if n not in at and spent >= n:
                    at[n] = current
        from app.harness.rollouts.question_units import build_units

        accuracy: dict[tuple[str, str], float] = {}
        for s, p in sorted(set(at.values())):
            prompts = session.agent_prompts(ws / "skills" / s, ws / "prompts" / p)
            result = anyio.run(
                lambda prompts=prompts, s=s, p=p: session.infer(
                    list(pools.test), f"curve-{s}-{p}", "test", prompts=prompts, label="curve"
                )
            )
            accuracy[(s, p)] = result.accuracy
        curve = {n: accuracy[v] for n, v in sorted(at.items())}
        n_test = len(build_units(pools.test))
    final = json.loads((ws / "analyses" / "final_test_eval.json").read_text("utf-8"))
    note = f"final test {final['test_accuracy']:.3f} ({final.get('skills_version')})"
    return Arm(True, curve, n_test, spent, note=note, final=float(final["test_accuracy"]))


def ceiling(ws: Path, trainer_ws: Path, job: Any) -> Arm:
    """The world's rules where training can put them, on the test pool (no training)."""
    from app.harness.rollouts.question_units import build_units
    from app.harness.rollouts.session import Session

    args = ["init", str(ws), "--seed", job.seed_name, "--questions", job.questions]
    code, out, err = run_child([str(ROOT / "main.py"), *args, "--store", job.store], 300)
    if code != 0:
        raise RuntimeError(f"init {ws.name} exited {code}:\n{tail(err or out)}")
    with Session(ws, trainer_config(trainer_ws)) as session:
        pools, _ = trainer_pools(session)
        result = anyio.run(
            lambda: session.infer(list(pools.test), "ceiling-test", "test", label="ceiling")
        )
        return Arm(True, {0: result.accuracy}, len(build_units(pools.test)))


# -- one world seed (runs in a pool worker) --------------------------------------------------
@dataclass
class SeedJob:
    seed: int
    units: int
    store: str
    questions: str  # init's --questions (gepa_compare's `init_workspace` reads these two)
    oracle_seed: str  # bench/acceptance.py `write_oracle_seed`'s store seed
    tmp: str
    timeout: float
    keep: bool
    budgets: tuple[int, ...]
    extra_sets: tuple[str, ...] = ()


@dataclass
class OracleJob:
    store: str
    questions: str
    seed_name: str


ARMS = ("skillopt", "skillopt_full", "trainer", "trainer_full", "ceiling")


@dataclass
class SeedOutcome:
    job: SeedJob
    arms: dict[str, Arm] = field(default_factory=dict)
    null: dict[str, Arm] = field(default_factory=dict)  # "skillopt", "trainer"


def guarded(fn: Any, *args: Any) -> Arm:
    start = time.perf_counter()
    try:
        arm = fn(*args)
        arm.seconds = time.perf_counter() - start
        return arm
    except Exception:  # noqa: BLE001 - reported as a missing run, never hidden
        import traceback

        return Arm(False, seconds=time.perf_counter() - start, error=tail(traceback.format_exc()))


def train(job: SeedJob, setting: str, name: str, sets: tuple[str, ...]) -> tuple[Path, Any]:
    ws = Path(job.tmp) / "ws" / f"{name}-u{job.units}-w{job.seed}"
    t = train_one(
        Job(
            setting,
            "eprocess",
            job.seed,
            job.units,
            job.store,
            job.questions,
            str(ws),
            job.timeout,
            True,
            (*sets, *job.extra_sets),
        )
    )
    if not t.ok:
        raise RuntimeError(t.error)
    return ws, t


# one seed's work in pool tasks run side by side; --tiny leaves out the noisy null evolver
PARTS = ("skills", "full", "null", "null_noisy0.3")
TINY_PARTS = ("skills", "full", "null")


def run_part(job: SeedJob, part: str) -> SeedOutcome:
    """`skills`: the skills-only trainer, then SkillOpt on the skill files and on all prompts
    (opened with that trainer's recorded config); `full`: the trainer on everything, and the
    ceiling; `null`: the null evolver through the trainer, then through SkillOpt."""
    out = SeedOutcome(job)
    base = Path(job.tmp) / "ws"
    made: list[Path] = []

    def fresh(name: str) -> Path:
        ws = base / f"{name}-u{job.units}-w{job.seed}"
        made.append(ws)
        init_workspace(ws, job)
        return ws

    def trained(name: str, setting: str, sets: tuple[str, ...]) -> tuple[Path, Any]:
        ws, t = train(job, setting, name, sets)
        made.append(ws)
        return ws, t

    def trainer_arm(name: str, sets: tuple[str, ...]) -> Path | None:
        try:
            ws, t = trained(name, "default", sets)
        except Exception as e:  # noqa: BLE001 - a missing run, with its reason
            out.arms[name] = Arm(False, error=str(e))
            return None
        out.arms[name] = guarded(trainer_curve, ws, job.budgets)
        out.arms[name].seconds += t.seconds
        return ws

    try:
        if part == "skills":
            trainer_ws = trainer_arm("trainer", SKILLS_ONLY)
            for name, prompts in (("skillopt", False), ("skillopt_full", True)):
                if trainer_ws is None:
                    out.arms[name] = Arm(
                        False, error="the trainer run it takes its config from failed"
                    )
                    continue
                out.arms[name] = guarded(
                    lambda n=name, p=prompts: run_skillopt(fresh(n), trainer_ws, job.budgets, p)
                )
        elif part == "full":
            full_ws = trainer_arm("trainer_full", ())
            ws = base / f"ceiling-u{job.units}-w{job.seed}"
            made.append(ws)
            oracle = OracleJob(job.store, job.questions, job.oracle_seed)
            out.arms["ceiling"] = (
                guarded(lambda: ceiling(ws, full_ws, oracle))
                if full_ws is not None
                else Arm(False, error="the trainer run it takes its config from failed")
            )
        else:
            tag = part.removeprefix("null")
            try:
                null_ws, t = trained(f"trainer_{part}", part, SKILLS_ONLY)
            except Exception as e:  # noqa: BLE001
                out.null["trainer" + tag] = Arm(False, error=str(e))
                out.null["skillopt" + tag] = Arm(False, error="the null trainer run failed")
                return out
            out.null["trainer" + tag] = Arm(
                True, null_tested=t.null_tested, null_accepted=t.null_accepted, seconds=t.seconds
            )
            out.null["skillopt" + tag] = guarded(
                lambda: run_skillopt(fresh(f"skillopt_{part}"), null_ws, job.budgets, False, True)
            )
        return out
    finally:
        if not job.keep:
            for ws in made:
                shutil.rmtree(ws, ignore_errors=True)


# -- figures ---------------------------------------------------------------------------------
def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    if n <= 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def interval(acc: float, n: int) -> str:
    lo, hi = wilson(acc * n, n)
    return f"{acc:.3f} [{lo:.3f}, {hi:.3f}]"


def report(
    outcomes: list[SeedOutcome], units: int, budgets: Sequence[int], nulls: dict[str, list[int]]
) -> list[str]:
    """Print the RESULT and `# ` lines of one world size, add its null tallies to `nulls`
    ({arm: [accepted, tested]}); return what is missing."""
    problems: list[str] = []
    prefix = f"skillopt_compare.u{units}"
    print(f"\n== {units} units per task type, world seeds {[o.job.seed for o in outcomes]}")
    for arm in ARMS:
        runs = [(o.job.seed, o.arms.get(arm, Arm(False, error="not run"))) for o in outcomes]
        problems += [f"u{units} {arm} world seed {s}" for s, a in runs if not a.ok]
        ok = [(s, a) for s, a in runs if a.ok]
        points = [0] if arm == "ceiling" else list(budgets)
        for n in points:
            reached = [(s, a) for s, a in ok if n in a.curve]
            name = f"{prefix}.{arm}.final_test" + ("" if arm == "ceiling" else f"@{n}")
            if not reached:
                print(f"# {name}: reached by no world seed")
                continue
            accs = [a.curve[n] for _, a in reached]
            k = sum(a.curve[n] * a.test_units for _, a in reached)
            total = sum(a.test_units for _, a in reached)
            lo, hi = wilson(k, total)
            seeds = ", ".join(f"w{s} {interval(a.curve[n], a.test_units)}" for s, a in reached)
            print(
                f"# {name}: mean {fmt(mean(accs))} over {len(reached)} of {len(runs)} seeds; "
                f"pooled Wilson 95% [{lo:.3f}, {hi:.3f}] over {total} test units; {seeds}"
            )
            if len(reached) == len(runs):
                print(f"RESULT {name} {fmt(mean(accs), 4)} accuracy")
        if arm != "ceiling" and ok:
            calls = mean([float(a.calls) for _, a in ok])
            print(f"RESULT {prefix}.{arm}.model_calls {fmt(calls, 1)} calls")
        if arm.startswith("trainer") and ok and len(ok) == len(runs):
            end = mean([a.final for _, a in ok])
            print(f"# {prefix}.{arm}: its own end (best by validation), at its model_calls")
            print(f"RESULT {prefix}.{arm}.final_test_at_end {fmt(end, 4)} accuracy")
    for arm in sorted({k for o in outcomes for k in o.null}):
        runs = [o.null.get(arm, Arm(False, error="not run")) for o in outcomes]
        ok = [a for a in runs if a.ok]
        problems += [f"u{units} {arm} null run" for a in runs if not a.ok]
        tested, accepted = sum(a.null_tested for a in ok), sum(a.null_accepted for a in ok)
        rate = accepted / tested if tested else math.nan
        print(
            f"# {prefix}.{arm}.null_accept_rate: {fmt(rate)} ({accepted} of {tested} null "
            f"candidates accepted, {len(ok)} world seed(s))"
        )
        tally = nulls.setdefault(arm, [0, 0])
        tally[0] += accepted
        tally[1] += tested
    return problems


def skillopt_missing() -> str | None:
    try:
        import skillopt.engine.trainer  # noqa: F401
    except ImportError as e:
        return (
            f"bench/skillopt_compare.py needs the `skillopt` package ({e}); it is in the "
            f"project's `{EXTRA_NAME}` extra: .venv/bin/pip install -e '.[{EXTRA_NAME}]'"
        )
    return None


def describe(o: SeedOutcome) -> str:
    lines = [f"world seed {o.job.seed}, {o.job.units} units:"]
    for name, a in [*o.arms.items(), *((f"{k} (null)", v) for k, v in o.null.items())]:
        if not a.ok:
            lines.append(f"  {name} FAILED (counted as missing):\n{a.error}")
            continue
        curve = "  ".join(f"@{n} {v:.3f}" if n else f"{v:.3f}" for n, v in a.curve.items())
        null = f"null accepts {a.null_accepted}/{a.null_tested}  " if "null" in name else ""
        lines.append(
            f"  {name}: {curve}  calls {a.calls}  {null}{a.seconds:.1f} s"
            + (f"  [{a.note}]" if a.note else "")
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--units", type=int, nargs="+", default=None, help="units per task type")
    parser.add_argument("--budgets", type=int, nargs="+", default=None, help="curve points")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=PARTS,
        default=None,
        help="which of each seed's tasks to run (default all; --tiny: all but null_noisy0.3)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="tasks run at once")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per training")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    acceptance.add_set_option(parser, "trainer run")
    parser.add_argument("--tiny", action="store_true", help="one small run: checks the bench runs")
    args = parser.parse_args()
    if (why := skillopt_missing()) is not None:
        print(why, file=sys.stderr)
        return 2
    extra: tuple[str, ...] = tuple(args.sets)
    if args.tiny:
        args.seeds, extra = [1], ("epochs=1", *extra)
    sizes = args.units or ([TINY_UNITS] if args.tiny else list(DEFAULT_UNITS))
    budgets = tuple(sorted(args.budgets or (TINY_BUDGETS if args.tiny else BUDGETS)))

    wall = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="bench-skillopt-"))
    store = tmp / "store"
    shutil.copytree(ROOT / "store" / "seeds" / SEED_NAME, store / "seeds" / SEED_NAME)
    jobs = [
        SeedJob(
            seed,
            units,
            str(store),
            generate_world(store, seed, units),
            write_oracle_seed(store, seed, units),
            str(tmp),
            args.timeout,
            args.keep,
            budgets,
            extra,
        )
        for units in sizes
        for seed in args.seeds
    ]
    print(
        f"skillopt_compare: SkillOpt 0.2.0's ReflACTTrainer (its v0.2.0 defaults) vs the trainer "
        f"(app/demo.toml) on world seeds {args.seeds} at {sizes} units per task type, budgets "
        f"{list(budgets)} model calls; {args.jobs} seeds at a time; simulated model (figures "
        f"show the methods, not a real LLM)"
        + (f"; the trainer with --set {' '.join(args.sets)}" if args.sets else ""),
        flush=True,
    )
    merged = {(job.units, job.seed): SeedOutcome(job) for job in jobs}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        parts = args.parts or (TINY_PARTS if args.tiny else PARTS)
        futures = {pool.submit(run_part, job, part): (job, part) for job in jobs for part in parts}
        for future in as_completed(futures):
            job, part = futures[future]
            try:
                o = future.result()
            except Exception as e:  # noqa: BLE001 - a crashed worker is a missing part
                o = SeedOutcome(job)
                print(f"world seed {job.seed} ({part}) worker failed: {type(e).__name__}: {e}")
            merged[(job.units, job.seed)].arms.update(o.arms)
            merged[(job.units, job.seed)].null.update(o.null)
            print(f"[{part}] " + describe(o), flush=True)
    outcomes = list(merged.values())
    if args.keep:
        print(f"kept workspaces under {tmp / 'ws'}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    problems: list[str] = []
    nulls: dict[str, list[int]] = {}
    for units in sizes:
        mine = sorted((o for o in outcomes if o.job.units == units), key=lambda o: o.job.seed)
        problems += report(mine, units, budgets, nulls)
    print(f"\n== null evolver, pooled over {sizes} units: null candidates accepted / tested")
    for key, (accepted, tested) in sorted(nulls.items()):
        arm, _, noisy = key.partition("_")
        name = f"skillopt_compare.{arm}.null_accept_rate" + (f"_{noisy}" if noisy else "")
        rate = accepted / tested if tested else math.nan
        print(f"# {name}: {accepted} of {tested}")
        print(f"RESULT {name} {fmt(rate, 4)} rate")
    seconds = time.perf_counter() - wall
    if problems:
        print("missing: " + "; ".join(problems))
    print(f"wall time: {seconds:.0f} s for {len(jobs)} world(s)")
    print(f"RESULT skillopt_compare.wall_time {seconds:.0f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
