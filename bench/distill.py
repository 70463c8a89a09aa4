"""`distill` on the simulated teacher/student: `sim/basic-strong` (knows 80% of the world's
hidden rules untold, ten times the notional price) into `sim/basic` (app/providers/sim/).

A fresh workspace from the sim-starter seed on sim-large (216 units per task type) trained with
the demo config (app/demo.toml), or on sim-basic with one epoch in `--tiny` (figures that
measure little). Printed from analyses/distill.json (app/distill.py):

- distill.gap_closed: (student after - before) / (teacher - before) on test units, target >= 0.5
- distill.student_before_test / distill.student_after_test: held-out test accuracy
- distill.mcnemar_p: exact McNemar, student after vs before on paired test units, target < 0.05
- distill.cost_ratio: student after / teacher, USD per 1,000 test questions (notional prices)

Two controls, each its own fresh workspace, so the lift is not credited to the teacher alone:
`distill.control_after_test`, the student trained with the same config and no teacher (plain
`train`), and `distill.packs_only_after_test`, `distill` with `distill_memory_k=0` (the
teacher's winners only as worked examples in the case packs, no memories in the prompts).

    PYTHONPATH=. .venv/bin/python bench/distill.py [--tiny]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from loguru import logger

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's app, whichever one the venv has installed

from app import api  # noqa: E402

DEMO = ROOT / "app" / "demo.toml"
TEACHER, STUDENT = "sim/basic-strong", "sim/basic"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    logger.remove()
    questions, settings = (
        ("sim-basic", {"epochs": 1}) if args.tiny else ("sim-large", {"sim_units_per_type": 216})
    )
    with tempfile.TemporaryDirectory() as tmp:
        ws, control, packs = (Path(tmp) / n for n in ("distill", "control", "packs"))
        for root in (ws, control, packs):
            api.init_workspace(root, seed="sim-starter", questions=questions)
        outcome = api.distill(ws, TEACHER, STUDENT, DEMO, overrides=settings)
        report = json.loads((ws / "analyses" / "distill.json").read_text())
        plain = api.train(control, DEMO, overrides={**settings, "agent_model": STUDENT})
        api.distill(packs, TEACHER, STUDENT, DEMO, overrides={**settings, "distill_memory_k": 0})
        packs_only = json.loads((packs / "analyses" / "distill.json").read_text())
    if outcome.exit_code != 0:
        print(f"# probe verdict {report['probe']['verdict']}: nothing trained", file=sys.stderr)
        return 1
    t, b, a = report["teacher"], report["student_before"], report["student_after"]
    print(
        f"# {questions}: probe gap {report['probe']['gap']:.3f} over "
        f"{report['probe']['families']} families; {report['winners_stored']} teacher winners "
        f"stored; teacher test {t['accuracy']:.3f}, student {b['accuracy']:.3f} -> "
        f"{a['accuracy']:.3f} (skills {a['skills_version']}, memory_k {report['memory_k']} chosen on "
        f"validation {report['memory_choice_validation']}); promoted {report['promoted']}"
    )
    print(f"RESULT distill.gap_closed {report['gap_closed']:.3f} share target >=0.5")
    print(f"RESULT distill.student_before_test {b['accuracy']:.3f} accuracy")
    print(f"RESULT distill.student_after_test {a['accuracy']:.3f} accuracy")
    print(f"RESULT distill.teacher_test {t['accuracy']:.3f} accuracy")
    print(f"RESULT distill.mcnemar_p {report['mcnemar']['p_value']:.3g} p target <0.05")
    print(f"RESULT distill.cost_ratio {report['cost_ratio']:.3f} ratio")
    print(f"RESULT distill.control_after_test {plain.test_accuracy or 0.0:.3f} accuracy")
    after = (packs_only.get("student_after") or {}).get("accuracy")
    if after is not None:
        print(f"RESULT distill.packs_only_after_test {after:.3f} accuracy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
