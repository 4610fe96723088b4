"""``python -m msglc``: the command line (see ``msglc.cli``)."""

from msglc.cli import main

raise SystemExit(main())
