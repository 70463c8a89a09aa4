"""What produced a run: code commit, versions and hashes, models, benchmark (stored in
`_runs.provenance_json`, docs/architecture.md#the-harness-log)."""

from __future__ import annotations

import platform
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.paths import checkout_root


@lru_cache(maxsize=4)  # git status costs subprocesses; the code does not change mid-process
def code_provenance(root: Path | None = checkout_root()) -> dict[str, Any]:
    if root is None:  # installed from a wheel: no repository to ask
        return {"git_commit": None, "git_dirty": None}
    try:
        import git

        repo = git.Repo(root)
        commit = repo.head.commit.hexsha if repo.head.is_valid() else None
        return {"git_commit": commit, "git_dirty": repo.is_dirty(untracked_files=False)}
    except Exception:  # not a repository, or git missing: provenance says so
        return {"git_commit": None, "git_dirty": None}


def run_provenance(
    *,
    skills_version: str,
    prompts_version: str,
    skills_sha: str,
    prompts_sha: str,
    benchmark_hash: str,
    models: dict[str, str],
    sampling: dict[str, Any],
    simulated: bool,
) -> dict[str, Any]:
    return {
        **dict(code_provenance()),
        "python": platform.python_version(),
        "skills_version": skills_version,
        "skills_sha256": skills_sha,
        "prompts_version": prompts_version,
        "prompts_sha256": prompts_sha,
        "benchmark_sha256": benchmark_hash,
        "models": models,
        "sampling": sampling,
        "simulated_model": simulated,
    }
