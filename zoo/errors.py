"""Errors a user can act on: the command lines print them as one line and exit with status 2.

This module is the lowest floor of the package (it imports nothing of the zoo), so every layer can raise
these without importing a higher one.
"""


class UserError(Exception):
    """A mistake in what the user asked for (an option, a file, a run directory): one line, exit 2."""


class TrainError(UserError):
    """A user-facing error of training or evaluation (unknown model or setting, data, run directory)."""


class ConfigError(TrainError, ValueError):
    """A run configuration that cannot be right (an unknown setting, a value of the wrong kind or range).

    A `ValueError` as well, so that code catching a `ValueError` (an unknown model's) catches it too.
    """


class TrainInterrupted(TrainError):
    """The user stopped training (Ctrl-C); the run resumes from its last finished epoch (exit status 130)."""
