"""The corpus: valid archives of every kind the writers make, built once per campaign."""

from __future__ import annotations

import io
import os
import random
import tempfile
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import msglc
from msglc import FileInfo
from msglc.format.frames import (
    RAW,
    SHUFFLE,
)
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, Trailer, pack_header, unpack_trailer
from msglc.format.nodes import (
    FuseMapNode,
)
from msglc.format.numpy_ext import find_tiled
from msglc.read.part import archive_of

from . import frames as ff
from .common import decode_data, deep_limit
from .layout import toc_layout
from .values import canon, expect, plain, same

# ---- the corpus ---------------------------------------------------------------------------------


@dataclass
class Sample:
    name: str
    kind: str
    threshold: int
    data: bytes
    truth: Any
    paths: list[Any]
    expected: list[Any]  # per path: the value, or the exception class reading it must raise
    trailer: Trailer
    slack: bool  # holds bytes no reader depends on (free space, TOC past the root)
    truth_canon: bytes | None = None
    live: list[Any] = field(default_factory=list)  # (start, end) of the TOC items the root reaches
    toc: Any = None  # (items, root position) for TOC edits, None if it has no nodes
    plain: bytes | None = None  # a compressed archive's data section, decompressed
    toc_plain: tuple[bytes, tuple[int, int]] | None = None  # ... and its TOC, with its root node
    deep: bool = False  # nested deeper than the default recursion limit
    section: ff.Section | None = None  # a 2.1 archive's compressed section, taken apart
    virtual: bytes | None = None  # ... and the plain archive it holds (its TOC edited as a plain one's)
    vtoc: Any = None  # the virtual archive's TOC items, as ``toc`` (None: no nodes)
    spans: list[Any] = field(default_factory=list)  # 2.1: (start, end, region) of every part of the file
    dict_content: list[bytes] = field(default_factory=list)  # 2.1: its dictionaries' raw content
    big: bool = False  # read without the walks of every item (the other stages read it all)
    cache: dict[str, Any] = field(default_factory=dict)  # what mutations find in it once (``m_value``'s values)

    def region(self, pos: int) -> str:
        if self.spans:  # header | data frames | TOC frames | dictionaries, page tables, index | trailer
            k = bisect_right(self.spans, (pos, 2**63)) - 1
            return str(self.spans[k][2]) if k >= 0 and pos < self.spans[k][1] else "trailer"
        t = self.trailer
        if pos < HEADER_SIZE:
            return "header"
        if pos < t.data_off + t.data_len:
            return "data"
        if pos < t.toc_off:
            return "free"
        if pos < t.toc_off + t.toc_len:
            return "toc" if any(a <= pos < b for a, b in self.live) else "dead"
        return "trailer"


def _rng_values(rng: random.Random, n: int) -> list[Any]:
    pool: list[Callable[[], Any]] = [
        lambda: rng.randrange(-(2**40), 2**40),
        lambda: rng.randrange(128),
        lambda: rng.random() * 1e6 - 5e5,
        lambda: "s" * rng.randrange(0, 40),
        lambda: "ü€" * rng.randrange(0, 5),
        lambda: None,
        lambda: rng.random() < 0.5,
        lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(0, 20))),
        lambda: {"a": rng.randrange(100), "b": [1.5, "x"]},
        lambda: [rng.randrange(10) for _ in range(rng.randrange(0, 8))],
        lambda: 2**64 - 1 - rng.randrange(1000),
        lambda: [],
        lambda: {},
    ]
    return [rng.choice(pool)() for _ in range(n)]


def _docs() -> dict[str, Any]:
    """The corpus values, by kind (deterministic)."""
    rng = random.Random(1234)
    mixed = _rng_values(rng, 200)
    mixed[40] = [float(i) / 3 for i in range(120)]  # large items: nodes of their own at small thresholds
    mixed[150] = {f"in{i}": _rng_values(rng, 3) for i in range(30)}
    inline: dict[Any, Any] = {f"k{i}": v for i, v in enumerate(_rng_values(rng, 50))}
    inline.update({7: "int key", -3: [1, 2, 3], "big": list(range(200)), "sub": {f"s{i}": i * 1.5 for i in range(40)}})
    hashed: dict[Any, Any] = {f"h{i:04}": (i if i % 3 else f"v{i}") for i in range(1100)}
    hashed.update({5000 + i: i for i in range(30)})
    hashed["big1"] = list(range(150))
    hashed["big2"] = {"deep": [f"x{i}" for i in range(60)]}
    special = {
        "empty": [[], {}, "", b"", [[]], [{}]],
        "ints": [0, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, 2**32, -(2**63), 2**64 - 1],
        "floats": [0.0, -0.0, 1e308, -1e-308, float("inf"), float("-inf")],
        "text": ["", "a" * 31, "b" * 32, "c" * 255, "d" * 256, "日本語" * 30],
        "bin": [b"", b"\x00" * 255, b"\xff" * 256],
        "nested": [[[["leaf"]]], {"a": {"b": {"c": {}}}}],
        -1: "negative key",
        0: "zero key",
    }
    deep: Any = {"leaf": list(range(40))}
    for i in range(60):
        deep = {"d": deep, "i": i} if i % 2 else [i, deep, "pad" * 3]
    numpy_doc = {
        "f8": np.arange(600, dtype="<f8").reshape(20, 30) / 7,
        "i2": np.arange(-350, 350, dtype=">i2"),
        "u1": np.arange(256, dtype=np.uint8),
        "small": np.array([[1, 2], [3, 4]], dtype=np.int32),
        "bool": np.array([True, False] * 100),
        "c16": (np.arange(60) + 1j).astype(np.complex128).reshape(3, 4, 5),
        "U5": np.array(["ab", "cdé", "", "hello"] * 20, dtype="<U5"),
        "S3": np.array([b"ab", b"xyz"] * 40, dtype="S3"),
        "rec": np.array([(i, i * 0.5, b"r") for i in range(50)], dtype=[("a", "<i4"), ("b", "<f4"), ("c", "S1")]),
        "dt": np.arange(0, 100, dtype="datetime64[s]"),
        "zero_d": np.array(3.25),
        "empty": np.zeros((0, 4)),
        "scalar": np.float32(1.5),
    }
    names = ["alpha", "beta", "gamma", "delta", "epsilon"]
    records = [  # 300 KB of repetitive JSON-like records: compressed, the writer gives them a dictionary
        {
            "id": i,
            "name": f"{rng.choice(names)}-{i % 97}",
            "score": round(rng.random() * 100, 2),
            "tags": rng.sample(names, 2),
            "ok": i % 3 == 0,
            "meta": {"unit": "m/s", "n": i % 13},
        }
        for i in range(4000)
    ]
    levels, routes = ["INFO", "WARN", "ERROR", "DEBUG"], ["users", "items", "orders", "search"]
    events = [  # another 300 KB of them, in a combined archive: a second dictionary
        {
            "ts": 1_700_000_000 + 7 * i,
            "level": rng.choice(levels),
            "host": f"node-{i % 17:02}",
            "msg": f"request {i % 251} served in {rng.randrange(1, 900)} ms",
            "path": f"/api/v1/{rng.choice(routes)}/{i % 31}",
        }
        for i in range(3000)
    ]
    fused: dict[str, Any] = {  # compressed, a fuse-indexed dict (node type 7) of about a dozen blocks
        f"user{i:05}": {"name": rng.choice(names) * (1 + i % 3), "v": [i, i * 0.5]} for i in range(1500)
    }
    fused["big"] = [f"x{i}" for i in range(300)]  # a value with a node of its own inside the fuse's dict
    return {
        "records": records,
        "fused": fused,
        "events": events,
        "bulk": {"field": np.random.default_rng(5).integers(0, 1000, 300_000), "n": list(range(100))},  # 2.4 MB
        "mixed": mixed,
        "inline": inline,
        "hash": hashed,
        "matrix": [[(i * 50 + j) / 8 for j in range(30)] for i in range(40)],
        "imatrix": [[(i + j) % 100 for j in range(50)] for i in range(50)],
        "strs": [f"{i:06}" for i in range(300)],
        "cube": [[[i + j / 4 + k / 16 for k in range(4)] for j in range(5)] for i in range(6)],
        "lazyrows": [[float(i * j) for j in range(80)] for i in range(12)],
        "numpy": numpy_doc,
        "nproot": np.arange(1200, dtype=np.float64).reshape(30, 40),
        "tiles": {  # stored tile by tile (the kind's options: tiles=(64, 48)), edge tiles on both axes
            "f8": np.random.default_rng(6).random((150, 100)).round(3),
            "i4": np.arange(70 * 130, dtype=">i4").reshape(70, 130),
            "rec": np.zeros((65, 49), dtype=[("a", "<i2"), ("b", "S3")]),
        },
        "small": {"a": 1, "b": [1, 2, 3], "c": "text", "d": {"e": None}},
        "smalllist": [1, 2.5, None, "x", [True]],
        "special": special,
        "deep": deep,
        "paged": _paged_doc(),
        "doc": {
            "list": list(range(300)),
            "rows": [[float(i), float(-i)] for i in range(40)],
            "map": {f"k{i}": "v" * (i % 5) for i in range(60)},
            "hash": {f"h{i}": i for i in range(1100)},
            "nested": [{"x": [i] * 10} for i in range(20)],
        },
    }


def _paged_doc() -> list[Any]:
    """A list of more than 1024 spans at threshold 8 (node type 11 in 3 pages), with items
    that have nodes of their own in its first and last pages."""
    items: list[Any] = [i if i % 2 else f"s{i}" for i in range(2600)]
    items[30] = {"k": list(range(12)), "s": "x" * 20}
    items[2550] = [["y"] * 4, {"z": 2}]
    return items


# (kind, thresholds)
_PLAIN = [
    ("mixed", (64, 256, 1024)),
    ("inline", (64, 512)),
    ("hash", (64, 1024, 8192)),
    ("matrix", (64, 512)),
    ("imatrix", (64,)),
    ("strs", (64,)),
    ("cube", (64,)),
    ("lazyrows", (64, 8192)),
    ("numpy", (64, 1024, 8192)),
    ("nproot", (64,)),
    ("small", (8192,)),
    ("smalllist", (64,)),
    ("special", (64, 8192)),
    ("deep", (64, 1024)),
    ("doc", (64,)),
    ("paged", (8,)),
]
_SCALARS = {"int": 42, "str": "x" * 10000, "bytes": b"\x01\x02" * 3000, "float": 1.5, "none": None, "neg": -(2**63)}
_COMPRESSED = [
    ("mixed", 256),
    ("doc", 64),
    ("numpy", 1024),
    ("strs", 64),
    ("special", 64),
    ("hash", 1024),
    ("records", 1024),
    ("fused", 1024),
    ("matrix", 64),
    ("bulk", 1024),
    ("tiles", 1024),
    ("paged", 8),
]
_COMPRESSED_OPTIONS = {"tiles": {"tiles": (64, 48)}}  # options of a compressed kind, beyond its threshold


def _deep_docs() -> dict[str, Any]:
    """Values nested deeper than the default recursion limit: a list 1200 levels deep with
    neighbours at every 100th level, and dicts and lists in turn 1200 levels deep."""
    rng = random.Random(99)
    chain: Any = ["leaf", 1.5, None]
    for i in range(1200):
        chain = [chain, f"s{i}"] if i % 100 else [chain, _rng_values(rng, 3), {"k": i}]
    mixed: Any = {"bottom": list(range(30))}
    for i in range(1200):
        mixed = {"d": mixed, "i": i} if i % 2 else [mixed, "x" * (i % 7)]
    return {"deep-list": {"chain": chain, "pad": list(range(200))}, "deep-mixed": [mixed, {"n": list(range(100))}]}


# (the deep part without nodes; with a node at every level, compressed): few, as a case costs ~10x
_DEEP = [("deep-list", 8192, None), ("deep-mixed", 64, "zstd")]


def _combined(infos: list[FileInfo], **options: Any) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "c.mlc")
        msglc.combine(path, infos, **options)
        with open(path, "rb") as f:
            return f.read()


def _appended(base: bytes, rounds: list[list[FileInfo]]) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "a.mlc")
        with open(path, "wb") as f:
            f.write(base)
        for infos in rounds:
            msglc.append(path, infos)
        with open(path, "rb") as f:
            data = bytearray(f.read())
    # the archive alone, as a copy of it holds it: append leaves slack past the end its header
    # names, and the mutations here work on archives that end at their trailer
    end = int.from_bytes(data[10:16], "little") or len(data)
    data[10:16] = bytes(6)
    return bytes(data[:end])


def _streamed(threshold: int, compression: str | None = None) -> tuple[bytes, Any]:
    buf = io.BytesIO()
    with msglc.LazyWriter(buf, small_obj_optimization_threshold=threshold, compression=compression) as w:
        w.write(
            {
                "meta": {"source": "sensor"},
                "records": ({"id": i, "x": [i / 3] * (i % 4)} for i in range(400)),
                "by_name": msglc.Pairs((f"n{i}", i * 2) for i in range(300)),
            }
        )
    value = {
        "meta": {"source": "sensor"},
        "records": [{"id": i, "x": [i / 3] * (i % 4)} for i in range(400)],
        "by_name": {f"n{i}": i * 2 for i in range(300)},
    }
    return buf.getvalue(), value


def _raw_samples() -> list[tuple[str, int, bytes, Any]]:
    """(kind, threshold, archive, original value) of every corpus archive."""
    docs = _docs()
    out = []
    for kind, thresholds in _PLAIN:
        for t in thresholds:
            out.append((kind, t, msglc.dumps(docs[kind], small_obj_optimization_threshold=t), docs[kind]))
    for name, value in _SCALARS.items():
        out.append((f"scalar-{name}", 64, msglc.dumps(value, small_obj_optimization_threshold=64), value))
    by_name = {f"{k}@{t}": (data, value) for k, t, data, value in out}
    parts = [("mixed", "mixed@256"), ("small", "small@8192"), ("m", "cube@64"), ("np", "numpy@1024")]
    obj = {"note": "inline", "xs": list(range(100))}
    for t in (64, 8192):
        infos = [FileInfo(by_name[src][0], name) for name, src in parts] + [FileInfo(None, "obj", obj=obj)]
        value = {name: by_name[src][1] for name, src in parts} | {"obj": obj}
        out.append(("combined-dict", t, _combined(infos, small_obj_optimization_threshold=t), value))
    listed = [by_name["hash@1024"], by_name["strs@64"], by_name["smalllist@64"]]
    out.append(
        (
            "combined-list",
            64,
            _combined([FileInfo(d) for d, _ in listed], small_obj_optimization_threshold=64),
            [v for _, v in listed],
        )
    )
    inner = next(d for k, t, d, _ in out if k == "combined-dict" and t == 64)
    inner_value = next(v for k, t, _, v in out if k == "combined-dict" and t == 64)
    nested = _combined(
        [FileInfo(inner, "c"), FileInfo(by_name["deep@64"][0], "deep")], small_obj_optimization_threshold=128
    )
    out.append(("combined-nested", 128, nested, {"c": inner_value, "deep": by_name["deep@64"][1]}))
    base_value = {f"k{i:02}": list(range(i * 3)) for i in range(20)}
    base = msglc.dumps(base_value, small_obj_optimization_threshold=64)
    add1 = [FileInfo(None, "n1", obj=list(range(100))), FileInfo(by_name["hash@1024"][0], "n2")]
    add2 = [FileInfo(None, "n3", obj="x" * 100), FileInfo(by_name["cube@64"][0], "n4")]
    value = base_value | {
        "n1": list(range(100)),
        "n2": by_name["hash@1024"][1],
        "n3": "x" * 100,
        "n4": by_name["cube@64"][1],
    }
    out.append(("appended-dict", 64, _appended(base, [add1, add2]), value))
    base_list = [list(range(i * 4)) for i in range(20)]
    adds = [[FileInfo(None, obj={"x": list(range(50))})], [FileInfo(by_name["matrix@64"][0])]]
    out.append(
        (
            "appended-list",
            64,
            _appended(msglc.dumps(base_list, small_obj_optimization_threshold=64), adds),
            base_list + [{"x": list(range(50))}, by_name["matrix@64"][1]],
        )
    )
    paged_adds = [[FileInfo(None, obj={"x": list(range(50))})], [FileInfo(None, obj="tail")]]
    out.append(
        (
            "appended-paged",
            8,
            _appended(by_name["paged@8"][0], paged_adds),
            [*docs["paged"], {"x": list(range(50))}, "tail"],
        )
    )
    for t in (64, 1024):
        data, value = _streamed(t)
        out.append(("streamed", t, data, value))
    for kind, t in _COMPRESSED:
        value = docs[kind]
        options = _COMPRESSED_OPTIONS.get(kind, {})
        data = msglc.dumps(value, small_obj_optimization_threshold=t, compression="zstd", **options)
        out.append((f"zstd-{kind}", t, data, value))
    zstd = {f"{k}@{t}": (data, value) for k, t, data, value in out if k.startswith("zstd-")}
    data, value = _streamed(64, "zstd")
    out.append(("zstd-streamed", 64, data, value))
    # compressed inputs combined: their frames copied as they are, with their dictionaries
    parts = [("records", "zstd-records@1024"), ("fused", "zstd-fused@1024"), ("mixed", "zstd-mixed@256")]
    events = msglc.dumps(docs["events"], small_obj_optimization_threshold=8192, compression="zstd")
    infos = [FileInfo(zstd[src][0], name) for name, src in parts] + [FileInfo(data, "streamed")]
    infos.append(FileInfo(events, "events"))
    value = {name: zstd[src][1] for name, src in parts} | {"streamed": value, "events": docs["events"]}
    out.append(("zstd-combined", 1024, _combined(infos, small_obj_optimization_threshold=1024), value))
    base_value = {f"k{i:02}": list(range(i * 3)) for i in range(20)}
    base = msglc.dumps(base_value, small_obj_optimization_threshold=64, compression="zstd")
    add1 = [FileInfo(None, "n1", obj=list(range(100))), FileInfo(zstd["zstd-hash@1024"][0], "n2")]
    add2 = [FileInfo(None, "n3", obj={"x": "y" * 50}), FileInfo(zstd["zstd-numpy@1024"][0], "n4")]
    value = base_value | {
        "n1": list(range(100)),
        "n2": zstd["zstd-hash@1024"][1],
        "n3": {"x": "y" * 50},
        "n4": zstd["zstd-numpy@1024"][1],
    }
    out.append(("zstd-appended", 64, _appended(base, [add1, add2]), value))
    deep = _deep_docs()
    with deep_limit():  # dumps nests as deep as msgspec encodes: to the recursion limit
        for kind, t, compression in _DEEP:
            name = kind if compression is None else f"zstd-{kind}"
            data = msglc.dumps(deep[kind], small_obj_optimization_threshold=t, compression=compression)
            out.append((name, t, data, deep[kind]))
    return out


BIG_SAMPLE = 100_000  # plain data bytes: a sample larger than this is read without the walks of every item


def build_corpus() -> list[Sample]:
    samples = []
    for kind, threshold, data, value in _raw_samples():
        header = data[:HEADER_SIZE]
        t = unpack_trailer(data[-TRAILER_SIZE:], len(data), header)
        section, compressed = data[t.data_off : t.data_off + t.data_len], data[8] == 2
        toc_plain: tuple[bytes, tuple[int, int]] | None = None
        if compressed:
            with msglc.LazyReader(data) as r:
                section = r.protocol_raw_data()
                lt = archive_of(r).opened.trailer  # the logical one: the TOC as plain bytes
                toc_plain = bytes(archive_of(r).read(lt.toc_off, lt.toc_len)), (lt.root_pos, lt.root_len)
        truth = decode_data(section)
        deep = kind.removeprefix("zstd-").startswith("deep")
        with deep_limit():
            if not same(truth, plain(value)):
                raise RuntimeError(f"corpus {kind}@{threshold}: the data section does not decode to the value written")
            truth_canon = canon(truth)
        sample = Sample(
            f"{kind}@{threshold}", kind, threshold, data, truth, [], [], t, slack=False, truth_canon=truth_canon
        )
        sample.plain = section if compressed else None
        sample.toc_plain = toc_plain
        sample.deep = deep
        sample.toc = toc_layout(data)
        if sample.toc is not None:
            items, _ = sample.toc
            sample.live = [(it.pos, it.pos + it.size) for it in items if it.kind != "gap"]
        if compressed:
            _take_apart(sample)
        sample.big = len(section) > BIG_SAMPLE
        sample.slack = data[9] >= 2 or any(sample.region(p) == "dead" for p in range(t.toc_off, t.toc_off + t.toc_len))
        sample.paths = _paths(truth, random.Random(sample.name))
        sample.expected = [expected_value(truth, p) for p in sample.paths]
        samples.append(sample)
    _check_coverage(samples)
    return samples


def _take_apart(s: Sample) -> None:
    """A 2.1 sample's section as parts (``frames``), the plain archive it holds (its TOC
    edited as a plain archive's is, then framed again), and the region of every stored byte:
    frames of the data, frames of the TOC (``dead`` when they hold no node the root reaches),
    ``tables`` (dictionary records, page tables, the index)."""
    assert s.plain is not None and s.toc_plain is not None
    t = s.trailer
    s.section = sec = ff.parse_section(s.data[t.data_off : t.data_off + t.data_len])
    s.dict_content = [ff.dictionary_content(record, plain) for record, plain in sec.dicts]
    if ff.build_section(sec) != s.data[t.data_off : t.data_off + t.data_len]:
        raise RuntimeError(f"corpus {s.name}: its compressed section is not laid out as tools.fuzz.frames lays it out")
    toc, root = s.toc_plain
    header = pack_header()
    s.virtual = (
        header + s.plain + toc + Trailer.contiguous(len(s.plain), len(toc), root, t.data_crc, t.threshold).pack(header)
    )
    s.vtoc = toc_layout(s.virtual)
    live = [] if s.vtoc is None else [(it.pos, it.pos + it.size) for it in s.vtoc[0] if it.kind != "gap"]
    spans: list[tuple[int, int, str]] = [(0, HEADER_SIZE, "header")]
    for a, b, lo, hi, _ in sec.spans(t.data_off):
        if lo < sec.data:
            name = "data"
        else:  # (positions in the virtual archive: the logical offset plus the header)
            name = "toc" if any(x < HEADER_SIZE + hi and HEADER_SIZE + lo < y for x, y in live) else "dead"
        spans.append((a, b, name))
    spans.append((t.data_off + sec.frames_end(), t.data_off + t.data_len, "tables"))
    spans.append((t.data_off + t.data_len, len(s.data), "trailer"))
    s.spans = spans


def _check_coverage(samples: list[Sample]) -> None:
    """The corpus holds what the 2.1 mutations need (writers' defaults may change): a
    dictionary, raw frames, a fuse-indexed dict, compact dict nodes, several TOC frames."""
    sections = [s for s in samples if s.section is not None]
    parts = [s.section for s in samples if s.section is not None]
    found = {
        "a dictionary": any(sec.dicts for sec in parts),
        "a raw frame": any(f.code == RAW for sec in parts for f in sec.frames),
        "a shuffled frame": any(f.code == SHUFFLE for sec in parts for f in sec.frames),
        "a fuse-indexed dict": any(
            isinstance(it.node, FuseMapNode) for s in sections if s.vtoc is not None for it in s.vtoc[0]
        ),
        "a compact dict node": any(it.compact for s in sections if s.vtoc is not None for it in s.vtoc[0]),
        "a paged list": any(it.kind == "page" for s in sections if s.vtoc is not None for it in s.vtoc[0]),
        "a tiled NumPy array": any(find_tiled(s.plain) is not None for s in sections if s.plain is not None),
    }
    missing = [what for what, ok in found.items() if not ok]
    if missing:
        raise RuntimeError(f"the corpus has no compressed archive with {', '.join(missing)}")


def expected_value(truth: Any, path: Any) -> Any:
    segs = path.split("/") if isinstance(path, str) else list(path)
    try:
        return expect(truth, [s for s in segs if s != ""])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        return type(e)


def _paths(truth: Any, rng: random.Random, most: int = 14) -> list[Any]:
    """Paths into ``truth``: to leaves and containers, in list and str forms, with negative
    indices, slices and missing keys."""
    found: list[list[Any]] = []
    stack: list[tuple[Any, list[Any]]] = [(truth, [])]
    while stack and len(found) < 4000:
        obj, path = stack.pop()
        if path:
            found.append(path)
        if len(path) >= 8:
            continue
        if isinstance(obj, dict):
            items = list(obj.items())
            for k, v in rng.sample(items, min(len(items), 6)):
                stack.append((v, [*path, k]))
        elif isinstance(obj, list) and obj:
            for i in {0, len(obj) - 1, rng.randrange(len(obj))}:
                stack.append((obj[i], [*path, i if rng.random() < 0.7 else i - len(obj)]))
        elif isinstance(obj, np.ndarray) and obj.ndim and obj.size:
            found.append([*path, *[rng.randrange(-n, n) for n in obj.shape]])
    if not found:
        return []
    paths: list[Any] = []
    for path in rng.sample(found, min(most, len(found))):
        if all(isinstance(seg, int) or _plain_key(seg) for seg in path) and rng.random() < 0.5:
            paths.append("/".join(map(str, path)))
        else:
            paths.append(path)
    if isinstance(truth, list) and truth:
        paths += [f"1:{min(4, len(truth))}", ":7:", "-2:", f"{-len(truth) - 2}:2:{len(truth) + 3}"]
    lists = [p for p in found if all(_plain_key(seg) for seg in p) and isinstance(expected_value(truth, p), list)]
    for p in rng.sample(lists, min(2, len(lists))):
        paths.append("/".join(p) + rng.choice(["/-2:", "/0:3", "/:5:", "/1:2:-1"]))
    paths.append(["\x00no such key"] if isinstance(truth, dict) else [10**9])
    return paths


def _plain_key(seg: Any) -> bool:
    """A str key that a str path can name without ambiguity."""
    return isinstance(seg, str) and seg != "" and "/" not in seg and ":" not in seg and not seg.lstrip("-").isdigit()
