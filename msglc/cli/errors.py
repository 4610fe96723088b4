"""The command line's own errors: each is reported as one line on stderr."""

from __future__ import annotations


class CliError(Exception):
    """A problem to report in one line (exit status 1)."""


class UsageError(CliError):
    """Arguments that do not fit together, found after parsing (exit status 2, as argparse's)."""
