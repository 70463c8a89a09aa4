"""`train --resume` after SIGKILL in the middle of an outside agent's rollouts ends in the
state an uninterrupted run reaches: killed inside a rollout (between the model's reply and
the agent reading it) and at a gate point, each resumed and compared with a reference run
(tests/app/agents/external_resume.py, which bench scripts import)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.agents.external_resume import (
    KILL_POINTS,
    fresh_workspace,
    killed_and_resumed,
    reference_run,
    resume_differences,
    write_config,
)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_config(tmp_path_factory.mktemp("external-resume-config"))


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_workspace(tmp_path_factory.mktemp("external-resume-fresh"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, fresh: Path, config: Path) -> Path:
    """About 8 s on a quiet 2-core machine: one uninterrupted train."""
    return reference_run(fresh, tmp_path_factory.mktemp("external-resume-reference"), config)


@pytest.mark.slow  # about 10 s each on a quiet 2-core machine: a killed and a resumed train
@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_resume_after_sigkill_in_external_rollouts_ends_in_the_reference_state(
    kill_at: str, reference: Path, fresh: Path, config: Path, tmp_path: Path
) -> None:
    resumed = killed_and_resumed(fresh, tmp_path, config, kill_at)
    assert resume_differences(reference, resumed) == []
