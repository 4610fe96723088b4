"""``python -m msglc``: the command line (see ``msglc.cli``)."""

from msglc.cli.main import main

raise SystemExit(main())
