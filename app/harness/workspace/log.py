"""Kept only for app/api/checkers.py, split from app/api.py while the harness log moved, which
imports `RunStatus` from here; everything else imports app.harness.workspace.harness_log. Goes
once it does too."""

from app.harness.workspace.harness_log import RunStatus

__all__ = ["RunStatus"]
