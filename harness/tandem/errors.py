"""The one error type the CLI reports as a clean message instead of a traceback."""


class TandemError(Exception):
    """A problem the user can fix: bad input, missing build, failed boot."""
