"""``python -m msglc``: the command line (see ``msglc.cli``)."""

from .cli import main

raise SystemExit(main())
