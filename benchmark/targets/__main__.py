"""``python -m benchmark.targets``: see the package's docstring (``--help``). The sections'
child processes re-invoke this same module with hidden flags (--make-big, --read-one,
--stream, --stream-floor)."""

from . import main

raise SystemExit(main())
