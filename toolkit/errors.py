"""The one exception type that reaches the user as a single line, never a traceback."""


class DnnbenchError(Exception):
    """A user-facing failure: bad input, a missing engine, a failed build or run.

    `log` names a file that holds the details (a build log, a run log) when there is one;
    `details` are lines printed under the error line (a failed build's cause, a hint).
    """

    def __init__(self, message: str, *, log: str | None = None, exit_code: int = 2, details: list | None = None):
        super().__init__(message)
        self.log = log
        self.exit_code = exit_code
        self.details = list(details or [])


class EngineUnavailable(DnnbenchError):
    """The container engine itself cannot be reached: nothing that needs it can go on."""
