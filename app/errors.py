"""Errors a user can act on. The CLI prints their message as one line, no traceback."""


class UserError(Exception):
    """Bad input or a refused request: exit code 2."""

    exit_code = 2


def first_leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups from anyio task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class RunFailed(Exception):
    """A run started but could not finish (infrastructure, budget): exit code 1."""

    exit_code = 1
