"""Kept only for app/api.py, which is being split concurrently and imports `RunStatus` from
here; everything else imports app.harness.workspace.harness_log. Goes once it does too."""

from app.harness.workspace.harness_log import RunStatus

__all__ = ["RunStatus"]
