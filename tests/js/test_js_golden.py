"""The golden archives read by both implementations, every path compared: what ``msglc-js
get`` prints (msgpack bytes, JSON) against what ``msglc get`` prints, and the JavaScript
``reader.read(path)`` against Python's ``reader[path]``."""

from __future__ import annotations

from pathlib import Path

from jsread import (
    PY_ERRORS,
    all_paths,
    cli_answer,
    differences,
    expected_at,
    js_read_many,
    plain_answer,
    same_cli,
)

import msglc

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
ARCHIVES = sorted(GOLDEN.rglob("*.mlc"))


def _report(problems: list[str], total: int) -> None:
    assert not problems, f"{len(problems)} of {total} paths differ:\n" + "\n".join(problems[:20])


def test_the_command_lines_forms_of_every_golden_value(tmp_path):
    """msglc-js's own msgpack and JSON forms (from stored bytes, no reader involved) of every
    value of every golden archive's data section, against the Python command's forms of the
    same value read whole."""
    problems: list[str] = []
    total = 0
    plan = []
    for i, archive in enumerate(ARCHIVES):
        with msglc.LazyReader(str(archive)) as r:
            data = tmp_path / f"{i}-{archive.stem}.msgpack"
            data.write_bytes(b"".join(bytes(c) for c in r.iter_protocol_raw_data()))
            paths = all_paths(r)
            expected = []
            for p in paths:
                try:
                    expected.append(plain_answer(r[p]))
                except (KeyError, IndexError, TypeError, ValueError) as e:
                    expected.append({"error": next(n for c, n in PY_ERRORS.items() if isinstance(e, c))})
        plan.append((archive, data, paths, expected))
    answers = js_read_many([data for _, data, _, _ in plan], [paths for _, _, paths, _ in plan], "--data")
    for (archive, _, paths, expected), got in zip(plan, answers, strict=True):
        for p, want, have in zip(paths, expected, got["lines"], strict=True):
            total += 1
            diff = same_cli(want, have)
            if diff:
                problems.append(f"{archive.relative_to(GOLDEN)} {p!r}: {diff}")
    _report(problems, total)


def test_both_readers_agree_on_every_golden_path():
    """Every path of every golden archive (1.5 and 2.2, paged lists among them, and the
    earlier 1.1, 1.3, 1.4, 2.0 and 2.1): the two command lines print the same msgpack bytes
    and equal JSON, and the two libraries read equal values."""
    plan = [expected_at(archive, all_paths) for archive in ARCHIVES]
    answers = js_read_many([a for a, *_ in plan], [paths for _, paths, *_ in plan], "--api", timeout=120)
    _report(*differences(plan, answers, lambda archive: str(archive.relative_to(GOLDEN))))


def test_every_golden_folder_is_read():
    """The archives of every version's folder, and the current version's paged lists (node
    types 11 and 12), are among those both readers read."""
    folders = {p.parent.relative_to(GOLDEN).as_posix() for p in ARCHIVES}
    assert {".", "1.1", "1.3", "1.4", "2.0", "2.1"} <= folders
    assert {GOLDEN / "paged-list.mlc", GOLDEN / "paged-list-zstd.mlc"} <= set(ARCHIVES)


def test_several_archives_in_one_process():
    """The batch form the damaged-archive test uses gives the same answers as one archive."""
    archives = [GOLDEN / "hash-dict.mlc", GOLDEN / "tiled-zstd.mlc"]
    paths = ["", "0", "key-7", "f8/3/4", "no/such"]
    answers = js_read_many(archives, paths)
    for archive, got in zip(archives, answers, strict=True):
        with msglc.LazyReader(str(archive)) as r:
            cli = [cli_answer(r, p) for p in paths]
        diffs = [d for want, have in zip(cli, got["lines"], strict=True) if (d := same_cli(want, have))]
        assert not diffs, (archive.name, diffs[:5])
