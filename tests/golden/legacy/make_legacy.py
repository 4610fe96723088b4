"""Write the legacy fixtures: archives made by the *published* msglc (PyPI 261017), each with its
expected value as plain msgpack, plus expected_index.json describing them.

Run with an interpreter that has the published package installed (never this repository's):

    /tmp/legacy/venv/bin/python tests/golden/legacy/make_legacy.py

The data is seeded and the published writer is deterministic, so a rerun rewrites the same bytes.
Decode an expected file with ``msgpack.unpackb(data, strict_map_key=False, timestamp=3)``.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import random
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import cbor2
import msgpack
import numpy as np

import msglc  # the published package, from the interpreter's site-packages
from msglc import FileInfo, LazyReader, append, combine, dump, to_obj
from msglc.config import Config, config, configure

CBORCodec = msglc.codec.CBORCodec  # type: ignore[attr-defined]  # a module this repository's msglc does not have

OUT = Path(__file__).resolve().parent
PUBLISHED = "261017"
UTC = datetime.timezone.utc
Keys = list[str | int]  # a path to a value: dict keys and list indices

if version("msglc") != PUBLISHED or not hasattr(msglc, "LazyCombiner"):
    sys.exit(f"needs the published msglc {PUBLISHED}, found {version('msglc')} at {msglc.__file__}")


def reset() -> None:
    """Every archive starts from the published defaults; the writer reads the global config."""
    defaults = Config()
    for field in dataclasses.fields(Config):
        setattr(config, field.name, getattr(defaults, field.name))


def set_threshold(threshold: int) -> None:
    """64 and up go through configure() as a user would; 0, 1 and 16 are set on the config object
    as the published tests do (configure() refuses 0)."""
    reset()
    if threshold >= 64:
        configure(small_obj_optimization_threshold=threshold)
    else:
        config.small_obj_optimization_threshold = threshold
    assert config.small_obj_optimization_threshold == threshold


def plain(obj: Any) -> Any:
    """The value the published writer stores for obj, as the msgpack package can encode it."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, set):
        return [plain(v) for v in sorted(obj)]
    if isinstance(obj, datetime.datetime):
        return obj.astimezone(UTC) if obj.tzinfo else obj.isoformat()  # msgspec: naive ones as ISO strings
    return obj


def pack(value: Any) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True, datetime=True)
    return packed


def same(a: Any, b: Any) -> bool:
    """Equal through msgpack (so 1 vs True, list vs tuple cannot hide a difference)."""
    return pack(a) == pack(b) and a == b


# ---- data -------------------------------------------------------------------------------------


def document() -> dict[str, object]:
    """A JSON-like document of 400 records, the same at every threshold."""
    rng = random.Random(17)
    tags = ["red", "green", "blue", "fast", "slow", "new", "old", "beta"]
    records: list[dict[str, Any]] = []
    for i in range(400):
        records.append(
            {
                "id": i,
                "name": f"record-{i:04d}",
                "score": round(rng.uniform(0, 100), 3),
                "tags": rng.sample(tags, rng.randint(0, 3)),
                "params": {
                    "alpha": round(rng.random(), 6),
                    "depth": rng.randint(1, 12),
                    "mode": rng.choice(["fast", "exact", "auto"]),
                    "enabled": rng.random() < 0.5,
                    "limits": [rng.randint(-1000, 1000) for _ in range(rng.randint(0, 4))],
                },
            }
        )
        if i % 40 == 7:  # a few records over 1 KB, so that 1024 and 8192 index differently
            records[-1]["history"] = [[rng.randint(0, 10**6), round(rng.random(), 4)] for _ in range(90)]
    return {
        "title": "legacy fixture",
        "version": 3,
        "records": records,
        "summary": {"count": 400, "best": max(r["score"] for r in records), "unit": None},
        "digest": hashlib.sha256(b"legacy").digest(),
    }


def dict_root() -> dict[str | int, object]:
    return {
        "name": "dict root",
        1: "int key one",
        2: {"nested": [1, 2, 3], "text": "y" * 40},
        -7: [None, True, False],
        "small_ints": list(range(300)),  # all trivial: a blocked list
        "points": [{"x": i, "y": -i} for i in range(60)],  # small dicts are trivial too: blocked
        "floats": [i / 8 for i in range(40)],
        "big": 2**64 - 1,
        "neg": -(2**63),
        "inf": float("inf"),
        "pair": (1, "two"),  # stored as a list
        "set": {3, 1, 2},  # stored as a sorted list
        "bin": bytes(range(32)),
        "deep": {"a": {"b": {"c": {"d": "bottom" * 10}}}},
        "": "empty key",  # published paths skip empty segments: reachable only by iterating
    }


def list_root() -> list[object]:
    return [
        "alpha",
        42,
        3.5,
        None,
        True,
        b"\x00\x01\xff",
        {"k": "v" * 50, "n": [1, 2]},
        [[1, 2], [3, 4, 5]],
        "z" * 100,
        list(range(100)),
        {},
        [],
    ]


def numbers() -> list[float]:
    return [i * 7 if i % 3 else i / 4 for i in range(600)]


def nested() -> dict[str, object]:
    return {
        "a": 1,
        "b": [1, 2, 3],
        "c": {"d": "x" * 30, "e": [[1, 2], [3]], "f": []},
        "g": {},
        "s": "short",
        "n": None,
    }


def dates() -> dict[str, object]:
    when = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    return {
        "aware": when,
        "plus_two": datetime.datetime(2024, 5, 1, 14, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
        "naive": datetime.datetime(2024, 5, 1, 12, 0, 30, 123456),  # msgspec writes an ISO string
        "series": [when + datetime.timedelta(days=d, microseconds=d) for d in range(5)],
    }


def arrays() -> dict[str, object]:
    return {
        "vec": np.arange(50) * 0.25,  # the numpy fast path: blocks of threshold // 9 + 1 floats
        "mat": np.arange(48.0).reshape(3, 16),
        "ints": np.arange(30),
        "one_block": np.arange(8.0),  # 73 bytes: the fast path's single block, {"p": [[8, start, end]]}
    }


# ---- TOC inspection, for the index ------------------------------------------------------------


def header(data: bytes, base: int) -> tuple[str, int, int]:
    fields = data[base + 30 : base + 50]
    if fields[0] == 0:  # ten NULs are 0 (only an empty combination writes that)
        start, size = (msgpack.unpackb(f.lstrip(b"\0")) if f.strip(b"\0") else 0 for f in (fields[:10], fields[10:]))
        return "msgpack", start, size
    return "cbor", cbor2.loads(fields[:10]), cbor2.loads(fields[10:])


def archive_toc(data: bytes, base: int) -> tuple[str, Any]:
    codec, toc_start, toc_size = header(data, base)
    raw = data[base + 50 + toc_start : base + 50 + toc_start + toc_size]
    return codec, msgpack.unpackb(raw, strict_map_key=False) if codec == "msgpack" else cbor2.loads(raw)


def node_shape(node: dict[str, Any]) -> str:
    if "p" not in node:
        return "combined-list" if isinstance(node["t"], list) else "combined-dict"
    if "t" in node:
        return "indexed-list" if isinstance(node["t"], list) else "indexed-dict"
    p = node["p"]
    return "leaf" if len(p) == 2 and all(isinstance(x, int) for x in p) else "blocked"


def count_nodes(data: bytes, base: int, node: Any, counts: dict[str, int]) -> None:
    """Node shapes in the whole file, members of combined archives included."""
    if isinstance(node, int):  # a member archive
        member = base + 50 + node
        counts["archive"] = counts.get("archive", 0) + 1
        _, toc = archive_toc(data, member)
        count_nodes(data, member, toc, counts)
        return
    shape = node_shape(node)
    counts[shape] = counts.get(shape, 0) + 1
    children = node.get("t")
    for child in children.values() if isinstance(children, dict) else children or []:
        count_nodes(data, base, child, counts)


def lookup(value: Any, path: Keys) -> Any:
    for key in path:
        value = value[key]
    return value


# ---- writing ----------------------------------------------------------------------------------

INDEX: list[dict[str, Any]] = []


def record(name: str, kind: str, threshold: int | None, value: Any, paths: list[Keys], **extra: Any) -> None:
    """Check the archive with the published reader, write its expected value, add it to the index."""
    path = OUT / name
    data = path.read_bytes()
    codec, toc = archive_toc(data, 0)
    counts: dict[str, int] = {}
    empty = toc["t"] is None if "p" not in toc else False  # combine() of no files
    if not empty:
        count_nodes(data, 0, toc, counts)
    entry: dict[str, Any] = {
        "file": name,
        "kind": kind,
        "threshold": threshold,
        "codec": codec,
        "size": len(data),
        "root_node": None if empty else node_shape(toc),
        "nodes": counts,
    }
    if value is not None:
        reset()
        with LazyReader(str(path)) as reader:
            assert same(plain(reader.to_obj()), value), name
            for p in paths:
                assert same(plain(to_obj(reader.read(p))), lookup(value, p)), (name, p)
        expected = name.removesuffix(".msg") + ".expected.msgpack"
        (OUT / expected).write_bytes(pack(value))
        entry["expected"] = expected
        entry["paths"] = paths
    else:
        entry["expected"] = None
    entry.update(extra)
    INDEX.append(entry)
    print(f"{name:32} {len(data):7} bytes  {kind:13} thr={threshold!s:5} root={entry['root_node']}  nodes={counts}")


def write(name: str, obj: Any, threshold: int, **kwargs: Any) -> str:
    set_threshold(threshold)
    dump(str(OUT / name), obj, **kwargs)
    reset()
    return name


def combined(name: str, members: list[tuple[str | None, FileInfo]], **kwargs: Any) -> str:
    reset()
    combine(str(OUT / name), [info for _, info in members], **kwargs)
    return name


def member(file: str, key: str | None = None) -> FileInfo:
    return FileInfo(str(OUT / file), key)


def main() -> None:
    for old in [*OUT.glob("*.msg"), *OUT.glob("*.expected.msgpack")]:
        old.unlink()
    values: dict[str, Any] = {}

    doc_paths: list[Keys] = [
        ["title"],
        ["records", 321, "params", "mode"],
        ["records", 0],
        ["records", 47, "history", 89, 1],
    ]
    doc_paths.append(["digest"])
    for threshold in (64, 1024, 8192):
        name = write(f"doc-t{threshold}.msg", document(), threshold)
        values[name] = plain(document())
        record(name, "dict", threshold, values[name], doc_paths, lazy_path=["records", 321, "params", "mode"])

    name = write("dict-root-t64.msg", dict_root(), 64)
    values[name] = plain(dict_root())
    dict_paths: list[Keys] = [
        [1],
        [-7, 1],
        ["small_ints", 257],
        ["points", 33, "y"],
        ["deep", "a", "b", "c", "d"],
        ["bin"],
    ]
    record(name, "dict", 64, values[name], dict_paths)

    name = write("list-root-t64.msg", list_root(), 64)
    values[name] = plain(list_root())
    record(name, "list", 64, values[name], [[0], [5], [6, "k"], [7, 1, 2], [9, 99], [11]])

    scalars: list[tuple[str, object, list[Keys]]] = [
        ("scalar-str.msg", "a legacy string, ünïcode ✓", [[]]),
        ("scalar-int.msg", -123456789, [[]]),
        ("empty-dict.msg", {}, [[]]),
        ("empty-list.msg", [], [[]]),
    ]
    for name, obj, paths in scalars:
        write(name, obj, 8192)
        values[name] = plain(obj)
        kind = "dict" if isinstance(obj, dict) else "list" if isinstance(obj, list) else "scalar"
        record(name, kind, 8192, values[name], paths)

    for threshold in (64, 1024):
        name = write(f"blocked-list-t{threshold}.msg", numbers(), threshold)
        values[name] = plain(numbers())
        record(name, "list", threshold, values[name], [[0], [1], [299], [599], [-1]])

    nested_paths: list[Keys] = [["b", 2], ["c", "d"], ["c", "e", 0, 1], ["c", "e", 1], ["g"], ["n"]]
    for threshold in (0, 1, 16):
        name = write(f"nested-t{threshold}.msg", nested(), threshold)
        values[name] = plain(nested())
        record(name, "dict", threshold, values[name], nested_paths)
    name = write("nested-t1-rust.msg", nested(), 1, backend="rust")
    values[name] = plain(nested())
    record(name, "dict", 1, values[name], nested_paths, writer="rust", note="same value, the Rust writer's grouping")

    name = write("numpy-t64.msg", arrays(), 64)
    values[name] = plain(arrays())
    record(name, "dict", 64, values[name], [["vec", 49], ["mat", 2, 15], ["ints", 29], ["one_block", 7]])

    name = write("datetime-t8192.msg", dates(), 8192)
    values[name] = plain(dates())
    record(name, "dict", 8192, values[name], [["aware"], ["plus_two"], ["naive"], ["series", 4]])

    # combined archives: members are the fixtures above, copied byte for byte
    parts = [("dict", "dict-root-t64.msg"), ("list", "list-root-t64.msg"), ("int", "scalar-int.msg")]
    parts.append(("doc", "doc-t1024.msg"))
    name = combined("combined-dict.msg", [(k, member(f, k)) for k, f in parts])
    values[name] = {k: values[f] for k, f in parts}
    paths = [["dict", 1], ["list", 6, "k"], ["int"], ["doc", "records", 321, "params", "mode"]]
    record(name, "combined-dict", None, values[name], paths, members={k: f for k, f in parts})

    files = ["nested-t16.msg", "blocked-list-t64.msg", "empty-dict.msg"]
    name = combined("combined-list.msg", [(None, member(f)) for f in files])
    values[name] = [values[f] for f in files]
    record(name, "combined-list", None, values[name], [[0, "c", "d"], [1, 599], [2]], members=files)

    small = [("one", {"x": 1}), ("three", [1, 2, 3]), ("none", None)]
    name = combined("combined-small-member.msg", [(k, FileInfo(None, k, obj=v)) for k, v in small])
    values[name] = {k: v for k, v in small}
    record(name, "combined-dict", None, values[name], [["one", "x"], ["three", 2], ["none"]], members=None)

    outer = [("lists", "combined-list.msg"), ("small", "combined-small-member.msg"), ("str", "scalar-str.msg")]
    name = combined("combined-nested.msg", [(k, member(f, k)) for k, f in outer])
    values[name] = {k: values[f] for k, f in outer}
    paths = [["lists", 0, "c", "e", 0, 1], ["lists", 1, 10], ["small", "three", 0], ["str"]]
    record(name, "combined-dict", None, values[name], paths, members={k: f for k, f in outer})

    name = combined("combined-appended.msg", [("t0", member("nested-t0.msg", "t0"))])
    append(str(OUT / name), [member("nested-t1.msg", "t1"), FileInfo(None, "obj", obj={"made": "from obj"})])
    append(str(OUT / name), member("datetime-t8192.msg", "dates"))
    values[name] = {"t0": values["nested-t0.msg"], "t1": values["nested-t1.msg"], "obj": {"made": "from obj"}}
    values[name]["dates"] = values["datetime-t8192.msg"]
    paths = [["t0", "c", "d"], ["t1", "b", 0], ["obj", "made"], ["dates", "aware"]]
    members = {"t0": "nested-t0.msg", "t1": "nested-t1.msg", "obj": None, "dates": "datetime-t8192.msg"}
    record(name, "combined-dict", None, values[name], paths, members=members, note="combine, then append twice")

    # negative fixtures: no expected value
    name = write("cbor-unsupported.msg", {"a": 1, "b": [1, 2], "c": "w" * 70}, 64, packer=CBORCodec)
    record(name, "dict", 64, None, [], error="CBOR archive: the published CBORCodec; readers refuse it")
    name = combined("combined-cbor-member.msg", [(None, member("scalar-int.msg")), (None, member(name))])
    note = "member 0 (scalar-int.msg) reads; member 1 is CBOR and is refused when reached"
    record(name, "combined-list", None, None, [], members=["scalar-int.msg", "cbor-unsupported.msg"], error=note)
    name = combined("combined-empty.msg", [])
    note = (
        "combine() of no files: TOC {'t': None}, toc_start 0 written as ten NULs; the published reader cannot open it"
    )
    record(name, "combined-empty", None, None, [], error=note)

    index = {
        "package": f"msglc {PUBLISHED} (PyPI), msgspec {version('msgspec')}",
        "decode_expected": "msgpack.unpackb(data, strict_map_key=False, timestamp=3)",
        "fixtures": INDEX,
    }
    rows = ",\n  ".join(json.dumps(entry, ensure_ascii=False) for entry in INDEX)  # one fixture a line
    head = json.dumps({k: v for k, v in index.items() if k != "fixtures"}, ensure_ascii=False)[:-1]
    (OUT / "expected_index.json").write_text(f'{head},\n "fixtures": [\n  {rows}\n ]\n}}\n')
    assert json.loads((OUT / "expected_index.json").read_text()) == index
    total = sum(p.stat().st_size for p in OUT.iterdir() if p.is_file())
    print(f"wrote {len(INDEX)} archives and expected_index.json to {OUT} ({total} bytes in the folder)")


if __name__ == "__main__":
    main()
