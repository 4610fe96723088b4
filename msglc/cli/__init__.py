"""The ``msglc`` command line: ``msglc.cli.main(argv)`` runs it (the console script and
``python -m msglc`` call it); the commands are in ``msglc.cli.commands``."""

from msglc.cli.commands import main

__all__ = ["main"]
