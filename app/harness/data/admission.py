"""Which verified branches `export` may use as training targets (docs/checkers.md#exporting-judged-answers).

A branch whose objective pass rests on a rubric judge alone is a *judge-only admission*: its
question's checker is `rubric`, and no user verifier (`--verifier module:function`) passed it
as well (`completed` and `trajectory` say nothing about the answer). A judge can be wrong in
ways nobody measured, and a fine-tuned model learns those mistakes as targets, so such a
branch is left out of every file that teaches it as a good answer (sft, the chosen side of
the DPO files, the curated SFT files and the positive KTO labels) unless a person audited it:
`export --audited FILE` lists the audited ones. What is left out is counted and named in
each file's manifest.

An audited-ids file is text, one id a line (blank lines and `#` comments skipped): a branch
key `ROLLOUT/QUESTION_ID/BRANCH` (as the manifest names them) or a question id, which audits
that question's branches in every exported fork.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from app.errors import UserError
from app.harness.workspace.harness_log import HarnessLog
from app.sanitize import visible
from core.checkers import RUBRIC
from core.types import Question

AUDITED_MAX_BYTES = 8 * 1024 * 1024
ID_MAX_CHARS = 400
# verifiers that check how a branch ran, not whether its answer is right
NOT_ABOUT_THE_ANSWER = frozenset({"completed", "trajectory"})


def branch_key(rollout_id: str, question_id: str, branch_index: int) -> str:
    return f"{rollout_id}/{question_id}/{branch_index}"


@dataclass(frozen=True)
class Admissions:
    """The judge-only admissions of the exported forks, split by audit."""

    refused: frozenset[str]  # branch keys left out of the training-target files
    audited: frozenset[str]  # judge-only branch keys the audited-ids file lets through
    unmatched_ids: tuple[str, ...] = ()  # audited ids that named no judge-only branch

    def allows(self, key: str) -> bool:
        return key not in self.refused

    def manifest(self) -> dict[str, object]:
        return {
            "judge_only_refused": len(self.refused),
            "judge_only_audited": len(self.audited),
            "judge_only_refused_ids": sorted(self.refused),
        }


NO_ADMISSION_RULES = Admissions(frozenset(), frozenset())


def read_audited(path: Path) -> frozenset[str]:
    """The ids of an audited-ids file; a bad file is one line naming file:line."""
    try:
        size = path.stat().st_size
        if size > AUDITED_MAX_BYTES:
            raise UserError(f"{path}: {size} bytes; an audited-ids file holds at most 8 MiB")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"--audited {path}: no such file") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise UserError(f"--audited {path}: cannot read it ({e.strerror})") from None
    ids: set[str] = set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line) > ID_MAX_CHARS or any(ch.isspace() for ch in line):
            raise UserError(
                f"{path}:{number}: one id a line (ROLLOUT/QUESTION_ID/BRANCH or a question id), "
                f"got {visible(line[:60])!r}"
            )
        ids.add(line)
    return frozenset(ids)


def judge_only_branches(
    log: HarnessLog, rollout_id: str, questions: Mapping[str, Question]
) -> set[tuple[str, int]]:
    """(question id, branch) of the rollout's passing branches that only a rubric judge passed."""
    candidates: set[tuple[str, int]] = set()
    vouched: set[tuple[str, int]] = set()
    for r in log.passing_verdicts(rollout_id):
        key = (str(r.question_id), int(r.branch_index))
        question = questions.get(key[0])
        if question is None or question.checker != RUBRIC:
            continue
        candidates.add(key)
        name = str(r.verifier or "")
        if r.passed and name not in NOT_ABOUT_THE_ANSWER and name != "checker":
            vouched.add(key)  # a user verifier passed it too: not the judge's word alone
    return candidates - vouched


def admissions(
    log: HarnessLog,
    rollout_ids: Iterable[str],
    questions: Mapping[str, Question],
    audited_ids: frozenset[str],
) -> Admissions:
    refused: set[str] = set()
    audited: set[str] = set()
    matched: set[str] = set()
    for rid in rollout_ids:
        for qid, index in judge_only_branches(log, rid, questions):
            key = branch_key(rid, qid, index)
            hit = {key, qid} & audited_ids
            if hit:
                audited.add(key)
                matched |= hit
            else:
                refused.add(key)
    return Admissions(frozenset(refused), frozenset(audited), tuple(sorted(audited_ids - matched)))
