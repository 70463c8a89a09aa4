"""The gate ladder and the baseline cache (DESIGN §6.6).

The ladder orders a task type's gate-eligible units (diagnosis + validation, never test) so the
sequential gate meets informative units first: units whose baseline pass probability is near
0.5 are the likeliest to flip, i.e. to carry W/L evidence.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.harness.atomic import read_json, write_json_atomic
from core.types import QuestionUnit

FORMAT_VERSION = 1


@dataclass
class GatePools:
    units: dict[str, list[str]] = field(default_factory=dict)  # type -> unit ids, benchmark order
    p_hat: dict[str, float] = field(default_factory=dict)  # unit id -> baseline pass estimate
    cold_order: dict[str, list[str]] = field(default_factory=dict)  # type -> unit ids
    observed: bool = False  # has any epoch's non-gate observation been folded in?
    updates: int = 0  # update() calls that saw a unit; rotates which "other" units get probed
    seed: int = 1

    @classmethod
    def build(cls, units: Sequence[QuestionUnit], test_unit_ids: set[str],
              baseline_correctness: Mapping[str, bool], seed: int = 1) -> GatePools:
        """Gate-eligible units per type; p̂ from the baseline run (0.5 when unknown)."""
        pools = cls(seed=seed)
        for unit in units:
            if unit.unit_id in test_unit_ids:
                continue  # the test pool never feeds the gate
            pools.units.setdefault(unit.task_type, []).append(unit.unit_id)
            known = baseline_correctness.get(unit.unit_id)
            pools.p_hat[unit.unit_id] = 0.5 if known is None else float(known)
        for task_type, ids in pools.units.items():
            pools.cold_order[task_type] = _cold_order(ids, baseline_correctness,
                                                      f"{seed}:{task_type}")
        return pools

    @property
    def task_types(self) -> tuple[str, ...]:
        return tuple(sorted(self.units))

    def update(self, observations: Mapping[str, bool], gamma: float) -> None:
        """γ-EMA of the baseline pass rate from one epoch's non-gate observations."""
        if not 0 < gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")
        seen = [u for u in observations if u in self.p_hat]  # unknown / test units are ignored
        for unit_id in seen:
            self.p_hat[unit_id] = (1 - gamma) * self.p_hat[unit_id] + gamma * float(
                bool(observations[unit_id]))
        if seen:
            self.observed = True
            self.updates += 1

    def ladder_for(self, task_type: str, exclude_units: set[str], p_low: float, p_high: float,
                   probe_quota: float, cold: bool | None = None) -> list[str]:
        """Unit ids in the order the gate should evaluate them (not truncated)."""
        if cold is None:
            cold = not self.observed
        if cold:
            return [u for u in self.cold_order.get(task_type, []) if u not in exclude_units]
        ids = [u for u in self.units.get(task_type, []) if u not in exclude_units]
        informative = sorted((u for u in ids if p_low <= self.p_hat[u] <= p_high),
                             key=lambda u: (abs(self.p_hat[u] - 0.5), u))
        chosen = set(informative)
        others = sorted(u for u in ids if u not in chosen)
        # Re-seeded after each update so that, over time, every confident unit gets re-checked.
        random.Random(f"{self.seed}:{task_type}:{self.updates}").shuffle(others)
        return _interleave(informative, others, probe_quota)

    def to_dict(self) -> dict[str, Any]:
        return {"version": FORMAT_VERSION, "seed": self.seed, "observed": self.observed,
                "updates": self.updates, "p_hat": dict(self.p_hat),
                "task_types": {t: {"units": list(ids), "cold_order": list(self.cold_order[t])}
                               for t, ids in self.units.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GatePools:
        types = data.get("task_types", {})
        return cls(units={t: list(v["units"]) for t, v in types.items()},
                   p_hat={u: float(p) for u, p in data.get("p_hat", {}).items()},
                   cold_order={t: list(v["cold_order"]) for t, v in types.items()},
                   observed=bool(data.get("observed", False)),
                   updates=int(data.get("updates", 0)), seed=int(data.get("seed", 1)))

    def save(self, path: Path) -> None:
        write_json_atomic(Path(path), self.to_dict())

    @classmethod
    def load(cls, path: Path) -> GatePools:
        return cls.from_dict(read_json(Path(path)))


def _cold_order(ids: Sequence[str], baseline: Mapping[str, bool], seed: str) -> list[str]:
    """Seeded shuffle, then alternate baseline-wrong / baseline-right (unknown third), so a
    cold gate can see a win (needs a wrong baseline) and a loss (needs a right one) early."""
    shuffled = list(ids)
    random.Random(seed).shuffle(shuffled)
    wrong = [u for u in shuffled if baseline.get(u) is False]
    right = [u for u in shuffled if baseline.get(u) is True]
    unknown = [u for u in shuffled if baseline.get(u) is None]
    return _round_robin([wrong, right, unknown])


def _round_robin(lists: Iterable[Sequence[str]]) -> list[str]:
    queues = [list(q) for q in lists]
    out: list[str] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out.extend(q[i] for q in queues if i < len(q))
    return out


def _interleave(main: Sequence[str], probes: Sequence[str], quota: float) -> list[str]:
    """Every round(1/quota)-th slot takes a probe while both lists last; then the rest."""
    if quota <= 0:
        return [*main, *probes]
    period = max(1, round(1 / quota))
    queues = (deque(main), deque(probes))
    out: list[str] = []
    for slot in range(1, len(main) + len(probes) + 1):
        first, second = queues[::-1] if slot % period == 0 else queues
        out.append((first or second).popleft())
    return out


def _cache_key(skills_version: str, prompts_version: str, unit_id: str) -> str:
    return f"{skills_version}|{prompts_version}|{unit_id}"


class BaselineCache:
    """Baseline (current versions) correctness per unit, so each is run at most once."""

    def __init__(self, entries: Mapping[str, bool] | None = None) -> None:
        self.entries: dict[str, bool] = dict(entries or {})

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, skills_version: str, prompts_version: str, unit_id: str) -> bool | None:
        return self.entries.get(_cache_key(skills_version, prompts_version, unit_id))

    def put_many(self, skills_version: str, prompts_version: str,
                 correctness: Mapping[str, bool]) -> None:
        for unit_id, correct in correctness.items():
            self.entries[_cache_key(skills_version, prompts_version, unit_id)] = bool(correct)

    def save(self, path: Path) -> None:
        write_json_atomic(Path(path), {"version": FORMAT_VERSION, "entries": self.entries})

    @classmethod
    def load(cls, path: Path) -> BaselineCache:
        """A missing file is an empty cache (first run, or the cache was deleted)."""
        path = Path(path)
        if not path.exists():
            return cls()
        return cls(read_json(path).get("entries", {}))
