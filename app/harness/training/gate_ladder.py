"""The gate ladder and the baseline cache.

The ladder says which families a gate test looks at and in which order. It is built so the
gate's guarantee holds (core/evolution/gate.py states it):
- the order is a seeded shuffle, keyed by (seed, task type, epoch, step), that never looks at
  any outcome: no unit is chosen or put first because the baseline happened to fail it, which
  would make regression to the mean look like an improvement; `[gate] ladder_order =
  "relevance"` then sorts stage 1 by a score of texts alone (core/evolution/relevance.py);
- one entry per family (near-duplicate questions are one observation), or per unit when the
  benchmark declares a family's units independent (`family_units = "independent"`,
  docs/benchmarks.md; `evidence_group`): the pools were still split by family;
- families holding a unit the evolver has been shown with its answer in this run are left out,
  for good: this step's case pack (the candidate was written from it) and every earlier one
  (`TrainState.shown_units`, kept exactly on resume). This is assumption (4) of the gate's
  guarantee (core/evolution/gate.py): every family a decision rests on, accept or probation,
  is one the evolver never saw. The other way to close the loophole, letting seen diagnosis
  families make an edit only provisional and deciding it on the validation families alone,
  keeps less: on bench/acceptance.py (default setting, 72 units per type, seeds 1-5, with the
  gate as it was then: families of 3 as one observation, the two-bet mixture) the
  ladders left are a median of 11 / 7 / 6 / 6 families in epochs 1-4, of which 6 are the
  validation families, so a validation-only decision never has more and in epochs 1-2 has
  fewer. The price, on that bench: a test's median ladder falls from 14 families to 8, the
  families a test uses from 9 to 4.5, eprocess's final test from 0.694 to 0.548;
- gate-only families win that evidence back (`[gate] gate_only_share`, `gate_only_units`): a
  share of each type's diagnosis families, chosen by a seeded hash of the family id before any
  outcome exists, is never batched, put in a case pack or sampled for momentum, so no exclusion
  ever removes it and every ladder keeps it (assumption (4) holds for it by construction). On
  the same bench, with the gate as it was then, share 0.5 gave a median ladder of 12 families,
  final test 0.791 (share 0.3: 0.648, 0.7: 0.681). With today's gate (units counted one by one
  on the simulated benchmarks, pooled re-proposals, only refuted edits blacklisted, earlier
  failures carried into the evolver's packs) it costs: 0.832 at 0.5 against 0.846 at 0, so it
  is off by default;
- stage 1 is the diagnosis pool's families, stage 2 the validation pool's: a provisional
  accept leaves stage 2 to its probation, which evaluates it with the epoch's validation
  re-run. The test pool never feeds the gate;
- `[gate] draws` = k > 1 (only when the benchmark declares its units independent) puts k
  draws of every pass/fail gate question on the ladder: draw r is a unit of its own
  (`<unit id>#d<r>`, its questions `<question id>#d<r>`) answered with sample index r, so
  the model samples it afresh and the response cache keys it apart. Under the gate's null no
  draw's expected accuracy rises, and draws answered afresh are independent given their
  question, so each is one more observation. A draw shares its question's exclusions: the
  evolver shown a question has seen all of its draws. With `[gate] draws_for = "changed"` (the
  default) the ladder holds its questions first, then each round of draws in the same order
  (`in_rounds`), and the rule asks for a draw only once an earlier answer of its question
  changed (core/evolution/acceptance.py `RuleSetup.redraws`).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.harness.workspace.atomic import read_json, write_json_atomic
from core.evolution.relevance import by_relevance
from core.types import Question, QuestionUnit

FORMAT_VERSION = 2

Family = tuple[str, tuple[str, ...]]  # (family id, unit ids)


@dataclass(frozen=True)
class Ladder:
    stage1: tuple[Family, ...]
    stage2: tuple[Family, ...]

    @property
    def families(self) -> tuple[Family, ...]:
        return (*self.stage1, *self.stage2)

    def truncated(self, n_max: int) -> Ladder:
        """At most n_max families, stage 1 first."""
        s1 = self.stage1[:n_max]
        return Ladder(s1, self.stage2[: max(0, n_max - len(s1))])


DRAW_MARK = "#d"  # `<unit id>#d<r>`: draw r of a unit (r >= 1; draw 0 is the unit itself)


@dataclass
class GatePools:
    # type -> stage ("diagnosis" | "validation") -> family id -> unit ids, benchmark order
    families: dict[str, dict[str, dict[str, list[str]]]] = field(default_factory=dict)
    seed: int = 1
    # draw unit id -> (the unit it draws, its sample index r >= 1); empty unless `[gate] draws`
    draws: dict[str, tuple[str, int]] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        units: Sequence[QuestionUnit],
        validation_unit_ids: set[str],
        test_unit_ids: set[str],
        seed: int = 1,
        independent_units: bool = False,
        draws: int = 1,
        drawable: frozenset[str] = frozenset(),
    ) -> GatePools:
        """Gate-eligible families per type (never a test unit), split by pool. With
        `independent_units` (the benchmark's `family_units = "independent"`) every unit is its
        own observation: the pools were still split by family. Each `drawable` unit then also
        gets draws 1..draws-1, each its own observation, right after it in benchmark order."""
        pools = cls(seed=seed)
        taken = {u.unit_id for u in units}
        for unit in units:
            if unit.unit_id in test_unit_ids:
                continue
            stage = "validation" if unit.unit_id in validation_unit_ids else "diagnosis"
            family = evidence_group(unit, independent_units)
            by_stage = pools.families.setdefault(unit.task_type, {}).setdefault(stage, {})
            by_stage.setdefault(family, []).append(unit.unit_id)
            if not independent_units or unit.unit_id not in drawable:
                continue
            for r in range(1, draws):
                draw_id = draw_unit_id(unit.unit_id, r)
                if draw_id in taken:  # a benchmark id that looks like a draw: no draws for it
                    break
                pools.draws[draw_id] = (unit.unit_id, r)
                by_stage[draw_id] = [draw_id]
        return pools

    def drawn_unit(self, unit_id: str) -> str:
        """The benchmark unit a ladder unit is (itself, or the unit a draw draws)."""
        return self.draws[unit_id][0] if unit_id in self.draws else unit_id

    def draw_units(self, units: Mapping[str, QuestionUnit]) -> dict[str, QuestionUnit]:
        """The draws as units of their own: the drawn unit's questions, ids marked."""
        out: dict[str, QuestionUnit] = {}
        for draw_id, (unit_id, r) in self.draws.items():
            unit = units[unit_id]
            questions = tuple(
                replace(q, question_id=draw_unit_id(q.question_id, r), unit_id=draw_id)
                for q in unit.questions
            )
            out[draw_id] = QuestionUnit(draw_id, unit.task_type, questions)
        return out

    def draw_samples(self, drawn: Mapping[str, QuestionUnit]) -> dict[str, int]:
        """question id of a draw -> its sample index r (the agent's `sample` offset), from the
        draws as `draw_units` made them."""
        return {
            q.question_id: self.draws[d][1] for d, unit in drawn.items() for q in unit.questions
        }

    @property
    def task_types(self) -> tuple[str, ...]:
        return tuple(sorted(self.families))

    def ladder_for(
        self,
        task_type: str,
        exclude_units: set[str],
        key: str,
        with_stage2: bool = True,
        relevance: Mapping[str, float] | None = None,
        with_draws: bool = True,
        in_rounds: bool = False,
    ) -> Ladder:
        """The families to test, in a seeded order that depends on `key` and nothing else.
        With `relevance` (family id -> score, computed from texts alone), stage 1 is put most
        relevant first, ties in the seeded order (core/evolution/relevance.py: why the null
        stays intact); stage 2 keeps the seeded order. A family is left out when it holds an
        excluded unit or a draw of one. Without `with_draws` every draw is left out (for a
        caller that answers with sample 0 only, to which a draw would be a copy). With
        `in_rounds` each stage holds its questions first, then their draw 1 in the same order,
        then draw 2, ... (`[gate] draws_for = "changed"`: a draw is asked for only after its
        question's earlier draws); a draw whose question is not on the ladder is left out."""
        by_stage = self.families.get(task_type, {})

        def kept(ids: Sequence[str]) -> bool:
            if not with_draws and any(u in self.draws for u in ids):
                return False
            return not exclude_units.intersection(self.drawn_unit(u) for u in ids)

        def stage(name: str) -> tuple[Family, ...]:
            fams = [(f, tuple(ids)) for f, ids in by_stage.get(name, {}).items() if kept(ids)]
            random.Random(f"{self.seed}:{task_type}:{name}:{key}").shuffle(fams)
            return tuple(fams)

        stage1 = stage("diagnosis")
        if relevance is not None:
            stage1 = by_relevance(stage1, relevance)
        stage2 = stage("validation") if with_stage2 else ()
        if in_rounds:
            stage1, stage2 = self._in_rounds(stage1), self._in_rounds(stage2)
        return Ladder(stage1, stage2)

    def _in_rounds(self, families: Sequence[Family]) -> tuple[Family, ...]:
        """The questions in the order given, then each draw round in that same order."""
        questions = [f for f in families if f[0] not in self.draws]
        place = {f: i for i, (f, _) in enumerate(questions)}
        draws = [f for f in families if self.draws.get(f[0], ("", 0))[0] in place]
        draws.sort(key=lambda f: (self.draws[f[0]][1], place[self.draws[f[0]][0]]))
        return (*questions, *draws)

    def fitted(self, ladder: Ladder, n_max: int, limit: int) -> tuple[Ladder, Ladder]:
        """A ladder in rounds (`in_rounds`) fitted to one test: (the whole test, this
        segment). n_max counts questions, not draws: most draws of changed questions are never
        asked for, so they cost no call. The whole test keeps at most `limit` entries (the exact
        level's largest horizon, core.stats.CALIBRATION_MAX_HORIZON), the last rounds' draws
        dropped first, last in ladder order first; the segment is its first n_max questions,
        stage 1 first, each with its draws. Both follow from the ladder alone."""
        latest_first = sorted(
            (
                (self.draws[f][1], i, f)
                for i, (f, _) in enumerate(ladder.families)
                if f in self.draws
            ),
            reverse=True,
        )
        excess = max(0, len(ladder.families) - limit)
        drop = {f for _, _, f in latest_first[:excess]}
        whole = _keep(ladder, lambda f: f not in drop)
        questions = [f for f, _ in whole.families if f not in self.draws][:n_max]
        kept = set(questions)
        return whole, _keep(whole, lambda f: self.drawn_unit(f) in kept)

    def redraws(self, ladder: Ladder) -> dict[str, tuple[str, int]]:
        """A ladder's draws: draw family -> (the question's family, its round r)."""
        return {f: self.draws[f] for f, _ in ladder.families if f in self.draws}

    def group_of(self, task_type: str) -> dict[str, str]:
        """unit id -> the observation (family, or the unit itself) it belongs to."""
        by_stage = self.families.get(task_type, {})
        return {u: f for fams in by_stage.values() for f, ids in fams.items() for u in ids}

    def to_dict(self) -> dict[str, Any]:
        data = {"version": FORMAT_VERSION, "seed": self.seed, "families": self.families}
        if self.draws:  # a file without draws is what it always was
            data["draws"] = {d: list(src) for d, src in self.draws.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GatePools:
        return cls(
            families={
                t: {s: {f: list(ids) for f, ids in fams.items()} for s, fams in stages.items()}
                for t, stages in data.get("families", {}).items()
            },
            seed=int(data.get("seed", 1)),
            draws={d: (str(u), int(r)) for d, (u, r) in data.get("draws", {}).items()},
        )

    def save(self, path: Path) -> None:
        write_json_atomic(Path(path), self.to_dict())

    @classmethod
    def load(cls, path: Path) -> GatePools:
        return cls.from_dict(read_json(Path(path)))

    def gate_only_units(self, share: float) -> frozenset[str]:
        """The units of the diagnosis-pool families kept for the gate alone (`[gate]
        gate_only_share`): per task type, the first round(share * n) of its n diagnosis
        families in a seeded hash order of family id. A pure function of (seed, task type,
        family ids, share) that reads no outcome, so the split is fixed before the run sees
        anything and a resumed run recomputes the same one (nothing is checkpointed); a larger
        share keeps a superset. These families never reach a batch, a case pack or a momentum
        sample, so no step's exclusion ever removes them from a ladder."""
        held: set[str] = set()
        for task_type, by_stage in self.families.items():
            fams = by_stage.get("diagnosis", {})
            ranked = sorted(fams, key=lambda f: _split_rank(self.seed, task_type, f))
            for family in ranked[: int(share * len(ranked) + 0.5)]:
                held.update(fams[family])
        return frozenset(held)

    def without_gate_only(self, pool: Sequence[Question], share: float) -> tuple[Question, ...]:
        """The part of a diagnosis pool the evolver may be shown."""
        held = self.gate_only_units(share)
        return tuple(q for q in pool if q.unit_id not in held)


def _keep(ladder: Ladder, keep: Callable[[str], bool]) -> Ladder:
    return Ladder(
        tuple(f for f in ladder.stage1 if keep(f[0])), tuple(f for f in ladder.stage2 if keep(f[0]))
    )


def evidence_group(unit: QuestionUnit, independent_units: bool) -> str:
    """The observation a unit belongs to for the gate: its family (near-duplicates are one
    observation), or the unit itself when the benchmark declares a family's units independent."""
    if independent_units or not unit.questions:
        return unit.unit_id
    return unit.questions[0].family or unit.unit_id


def draw_unit_id(unit_or_question_id: str, r: int) -> str:
    return f"{unit_or_question_id}{DRAW_MARK}{r}"


def drawn_id(draw_id: str) -> str | None:
    """The unit or question id a draw's id names (`<id>#d<r>`, r >= 1); None if not a draw's."""
    head, mark, r = draw_id.rpartition(DRAW_MARK)
    return head if head and mark and r.isdecimal() and int(r) >= 1 else None


def _split_rank(seed: int, task_type: str, family: str) -> str:
    return hashlib.sha256(f"gate-only:{seed}:{task_type}:{family}".encode()).hexdigest()


def _cache_key(skills_version: str, prompts_version: str, unit_id: str) -> str:
    return f"{skills_version}|{prompts_version}|{unit_id}"


class BaselineCache:
    """Baseline (current versions) correctness per unit, so each is run at most once; for a
    scored unit (app/harness/rollouts/question_units.py `is_scored`) also the outcome the
    gate compares, its score or None (no verdict). The file holds `scores` only when some
    unit is scored, so a pass/fail benchmark's file is what it always was."""

    def __init__(
        self,
        entries: Mapping[str, bool] | None = None,
        scores: Mapping[str, float | None] | None = None,
    ) -> None:
        self.entries: dict[str, bool] = dict(entries or {})
        self.scores: dict[str, float | None] = dict(scores or {})

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, skills_version: str, prompts_version: str, unit_id: str) -> bool | None:
        return self.entries.get(_cache_key(skills_version, prompts_version, unit_id))

    def outcome(
        self, skills_version: str, prompts_version: str, unit_id: str
    ) -> bool | float | None:
        """What the gate compares: the score of a scored unit (None: no verdict), else the
        cached correctness."""
        key = _cache_key(skills_version, prompts_version, unit_id)
        if key in self.scores:
            return self.scores[key]
        return bool(self.entries.get(key))

    def put_many(
        self,
        skills_version: str,
        prompts_version: str,
        correctness: Mapping[str, bool],
        outcomes: Mapping[str, bool | float | None] | None = None,
    ) -> None:
        for unit_id, correct in correctness.items():
            self.entries[_cache_key(skills_version, prompts_version, unit_id)] = bool(correct)
        for unit_id, outcome in (outcomes or {}).items():
            if outcome is None or not isinstance(outcome, bool):
                key = _cache_key(skills_version, prompts_version, unit_id)
                self.scores[key] = None if outcome is None else float(outcome)

    def save(self, path: Path) -> None:
        data: dict[str, Any] = {"version": FORMAT_VERSION, "entries": self.entries}
        if self.scores:
            data["scores"] = self.scores
        write_json_atomic(Path(path), data)

    @classmethod
    def load(cls, path: Path) -> BaselineCache:
        """A missing file is an empty cache (first run, or the cache was deleted)."""
        path = Path(path)
        if not path.exists():
            return cls()
        data = read_json(path)
        return cls(data.get("entries", {}), data.get("scores", {}))
