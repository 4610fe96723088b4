"""Golden files: small archives of every node type, checked in as bytes. Writers must keep
producing exactly these bytes, and readers must keep reading them: the format is a promise
to archives already in cold storage. Regenerate only with a format change that
docs/format.md describes: ``python tests/test_golden.py --write``, after moving the current
files into a folder named for their version (``golden/1.1``: written before node type 6),
which readers must keep reading too."""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import msglc
from msglc import FileInfo, Pairs

GOLDEN = Path(__file__).with_name("golden")
EARLIER = ["1.1", "1.3", "1.4", "2.0", "2.1"]  # the versions writers wrote before, kept in golden/<version>/


def _objects() -> dict[str, Any]:
    return {
        "scalar": 3.25,
        "small-dict": {"a": 1, "b": [True, None, "x"], "c": b"\x00\xff"},
        "block-list": [{"id": i, "tag": "t" * (i % 7)} for i in range(400)],
        "inline-dict": {f"k{i}": list(range(i % 40)) for i in range(60)},
        "hash-dict": {f"key-{i}": i * i for i in range(1200)},
        "matrix": [[float(i * 31 + j) for j in range(40)] for i in range(40)],
        "int-keys": {i: str(i) for i in range(300)},
    }


def _numpy_objects() -> dict[str, Any]:
    np = pytest.importorskip("numpy")
    return {
        "numpy": {
            "f8": np.arange(600, dtype="<f8").reshape(20, 30),
            "i2": np.arange(-50, 50, dtype=">i2"),
            "u": np.array(["ab", "c"] * 100, dtype="<U2"),
            "rec": np.zeros(50, dtype=[("x", "<f4"), ("n", "<i8")]),
            "scalar": np.float32(1.5),
        }
    }


def _tiled_objects() -> dict[str, Any]:
    """Arrays stored tile by tile (format 2.1), with tiles clipped at the far edges."""
    np = pytest.importorskip("numpy")
    return {
        "f8": np.arange(600, dtype="<f8").reshape(20, 30),
        "u2": np.arange(37 * 11, dtype=">u2").reshape(37, 11),
        "c": np.arange(8 * 7, dtype="<i4").reshape(8, 7),  # one tile: C order
    }


def _paged_list() -> list[Any]:
    """A list of more than 1024 spans at threshold 8 (node type 11, in 3 pages), two items of
    it with nodes of their own, in the first page and the last."""
    items: list[Any] = [i if i % 2 else f"s{i}" for i in range(2600)]
    items[100] = {"k": 100, "v": [1, 2, 3]}
    items[2500] = [["x"] * 3, {"y": 2}]
    return items


# writer options (msglc takes them as **options: Any)
ZSTD: dict[str, Any] = {"compression": "zstd"}
PAGED: dict[str, Any] = {"small_obj_optimization_threshold": 8}


def _archive(name: str) -> bytes:
    """The archive ``name`` as this msglc writes it."""
    small: dict[str, Any] = {"small_obj_optimization_threshold": 64}
    if name.endswith("-zstd"):  # the same, compressed
        return _compressed(name[: -len("-zstd")], small)
    objects = _objects()
    if name in objects:
        return msglc.dumps(objects[name], **small)
    if name == "numpy":
        return msglc.dumps(_numpy_objects()["numpy"], **small)
    if name == "paged-list":
        return msglc.dumps(_paged_list(), **PAGED)
    if name == "combined":
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "combined.mlc"
            msglc.combine(
                path,
                [
                    FileInfo(_archive("block-list"), "runs"),
                    FileInfo(_archive("matrix"), "m"),
                    FileInfo(None, "x", obj=1),
                ],
            )
            return path.read_bytes()
    if name == "appended":  # in place, twice: the header names the end, slack follows it
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "appended.mlc"
            msglc.combine(path, [FileInfo(_archive("hash-dict"), "h"), FileInfo(None, "x", obj=1)])
            msglc.append(path, [FileInfo(None, "y", obj=[1, 2])])
            msglc.append(path, [FileInfo(_archive("block-list"), "z")])
            return path.read_bytes()
    if name == "streamed":
        out = io.BytesIO()
        with msglc.LazyWriter(out, **small) as w:
            w.write({"gen": (i * 2 for i in range(500)), "pairs": Pairs((f"p{i}", [i]) for i in range(100))})
        return out.getvalue()
    raise KeyError(name)


def _compressed(name: str, small: dict[str, Any]) -> bytes:
    if name in ("block-list", "hash-dict", "matrix"):
        return msglc.dumps(_objects()[name], **small, **ZSTD)
    if name == "numpy":
        return msglc.dumps(_numpy_objects()["numpy"], **small, **ZSTD)
    if name == "tiled":
        return msglc.dumps(_tiled_objects(), **small, **ZSTD, tiles=(8, 7))
    if name == "paged-list":
        return msglc.dumps(_paged_list(), **PAGED, **ZSTD)
    if name == "sorted-dict":  # order="sorted": the big dict indexed by its blocks' first keys (type 9)
        return msglc.dumps(dict(reversed(_objects()["hash-dict"].items())), **small, **ZSTD, order="sorted")
    if name == "streamed":
        out = io.BytesIO()
        with msglc.LazyWriter(out, **small, **ZSTD) as w:
            w.write({"gen": (i * 2 for i in range(500)), "pairs": Pairs((f"p{i}", [i]) for i in range(100))})
        return out.getvalue()
    if name == "combined":  # compressed inputs: their frames copied
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "combined.mlc"
            msglc.combine(
                path,
                [FileInfo(_archive("block-list-zstd"), "runs"), FileInfo(_archive("matrix-zstd"), "m")],
            )
            return path.read_bytes()
    raise KeyError(name)


COMPRESSED = [
    "block-list-zstd",
    "paged-list-zstd",
    "hash-dict-zstd",
    "sorted-dict-zstd",
    "matrix-zstd",
    "numpy-zstd",
    "tiled-zstd",
    "streamed-zstd",
    "combined-zstd",
]
NAMES = [*_objects(), "numpy", "paged-list", "combined", "streamed", "appended", *COMPRESSED]


def _expected(name: str):
    if name == "combined-zstd":
        return {"runs": _objects()["block-list"], "m": _objects()["matrix"]}
    name = name.removesuffix("-zstd")
    if name == "paged-list":
        return _paged_list()
    if name == "sorted-dict":
        return _objects()["hash-dict"]
    if name in _objects():
        return _objects()[name]
    if name == "combined":
        return {"runs": _objects()["block-list"], "m": _objects()["matrix"], "x": 1}
    if name == "appended":
        return {"h": _objects()["hash-dict"], "x": 1, "y": [1, 2], "z": _objects()["block-list"]}
    if name == "streamed":
        return {"gen": [i * 2 for i in range(500)], "pairs": {f"p{i}": [i] for i in range(100)}}
    return None


@pytest.mark.parametrize("name", NAMES)
def test_writers_keep_writing_the_golden_bytes(name):
    assert _archive(name) == (GOLDEN / f"{name}.mlc").read_bytes()


# every golden file of this version, and those of earlier versions (which lack the kinds added since)
FILES = [(name, folder) for folder in (".", *EARLIER) for name in NAMES if (GOLDEN / folder / f"{name}.mlc").exists()]


def test_every_kind_has_a_golden_file():
    assert {name for name, folder in FILES if folder == "."} == set(NAMES)


@pytest.mark.parametrize("folder", EARLIER)
def test_each_earlier_folder_holds_archives_of_its_version(folder):
    # golden/2.0/ pins the reading of format 2.0 only while its files are 2.0: a file rewritten
    # by today's writer (2.1) would pass the reading test and pin nothing of 2.0
    files = sorted((GOLDEN / folder).glob("*.mlc"))
    assert files
    for path in files:
        with msglc.LazyReader(path) as r:
            assert ".".join(map(str, r.info().version)) == folder, path.name


@pytest.mark.parametrize(("name", "folder"), FILES)
def test_readers_keep_reading_the_golden_files(name, folder):
    with msglc.LazyReader(GOLDEN / folder / f"{name}.mlc") as r:
        r.verify()
        value = r.to_obj()
    expected = _expected(name)
    if name == "tiled-zstd":
        np = pytest.importorskip("numpy")
        assert value.keys() == _tiled_objects().keys()
        for key, want in _tiled_objects().items():
            assert np.array_equal(value[key], want) and value[key].dtype == want.dtype
            with msglc.LazyReader(GOLDEN / folder / f"{name}.mlc") as r:
                assert np.array_equal(r[key][3:, 5:9], want[3:, 5:9])
    elif expected is not None:
        assert value == expected
    else:
        np = pytest.importorskip("numpy")
        for key, want in _numpy_objects()["numpy"].items():
            if isinstance(want, np.generic):  # stored as the plain value it equals
                assert value[key] == want and type(value[key]) is float
            else:
                assert np.array_equal(value[key], want) and value[key].dtype == want.dtype


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    GOLDEN.mkdir(exist_ok=True)
    for name in NAMES:
        (GOLDEN / f"{name}.mlc").write_bytes(_archive(name))
        print(f"wrote {name}.mlc")
