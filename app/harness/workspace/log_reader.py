"""Kept only for the API and CLI modules (app/api/best_of_n.py, app/api/run_ids.py,
app/api/training.py, app/cli/list.py, app/cli/train.py), split from app/api.py and the command
modules while the harness log moved; everything else imports
app.harness.workspace.harness_log. Goes once those modules import the package."""

from app.harness.workspace.harness_log import LogReader, open_reader

__all__ = ["LogReader", "open_reader"]
