"""Only the optional C accelerator lives here; all metadata is in pyproject.toml.

``optional=True``: without a C compiler the build skips it and msglc uses its pure-Python path,
which writes byte-identical archives."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("msglc._speedups", ["msglc/_speedups.c"], optional=True)])
