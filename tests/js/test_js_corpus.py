"""A generated corpus (tests/js/corpus.py: every node kind, thresholds 0 to 8192, NumPy arrays
of every dtype and byte order, compressed, sorted, combined, appended, streamed) read by both
implementations at thousands of random paths, existing and missing, compared value by value:
the two command lines' msgpack bytes and JSON, and the two libraries' values."""

from __future__ import annotations

import random

import pytest
from corpus import write_corpus
from jsread import differences, expected_at, js_cli_many, js_read_many, py_cli, random_paths

PATHS_PER_ARCHIVE = 250


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.mark.parametrize("half", [0, 1])
def test_both_readers_agree_on_random_paths_of_the_corpus(corpus, half):
    """Half of the corpus a test, so that the two test processes share the work."""
    archives = corpus[half::2]
    rng = random.Random(7 + half)
    plan = [expected_at(archive, lambda r: random_paths(r, rng, PATHS_PER_ARCHIVE)) for archive in archives]
    problems, total = differences(plan, _read(plan), lambda archive: archive.name)
    assert total >= 1500  # per half: thousands in all
    assert not problems, f"{len(problems)} of {total} paths differ:\n" + "\n".join(problems[:20])


def test_msglc_js_info_and_ls_print_what_msglc_prints(corpus):
    """Byte for byte, for every archive of the corpus (node counts, sizes, compression,
    free space and slack after append; the root's children)."""
    problems = []
    commands = [(command, str(archive)) for archive in corpus for command in ("info", "ls")]
    for args, js in zip(commands, js_cli_many(commands), strict=True):
        py = py_cli(*args)
        if py[:2] != js[:2]:
            problems.append(
                f"{' '.join(args)}: status {js[0]} ({js[2].strip()})\nPython:\n{py[1].decode()}\nJS:\n{js[1].decode()}"
            )
    assert not problems, "\n".join(problems[:5])


def _read(plan):
    """All the archives' paths read by one node process."""
    return js_read_many([a for a, *_ in plan], [paths for _, paths, *_ in plan], "--api", timeout=120)
