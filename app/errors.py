"""Errors a user can act on. The CLI prints their message as one line, no traceback."""


class UserError(Exception):
    """Bad input or a refused request: exit code 2."""

    exit_code = 2


class RunFailed(Exception):
    """A run started but could not finish (infrastructure, budget): exit code 1."""

    exit_code = 1
