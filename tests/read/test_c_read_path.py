"""The read path's C steps (``BlockProbe.get``: key encoding, CRC, block walk and decode in one
call; ``span_item``: one item of a list span) answer exactly what the pure-Python path answers,
or leave the answer to it; the views kept for reuse stay correct across close, batches and
counters; str paths mean what ``resolve`` says and cost what it costs."""

import io
import math
import random
import struct
import sys
import threading
import zlib

import msgspec
import numpy as np
import pytest
from outcomes import answer, both_modes, plain

import msglc
from msglc.format.msgpack import array_header
from msglc.read import views as views_module
from msglc.read.part import LazyPart, archive_of
from msglc.read.paths import resolve, split_path
from msglc.read.stats import LazyStats
from msglc.util import accel

needs_c = pytest.mark.skipif(accel.speedups is None, reason="the C accelerator is not built (or MSGLC_PURE_PYTHON)")


# -- keys: the C encoding is msgspec's for every str and int ------------------------------------


def _boundary_ints():
    edges = [0, 7, 8, 15, 16, 31, 32, 33, 63, 64, 127, 128, 255, 256, 2**15, 2**16, 2**31, 2**32, 2**63, 2**64]
    ints = {s * (e + d) for e in edges for d in (-2, -1, 0, 1, 2) for s in (1, -1)}
    return sorted(i for i in ints if -(2**63) <= i < 2**64)


def _boundary_strs():
    out = set()
    for n in [*range(0, 300), 65535, 65536, 70000]:
        for ch in ("a", "é", "€", "😀"):  # 1 to 4 UTF-8 bytes a character
            out.add(ch * n)
    return sorted(out | {"\x00", "٣", "k\x00k"})


@pytest.fixture(scope="module")
def key_archive(tmp_path_factory):
    """A hash-indexed dict keyed by every width of msgpack int and str, with filler keys."""
    keys = [*_boundary_ints(), *_boundary_strs()]
    d: dict[int | str, list[object] | int] = {k: [i, "v"] for i, k in enumerate(keys)}
    d.update({f"f{i}": i for i in range(3000)})
    path = tmp_path_factory.mktemp("keys") / "keys.mlc"
    path.write_bytes(msglc.dumps(d))
    return path, d


@needs_c
def test_c_lookup_finds_every_key_msgspec_encodes(key_archive):
    """A key the C code encodes differently from msgspec (the writer's encoder) would hash to
    another page and be reported missing: every key must be found, by C for all it encodes."""
    path, d = key_archive
    with msglc.LazyReader(path, cached=False) as r:
        table = r.read()
        table["f0"]  # loads the block index
        probe, answered = table.loaded_index().probe, 0
        assert probe is not None
        src, base = archive_of(r).c_read, table.location().offset
        for key, value in d.items():
            got = probe.get(src, base, key, msgspec.msgpack.decode, KeyError)
            if got is not NotImplemented:
                answered += 1
                assert got == value, key
            assert table[key] == value
            assert key in table
        # every int of a signed 64 bits and every str whose encoding fits 256 bytes
        fits = [k for k in d if isinstance(k, int) and k < 2**63] + [
            k for k in d if isinstance(k, str) and len(msgspec.msgpack.encode(k)) <= 256
        ]
        assert answered == len(fits)


def test_keys_c_and_python_agree_on_hits_and_misses(key_archive, monkeypatch):
    path, d = key_archive
    rng = random.Random(1)
    probes = [*d, 2**64, 2**70, -(2**63) - 1, -(2**70), "\ud800", "a\udfff", "é" * 200, "absent", 3.0, True, b"a"]
    probes += [rng.randrange(-(2**64), 2**64) for _ in range(300)]
    probes += ["".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(rng.randrange(90))) for _ in range(300)]

    def run():
        with msglc.LazyReader(path, cached=False) as r:
            table = r.read()
            out = []
            for k in probes:
                out.append(answer(lambda k=k: table[k]))
                out.append(k in table if not isinstance(k, float) else None)
                out.append(answer(lambda k=k: table.get(k, "default")))
            return out

    with_c, pure = both_modes(monkeypatch, run)
    assert with_c == pure


# -- one item of a list span ------------------------------------------------------------------


def _lists():
    rng = random.Random(4)

    def small(i):
        return rng.choice([i, -i, str(i) * (i % 5), None, True, 1.5, b"xx", {"a": i}, [i, i], 2**64 - 1, -(2**63)])

    out = []
    for n in (1, 2, 3, 100, 1000, 5000):
        out.append([small(i) for i in range(n)])
        big = [small(i) for i in range(n)]
        for j in {0, n // 2, n - 1}:  # large items (a node of their own) at the edges of spans
            big[j] = list(range(300))
        out.append(big)
    out.append([np.arange(5) if i % 3 == 0 else i for i in range(2000)])
    return out


@pytest.mark.parametrize("items", _lists(), ids=lambda items: f"{len(items)}")
def test_list_items_and_slices_c_and_python(items, monkeypatch):
    data = msglc.dumps({"x": items}, small_obj_optimization_threshold=256)
    n = len(items)
    rng = random.Random(n)
    indexes = [*range(-n - 2, n + 2)] if n < 200 else [0, 1, n - 1, n, -1, -n, -n - 1, *rng.sample(range(n), 200)]
    slices = [slice(None), slice(-5, None), slice(None, None, -7), slice(3, 1), slice(1, n + 5, 3)]

    def run():
        with msglc.LazyReader(data, cached=False) as r:
            x = r["x"]
            got = [answer(lambda i=i: x[i]) for i in indexes]
            return got + [[plain(v) for v in x[s]] for s in slices]

    want = [answer(lambda i=i: items[i]) for i in indexes] + [[plain(v) for v in items[s]] for s in slices]
    for got in both_modes(monkeypatch, run):  # (IndexError: a lazy list words it otherwise)
        assert [g if g[0] == "ok" else g[0] for g in got[: len(indexes)]] == [
            w if w[0] == "ok" else w[0] for w in want[: len(indexes)]
        ]
        assert got[len(indexes) :] == want[len(indexes) :]


def _random_item(rng, depth=0):
    """One msgpack object, of every kind msgspec can skip (and some it cannot: 0xc1 is made by
    the mutations below)."""
    c = rng.randrange(24)
    if c == 0:
        return bytes([rng.choice([0xC0, 0xC2, 0xC3, rng.randrange(0xE0, 0x100), rng.randrange(0x80)])])
    if c == 1:
        return msgspec.msgpack.encode(rng.choice(_boundary_ints()))
    if c == 2:
        return msgspec.msgpack.encode(rng.random()) if rng.random() < 0.5 else b"\xca" + struct.pack(">f", 1.5)
    if c == 3:
        return msgspec.msgpack.encode("x" * rng.choice([0, 1, 31, 32, 255, 256, 300]))
    if c == 4:
        return msgspec.msgpack.encode(b"y" * rng.choice([0, 1, 255, 256, 70000]))
    if c in (5, 6, 7, 8):  # str 16/32 and bin 16/32 with small lengths (no writer makes these)
        tag, fmt = [(b"\xda", ">H"), (b"\xdb", ">I"), (b"\xc5", ">H"), (b"\xc6", ">I")][c - 5]
        n = rng.randrange(3)
        return tag + struct.pack(fmt, n) + b"z" * n
    if c == 9:
        n = rng.choice([0, 1, 3, 255])
        return b"\xc7" + bytes([n, 7]) + b"e" * n  # ext 8
    if c == 10:
        n = rng.choice([0, 1, 3, 256])
        return b"\xc8" + struct.pack(">H", n) + b"\x07" + b"e" * n  # ext 16
    if c == 11:
        n = rng.randrange(4)
        return b"\xc9" + struct.pack(">I", n) + b"\x07" + b"e" * n  # ext 32
    if c == 12:
        k = rng.randrange(5)
        return bytes([0xD4 + k, 9]) + b"f" * (1 << k)  # fixext 1..16
    if depth < 4 and c in (13, 14, 15, 16, 17, 18):
        n = rng.randrange(4)
        inner = b"".join(_random_item(rng, depth + 1) for _ in range(n * (2 if c in (15, 16, 18) else 1)))
        head = {
            13: b"\xdc" + struct.pack(">H", n),
            14: b"\xdd" + struct.pack(">I", n),
            15: b"\xde" + struct.pack(">H", n),
            16: b"\xdf" + struct.pack(">I", n),
            17: bytes([0x90 | n]),
            18: bytes([0x80 | n]),
        }[c]
        return head + inner
    return msgspec.msgpack.encode(rng.randrange(-(2**63), 2**64))


_raw_items = msgspec.msgpack.Decoder(list[msgspec.Raw])


@needs_c
def test_skip_matches_msgspec_on_every_kind():
    """``span_item`` answers item j exactly when msgspec reads the bytes as ``count`` items,
    and gives that item; else NotImplemented (truncations, trailing bytes, 0xc1, flips)."""
    rng = random.Random(5)
    assert accel.speedups is not None
    span_item = accel.speedups.span_item
    for _ in range(4000):
        items = [_random_item(rng) for _ in range(rng.randrange(1, 6))]
        buf = b"".join(items)
        mutation = rng.randrange(5)
        if mutation == 1:
            buf = buf[: rng.randrange(len(buf))]
        elif mutation == 2:
            b = bytearray(buf)
            b[rng.randrange(len(b))] = rng.randrange(256)
            buf = bytes(b)
        elif mutation == 3:
            buf += bytes([rng.randrange(256)])
        elif mutation == 4:
            b = bytearray(buf)
            b[rng.randrange(len(b))] = 0xC1
            buf = bytes(b)
        for count in {len(items), max(1, len(items) - 1), len(items) + 1}:
            try:
                want = [bytes(x) for x in _raw_items.decode(array_header(count) + buf)]
            except (msgspec.DecodeError, RecursionError):
                want = None
            got = [span_item(lambda o, s, b=buf: b[o : o + s], 0, len(buf), count, j, bytes) for j in range(count)]
            if want is None:
                assert NotImplemented in got
            else:
                assert got == want
            for j in (-1, count):
                assert span_item(lambda o, s, b=buf: b[o : o + s], 0, len(buf), count, j, bytes) is NotImplemented


@needs_c
def test_crc_of_every_length_is_zlibs():
    """The slicing-by-8 CRC-32 (here of keys, through ``key_crcs``) is zlib's, for lengths on
    both sides of every multiple of 8."""
    rng = random.Random(6)
    assert accel.speedups is not None
    for n in [*range(1, 260), 1000, 4097, 65541]:
        for _ in range(3):
            key = msgspec.msgpack.encode(rng.randbytes(n))  # bin 8, 16 or 32: n + 2, 3 or 5 bytes
            assert accel.speedups.key_crcs(key + b"\xc0", 1) == [zlib.crc32(key)]
    for b in range(128):  # one byte
        assert accel.speedups.key_crcs(bytes([b, 0xC0]), 1) == [zlib.crc32(bytes([b]))]


# -- sources, damage ----------------------------------------------------------------------------

_DOC = {
    "s": {f"k{i}": [i, "v" * (i % 7)] for i in range(3000)},
    "d": {i: i * 2 for i in range(2000)},
    "l": [{"score": i, "t": "x" * (i % 13)} for i in range(3000)],
    "w": [[i] * 50 if i % 97 == 0 else i for i in range(3000)],
}
_KEYS = (
    [("s", f"k{i}") for i in range(0, 3000, 37)]
    + [("s", "nope"), ("d", 2000), ("d", "5")]
    + [("d", i) for i in range(0, 2000, 29)]
    + [("l", i) for i in range(0, 3000, 31)]
    + [("w", i) for i in range(0, 3000, 17)]
)


def _outcomes(source, messages=True):
    """Each lookup's outcome; only the error type when ``messages`` is false (the C and Python
    block walks word their errors differently)."""

    def kind(f):
        got = answer(f)
        return got if messages or got[0] == "ok" else got[0]

    try:
        r = msglc.LazyReader(source, cached=False)
    except msglc.MsglcError as e:
        return [type(e).__name__]
    with r:
        out = []
        for c, k in _KEYS:
            out.append(kind(lambda c=c, k=k: r[c][k]))
            if c in ("s", "d"):
                out.append(kind(lambda c=c, k=k: k in r[c]))
        return out


@pytest.mark.parametrize("compression", [None, "zstd"])
@pytest.mark.parametrize("kind", ["file", "bytes", "stream"])
def test_sources_c_and_python_agree(compression, kind, tmp_path, monkeypatch):
    """Compressed archives, bytes and file objects: the C steps read through the source's read."""
    if compression:
        pytest.importorskip("zstandard")
    data = msglc.dumps(_DOC, compression=compression)
    path = tmp_path / "a.mlc"
    path.write_bytes(data)

    def source():
        return {"file": path, "bytes": data, "stream": io.BytesIO(data)}[kind]

    with_c, pure = both_modes(monkeypatch, lambda: _outcomes(source()))
    assert with_c == pure
    assert with_c[0] == ("ok", [0, ""])


def test_damaged_archives_c_answers_only_what_python_answers(tmp_path, monkeypatch):
    """Bit flips in the data and the TOC: the C steps give the same value or the same error
    type as the pure-Python path (never a value where it raises)."""
    data = msglc.dumps(_DOC)
    rng = random.Random(7)
    path = tmp_path / "a.mlc"
    for _ in range(40):
        b = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(b)) if rng.random() < 0.5 else rng.randrange(len(b) - 20000, len(b))
            b[at] ^= 1 << rng.randrange(8)
        path.write_bytes(b)
        with_c, pure = both_modes(monkeypatch, lambda: _outcomes(path, messages=False))
        assert with_c == pure


# -- counting, closing ------------------------------------------------------------------------


def test_counted_reads_are_the_same_with_c(tmp_path, monkeypatch):
    """With a counter the C steps read through the counting read: same requests and bytes."""
    path = tmp_path / "a.mlc"
    path.write_bytes(msglc.dumps(_DOC, small_obj_optimization_threshold=128))
    paths = ["s/k1", "s/k2", "s/zz", "d/5", "l/5", "l/2999", "l/-3", "w/97", "w/98", "w/97/3", "s/k9/1", "d/x"]

    def run():
        stats = LazyStats()
        out = []
        with msglc.LazyReader(path, cached=False, counter=stats) as r:
            for p in paths * 2:
                out.append(answer(lambda p=p: r[p]))
                out.append((stats.requests, stats.bytes))
            table = r["s"]
            for k in ("k5", "k6", "nope"):
                out += [table.get(k), (stats.requests, stats.bytes)]
            out += [r["l"][10:20], (stats.requests, stats.bytes)]
            out += [k in table for k in ("k5", "k6", "nope")]  # (Python in both: not counted)
        return out

    with_c, pure = both_modes(monkeypatch, run)
    assert with_c == pure


@pytest.mark.parametrize("cached", [False, True])
def test_a_held_view_refuses_reads_after_close_even_with_the_descriptor_reused(cached, tmp_path):
    data = msglc.dumps(_DOC)
    other = msglc.dumps({k: v for k, v in _DOC.items() if k != "s"} | {"s": {f"k{i}": i for i in range(3000)}})
    (tmp_path / "a.mlc").write_bytes(data)
    (tmp_path / "b.mlc").write_bytes(other)
    r = msglc.LazyReader(tmp_path / "a.mlc", cached=cached)
    table, items = r["s"], r["l"]
    assert table["k3"] == [3, "vvv"] and items[3] == {"score": 3, "t": "xxx"}
    r.close()
    others = [msglc.LazyReader(tmp_path / "b.mlc", cached=False) for _ in range(4)]  # the descriptor reused
    try:
        for lookup in (lambda: table["k4"], lambda: "k4" in table, lambda: table.get("k4"), lambda: items[4]):
            with pytest.raises(ValueError, match="closed"):
                lookup()
        with pytest.raises(ValueError, match="closed"):
            r["s/k4"]
    finally:
        for o in others:
            o.close()


def test_close_from_another_thread_never_gives_another_files_value(tmp_path):
    """Lookups racing a close, with the descriptor number reused at once by a reader of another
    archive of the same layout: each gives the right value or ValueError."""
    a = {"s": {f"k{i}": i + 10**6 for i in range(20000)}, "l": [i + 10**6 for i in range(20000)]}
    b = {"s": {f"k{i}": i + 2 * 10**6 for i in range(20000)}, "l": [i + 2 * 10**6 for i in range(20000)]}
    (tmp_path / "a.mlc").write_bytes(msglc.dumps(a))
    (tmp_path / "b.mlc").write_bytes(msglc.dumps(b))
    wrong: list[tuple[int, int]] = []
    for _ in range(25):
        r = msglc.LazyReader(tmp_path / "a.mlc", cached=False)
        table, items = r["s"], r["l"]
        table["k1"], items[1]
        stop = threading.Event()

        def work(table=table, items=items, stop=stop):
            rng = random.Random()
            while not stop.is_set():
                i = rng.randrange(20000)
                try:
                    got = table[f"k{i}"] if i % 2 else items[i]
                except ValueError:
                    continue
                if got != i + 10**6:
                    wrong.append((i, got))

        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        r.close()
        others = [msglc.LazyReader(tmp_path / "b.mlc", cached=False) for _ in range(3)]
        for o in others:
            o["s"]["k3"]
        stop.set()
        for t in threads:
            t.join()
        for o in others:
            o.close()
    assert wrong == []


# -- kept views ---------------------------------------------------------------------------------


def test_views_are_reused_bounded_and_dropped_on_close(monkeypatch):
    doc = {f"t{i}": {f"k{j}": j for j in range(40)} for i in range(60)}
    monkeypatch.setattr(views_module, "MAX_VIEWS", 16)
    with msglc.LazyReader(msglc.dumps(doc, small_obj_optimization_threshold=64), cached=False) as r:
        assert r["t3"] is r["t3"]
        for i in range(60):
            assert r[f"t{i}"]["k7"] == 7
            assert len(archive_of(r).views) <= 16
        assert r["t59"] is r["t59"]
    assert not archive_of(r).views


def test_read_many_and_batches_give_what_single_reads_give(tmp_path):
    path = tmp_path / "a.mlc"
    path.write_bytes(msglc.dumps(_DOC))
    paths = ["s/k5", "d/7", "l/9", "w/97", "w/97/2", "s/k3000", "l/-1"]
    with msglc.LazyReader(path, cached=False) as r:
        singles = [answer(lambda p=p: r[p]) for p in paths[:-2]]
        got = r.read_many(paths[:-2])
        assert [("ok", plain(v)) for v in got] == singles
        table = r.read_many(["s"])[0]
        assert table["k8"] == [8, "v"] and r["s"]["k8"] == [8, "v"]
        with pytest.raises(KeyError):
            r.read_many(paths)
    with pytest.raises(ValueError, match="closed"):
        table["k9"]


# -- str paths ----------------------------------------------------------------------------------

_PATH_DOC = {
    "d": {i: [i, "x"] for i in range(300)},
    "s": {f"k{i}": {"v": i, "n": None} for i in range(300)},
    "l": [{"score": i, "t": [i] * 3} for i in range(400)],
    "small": {"a": 1, "3": "three", 4: "four", "": "empty", " 3": "sp"},
    "sl": [1, 2, 3, [4, 5]],
    "m": np.arange(24.0).reshape(4, 6),
    "n": None,
    "mixed": {"-1": "neg", -1: "negint", "٣": "arabic", 3: "int3", "1:3": "colon"},
    "": {"": "empty in empty"},
}
_SEGMENTS = [*_PATH_DOC, "3", "-1", "+3", "3_0", " 3", "٣", "1:3", "0:2:6", "::", "k5", "v", "score", "t"]
_SEGMENTS += ["0", "1", "399", "400", "-400", "-401", "a", "5", "nope", "00", "2", "1e2", "３", "²", "-0", "9" * 19]
_SEGMENTS += ["9" * 5000, "0" * 30 + "5"]


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("threshold", [64, 8192])
def test_str_paths_mean_what_resolve_says(cached, threshold):
    rng = random.Random(threshold + cached)
    paths = ["", "/", "//", "d/5", "d//5/", "l/3/score", "m/3/4", "m/3", "n/x", "small/3", "d/" + "9" * 5000]
    for _ in range(1200):
        p = "/".join(rng.choice(_SEGMENTS) for _ in range(rng.randrange(5)))
        paths.append(rng.choice(["", "/"]) + p + rng.choice(["", "/"]))
    paths = list(dict.fromkeys(paths))  # a fifth are short repeats (each a whole-document compare)
    with msglc.LazyReader(msglc.dumps(_PATH_DOC, small_obj_optimization_threshold=threshold), cached=cached) as r:
        root = r.read()
        for p in paths:
            assert answer(lambda p=p: r[p]) == answer(lambda p=p: resolve(root, split_path(p))), p


def test_a_str_path_costs_the_reads_of_its_list_path(tmp_path):
    """A miss is looked up once (a dict with int keys: the str key, then its int), as the
    list form of the path does it."""
    path = tmp_path / "a.mlc"
    path.write_bytes(msglc.dumps(_DOC))
    for p in ["d/5", "d/nope", "s/nope", "s/k5", "l/-1", "l/7/score", "w/97/-1", "s/k5/9"]:
        counts = []
        for form in (p, p.split("/")):
            stats = LazyStats()
            with msglc.LazyReader(path, cached=False, counter=stats) as r:
                r[p.split("/")[0]]["k0" if p[0] == "s" else 0]  # the index loaded
                stats.clear()
                outcome = answer(lambda form=form: r[form])
                counts.append((outcome, stats.requests, stats.bytes))
        assert counts[0] == counts[1], p


def test_long_digit_segments_are_not_ints():
    """More digits than ``int()`` takes: not a list index nor an int key (as ``resolve`` says)."""
    with msglc.LazyReader(msglc.dumps({"l": list(range(300)), "d": {i: i for i in range(300)}})) as r:
        with pytest.raises(TypeError, match="list index must be"):
            r["l/" + "9" * 5000]
        with pytest.raises(KeyError, match="not found"):
            r["d/" + "9" * 5000]
        with pytest.raises(KeyError, match="not found"):
            r[["d", "9" * 5000]]
        assert r["d/" + "0" * 30 + "5"] == 5


# -- fixed-stride lists: items and row views in C ---------------------------------------------

_FLOATS = [0.0, -0.0, 1.5, -2.25, math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308, 1 / 3]


def _strided_docs():
    rng = random.Random(3)
    return {
        "floats": [[rng.choice(_FLOATS) if rng.random() < 0.3 else rng.random() for _ in range(40)] for _ in range(30)],
        "fixints": [[rng.randrange(-32, 128) for _ in range(100)] for _ in range(20)],  # one-byte items
        "flat_ints": [*range(-32, 128), *(rng.randrange(-32, 128) for _ in range(200))],
        "one_byte": [[rng.choice([None, True, False, -1, 127]) for _ in range(9)] for _ in range(300)],
        "cube": [[[i * 100 + j * 10 + k + 0.5 for k in range(6)] for j in range(7)] for i in range(8)],
        "ints": [[rng.randrange(2**40) | 2**40 for _ in range(10)] for _ in range(200)],  # uint64 items
        "strs": [[f"{rng.randrange(1000):03d}" for _ in range(12)] for _ in range(100)],
        "flat": [rng.random() for _ in range(500)],
    }


def _stride_outcomes(source, cached):
    """Items, rows and elements of every strided list, by every kind of index."""

    out = []
    with msglc.LazyReader(source, cached=cached) as r:
        for name in _strided_docs():
            x = r[name]
            n = len(x)
            for i in (0, 1, n - 1, n, n + 7, -1, -n, -n - 1, True, np.int64(2), 2**70, "1", 1.0):
                out.append(answer(lambda x=x, i=i: x[i]))
                out.append(answer(lambda x=x, i=i: x[i][1]))
                out.append(answer(lambda x=x, i=i: x[i][-1]))
                out.append(answer(lambda name=name, i=i: r[name][i][0]))
            out.append(answer(lambda x=x: [type(row).__name__ for row in x][:3]))
            out.append(answer(lambda x=x: x[2:5]))
            if isinstance(x[0], LazyPart):
                row = x[3]
                out.append(answer(lambda row=row: (len(row), row.location(), row[2], row.__getitem__(2), row[1:3])))
    return out


@pytest.mark.parametrize("cached", [False, True])
def test_strided_items_and_rows_c_and_python(cached, tmp_path, monkeypatch):
    """Matrix elements and row views made in C (``FastGet``) are what the Python
    ``__getitem__`` makes, for every index kind, value kind and nesting depth."""
    doc = _strided_docs()
    path = tmp_path / "m.mlc"
    path.write_bytes(msglc.dumps(doc, small_obj_optimization_threshold=64))
    with_c, pure = both_modes(monkeypatch, lambda: _stride_outcomes(path, cached))
    assert with_c == pure
    with msglc.LazyReader(path, cached=cached) as r:
        assert type(r["floats"]).__name__ == "LazyStrideList"  # the path under test
        assert plain(r.to_obj()) == plain(doc)
        assert all(plain(r[name][i]) == plain(v[i]) for name, v in doc.items() for i in range(len(v)))


def test_strided_reads_counted_closed_and_damaged_c_and_python(tmp_path, monkeypatch):
    """With a counter, after close and on flipped bits, the C items read and answer as the
    Python path does (the same requests and bytes, errors)."""
    doc = _strided_docs()
    data = msglc.dumps(doc, small_obj_optimization_threshold=64)
    path = tmp_path / "m.mlc"

    def run():
        stats = LazyStats()
        out = []
        with msglc.LazyReader(path, cached=False, counter=stats) as r:
            views, rows = [r[name] for name in doc], [r[name][1] for name in doc]
            for name, row in zip(doc, rows, strict=True):
                out.append(answer(lambda row=row: row[0] if isinstance(row, msglc.LazyList) else row))
                out.append(answer(lambda name=name: r[name][2][1] if isinstance(r[name][2], LazyPart) else r[name][2]))
                out.append((stats.requests, stats.bytes))
        out += [answer(lambda v=v: type(v[1]).__name__) for v in views]  # no row view once closed
        for row in rows:
            if isinstance(row, LazyPart):
                out.append(answer(lambda row=row: row[0]))
                out.append(answer(lambda row=row: row[0:1]))
        return out

    path.write_bytes(data)
    with_c, pure = both_modes(monkeypatch, run)
    assert with_c == pure
    closed = with_c[-(len(doc) + 8) :]
    assert len(closed) == len(doc) + 8 and all(a[0] == "ValueError" for a in closed)
    rng = random.Random(11)
    for _ in range(40):
        b = bytearray(data)
        at = rng.randrange(16, len(data) // 2)  # in the data section
        b[at] ^= 1 << rng.randrange(8)
        path.write_bytes(b)
        with_c, pure = both_modes(monkeypatch, lambda: answer(lambda: _stride_outcomes(path, False)))
        assert with_c == pure


@needs_c
def test_fast_get_refuses_a_class_without_the_slots():
    class Other:
        __slots__ = ("_a",)

    assert accel.speedups is not None
    with pytest.raises(TypeError, match="not a slot"):
        accel.speedups.FastGet("stride", Other, lambda self, i: None, msgspec.msgpack.decode, vars(accel))
    with msglc.LazyReader(msglc.dumps({f"k{i}": i for i in range(5000)})) as r:
        hash_dict = type(r.read())
    assert hash_dict.__getitem__.__class__ is accel.speedups.FastGet
    with pytest.raises(TypeError, match="absent"):  # the KeyError of a miss is raised from Python
        accel.speedups.FastGet("hash", hash_dict, dict.__getitem__, msgspec.msgpack.decode, vars(accel), None)


# -- inline dicts: kept views by key and values without a node, in C --------------------------


def _inline_doc():
    """Dicts with their keys in the node (``LazyInlineDict``), values of every kind: scalars a
    C read decodes itself, long ones (more than its 256-byte buffer), containers with a node
    (views) and without; str and int keys, some longer than the C key buffer."""
    rng = random.Random(12)
    values: list[object] = [*_FLOATS, 0, -1, 127, -32, 128, 2**64 - 1, -(2**63), None, True, "s", "é" * 200, b"b" * 300]
    values += [[1, 2], {"a": 1}, list(range(400)), {f"x{i}": i for i in range(100)}, np.arange(6)]
    inner: dict[str | int, object] = {f"k{i}": rng.choice(values) for i in range(300)}
    inner.update({i: rng.choice(values) for i in range(-40, 40)})
    inner.update({"long" * 80: "long key", "€" * 100: [3] * 200, 2**63 + 5: "big key", -(2**63): "min"})
    return {"inl": inner, "other": {f"y{i}": i for i in range(50)}, "top": 7}


_INLINE_PROBES = [*_inline_doc()["inl"], "absent", 40, -41, 2**64, True, False, 1.0, b"k1", "\ud800", "k1 "]


def _inline_outcomes(source, cached, counter=None):
    out = []
    with msglc.LazyReader(source, cached=cached, counter=counter) as r:
        inl = r["inl"]
        for _ in range(2):  # the second time: the views kept by key
            for k in _INLINE_PROBES:
                out.append(answer(lambda k=k: inl[k]))
                out.append(answer(lambda k=k: r["inl"][k]))
                out.append(answer(lambda k=k: k in inl))
                out.append(answer(lambda k=k: inl.get(k, "default")))
                if counter is not None:
                    out.append((counter.requests, counter.bytes))
            out += [answer(lambda k=k: r[k]) for k in ("inl/k1", "inl/5", "inl/-3", "other/y3", "top", "nope")]
    out.append(answer(lambda: inl["k1"]))  # closed
    return out


@pytest.mark.parametrize("cached", [False, True])
def test_inline_dict_values_c_and_python(cached, tmp_path, monkeypatch):
    """An inline dict's keys answered in C (``FastGet`` kind "inline") are what the Python
    ``__getitem__`` answers, for every key and value kind, hit or miss, also counted."""
    path = tmp_path / "i.mlc"
    path.write_bytes(msglc.dumps(_inline_doc(), small_obj_optimization_threshold=64))
    with msglc.LazyReader(path) as r:
        assert type(r.read()).__name__ == type(r["inl"]).__name__ == "LazyInlineDict"  # the path under test
        assert plain(r["inl"].to_obj()) == plain(_inline_doc()["inl"])
    with_c, pure = both_modes(monkeypatch, lambda: _inline_outcomes(path, cached))
    assert with_c == pure
    assert with_c[-1][0] == "ValueError"
    counted = both_modes(monkeypatch, lambda: _inline_outcomes(path, cached, LazyStats()))
    assert counted[0] == counted[1]


def _python_calls_in_views(run):
    """The functions of ``msglc/read/views.py`` that ``run()`` calls in Python."""
    seen = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == views_module.__file__:
            seen.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return seen


def test_inline_dict_keys_are_answered_in_c_once_the_dict_was_looked_up():
    """After a dict's first lookup (in Python, which gives the view its key map), its values
    without a node and its kept views come from C alone, with no Python frame."""
    doc = {"d": {"a": 1.5, "b": "text", "c": [list(range(100))] * 3}, "pad": list(range(1000))}
    with msglc.LazyReader(msglc.dumps(doc, small_obj_optimization_threshold=64), cached=False) as r:
        d = r["d"]
        assert type(d) is views_module.LazyInlineDict
        assert _python_calls_in_views(lambda: (d["a"], d["c"]))  # the first time: Python
        first = d["c"]

        def again():
            for _ in range(3):
                assert d["a"] == 1.5 and d["b"] == "text" and d["c"] is first

        assert _python_calls_in_views(again) == []


def test_inline_dict_views_kept_by_key_stay_right(monkeypatch):
    """A view kept by key is the view of that key's container, dropped with the others (the
    bound on kept views, close); a batch keeps its own."""
    doc = {f"t{i}": {f"k{j}": [i, j] for j in range(40)} for i in range(60)}
    monkeypatch.setattr(views_module, "MAX_VIEWS", 16)
    with msglc.LazyReader(msglc.dumps(doc, small_obj_optimization_threshold=64), cached=False) as r:
        root = r.read()
        for _ in range(3):
            for i in range(60):
                t = root[f"t{i}"]
                assert t is root[f"t{i}"] and t["k7"] == [i, 7] and t.location() == r[[f"t{i}"]].location()
                assert len(archive_of(r).views) <= 16
        got = r.read_many(["t5/k3", "t6", "t6/k2"])
        assert got[0] == [5, 3] and got[1]["k2"] == got[2] == [6, 2] and root["t6"]["k2"] == [6, 2]
    assert not archive_of(r).views
    with pytest.raises(ValueError, match="closed"):
        root["t1"]


def test_inline_dicts_damaged_c_answers_only_what_python_answers(tmp_path, monkeypatch):
    data = msglc.dumps(_inline_doc(), small_obj_optimization_threshold=64)
    rng = random.Random(13)
    path = tmp_path / "i.mlc"
    for _ in range(40):
        b = bytearray(data)
        for _ in range(rng.randrange(1, 3)):
            at = rng.randrange(16, len(b)) if rng.random() < 0.7 else rng.randrange(len(b) - 4000, len(b))
            b[at] ^= 1 << rng.randrange(8)
        path.write_bytes(b)
        with_c, pure = both_modes(monkeypatch, lambda: answer(lambda: _inline_outcomes(path, False)))
        assert with_c == pure


def test_fast_get_is_called_and_pickled_as_the_python_getitem(tmp_path, monkeypatch):
    """``view.__getitem__`` in C takes what the Python method takes (a keyword argument, the
    wrong number of arguments: the same errors) and has what it has: a name, so that a bound
    ``view.__getitem__`` pickles (``pickle``, and ``cloudpickle`` as Dask uses it)."""
    import pickle

    doc = {
        "inl": {f"k{i}": i for i in range(50)},
        "h": {f"h{i}": i for i in range(5000)},
        "m": [[float(i + j) for j in range(10)] for i in range(10)],
    }
    path = tmp_path / "g.mlc"
    path.write_bytes(msglc.dumps(doc, small_obj_optimization_threshold=64))
    probes = [("inl", "k1", "key"), ("h", "h1", "key"), ("m", 1, "i")]

    def run():
        out = []
        with msglc.LazyReader(path, cached=False) as r:
            for name, k, kw in probes:
                get = r[name].__getitem__
                out.append(answer(lambda get=get, k=k, kw=kw: get(**{kw: k})))
                out.append(answer(lambda get=get: get()))
                out.append(answer(lambda get=get, k=k: get(k, k)))
                out.append(answer(lambda get=get: (get.__name__, get.__qualname__, get.__doc__)))
                out.append(answer(lambda get=get, k=k: pickle.loads(pickle.dumps(get))(k)))
        return out

    with_c, pure = both_modes(monkeypatch, run)
    assert with_c == pure
    assert with_c[0] == with_c[4] == ("ok", 1)
    if accel.speedups is not None:
        from msglc.read import views

        for cls in (views.LazyStrideList, views.LazyHashDict, views.LazyInlineDict):
            assert type(cls.__dict__["__getitem__"]) is accel.speedups.FastGet
            assert pickle.loads(pickle.dumps(cls.__getitem__)) is cls.__getitem__
    cloudpickle = pytest.importorskip("cloudpickle")
    with msglc.LazyReader(path, cached=False) as r:
        for name, k, _ in probes:
            assert plain(cloudpickle.loads(cloudpickle.dumps(r[name].__getitem__))(k)) == plain(r[name][k])


def _grouped_by_python(members, depth, n):
    """What group_indices answers, in plain Python: None unless every member's segment at
    ``depth`` is an exact str of 1-18 ASCII digits naming an item below ``n``."""
    named = []
    for at, (_, segs) in enumerate(members):
        if type(segs) is not list or len(segs) <= depth:
            return None
        seg = segs[depth]
        if type(seg) is not str or not (seg.isascii() and seg.isdigit()) or not 1 <= len(seg) <= 18 or int(seg) >= n:
            return None
        named.append((int(seg), at))
    if not named:
        return None
    named.sort()
    indices: list[int] = []
    groups: list[list[object]] = []
    tails: list[object] = []
    for index, at in named:
        if indices and indices[-1] == index:
            groups[-1].append(members[at])
            tails[-1] = None
            continue
        indices.append(index)
        groups.append([members[at]])
        tails.append(members[at][1][depth + 1 :] or None)
    return indices, groups, tails


class _Str(str):
    pass


@pytest.mark.skipif(accel.speedups is None, reason="the C accelerator is not built")
def test_read_many_groups_list_paths_in_c_as_python_would():
    """group_indices (read_many's grouping under a list, in C) answers as its plain-Python
    statement does, for segments of every kind: digits with leading zeros, too many digits,
    non-ASCII digits, signs, ints, str subclasses, paths that end at the list, duplicates."""
    rng = random.Random(7)
    kinds = [
        lambda: str(rng.randrange(120)),
        lambda: "0" + str(rng.randrange(50)),
        lambda: "9" * rng.choice([17, 18, 19, 25]),
        lambda: "\u0661\u0662",
        lambda: "-1",
        lambda: "+3",
        lambda: "",
        lambda: rng.randrange(50),
        lambda: _Str("5"),
        lambda: "3x",
    ]
    assert accel.speedups is not None
    for trial in range(3000):
        count = rng.randrange(1, 8)
        members = []
        for i in range(count):
            seg = str(rng.randrange(30)) if rng.random() < 0.85 else rng.choice(kinds)()
            segs = ["runs", seg, *rng.choice([[], ["score"], ["a", "b"]])]
            if rng.random() < 0.03:
                segs = ["runs"]  # ends at the list
            members.append((i, segs))
        n = rng.choice([1, 30, 100, 2**40])
        assert accel.speedups.group_indices(members, 1, n) == _grouped_by_python(members, 1, n), (trial, members, n)
    assert accel.speedups.group_indices([], 1, 10) is None
    assert accel.speedups.group_indices([(0, ("runs", "1"))], 1, 10) is None  # type: ignore[list-item]  # segments not a list


@pytest.mark.parametrize("pure", [False, True], ids=["C", "Python"])
@pytest.mark.parametrize(
    ("starts", "offs", "ok"),
    [
        ([0, 2, 5], [3, 10, 20, 30], True),
        ([0, 2, 2], [3, 10, 20, 30], False),  # a span of no items
        ([0, 5, 2], [3, 10, 20, 30], False),
        ([0, 2, 5], [3, 10, 10, 30], False),  # a span of no bytes
        ([0, 2, 5], [3, 10, 20, 2**64], True),  # past 64 bits signed: the Python check decides
        ([0, 2, 5], [3, 10, 2**64, 2**64 - 1], False),
    ],
)
def test_span_tables_that_do_not_rise_are_refused_by_both_checks(monkeypatch, pure, starts, offs, ok):
    """A list node whose span starts or offsets do not rise strictly is refused at its first
    read, by the C check of an open as by the Python one (a TOC node is checked before any
    offset in it is used)."""
    from msglc.errors import CorruptedError
    from msglc.format.nodes import ListNode, check_node

    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    node = ListNode(n=9, starts=starts, offs=offs, kids={})
    if ok:
        check_node(node, 100, 0)
    else:
        with pytest.raises(CorruptedError, match="inconsistent spans"):
            check_node(node, 100, 0)
