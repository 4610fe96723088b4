"""The ``msglc`` command line (``msglc.cli.main``), built on the public API only."""
