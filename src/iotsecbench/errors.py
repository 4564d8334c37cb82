"""Errors a user can cause or fix, each ending the program with one line and a documented exit code.

Anything that is not a ``UserError`` is a bug and keeps its traceback
(see ``docs/reliability.md`` for the exit-code contract).
"""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix; printed as one line, no traceback."""

    exit_code = 2


class SpecError(UserError):
    """Bad experiment specification or command-line usage (exit 2)."""

    exit_code = 2


class EnvironmentProblem(UserError):
    """The machine lacks something: a binary, a permission, a free port, disk space (exit 3)."""

    exit_code = 3


class MissingBinaryError(EnvironmentProblem):
    """A required program is not installed."""


class PortBusyError(EnvironmentProblem):
    """A network port could not be bound."""


class NoPermissionError(EnvironmentProblem):
    """The operation needs privileges this process does not have."""


class StoreBusyError(EnvironmentProblem):
    """The results database is held by another process."""


class DataError(UserError):
    """Corrupt or inconsistent input data or results store (exit 4)."""

    exit_code = 4


class Interrupted(UserError):
    """The user interrupted the experiment (exit 130)."""

    exit_code = 130
