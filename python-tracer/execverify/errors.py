"""Errors shared across the package: a leaf that imports nothing of ours."""

from __future__ import annotations


class OpError(Exception):
    """A worker op failed in a way the caller can act on (code is snake_case)."""

    def __init__(self, code: str, message: str):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


class JobError(OpError):
    """A trace job that cannot start (bad entry, syntax error, missing file):
    an op error with the same code, which the worker answers as it is."""


class IsolationUnavailable(RuntimeError):
    """Model answers would run without an OS sandbox and the user did not opt in
    (EXECVERIFY_ALLOW_UNISOLATED=1)."""


class WorkerError(RuntimeError):
    """The sandboxed worker a trainer process talks to failed or answered an error."""
