import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from archives import write_runs
from hypothesis import settings

settings.register_profile("ci", max_examples=150, deadline=None)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A directory with run1.mlc (RUN1, with TOC nodes) and run2.mlc (RUN2, small)."""
    return write_runs(tmp_path)


@pytest.fixture(scope="session")
def s3_options() -> Iterator[dict[str, Any]]:
    """One S3 server (moto, on loopback) for the whole session, started by the first test that
    asks for it (in each xdist worker): the storage options that reach it. Every user keeps to
    buckets of its own, made with ``tools.remote.s3_bucket``, which removes them afterwards."""
    from tools.remote import s3_server

    with s3_server() as options:
        yield options
