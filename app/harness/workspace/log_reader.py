"""Kept only for app/api.py, app/offline_commands.py and app/list_commands.py, which are being
split concurrently and import the reader from here; everything else imports
app.harness.workspace.harness_log. Goes once those modules import the package."""

from app.harness.workspace.harness_log import LogReader, open_reader

__all__ = ["LogReader", "open_reader"]
