"""The container side's one user-facing error: bad input found before training starts."""


class UsageError(Exception):
    """Bad input found before training starts: one line, exit 2."""
