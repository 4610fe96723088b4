"""Fuzz msglc's readers with damaged and crafted archives: ``python -m benchmark.fuzz``.

A corpus of valid archives is built once (every node type, several thresholds, combined,
appended and streamed archives, NumPy arrays, node-less roots, scalars, and compressed (2.1)
archives of each kind: dumped, streamed by ``LazyWriter``, combined from compressed inputs
with their dictionaries, appended to; with raw and byte-shuffled frames, dictionaries, fuse
and compact dict nodes); each case takes one of them and one mutation, both drawn from
``random.Random(f"{seed}:{index}")``, so a case is named by its id ``seed:index`` and re-run
exactly with ``--replay ID`` (with the same ``--kinds``). Mutations:

- raw bytes: ``bitflip``, ``overwrite``, ``insert``, ``delete``, ``truncate``, ``splice`` (two
  archives cut and joined), anywhere: header, data, free space, TOC, trailer, and in a
  compressed archive its frames and tables;
- ``header``: a header or trailer field changed (minor, major, end, offsets, lengths, CRCs,
  threshold), the trailer CRC recomputed or not;
- ``toc``: one TOC node decoded, a field changed (an offset, start or count moved by one,
  keys renamed, a kind changed, a child reference moved or pointed at another node), and the
  TOC laid out again with every reference, node CRC and the trailer recomputed;
- ``index``: a hash index region changed (type 3: an entry offset, a record, a page bound;
  type 6: a block offset, a record's block or fingerprint, a page bound) with its page CRCs,
  table CRC and the node's ``offs_crc`` recomputed;
- ``datacrc`` / ``datashift``: data bytes changed (or inserted, deleted) with the data CRC
  (and the trailer's lengths) recomputed: a crafted archive whose only truth is its data;
- ``value``: a value made one a read refuses (a str byte made invalid UTF-8, a byte of a
  NumPy array's header changed), the data CRC recomputed.

In a compressed archive the crafted data mutations (``datacrc``, ``datashift``, ``value``)
change the plain data and make the frames that hold it again, as they were made (raw,
shuffled, with their dictionary), so that every checksum holds (zstd's, the page tables',
the index's, the data CRC of the plain bytes). Compressed (2.1) archives have mutations of
their own, each laid out again with every offset and CRC recomputed (``fuzz_frames``), page
tables of 1, 2, 3 or the writer's number of frames, so that only consistency checks can tell:

- ``zindex``: a field of the section's index (the data/TOC split, the root, frame and page
  counts, frames per page, a page's or a dictionary's place, size or plain size, the
  footer's size or descriptor);
- ``zpage``: a frame's page-table entry (stored or plain size, the next frame's moved to
  match or not, a bomb claiming a large plain size, zero sizes, the filter code and
  parameter, the dictionary number, two entries swapped, a page's stated count);
- ``zdict``: a dictionary record (its zstd frame swapped for another: its content with a
  byte changed, shorter or longer, other data, no checksum, no content size, a raw frame,
  no frame at all; its declared size; its record header);
- ``zraw``: a raw frame (a header byte, its checksum, cut short or made longer, a zstd frame
  labelled raw, a raw one labelled otherwise, its plain size grown: in-place reads past it);
- ``ztoc`` / ``zhash``: ``toc`` and ``index`` on the TOC inside the frames (decompressed,
  edited as a plain archive's, node CRCs recomputed, framed again in frames of random
  sizes): type 8 nodes (a key's length moved into its value's), type 7 (seed and shape
  fields, the region laid out for them; slots, chunk CRCs, block offsets);
- ``zlayout``: nothing changed but the layout, one no writer makes (data frames of random
  sizes, each zstd, raw, shuffled or with a dictionary; TOC frames of random sizes; small
  page tables): the archive must read back (else ``valid-fails``).

A changed filter of a data frame counts as a data change: nothing in a frame names its
filter, and lazy reads do not checksum the plain data (``verify()`` and ``to_obj()`` do).
The corpus also holds deep archives (nested 1200 levels, written with a raised recursion
limit), read at the default limit; the harness compares values with a raised one and skips
the ``walk`` and ``iter`` stages on deep archives (their checks recurse in the harness) and
on large ones (over ``BIG_SAMPLE`` bytes of data: the other stages read them whole).

Each mutated archive is opened with ``LazyReader(bytes, cached=False)`` and read in stages:
``inspect`` (``info()``, a compressed archive's ``frames()`` and the ``dictionary(d)`` they
name), ``walk`` (index every item, negative indices, slices, ``in``, ``get``, NumPy
selections), ``iter`` (iteration, ``items()``, each lazy part's ``to_obj()``), ``paths``
(``reader[path]`` for paths of the original), ``many`` (``read_many`` of them), ``stream``
(compressed archives: ``read_many`` batched and the root's ``to_obj()`` through a file
object, whose reads fetch frames together and fill arrays in place), ``root_to_obj`` (the
lazy root's ``to_obj()``, unchecked), ``to_obj`` (checked), ``verify`` and ``copy`` (a share
of the cases on compressed archives, ``--copy-share``, 0.25; not large ones: ``combine`` of
the archive and a repack of its reader, each read back verified). The values are compared
with the truth: the original value, or for crafted data the data section decoded. Outcomes:

- bug classes (``BUG_CLASSES``): ``undocumented`` (an exception other than an ``MsglcError``,
  or a KeyError/IndexError/TypeError that no data change implies), ``hang`` (the case ran past
  ``--timeout`` in its worker, or the worker stopped answering), ``memory`` (MemoryError under
  the worker's address-space limit), ``worker-died`` (a crash), ``wrong-verify-passes`` (a value
  differs from the truth and ``verify()`` passed), ``wrong-outside-data`` (a change outside
  the data section gave a different value, or a lookup error, without an error),
  ``undetected-damage`` (a damaged archive, not crafted, whose ``verify()`` passed or whose
  checked ``to_obj()`` returned a value), ``valid-fails`` (a corpus archive, unchanged, or
  laid out anew by ``zlayout``, that does not read back: every campaign starts with the
  corpus, ids ``valid:NAME``), ``verify-passes-unreadable`` (crafted data that ``verify()``
  accepts but a read refuses: verify() decodes every value, issue 29), and
  ``read-outside-file`` (a read asked the source for bytes outside the file: every offset
  is checked against the file before it is read; the source refuses it, but that is luck),
  and ``bad-copy`` (a copy was written that holds other values than the truth, or that does
  not verify although the archive copied does);
- other classes: ``ok``, ``error`` (a documented error), ``changed-in-data`` (lazy reads saw
  a changed data byte, which they do not checksum; ``verify()`` and ``to_obj()`` raised),
  ``lookup-crafted-toc`` (a crafted TOC that renames a key, or a crafted hash index, makes a
  lookup a KeyError: only reading the data could tell).

Cases run in worker processes (fork; ``--workers``, default 2), each under a soft timeout
(``signal.setitimer``: the traceback shows where it hung) and a hard one (the worker is
killed), with ``RLIMIT_AS`` set to its size plus ``--mem-mb``. The report gives counts per
class, the distinct failures (by exception type and the line that raised it, or by stage and
mutation kind) with example ids, and the rate.

    python -m benchmark.fuzz --cases 20000 --seed 1 --out report.json
    python -m benchmark.fuzz --seconds 60 --kinds toc,index
    python -m benchmark.fuzz --kinds zindex,zpage,zdict,zraw,ztoc,zhash,zlayout   # 2.1 only
    python -m benchmark.fuzz --sweep doc@64 --stride 1    # one bit flip at every byte
    python -m benchmark.fuzz --replay 1:4711              # the stages, with tracebacks
    python -m benchmark.fuzz --save 1:4711 case.mlc       # the mutated archive
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import itertools
import json
import os
import random
import resource
import signal
import struct
import sys
import tempfile
import time
import traceback
import zlib
from bisect import bisect_right
from collections import Counter, deque
from dataclasses import dataclass, field
from itertools import accumulate
from multiprocessing import connection, get_context
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy: one thread, a small address space

import msgspec  # noqa: E402
import numpy as np  # noqa: E402

import msglc  # noqa: E402
from benchmark import fuzz_frames as ff  # noqa: E402
from msglc import FileInfo, LazyArray, LazyDict, LazyList, MsglcError  # noqa: E402
from msglc.format.frames import (  # noqa: E402  # noqa: E402
    MAX_DICT,
    MAX_FRAME,
    NO_FILTER,
    RAW,
    RAW_HEAD,
    RAW_MAX,
    SHUFFLE,
    dictionary_frame,
    pack_raw_frame,
)
from msglc.format.fuse import CHUNK, fuse_layout  # noqa: E402
from msglc.format.hash_index import block_count, block_width  # noqa: E402
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, Trailer, pack_header, unpack_trailer  # noqa: E402
from msglc.format.nodes import (  # noqa: E402
    BlockHashMapNode,
    CompactMapNode,
    FuseMapNode,
    HashMapNode,
    MapNode,
    frame_node,
    unframe_node,
)
from msglc.format.numpy_ext import ext_hook, find_tiled  # noqa: E402
from msglc.format.walk import deep_decode  # noqa: E402
from msglc.io.local import BufferSource, StreamSource  # noqa: E402
from msglc.read.part import archive_of  # noqa: E402
from msglc.util.optional import zstandard  # noqa: E402
from msglc.write.compress import TOC_FRAME  # noqa: E402

BUG_CLASSES = (
    "undocumented",
    "hang",
    "memory",
    "worker-died",
    "wrong-verify-passes",
    "wrong-outside-data",
    "undetected-damage",
    "valid-fails",
    "verify-passes-unreadable",
    "read-outside-file",
    "bad-copy",
)
INFO_CLASSES = ("ok", "error", "changed-in-data", "lookup-crafted-toc")
KIND_WEIGHTS = {
    "bitflip": 20,
    "overwrite": 12,
    "insert": 5,
    "delete": 5,
    "truncate": 4,
    "splice": 4,
    "header": 8,
    "toc": 22,
    "index": 5,
    "datacrc": 12,
    "datashift": 4,
    "value": 8,
    "zindex": 5,
    "zpage": 6,
    "zdict": 3,
    "zraw": 4,
    "ztoc": 8,
    "zhash": 4,
    "zlayout": 3,
}
STAGES = ("open", "inspect", "walk", "iter", "paths", "many", "stream", "root_to_obj", "to_obj", "verify", "copy")
LOOKUP_STAGES = ("walk", "iter", "paths", "many", "stream")  # where a changed data byte may imply a lookup error
SLOW_SECONDS = 2.0
COPY_SHARE = 0.25  # of the cases on compressed archives (but large ones) run the "copy" stage: two
# copies, verified
_decoder = msgspec.msgpack.Decoder(ext_hook=ext_hook)
_MISSING = object()


DEEP_LIMIT = 20_000  # the recursion limit the harness compares deep values with (never the readers)


@contextlib.contextmanager
def deep_limit() -> Any:
    """Python's recursion limit raised, for the harness's own recursive comparisons of
    values nested deeper than the default limit allows."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, DEEP_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def decode_data(data: bytes | memoryview) -> Any:
    """A data section decoded as the reader decodes it, at any depth."""
    try:
        return _decoder.decode(data)
    except RecursionError:
        return deep_decode(data)


class CaseTimeout(BaseException):
    """Raised by the soft timer: a BaseException, so no ``except Exception`` takes it."""


# ---- values: comparison and the path semantics of the README ------------------------------------


def _canon_hook(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return ["\x00ndarray", str(x.dtype.descr), x.dtype.str, list(x.shape), np.ascontiguousarray(x).tobytes()]
    if isinstance(x, np.generic):
        return ["\x00generic", type(x).__name__, str(x.dtype.descr), x.dtype.str, x.tobytes()]
    raise TypeError(type(x).__name__)


_canon = msgspec.msgpack.Encoder(enc_hook=_canon_hook).encode


def canon(x: Any) -> bytes | None:
    """A byte string equal for values ``same`` calls equal (msgpack keeps types, float
    bits and key order), or None where it cannot say."""
    try:
        return _canon(x)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None


def same(a: Any, b: Any, b_canon: bytes | None = None) -> bool:
    """Equal values of the same types (bit-exact floats, NumPy dtype, shape and bytes, dict
    order); lists and tuples alike. ``b_canon``: ``canon(b)`` if known."""
    ca = canon(a)
    if ca is not None:
        cb = b_canon if b_canon is not None else canon(b)
        if cb is not None:
            return ca == cb
    return _same(a, b)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        return (
            type(a) is type(b)
            and a.dtype == b.dtype
            and np.shape(a) == np.shape(b)
            and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
        )
    if isinstance(a, tuple):
        a = list(a)
    if isinstance(b, tuple):
        b = list(b)
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(map(_same, a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(
            _same(ka, kb) and _same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    return a == b


def plain(x: Any) -> Any:
    """What reading back gives for a value written by ``dumps``: tuples as lists, NumPy
    scalars as the plain values they equal (or 0-d arrays where none does)."""
    if isinstance(x, np.generic):
        return x.item() if x.dtype.kind in "biufSU" and x.dtype.itemsize <= 8 or x.dtype.kind in "SU" else np.asarray(x)
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def _segment(seg: Any, n: int) -> int | slice:
    """A str segment on n items, as the README defines it: ``start:stop`` or
    ``start:step:stop`` (defaults 0, 1, n), a start outside [-n, n) or a stop outside
    [1-n, n] moved by n at a time until inside."""
    if not isinstance(seg, str):
        return seg
    parts = seg.split(":")
    if len(parts) == 1:
        return int(seg)
    if len(parts) == 2:
        parts.insert(1, "")
    start, step, stop = (int(p) if p else d for p, d in zip(parts, (0, 1, n), strict=True))
    while n and start < -n:
        start += n
    while n and start >= n:
        start -= n
    while n and stop < 1 - n:
        stop += n
    while n and stop > n:
        stop -= n
    return slice(start, stop, step)


def expect(obj: Any, segs: list) -> Any:
    """The value at ``segs`` in the plain value ``obj``, as the README defines paths (an
    independent oracle for ``reader[path]``): raises KeyError, IndexError or TypeError."""
    for d, seg in enumerate(segs):
        if isinstance(obj, np.ndarray):
            take = segs[d : d + max(obj.ndim, 1)]
            return expect(
                obj[tuple(_segment(s, obj.shape[k] if k < obj.ndim else 0) for k, s in enumerate(take))],
                segs[d + len(take) :],
            )
        if isinstance(obj, list):
            index = _segment(seg, len(obj))
            if isinstance(index, slice):
                return [expect(x, segs[d + 1 :]) for x in obj[index]]
            obj = obj[index]
        elif isinstance(obj, dict):
            if seg in obj:
                obj = obj[seg]
            elif isinstance(seg, str) and seg.lstrip("-").isdigit() and int(seg) in obj:
                obj = obj[int(seg)]
            else:
                raise KeyError(seg)
        else:
            raise TypeError(f"cannot look up {seg!r} in a {type(obj).__name__}")
    return obj


class Inconsistent(Exception):
    """Two ways of reading the same part gave different values."""


def walk(x: Any) -> Any:
    """Every part of ``x`` read by indexing (items, negative indices, slices, keys, ``in``,
    ``get``, NumPy selections), as plain values."""
    if isinstance(x, LazyArray):
        return _walk_array(x)
    if isinstance(x, LazyList):
        n = len(x)
        out = [walk(x[i]) for i in range(n)]
        if n:  # the other ways in, each compared whole (decoded at once, not walked again)
            _agree(_whole(x[-1]), out[-1], "x[-1]")
            _agree(_whole(x[-n]), out[0], "x[-n]")
            for s in (slice(1, 4), slice(-3, None), slice(None, None, max(1, n // 4)), slice(None, 3, -2)):
                _agree([_whole(v) for v in x[s]], out[s], f"x[{s}]")
        for bad in (n, -n - 1):
            try:
                x[bad]
            except IndexError:
                pass
            else:
                raise Inconsistent(f"x[{bad}] of a list of {n} did not raise IndexError")
        return out
    if isinstance(x, LazyDict):
        keys = list(x)
        if len(keys) != len(x):
            raise Inconsistent(f"len() {len(x)} but {len(keys)} keys")
        out = {}
        for k in keys:
            out[k] = walk(x[k])
            if k not in x:
                raise Inconsistent(f"{k!r} listed but not in")
        for k in keys[:3] + keys[-3:]:
            _agree(_whole(x.get(k)), out[k], f"get({k!r})")
        if "\x00missing" in x or x.get("\x00missing", _MISSING) is not _MISSING:
            raise Inconsistent("a missing key was found")
        return out
    if type(x) is list and any(isinstance(v, (LazyList, LazyDict, LazyArray, list)) for v in x):
        return [walk(v) for v in x]  # a slice path's list of lazy parts
    return x


def _whole(x: Any) -> Any:
    """A value read whole: a lazy part decoded in one call (``to_obj``); a list of them (a
    slice path's value) item by item."""
    if isinstance(x, LazyArray):
        return np.array(x.to_obj())
    if isinstance(x, (LazyList, LazyDict)):
        return x.to_obj()
    if type(x) is list and any(isinstance(v, (LazyList, LazyDict, LazyArray, list)) for v in x):
        return msglc.to_obj(x)  # (a loop: the list may be a deep value)
    return x


def _walk_array(x: LazyArray) -> Any:
    whole = np.array(np.asarray(x))
    if whole.shape != x.shape or whole.dtype != x.dtype:
        raise Inconsistent(f"np.asarray gave {whole.shape} {whole.dtype}, the array says {x.shape} {x.dtype}")
    if x.ndim == 0:
        _agree(x[()], whole[()], "a[()]")
        return whole
    keys: list[Any] = [(Ellipsis, None), slice(1, 3), slice(None, None, -2)]
    if len(x):
        keys += [0, -1, (0,) * x.ndim, (-1,) * x.ndim]
    if x.ndim >= 2:
        keys += [(slice(None), 0), (slice(None, None, 2), slice(-2, None))] if x.shape[1] else []
    for key in keys:
        _agree(x[key], whole[key], f"a[{key}]")
    return whole


def walk_iter(x: Any) -> Any:
    """Every part of ``x`` read by iteration (``iter``, ``items()``, ``values()``) and each
    lazy part's ``to_obj()``, as plain values."""
    if isinstance(x, LazyArray):
        whole = np.array(x.to_obj())
        if x.ndim:
            for i, row in zip(range(200), x, strict=False):  # the first rows (items) one by one
                _agree(row, whole[i], f"iter(a)[{i}]")
        return whole
    if isinstance(x, LazyList):
        out = [walk_iter(v) for v in x]
    elif isinstance(x, LazyDict):
        out = {k: walk_iter(v) for k, v in x.items()}
        if len(list(x.values())) != len(out):
            raise Inconsistent("values() and items() differ in length")
    else:
        return x
    _agree(x.to_obj(), out, "to_obj()")
    return out


def _agree(a: Any, b: Any, what: str) -> None:
    if not same(a, b):
        raise Inconsistent(f"{what} gave {_short(a)}, expected {_short(b)}")


def _short(x: Any) -> str:
    try:
        text = repr(x)
    except Exception as e:  # noqa: BLE001 - e.g. a NumPy str array holding invalid code points
        text = f"<{type(x).__name__}: repr raised {type(e).__name__}>"
    return text if len(text) < 120 else text[:117] + "..."


# ---- the corpus ---------------------------------------------------------------------------------


@dataclass
class Sample:
    name: str
    kind: str
    threshold: int
    data: bytes
    truth: Any
    paths: list
    expected: list  # per path: the value, or the exception class reading it must raise
    trailer: Trailer
    slack: bool  # holds bytes no reader depends on (free space, TOC past the root)
    truth_canon: bytes | None = None
    live: list = field(default_factory=list)  # (start, end) of the TOC items the root reaches
    toc: Any = None  # (items, root position) for TOC edits, None if it has no nodes
    plain: bytes | None = None  # a compressed archive's data section, decompressed
    toc_plain: tuple[bytes, tuple[int, int]] | None = None  # ... and its TOC, with its root node
    deep: bool = False  # nested deeper than the default recursion limit
    section: ff.Section | None = None  # a 2.1 archive's compressed section, taken apart
    virtual: bytes | None = None  # ... and the plain archive it holds (its TOC edited as a plain one's)
    vtoc: Any = None  # the virtual archive's TOC items, as ``toc`` (None: no nodes)
    spans: list = field(default_factory=list)  # 2.1: (start, end, region) of every part of the file
    dict_content: list[bytes] = field(default_factory=list)  # 2.1: its dictionaries' raw content
    big: bool = False  # read without the walks of every item (the other stages read it all)
    cache: dict = field(default_factory=dict)  # what mutations find in it once (``m_value``'s values)

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


def _rng_values(rng: random.Random, n: int) -> list:
    pool = [
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
    inline = {f"k{i}": v for i, v in enumerate(_rng_values(rng, 50))}
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
    fused = {  # compressed, a fuse-indexed dict (node type 7) of about a dozen blocks
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
        "doc": {
            "list": list(range(300)),
            "rows": [[float(i), float(-i)] for i in range(40)],
            "map": {f"k{i}": "v" * (i % 5) for i in range(60)},
            "hash": {f"h{i}": i for i in range(1100)},
            "nested": [{"x": [i] * 10} for i in range(20)],
        },
    }


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
        sample.expected = [_expected(truth, p) for p in sample.paths]
        samples.append(sample)
    _check_coverage(samples)
    return samples


def _take_apart(s: Sample) -> None:
    """A 2.1 sample's section as parts (``fuzz_frames``), the plain archive it holds (its TOC
    edited as a plain archive's is, then framed again), and the region of every stored byte:
    frames of the data, frames of the TOC (``dead`` when they hold no node the root reaches),
    ``tables`` (dictionary records, page tables, the index)."""
    assert s.plain is not None and s.toc_plain is not None
    t = s.trailer
    s.section = sec = ff.parse_section(s.data[t.data_off : t.data_off + t.data_len])
    s.dict_content = [_dict_content(record, plain) for record, plain in sec.dicts]
    if ff.build_section(sec) != s.data[t.data_off : t.data_off + t.data_len]:
        raise RuntimeError(f"corpus {s.name}: its compressed section is not laid out as fuzz_frames lays it out")
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
    found = {
        "a dictionary": any(s.section.dicts for s in sections),
        "a raw frame": any(f.code == RAW for s in sections for f in s.section.frames),
        "a shuffled frame": any(f.code == SHUFFLE for s in sections for f in s.section.frames),
        "a fuse-indexed dict": any(
            isinstance(it.node, FuseMapNode) for s in sections if s.vtoc is not None for it in s.vtoc[0]
        ),
        "a compact dict node": any(it.compact for s in sections if s.vtoc is not None for it in s.vtoc[0]),
        "a tiled NumPy array": any(find_tiled(s.plain) is not None for s in sections if s.plain is not None),
    }
    missing = [what for what, ok in found.items() if not ok]
    if missing:
        raise RuntimeError(f"the corpus has no compressed archive with {', '.join(missing)}")


def _expected(truth: Any, path: Any) -> Any:
    segs = path.split("/") if isinstance(path, str) else list(path)
    try:
        return expect(truth, [s for s in segs if s != ""])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        return type(e)


def _paths(truth: Any, rng: random.Random, most: int = 14) -> list:
    """Paths into ``truth``: to leaves and containers, in list and str forms, with negative
    indices, slices and missing keys."""
    found: list[list] = []
    stack: list[tuple[Any, list]] = [(truth, [])]
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
    paths: list = []
    for path in rng.sample(found, min(most, len(found))):
        if all(isinstance(seg, int) or _plain_key(seg) for seg in path) and rng.random() < 0.5:
            path = "/".join(map(str, path))
        paths.append(path)
    if isinstance(truth, list) and truth:
        paths += [f"1:{min(4, len(truth))}", ":7:", "-2:", f"{-len(truth) - 2}:2:{len(truth) + 3}"]
    lists = [p for p in found if all(_plain_key(seg) for seg in p) and isinstance(_expected(truth, p), list)]
    for p in rng.sample(lists, min(2, len(lists))):
        paths.append("/".join(p) + rng.choice(["/-2:", "/0:3", "/:5:", "/1:2:-1"]))
    paths.append(["\x00no such key"] if isinstance(truth, dict) else [10**9])
    return paths


def _plain_key(seg: Any) -> bool:
    """A str key that a str path can name without ambiguity."""
    return isinstance(seg, str) and seg != "" and "/" not in seg and ":" not in seg and not seg.lstrip("-").isdigit()


# ---- the TOC, laid out again ----------------------------------------------------------------------


@dataclass
class TocItem:
    pos: int  # absolute offset in the archive
    size: int
    kind: str  # "node", "region" (a hash index) or "gap" (bytes nothing refers to)
    node: Any = None
    owner: int = -1  # for a region: the position of its node
    compact: bool = False  # a dict node stored as type 8 (key and value lengths): laid out again so


def toc_layout(data: bytes) -> tuple[list[TocItem], int] | None:
    """The TOC of a valid archive as items in file order, with the root's position; None if
    it has no nodes or its items overlap (nothing to lay out again)."""
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), data[:HEADER_SIZE])
    if not t.root_len:
        return None
    root = t.toc_off + t.root_pos
    items: dict[int, TocItem] = {}
    stack = [(root, t.root_len)]
    while stack:
        pos, size = stack.pop()
        if pos in items:
            continue
        node = unframe_node(data[pos : pos + size], pos)
        compact = isinstance(node, MapNode) and msgspec.msgpack.decode(data[pos : pos + size - 4])[0] == 8
        items[pos] = TocItem(pos, size, "node", node, compact=compact)
        for back, length in getattr(node, "kids", {}).values():
            stack.append((pos - back, length))
        if isinstance(node, HashMapNode):
            at = pos - node.index[0]
            items[at] = TocItem(at, node.index[1], "region", owner=pos)
    ordered = sorted(items.values(), key=lambda it: it.pos)
    out: list[TocItem] = []
    here = t.toc_off
    for it in ordered:
        if it.pos < here:
            return None
        if it.pos > here:
            out.append(TocItem(here, it.pos - here, "gap"))
        out.append(it)
        here = it.pos + it.size
    if here < t.toc_off + t.toc_len:
        out.append(TocItem(here, t.toc_off + t.toc_len - here, "gap"))
    return out, root


def relayout(data: bytes, items: list[TocItem], root: int, edit: Any = None) -> bytes:
    """The archive with its TOC written again item by item: every child reference and index
    reference recomputed, each node framed with its CRC, the trailer's TOC fields and CRC
    recomputed. ``edit(item, node, new_pos, new_len, here)`` may return an item's new bytes
    (None: unchanged) and sees the new positions of everything before it."""
    header = data[:HEADER_SIZE]
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), header)
    new_pos: dict[int, int] = {}
    new_len: dict[int, int] = {}
    region_bytes: dict[int, bytes] = {}  # owner node -> its region's new bytes
    out = bytearray()
    for it in items:
        here = t.toc_off + len(out)
        new_pos[it.pos] = here
        blob = None
        if it.kind == "node":
            node = it.node
            if getattr(node, "kids", None):
                node = msgspec.structs.replace(
                    node, kids={k: (here - new_pos[it.pos - b], new_len[it.pos - b]) for k, (b, _) in node.kids.items()}
                )
            if isinstance(node, HashMapNode):
                at = it.pos - node.index[0]
                node = msgspec.structs.replace(node, index=(here - new_pos[at], new_len[at]))
                if it.pos in region_bytes:  # an edited region: its CRCs in the node follow it
                    node = _region_crcs(node, region_bytes[it.pos])
            if edit is not None:
                blob = edit(it, node, new_pos, new_len, here)
            if blob is None:
                blob = frame_node(CompactMapNode.of(node) if it.compact else node)
        else:
            if edit is not None:
                blob = edit(it, None, new_pos, new_len, here)
            if blob is None:
                blob = data[it.pos : it.pos + it.size]
            elif it.kind == "region":
                region_bytes[it.owner] = blob
        out += blob
        new_len[it.pos] = len(blob)
    fields = msgspec.structs.astuple(t)
    t2 = Trailer(
        fields[0], fields[1], fields[2], len(out), new_pos[root] - t.toc_off, new_len[root], fields[6], fields[7]
    )
    return data[: t.toc_off] + bytes(out) + t2.pack(header)


def _region_crcs(node: HashMapNode, region: bytes) -> HashMapNode:
    """``node`` with the CRCs it holds of its index ``region`` computed from it: the entry or
    block offsets' (``offs_crc``), and a fuse's chunk CRCs' (``crcs_crc``)."""
    width = node.offs_width
    count = block_count(node.n, node.block_bits) if isinstance(node, BlockHashMapNode) else node.n
    node = msgspec.structs.replace(node, offs_crc=zlib.crc32(region[: (count + 1) * width]))
    if isinstance(node, FuseMapNode):
        crcs, slots, _ = fuse_layout(node.n, node.block_bits, width, node.slot_bits, node.seg_bits, node.seg_count)
        node = msgspec.structs.replace(node, crcs_crc=zlib.crc32(region[crcs:slots]))
    return node


# ---- mutations --------------------------------------------------------------------------------------


@dataclass
class Mutation:
    data: bytes
    desc: str
    region: str  # "data", "header", "free", "toc", "dead", "trailer", "mixed", "mixed-data"
    crafted: str | None = None  # None, or what was recomputed to make it look valid: "toc", "data", "header"
    truth: str = "original"  # or "decode": the truth is the mutated data section
    plain: bytes | None = None  # with "decode", in a compressed archive: the mutated plain data
    copy: bool = False  # run the "copy" stage (compressed archives: a share of the cases, it costs)


INTERESTING = [
    0x00,
    0xFF,
    0x7F,
    0x80,
    0xC0,
    0xC1,
    0xC2,
    0xCA,
    0xCB,
    0xCC,
    0xD9,
    0xDC,
    0xDD,
    0xDE,
    0xDF,
    0x90,
    0x9F,
    0xA0,
    0xBF,
    0xC7,
    0xD4,
]


_SPAN_WEIGHTS = {"header": 1, "data": 5, "toc": 3, "dead": 0.5, "tables": 2, "trailer": 1.5}


def _pick_pos(rng: random.Random, s: Sample) -> int:
    if s.spans:  # 2.1: the section's parts by what they hold
        names = sorted({name for _, _, name in s.spans})
        name = rng.choices(names, [_SPAN_WEIGHTS[k] for k in names])[0]
        parts = [(a, b) for a, b, n in s.spans if n == name]
        a, b = rng.choices(parts, [b - a for a, b in parts])[0]
        return rng.randrange(a, b)
    t = s.trailer
    spans = {
        "header": (0, HEADER_SIZE, 1),
        "data": (t.data_off, t.data_off + t.data_len, 5),
        "toc": (t.toc_off, t.toc_off + t.toc_len, 3),
        "trailer": (len(s.data) - TRAILER_SIZE, len(s.data), 1.5),
        "free": (t.data_off + t.data_len, t.toc_off, 0.5),
    }
    spans = {k: v for k, v in spans.items() if v[1] > v[0]}
    names = list(spans)
    name = rng.choices(names, [spans[k][2] for k in names])[0]
    a, b, _ = spans[name]
    return rng.randrange(a, b)


def _regions(s: Sample, positions: list[int]) -> str:
    """The region of the changed bytes: one name, or "mixed-data" when some of them are data
    bytes (lazy reads may then see a changed value), else "mixed"."""
    found = {s.region(p) for p in positions}
    if len(found) == 1:
        return found.pop()
    return "mixed-data" if "data" in found else "mixed"


def m_bitflip(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    pos = _pick_pos(rng, s)
    bad = bytearray(s.data)
    flips = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        p = min(len(bad) - 1, pos + rng.randrange(0, 3))
        bit = rng.randrange(8)
        bad[p] ^= 1 << bit
        flips.append(f"{p}.{bit}")
    positions = [int(f.split(".")[0]) for f in flips]
    return Mutation(bytes(bad), f"bitflip {' '.join(flips)} ({_regions(s, positions)})", _regions(s, positions))


def m_overwrite(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    pos = _pick_pos(rng, s)
    n = min(rng.choice([1, 1, 2, 4]), len(s.data) - pos)
    new = bytes(rng.choice(INTERESTING) if rng.random() < 0.6 else rng.randrange(256) for _ in range(n))
    bad = s.data[:pos] + new + s.data[pos + n :]
    region = _regions(s, list(range(pos, pos + n)))
    return Mutation(bad, f"overwrite {pos}+{n} with {new.hex()} ({region})", region)


def m_insert(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    pos = _pick_pos(rng, s)
    n = rng.choice([1, 1, 2, 5, 16])
    new = bytes(rng.randrange(256) for _ in range(n)) if rng.random() < 0.5 else s.data[pos : pos + n] or b"\x00"
    region = s.region(pos)
    return Mutation(s.data[:pos] + new + s.data[pos:], f"insert {new.hex()} at {pos} ({region})", region)


def m_delete(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    pos = _pick_pos(rng, s)
    n = min(rng.choice([1, 1, 2, 5, 16]), len(s.data) - pos)
    region = _regions(s, list(range(pos, pos + n)))
    return Mutation(s.data[:pos] + s.data[pos + n :], f"delete {pos}+{n} ({region})", region)


def m_truncate(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    how = rng.randrange(3)
    if how == 0:
        size = rng.randrange(len(s.data))
        return Mutation(s.data[:size], f"truncate to {size}", "mixed")
    if how == 1:
        k = rng.randrange(1, 80)
        return Mutation(s.data[:-k], f"truncate the last {k}", "trailer")
    k = rng.randrange(1, len(s.data))
    return Mutation(s.data[k:], f"drop the first {k}", "mixed")


def m_splice(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    other = rng.choice(corpus)
    if other.data == s.data:
        return None  # type: ignore[return-value]
    if rng.random() < 0.5:  # this archive's header and data with the other's TOC and trailer
        t, u = s.trailer, other.trailer
        cut, at = (t.data_off + t.data_len, u.data_off + u.data_len) if rng.random() < 0.5 else (t.toc_off, u.toc_off)
    else:
        cut, at = rng.randrange(len(s.data)), rng.randrange(len(other.data))
    bad = s.data[:cut] + other.data[at:]
    if bad == other.data:  # the other archive, whole: nothing damaged
        return None  # type: ignore[return-value]
    region = "mixed-data" if cut < s.trailer.data_off + s.trailer.data_len else "mixed"
    return Mutation(bad, f"splice {s.name}[:{cut}] + {other.name}[{at}:]", region)


def m_header(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    data = bytearray(s.data)
    t = s.trailer
    fields = list(msgspec.structs.astuple(t))
    names = ["data_off", "data_len", "toc_off", "toc_len", "root_pos", "root_len", "data_crc", "threshold"]
    what = rng.choice(["minor", "major", "end", "end"] + names * 2 + ["tile"])
    recrc = rng.random() < 0.75
    if what in ("minor", "major"):
        at = 9 if what == "minor" else 8
        data[at] = rng.choice([0, 1, 2, 3, 255, data[at] ^ 1])
        desc = f"header {what} = {data[at]}"
    elif what == "end":
        end = rng.choice(
            [
                len(s.data),
                len(s.data) - 1,
                len(s.data) + 1,
                rng.randrange(len(s.data)),
                2**48 - 1,
                HEADER_SIZE + TRAILER_SIZE,
            ]
        )
        data[10:16] = end.to_bytes(6, "little")
        desc = f"header end = {end} (size {len(s.data)})"
        recrc = False  # the trailer CRC reads end as zero
    elif what == "tile":  # shrink the data, grow the free space: consistent offsets
        k = rng.choice([1, 2, 9])
        if t.data_len <= k:
            return None  # type: ignore[return-value]
        fields[1] -= k
        if rng.random() < 0.5:
            fields[6] = zlib.crc32(s.data[t.data_off : t.data_off + fields[1]])
        data[9] = max(data[9], 2)
        desc = f"trailer data_len -{k}, minor 2"
    else:
        i = names.index(what)
        old = fields[i]
        delta = rng.choice([1, -1, 2, -2, 8, -8, 64, 1 << 20, -old, 2**32, 2**63 - 1 - old])
        fields[i] = max(0, old + delta) if i < 6 else (old + delta) % 2**32
        if i == 5 and fields[i] >= 2**32:
            fields[i] %= 2**32
        desc = f"trailer {what} {old} -> {fields[i]}"
    header = bytes(data[:HEADER_SIZE])
    if what not in ("minor", "major", "end") or recrc:
        try:
            packed = Trailer(*fields).pack(header) if recrc else _pack_keep_crc(Trailer(*fields), s.data)
        except struct.error:
            return None  # type: ignore[return-value]
        data[-TRAILER_SIZE:] = packed
    desc += ", trailer CRC recomputed" if recrc else ""
    return Mutation(
        bytes(data),
        desc,
        "trailer" if what in names or what == "tile" else "header",
        crafted="header" if recrc else None,
    )


def _pack_keep_crc(t: Trailer, original: bytes) -> bytes:
    """The trailer with these fields and the original (now wrong) CRC."""
    body = struct.pack("<QQQQQIII", *msgspec.structs.astuple(t))
    return body + original[-12:]


def _slots(holder: Any, key: Any, label: str, out: list, depth: int = 0) -> None:
    value = holder[key]
    out.append((holder, key, value, label))
    if depth >= 3:
        return
    if isinstance(value, list):
        for i in range(min(len(value), 64)):
            _slots(value, i, f"{label}[{i}]", out, depth + 1)
    elif isinstance(value, dict):
        for k in list(value)[:64]:
            _slots(value, k, f"{label}[{k!r}]", out, depth + 1)


def _mutate_payload(rng: random.Random, payload: list, names: tuple) -> str:
    """Change one field of a node's payload ([tag, field, ...]) in place; returns what."""
    slots: list = []
    for i in range(len(payload)):
        _slots(payload, i, "tag" if i == 0 else names[i - 1], slots)
    holder, key, value, where = rng.choice(slots)
    if where == "tag":
        new: Any = rng.choice([1, 2, 3, 4, 5, 6, 0, 255])
    elif isinstance(value, bool) or value is None:
        new = rng.choice([0, 1, "x", None, True])
    elif isinstance(value, int):
        if rng.random() < 0.8:
            new = value + rng.choice([1, -1, 1, -1, 2, -2, 9, -9, 256, -256])
        else:
            new = rng.choice([0, -1, 2**32, 2**63 - 1, -(2**63), 2**64 - 1, 6, 255])
    elif isinstance(value, str):
        new = rng.choice([value + "x", value[:-1], "", value.upper(), 7])
    elif isinstance(value, list):
        new = list(value)
        op = rng.randrange(5)
        if op == 0 and new:
            del new[rng.randrange(len(new))]
        elif op == 1 and new:
            j = rng.randrange(len(new))
            new.insert(j, new[j])
        elif op == 2 and len(new) > 1:
            i, j = rng.sample(range(len(new)), 2)
            new[i], new[j] = new[j], new[i]
        elif op == 3:
            new.append(new[-1] if new else 0)
        else:
            new = []
    elif isinstance(value, dict):
        new = dict(value)
        keys = list(new)
        op = rng.randrange(4)
        if op == 0 and keys:
            del new[rng.choice(keys)]
        elif op == 1 and keys:
            k = rng.choice(keys)
            new[k + 1 if isinstance(k, int) else k + "x"] = new.pop(k)
        elif op == 2 and keys:
            k = rng.choice(keys)
            ints = [x for x in keys if isinstance(x, int)]
            new[max(ints) + 1 if ints else "new"] = new[k]
        else:
            new = {}
    else:
        new = rng.choice([0, "x", [], {}])
    holder[key] = new
    return f"{where}: {_short(value)} -> {_short(new)}"


def m_toc(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    if s.toc is None:
        return None
    bad, desc = _toc_edit(rng, s.data, s.toc)
    return Mutation(bad, desc, "toc", crafted="toc")


def _toc_edit(rng: random.Random, data: bytes, toc: tuple[list[TocItem], int]) -> tuple[bytes, str]:
    """One TOC node of the plain archive ``data`` changed (a field, a child reference, or for a
    type-8 node a key's length moved into its value's), the TOC laid out again with every
    reference and CRC recomputed."""
    items, root = toc
    nodes = [i for i, it in enumerate(items) if it.kind == "node"]
    target = items[root_index(items, root)] if rng.random() < 0.25 else items[rng.choice(nodes)]
    mode = rng.random()
    desc = []

    def edit(it: TocItem, node: Any, new_pos: dict, new_len: dict, here: int) -> bytes | None:
        if it is not target:
            return None
        kids = getattr(node, "kids", None)
        if mode < 0.15 and kids:  # point a child reference at another node before this one
            earlier = [p for p in new_pos if p != it.pos and any(x.pos == p and x.kind == "node" for x in items)]
            if earlier:
                k = rng.choice(list(kids))
                other = rng.choice(earlier)
                node = msgspec.structs.replace(node, kids={**kids, k: (here - new_pos[other], new_len[other])})
                desc.append(f"kid {k} -> the node at old offset {other}")
                return frame_node(CompactMapNode.of(node) if it.compact else node)
        stored = CompactMapNode.of(node) if it.compact else node
        payload = msgspec.msgpack.decode(msgspec.msgpack.encode(stored))
        if it.compact and mode > 0.7:  # a key's length moved into its value's (or back): the sum holds
            j = rng.randrange(len(payload[3]))
            d = rng.choice([1, -1, 2, payload[3][j], -payload[4][j]])
            payload[3][j] += d
            payload[4][j] -= d
            desc.append(f"klens[{j}] {d:+}, vlens[{j}] {-d:+}")
        else:
            desc.append(_mutate_payload(rng, payload, type(stored).__struct_fields__))
        body = msgspec.msgpack.encode(payload)
        return body + struct.pack("<I", zlib.crc32(body))

    bad = relayout(data, items, root, edit)
    kind = "CompactMapNode" if target.compact else type(target.node).__name__
    return bad, f"toc {kind} at {target.pos}: {desc[0] if desc else '?'}"


def root_index(items: list[TocItem], root: int) -> int:
    return next(i for i, it in enumerate(items) if it.pos == root)


def m_index(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    if s.toc is None:
        return None
    made = _index_edit(rng, s.data, s.toc)
    return None if made is None else Mutation(made[0], made[1], "toc", crafted="toc")


def _index_edit(rng: random.Random, data: bytes, toc: tuple[list[TocItem], int]) -> tuple[bytes, str] | None:
    """The hash index region of a dict in the plain archive ``data`` changed (type 3: an entry
    offset, a record, a page bound; type 6: a block offset, a record's block or fingerprint, a
    page bound; type 7: a block offset, slots, a chunk CRC, or the fuse's shape), its CRCs and
    the node's recomputed, the TOC laid out again."""
    items, root = toc
    regions = [it for it in items if it.kind == "region"]
    if not regions:
        return None
    target = rng.choice(regions)
    owner = next(it for it in items if it.pos == target.owner)
    node = owner.node
    raw = bytearray(data[target.pos : target.pos + target.size])
    new_node: dict[str, Any] = {}  # fields of the node changed with its region
    if isinstance(node, FuseMapNode):
        desc = _fuse_edit(rng, node, raw, new_node)
    elif isinstance(node, BlockHashMapNode):
        desc = _block_index_edit(rng, node, raw)
    else:
        desc = _entry_index_edit(rng, node, raw)

    def edit(it: TocItem, node: Any, new_pos: dict, new_len: dict, here: int) -> bytes | None:
        if it is target:
            return bytes(raw)
        if it is owner and new_node:
            node = _region_crcs(msgspec.structs.replace(node, **new_node), bytes(raw))
            return frame_node(node)
        return None

    return relayout(data, items, root, edit), f"index of the dict at {target.owner}: {desc}, CRCs recomputed"


def _bump(rng: random.Random, raw: bytearray, fmt: str, at: int, deltas: list[int]) -> tuple[int, int]:
    """Add one of ``deltas`` to the unsigned integer at ``at`` (kept in range); (old, new)."""
    old = struct.unpack_from(fmt, raw, at)[0]
    new = min(max(0, old + rng.choice(deltas)), 2 ** (8 * struct.calcsize(fmt)) - 1)
    struct.pack_into(fmt, raw, at, new)
    return old, new


def _entry_index_edit(rng: random.Random, node: HashMapNode, raw: bytearray) -> str:
    """Type 3: entry offsets | page table | records (hash << 32 | entry)."""
    n, width, pages = node.n, node.offs_width, 1 << node.page_bits
    table_at = (n + 1) * width
    rec_at = table_at + (pages + 1) * 8
    what = rng.randrange(4)
    if what == 0:  # an entry offset moved
        j = rng.randrange(n + 1)
        old, new = _bump(rng, raw, "<I" if width == 4 else "<Q", j * width, [1, -1, 2, -7])
        desc = f"entry offset {j}: {old} -> {new}"
    elif what == 1:  # a record points at another entry
        r = rng.randrange(n)
        rec = struct.unpack_from("<Q", raw, rec_at + 8 * r)[0]
        entry = rng.randrange(n + 2)
        struct.pack_into("<Q", raw, rec_at + 8 * r, (rec >> 32) << 32 | entry)
        desc = f"record {r}: entry {rec & 0xFFFFFFFF} -> {entry}"
    elif what == 2:  # a record's hash changed
        r = rng.randrange(n)
        rec = struct.unpack_from("<Q", raw, rec_at + 8 * r)[0]
        struct.pack_into("<Q", raw, rec_at + 8 * r, rec ^ (1 << rng.randrange(32, 64)))
        desc = f"record {r}: hash bit flipped"
    else:  # a page bound moved
        p = rng.randrange(pages + 1)
        old, new = _bump(rng, raw, "<I", table_at + 8 * p, [1, -1, 3])
        desc = f"page {p} first record {old} -> {new}"
    _fix_page_crcs(raw, table_at, rec_at, n, 8, pages)
    return desc


def _block_index_edit(rng: random.Random, node: BlockHashMapNode, raw: bytearray) -> str:
    """Type 6: block offsets | page table | records (fingerprint byte, block number)."""
    n, width, pages = node.n, node.offs_width, 1 << node.page_bits
    blocks = block_count(n, node.block_bits)
    size = 1 + block_width(blocks)
    table_at = (blocks + 1) * width
    rec_at = table_at + (pages + 1) * 8
    what = rng.randrange(4)
    if what == 0:  # a block offset moved
        j = rng.randrange(blocks + 1)
        old, new = _bump(rng, raw, "<I" if width == 4 else "<Q", j * width, [1, -1, 2, -7])
        desc = f"block offset {j}: {old} -> {new}"
    elif what == 1:  # a record names another block
        r = rng.randrange(n)
        block = rng.randrange(min(blocks + 2, 1 << (8 * (size - 1))))
        raw[rec_at + size * r + 1 : rec_at + size * (r + 1)] = block.to_bytes(size - 1, "little")
        desc = f"record {r}: block -> {block}"
    elif what == 2:  # a record's fingerprint changed
        r = rng.randrange(n)
        raw[rec_at + size * r] ^= 1 << rng.randrange(8)
        desc = f"record {r}: fingerprint bit flipped"
    else:  # a page bound moved
        p = rng.randrange(pages + 1)
        old, new = _bump(rng, raw, "<I", table_at + 8 * p, [1, -1, 3])
        desc = f"page {p} first record {old} -> {new}"
    _fix_page_crcs(raw, table_at, rec_at, n, size, pages)
    return desc


def _fuse_edit(rng: random.Random, node: FuseMapNode, raw: bytearray, new_node: dict[str, Any]) -> str:
    """Type 7: block offsets | chunk CRCs | slots. A block offset moved, slots changed (their
    chunk's CRC recomputed), a chunk CRC changed, or the fuse's shape or seed changed with the
    region laid out for it (``new_node``: the node's new fields)."""
    width = node.offs_width
    blocks = block_count(node.n, node.block_bits)
    crcs_at, slots_at, end = fuse_layout(node.n, node.block_bits, width, node.slot_bits, node.seg_bits, node.seg_count)
    what = rng.randrange(6)
    if what == 0:  # a block offset moved
        j = rng.randrange(blocks + 1)
        old, new = _bump(rng, raw, "<I" if width == 4 else "<Q", j * width, [1, -1, 2, -7])
        return f"block offset {j}: {old} -> {new}"
    if what in (1, 2):  # a slot's bits changed, or a run of slots zeroed: keys map to other blocks
        at = slots_at + rng.randrange(end - slots_at)
        if what == 1:
            raw[at] ^= rng.randrange(1, 256)
        else:
            raw[at : at + 16] = bytes(len(raw[at : at + 16]))
        chunk = (at - slots_at) // CHUNK
        lo = slots_at + chunk * CHUNK
        struct.pack_into("<I", raw, crcs_at + 4 * chunk, zlib.crc32(raw[lo : min(lo + CHUNK, end)]))
        return f"slot byte {at - slots_at} {'changed' if what == 1 else 'and 15 after it zeroed'}, chunk CRC recomputed"
    if what == 3:  # a chunk CRC changed (the node's CRC of them recomputed)
        c = rng.randrange((slots_at - crcs_at) // 4)
        raw[crcs_at + 4 * c] ^= 1 << rng.randrange(8)
        return f"chunk CRC {c} changed"
    # the shape or seed: the region laid out for the new fields (offsets kept, slots cut or padded)
    name = rng.choice(["seed", "seed", "seg_bits", "seg_count", "slot_bits", "block_bits"])
    old = getattr(node, name)
    new = old + rng.choice([1, -1]) if name != "seed" else rng.choice([old + 1, old ^ 1, 0, 2**64 - 1])
    fields = {k: getattr(node, k) for k in ("block_bits", "slot_bits", "seg_bits", "seg_count")} | {name: new}
    if min(fields.values()) < 0 or new < 0:
        return f"{name} kept (no smaller value)"
    new_node[name] = new
    c2, s2, e2 = fuse_layout(
        node.n, fields["block_bits"], width, fields["slot_bits"], fields["seg_bits"], fields["seg_count"]
    )
    offs = bytes(raw[:crcs_at])[:c2]
    while len(offs) < c2:  # more blocks: each starts where the dict ends
        offs += bytes(raw[crcs_at - width : crcs_at])
    slots = bytes(raw[slots_at:end])[: e2 - s2].ljust(e2 - s2, b"\0")
    crcs = b"".join(struct.pack("<I", zlib.crc32(slots[a : a + CHUNK])) for a in range(0, len(slots), CHUNK))
    raw[:] = offs + crcs + slots
    return f"{name} {old} -> {new}, region laid out for it"


def _fix_page_crcs(raw: bytearray, table_at: int, rec_at: int, n: int, size: int, pages: int) -> None:
    """Recompute a hash index's page CRCs (records of ``size`` bytes) and its table's CRC."""
    firsts = [struct.unpack_from("<I", raw, table_at + 8 * p)[0] for p in range(pages + 1)]
    for p in range(pages):
        a, b = firsts[p], firsts[p + 1]
        crc = zlib.crc32(raw[rec_at + size * a : rec_at + size * b]) if 0 <= a <= b <= n else 0
        struct.pack_into("<I", raw, table_at + 8 * p + 4, crc)
    struct.pack_into("<I", raw, table_at + 8 * pages + 4, zlib.crc32(raw[table_at : table_at + 8 * pages + 4]))


def _with_data(s: Sample, data_section: bytes, fields: dict | None = None) -> bytes:
    t = s.trailer
    header = s.data[:HEADER_SIZE]
    shift = len(data_section) - t.data_len
    new = msgspec.structs.replace(
        t, data_len=len(data_section), toc_off=t.toc_off + shift, data_crc=zlib.crc32(data_section), **(fields or {})
    )
    return header + data_section + s.data[t.data_off + t.data_len : -TRAILER_SIZE] + new.pack(header)


def _reframed(s: Sample, section: bytes) -> bytes:
    """A compressed sample with the plain data ``section``: the frames that hold what changed
    made again as they were made (raw, shuffled, with their dictionary), the TOC's frames as
    they are (the TOC names plain offsets), every checksum recomputed (``fuzz_frames``)."""
    assert s.section is not None and s.plain is not None
    sec = ff.with_data(s.section, s.plain, section, s.dict_content)
    return _zarchive(s, ff.build_section(sec), zlib.crc32(section))


def _crafted_data(s: Sample, section: bytes, desc: str) -> Mutation:
    """The mutation that gives ``s`` the data section ``section`` (plain bytes), every
    checksum valid: only decoding, or the TOC's checks, can tell."""
    if s.plain is not None:
        return Mutation(_reframed(s, section), desc + ", frames made again", "data", "data", "decode", section)
    return Mutation(_with_data(s, section), desc, "data", crafted="data", truth="decode")


def _section(s: Sample) -> bytes:
    """The sample's data section as plain msgpack."""
    t = s.trailer
    return s.plain if s.plain is not None else s.data[t.data_off : t.data_off + t.data_len]


def m_datacrc(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    t = s.trailer
    section = bytearray(_section(s))
    pos = rng.randrange(len(section))
    n = min(rng.choice([1, 1, 2, 3]), len(section) - pos)
    for k in range(n):
        section[pos + k] = rng.choice(INTERESTING) if rng.random() < 0.5 else section[pos + k] ^ (1 << rng.randrange(8))
    desc = f"data {t.data_off + pos}+{n} = {bytes(section[pos : pos + n]).hex()}, data CRC recomputed"
    return _crafted_data(s, bytes(section), desc)


def m_value(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A value made one that a read refuses: a byte of a str payload made invalid UTF-8, or
    a byte of a NumPy array's header (its descr or shape) changed; the data CRC recomputed."""
    t = s.trailer
    section = bytearray(_section(s))
    if "values" not in s.cache:  # (once per sample: a scan of its bytes)
        s.cache["values"] = (
            [p for p in range(len(section) - 1) if 0xA1 <= section[p] <= 0xBF],  # fixstr markers (or look-alikes)
            [
                p + 2 + width
                for width, marker in ((1, 0xC7), (2, 0xC8), (4, 0xC9))
                for p in range(len(section) - 2 - width)
                if section[p] == marker and section[p + 1 + width] == 78
            ],
        )
    strs, arrays = s.cache["values"]
    if arrays and (not strs or rng.random() < 0.4):
        at = rng.choice(arrays) + 4 + rng.randrange(12)  # past the header's length: its descr and shape
        if at >= len(section):
            return None
        section[at] = rng.choice([0x00, 0x7F, 0xC1, 0x91, 0x92, 0x93, section[at] ^ 1, section[at] ^ 0x40])
        what = "a NumPy header byte"
    elif strs:
        p = rng.choice(strs)
        at = p + 1 + rng.randrange(section[p] & 0x1F)
        if at >= len(section):
            return None
        section[at] = rng.choice([0x80, 0xBF, 0xC0, 0xC3, 0xED, 0xF8, 0xFF])
        what = "a str byte"
    else:
        return None
    desc = f"value: {what} at {t.data_off + at} = {section[at]:02x}, data CRC recomputed"
    return _crafted_data(s, bytes(section), desc)


def m_datashift(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    t = s.trailer
    section = _section(s)
    pos = rng.randrange(len(section))
    if rng.random() < 0.5:
        new = bytes([rng.choice(INTERESTING)]) * rng.choice([1, 1, 2])
        section = section[:pos] + new + section[pos:]
        desc = f"data: insert {new.hex()} at {t.data_off + pos}"
    else:
        k = min(rng.choice([1, 1, 2]), len(section) - pos)
        section = section[:pos] + section[pos + k :]
        desc = f"data: delete {t.data_off + pos}+{k}"
    if not section:
        return None
    return _crafted_data(s, section, desc + ", trailer offsets and CRC recomputed")


# ---- 2.1 compressed sections: crafted tables, dictionaries, raw frames, TOC frames ---------------
#
# Each of these takes a 2.1 sample's section apart (``fuzz_frames``), changes one thing and lays
# it out again with every offset and CRC computed anew (page tables, index, trailer; node CRCs
# for TOC edits): a reader can tell only by checking that the parts agree. Page tables hold
# ``per_page`` frames, chosen at random (1, 2, 3 or the writer's), so that several pages are
# exercised too.

_U32, _U64 = 2**32 - 1, 2**64 - 1


def _zarchive(s: Sample, section: bytes, data_crc: int | None = None) -> bytes:
    """The sample's header, ``section`` and a trailer for it (the data CRC kept unless given)."""
    header = s.data[:HEADER_SIZE]
    crc = s.trailer.data_crc if data_crc is None else data_crc
    return header + section + Trailer.compressed(len(section), crc, s.trailer.threshold).pack(header)


def _per_page(rng: random.Random, sec: ff.Section) -> int:
    return rng.choice([sec.per_page, sec.per_page, 1, 2, 3])


def _clamp(x: int, top: int) -> int:
    return min(max(0, x), top)


def _zmutation(s: Sample, section: bytes, desc: str, region: str = "tables", data_crc: int | None = None) -> Mutation:
    return Mutation(_zarchive(s, section, data_crc), desc, region, crafted="toc" if region == "toc" else "tables")


def m_zindex(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A field of the section's index changed, its CRC recomputed: the data/TOC split (the
    root moved along, the data CRC recomputed), the root node, the frame count, frames per
    page, a page's or a dictionary's place, the counts, the footer's size or descriptor."""
    sec = s.section
    if sec is None or s.plain is None or s.toc_plain is None:
        return None
    per_page = _per_page(rng, sec)
    what = rng.choice(["split", "split", "root", "root", "frames", "per_page", "page", "page", "dict", "counts"])
    what = rng.choice([what, what, "footer", "lengths"])
    stream = s.plain + s.toc_plain[0]
    desc: list[str] = []
    crc: list[int] = []

    def edit(t: ff.Tables) -> None:
        if what == "split":  # data and TOC meet elsewhere: at another frame's start, or inside one
            starts = list(accumulate((f.plain for f in sec.frames), initial=0))
            k = rng.choice([1, -1, 2, -3, rng.choice(starts) - t.data, -t.data, t.toc])
            k = max(-t.data, min(k, t.toc))
            t.data, t.toc = t.data + k, t.toc - k
            moved = t.root_len and rng.random() < 0.7
            if moved:
                t.root_pos = _clamp(t.root_pos - k, _U64)
            crc.append(zlib.crc32(stream[: t.data]))
            desc.append(f"data/TOC split moved by {k}{', the root with it' if moved else ''}, data CRC recomputed")
        elif what == "root":
            how = rng.randrange(4)
            old = (t.root_pos, t.root_len)
            if how == 0:
                t.root_pos = _clamp(t.root_pos + rng.choice([1, -1, 4, -4]), _U64)
            elif how == 1:
                t.root_len = _clamp(t.root_len + rng.choice([1, -1, 4, -4, -t.root_len]), _U32)
            elif how == 2 and s.vtoc is not None:  # another node as the root
                base = HEADER_SIZE + len(stream) - len(s.toc_plain[0])
                other = rng.choice([it for it in s.vtoc[0] if it.kind == "node"])
                t.root_pos, t.root_len = other.pos - base, other.size
            else:
                t.root_pos, t.root_len = rng.choice([(_U64 >> 1, t.root_len), (t.root_pos, _U32), (0, 0)])
            desc.append(f"root {old} -> {(t.root_pos, t.root_len)}")
        elif what == "frames":
            old = t.frames
            t.frames = _clamp(rng.choice([old + 1, old - 1, 0, _U32]), _U32)
            desc.append(f"frame count {old} -> {t.frames}")
        elif what == "per_page":
            old = t.per_page
            t.per_page = _clamp(rng.choice([old + 1, old - 1, 0, _U32, 2 * old]), _U32)
            desc.append(f"frames per page {old} -> {t.per_page}")
        elif what == "page" and t.pages:
            p = rng.randrange(len(t.pages))
            how = rng.randrange(5)
            if how == 0 and len(t.pages) > 1:
                q = rng.randrange(len(t.pages))
                t.pages[p], t.pages[q] = t.pages[q], t.pages[p]
                desc.append(f"pages {p} and {q} swapped")
            elif how == 1:
                t.pages.pop()
                if rng.random() < 0.5:
                    t.npages -= 1
                desc.append(f"the last page dropped, {t.npages} stated")
            elif how == 2:
                t.pages.insert(p, list(t.pages[p]))
                if rng.random() < 0.5:
                    t.npages += 1
                desc.append(f"page {p} listed twice, {t.npages} stated")
            else:
                f = rng.randrange(4)
                old = t.pages[p][f]
                top = _U32 if f == 3 else _U64
                t.pages[p][f] = _clamp(old + rng.choice([1, -1, 8, -8, 12, -12, t.pages[p][3], 2**32]), top)
                name = ["offset", "first logical", "first stored", "size"][f]
                desc.append(f"page {p} {name} {old} -> {t.pages[p][f]}")
        elif what == "dict":
            how = rng.randrange(4)
            if how == 0 or not t.dicts:  # a dictionary no frame needs, or one in a page table's place
                place = [t.pages[0][0], t.pages[0][3], 64] if t.pages and rng.random() < 0.5 else [0, 16, 1 << 16]
                t.dicts.append(place)
                t.ndicts += 1
                desc.append(f"dictionary {place} added")
            elif how == 1:
                t.dicts.pop()
                if rng.random() < 0.5:
                    t.ndicts -= 1
                desc.append(f"the last dictionary dropped, {t.ndicts} stated")
            else:
                d, f = rng.randrange(len(t.dicts)), rng.randrange(3)
                old = t.dicts[d][f]
                top = _U64 if f == 0 else _U32
                deltas = [1, -1, 8, -8, 2**20] + ([-old, MAX_DICT + 1 - old, old] if f == 2 else [])
                t.dicts[d][f] = _clamp(old + rng.choice(deltas), top)
                desc.append(f"dictionary {d + 1} {['offset', 'record size', 'plain size'][f]} {old} -> {t.dicts[d][f]}")
        elif what == "counts":
            if rng.random() < 0.5:
                t.npages = _clamp(t.npages + rng.choice([1, -1]), _U32)
            else:
                t.ndicts = _clamp(t.ndicts + rng.choice([1, -1]), _U32)
            desc.append(f"counts stated: {t.npages} pages, {t.ndicts} dictionaries")
        elif what == "footer":
            if rng.random() < 0.6:
                t.size_delta = rng.choice([1, -1, 4, -4, 9, -9, 2**31])
                desc.append(f"footer size {t.size_delta:+}")
            else:
                t.descriptor = rng.choice([0, 0x7D, 0xFC, 0x80, 0x3C, 0x78])
                desc.append(f"footer descriptor {t.descriptor:#x}")
        else:  # the plain lengths, one without the other
            name = rng.choice(["data", "toc"])
            old = getattr(t, name)
            setattr(t, name, _clamp(old + rng.choice([1, -1, 64, 1 << 20, -old, 2**40]), _U64))
            desc.append(f"{name} length {old} -> {getattr(t, name)}")

    section = ff.build_section(sec, per_page, edit_index=edit)
    if not desc:
        return None
    return _zmutation(s, section, f"zindex: {desc[0]} ({per_page} frames a page)", data_crc=crc[0] if crc else None)


def m_zpage(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A frame's entry in its page table changed, the CRC recomputed (the index's page
    offsets follow the sums): stored or plain sizes (moved from the next frame or not: frames
    overlap, leave gaps, or claim more than they hold), a bomb (a large plain size, the
    section's plain length grown to match or not), zero sizes, filter codes and parameters,
    dictionary numbers, two entries swapped, a page's stated count."""
    sec = s.section
    if sec is None:
        return None
    per_page = _per_page(rng, sec)
    n = len(sec.frames)
    i = rng.randrange(n)
    p, k = divmod(i, per_page)
    in_data = i < sec.data_frames()
    what = rng.choice(["stored", "stored", "plain", "plain", "bomb", "zero", "code", "param", "dict", "swap", "count"])
    desc: list[str] = []

    def edit(t: ff.Tables) -> None:
        e = t.entries[p][k]
        nxt = t.entries[(i + 1) // per_page][(i + 1) % per_page] if i + 1 < n else None
        moved = nxt is not None and rng.random() < 0.7  # the next frame gives or takes as much
        length = "data" if in_data else "toc"
        if what in ("stored", "plain", "zero"):
            f = 0 if what == "stored" or (what == "zero" and rng.random() < 0.5) else 1
            d = -e[f] if what == "zero" else rng.choice([1, -1, 2, -4, 9, -(e[f] // 2), e[f]])
            d = max(d, -e[f])
            e[f] += d
            if moved and nxt is not None:
                nxt[f] = _clamp(nxt[f] - d, _U32)
            elif f == 1 and rng.random() < 0.5:  # the section's plain length follows
                setattr(t, length, _clamp(getattr(t, length) + d, _U64))
            which = "stored" if f == 0 else "plain"
            desc.append(f"frame {i} {which} size {d:+}{', the next frame the opposite' if moved else ''}")
        elif what == "bomb":
            new = rng.choice([MAX_FRAME, MAX_FRAME + 1, RAW_MAX + 1, 64 * e[1], 2**31, _U32])
            d = new - e[1]
            e[1] = _clamp(new, _U32)
            if rng.random() < 0.6:
                setattr(t, length, getattr(t, length) + d)
            desc.append(f"frame {i} claims {e[1]} plain bytes ({length} {getattr(t, length)})")
        elif what == "code":
            e[2] = rng.choice([NO_FILTER, SHUFFLE, RAW, 3, 255])
            if rng.random() < 0.8:
                e[3] = rng.choice([2, 4, 8, 3, min(e[1], 255)]) if e[2] == SHUFFLE else 0
            desc.append(f"frame {i} filter {e[2]} parameter {e[3]}")
        elif what == "param":
            e[3] = rng.choice([0, 1, 2, 3, 4, 8, 9, 255])
            desc.append(f"frame {i} filter {e[2]} parameter {e[3]}")
        elif what == "dict":
            e[4] = rng.choice([0, 1, 1, len(sec.dicts), len(sec.dicts) + 1, 65535])
            desc.append(f"frame {i} dictionary {e[4]} (the section has {len(sec.dicts)})")
        elif what == "swap" and n > 1:
            j = rng.choice([x for x in range(n) if x != i])
            other = t.entries[j // per_page][j % per_page]
            e[:], other[:] = list(other), list(e)
            desc.append(f"frames {i} and {j} swapped in the page tables")
        else:
            if rng.random() < 0.5:
                t.counts[p] = _clamp(t.counts[p] + rng.choice([1, -1]), _U32)
                desc.append(f"page {p} states {t.counts[p]} frames of {len(t.entries[p])}")
            else:
                del t.entries[p][k]
                t.counts[p] -= 1
                desc.append(f"frame {i}'s entry dropped from page {p}")

    section = ff.build_section(sec, per_page, edit_pages=edit)
    if not desc:
        return None
    # a filter is taken from the table (nothing in a frame names it): a data frame's changed
    # filter changes the plain data, which lazy reads do not checksum (a TOC frame's, nodes' CRCs)
    region = "data" if in_data and what in ("code", "param", "swap") else "tables"
    return _zmutation(s, section, f"zpage: {desc[0]} ({per_page} frames a page)", region)


def _dict_content(record: bytes, plain: int) -> bytes:
    content: bytes = zstandard().ZstdDecompressor().decompress(bytes(dictionary_frame(record)), max_output_size=plain)
    return content


def m_zdict(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A dictionary record changed, the section laid out again: its zstd frame swapped for
    another (of its content with a byte changed, shorter or longer, of other data, without a
    checksum or a content size, a raw frame, bytes that are no frame), its declared size
    wrong, its record's header changed."""
    sec = s.section
    if sec is None or not sec.dicts or s.plain is None:
        return None
    zstd = zstandard()
    new = sec.copy()
    d = rng.randrange(len(sec.dicts))
    record, plain = sec.dicts[d]
    content = _dict_content(record, plain)
    what = rng.choice(["byte", "byte", "length", "other", "nochecksum", "nosize", "raw", "garbage", "declared"])
    what = rng.choice([what, "record"]) if rng.random() < 0.2 else what
    frame = bytes(dictionary_frame(record))
    if what == "byte":
        changed = bytearray(content)
        at = rng.randrange(len(changed))
        changed[at] ^= rng.randrange(1, 256)
        frame = zstd.ZstdCompressor(level=3, write_checksum=True).compress(bytes(changed))
        desc = f"byte {at} of its content changed"
    elif what == "length":
        k = rng.choice([1, 64, 4096])
        changed = content[:-k] if rng.random() < 0.5 else content + content[:k]
        frame = zstd.ZstdCompressor(level=3, write_checksum=True).compress(changed)
        if rng.random() < 0.7:
            plain = len(changed)
        desc = f"content of {len(changed)} bytes, {plain} declared"
    elif what == "other":
        other = (s.plain * (1 + len(content) // max(len(s.plain), 1)))[rng.randrange(len(s.plain)) :][: len(content)]
        frame = zstd.ZstdCompressor(level=3, write_checksum=True).compress(other)
        plain = len(other)
        desc = f"a frame of other data ({len(other)} bytes)"
    elif what == "nochecksum":
        frame = zstd.ZstdCompressor(level=3, write_checksum=False).compress(content)
        desc = "a frame of its content without a checksum"
    elif what == "nosize":
        frame = zstd.ZstdCompressor(level=3, write_checksum=True, write_content_size=False).compress(content)
        desc = "a frame of its content without its size"
    elif what == "raw" and len(content) <= RAW_MAX:
        checksum = zstd.ZstdCompressor(write_checksum=True).compress(content)[-4:]
        frame = bytes(pack_raw_frame(content, checksum))
        desc = "its content as a raw frame (the same dictionary)"
    elif what == "garbage":
        frame = bytes(rng.randrange(256) for _ in range(len(frame)))
        desc = "bytes that are no zstd frame"
    elif what == "declared":
        old = plain
        plain = _clamp(plain + rng.choice([1, -1, -plain, MAX_DICT + 1 - plain, plain]), _U32)
        desc = f"declared plain size {old} -> {plain}"
    else:
        what = "record"
    record = ff.dictionary_record(frame)
    if what == "record":
        changed_record = bytearray(record)
        at = rng.randrange(12)
        changed_record[at] ^= 1 << rng.randrange(8)
        record = bytes(changed_record)
        desc = f"record header byte {at} changed"
    new.dicts[d] = (record, plain)
    section = ff.build_section(new, _per_page(rng, sec))
    return _zmutation(s, section, f"zdict: dictionary {d + 1}: {desc}")


def m_zraw(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """Raw frames (filter 2, read in place): a header byte or the checksum changed, the frame
    made shorter or longer, a zstd frame labelled raw (or a raw one labelled otherwise), a raw
    frame's plain size grown (the next frame's shrunk, or the section's grown): in-place reads
    past its end."""
    sec = s.section
    if sec is None:
        return None
    raws = [i for i, f in enumerate(sec.frames) if f.code == RAW]
    others = [i for i, f in enumerate(sec.frames) if f.code != RAW]
    new = sec.copy()
    per_page = _per_page(rng, sec)
    what = rng.choice(["header", "header", "checksum", "short", "long", "relabel", "unraw", "past", "past"])
    if not raws or what == "relabel" and others:
        i = rng.choice(others)
        what = "relabel"
    else:
        i = rng.choice(raws)
    f = new.frames[i]
    desc: list[str] = []
    if what in ("header", "checksum", "short", "long"):
        stored = bytearray(f.stored)
        if what == "header":
            at = rng.randrange(RAW_HEAD)
            stored[at] = rng.choice([stored[at] ^ (1 << rng.randrange(8)), 0, 0xFF, stored[at] + 1 & 0xFF])
            desc.append(f"raw frame {i}: header byte {at} = {stored[at]:#04x}")
        elif what == "checksum":
            stored[-1 - rng.randrange(4)] ^= 1 << rng.randrange(8)
            desc.append(f"raw frame {i}: checksum changed")
        elif what == "short":
            k = rng.choice([1, 4, 5])
            del stored[-k:]
            desc.append(f"raw frame {i}: its last {k} bytes gone (the page says so)")
        else:
            k = rng.choice([1, 4, 16])
            stored += bytes(rng.randrange(256) for _ in range(k))
            desc.append(f"raw frame {i}: {k} bytes after its checksum (the page says so)")
        f.stored = bytes(stored)
        section = ff.build_section(new, per_page)
        return _zmutation(s, section, f"zraw: {desc[0]} ({per_page} frames a page)")

    def edit(t: ff.Tables) -> None:
        e = t.entries[i // per_page][i % per_page]
        if what == "relabel":
            old = e[2]
            e[2], e[3] = RAW, 0
            desc.append(f"frame {i} (filter {old}) labelled raw")
        elif what == "unraw":
            e[2] = rng.choice([NO_FILTER, SHUFFLE])
            e[3] = rng.choice([2, 4]) if e[2] == SHUFFLE else 0
            desc.append(f"raw frame {i} labelled filter {e[2]} parameter {e[3]}")
        else:
            d = rng.choice([1, 4, 16, 4096, RAW_MAX])
            e[1] = _clamp(e[1] + d, _U32)  # (its plain size, so it no longer fits the frame)
            if i + 1 < len(sec.frames) and rng.random() < 0.6:
                nxt = t.entries[(i + 1) // per_page][(i + 1) % per_page]
                nxt[1] = _clamp(nxt[1] - d, _U32)
                desc.append(f"raw frame {i} plain size {d:+}, the next frame's {-d:+}")
            else:
                name = "data" if i < sec.data_frames() else "toc"
                setattr(t, name, getattr(t, name) + d)
                desc.append(f"raw frame {i} plain size {d:+}, the {name} length with it")

    section = ff.build_section(new, per_page, edit_pages=edit)
    region = "data" if what == "unraw" and i < sec.data_frames() else "tables"  # (as in zpage: a filter)
    return _zmutation(s, section, f"zraw: {desc[0]} ({per_page} frames a page)", region)


def _toc_cuts(rng: random.Random, size: int, root: int) -> list[int]:
    """Where frames of a TOC of ``size`` bytes end: as writers cut it (``TOC_FRAME`` bytes, the
    root node starting a frame), in one frame, or in small frames that cut nodes in two."""
    how = rng.randrange(3)
    if how == 0:
        cuts = sorted({*range(TOC_FRAME, size, TOC_FRAME), root, size} - {0})
    elif how == 1:
        cuts = [size]
    else:
        step = max(rng.choice([7, 50, 300, 2000]), size // 100)  # at most about 200 frames
        cuts, at = [], 0
        while at < size:
            at = min(size, at + rng.randrange(1, step + 1))
            cuts.append(at)
    return cuts


def _zreframed_toc(rng: random.Random, s: Sample, virtual: bytes, desc: str) -> Mutation:
    """A 2.1 mutation from a TOC edit made on the sample's plain ``virtual`` archive: its TOC
    framed again into the section (the data's frames and the dictionaries as they are)."""
    assert s.section is not None
    t = unpack_trailer(virtual[-TRAILER_SIZE:], len(virtual), virtual[:HEADER_SIZE])
    toc = virtual[t.toc_off : t.toc_off + t.toc_len]
    cuts = _toc_cuts(rng, len(toc), t.root_pos)
    sec = ff.with_toc(s.section, toc, (t.root_pos, t.root_len), cuts)
    per_page = _per_page(rng, sec)
    section = ff.build_section(sec, per_page)
    return _zmutation(s, section, f"{desc} (2.1: TOC in {len(cuts)} frames, {per_page} a page)", region="toc")


def m_ztoc(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A TOC node of a 2.1 archive changed as ``toc`` changes a plain archive's (types 7 and
    8 included: a fuse's seed and shape fields, a compact dict's key and value lengths), node
    CRCs recomputed, the TOC framed again."""
    if s.vtoc is None or s.virtual is None:
        return None
    bad, desc = _toc_edit(rng, s.virtual, s.vtoc)
    return _zreframed_toc(rng, s, bad, desc)


def m_zhash(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A hash index region of a 2.1 archive changed as ``index`` changes a plain archive's (a
    fuse's slots, chunk CRCs, block offsets, its shape), CRCs recomputed, the TOC framed again."""
    if s.vtoc is None or s.virtual is None:
        return None
    made = _index_edit(rng, s.virtual, s.vtoc)
    return None if made is None else _zreframed_toc(rng, s, made[0], made[1])


def _shuffled(piece: bytes, element: int) -> bytes:
    return b"".join(piece[k::element] for k in range(element))


MANY_DICTS_SHARE = 0.05  # of the zlayout cases: dictionaries of the largest size, one per frame
_BIG_DICT: list[bytes] = []  # its record, made once per process


def _many_dictionaries(rng: random.Random, s: Sample) -> Mutation:
    """A valid layout a writer would not make: the data in ``n`` frames, each naming a
    dictionary of its own, every dictionary the largest a reader takes (``MAX_DICT`` zeros;
    their records all one, a few hundred bytes). (The frames do not refer into them:
    compressed without one, a frame decompresses alike with any raw-content dictionary.) It
    must read back. It found that readers kept every dictionary loaded (with 16 MB ones then:
    MemoryError), and then that loading them again cost 16 MB each."""
    assert s.section is not None and s.plain is not None
    if not _BIG_DICT:
        zstd = zstandard()
        _BIG_DICT.append(
            ff.dictionary_record(zstd.ZstdCompressor(level=19, write_checksum=True).compress(bytes(MAX_DICT)))
        )
    # (60 of 1 MB fit the reader's 64 MB of kept dictionaries: more are loaded again when reads
    # take turns among them, each load costing what a 1 MB frame does, which reading a block of
    # a hash-indexed dict cut in 80 frames does ~1000 times in the walk: past the timeout)
    n = min(rng.choice([16, 60]), len(s.plain))
    cuts = [len(s.plain) * k // n for k in range(n + 1)]
    frames = []
    for d, (a, b) in enumerate(itertools.pairwise(cuts)):
        frame = ff.compress(s.plain[a:b], raw_ok=False)
        frame.dict = d + 1
        frames.append(frame)
    new = s.section.copy()
    new.frames = frames + new.frames[s.section.data_frames() :]
    new.dicts = [(_BIG_DICT[0], MAX_DICT)]

    def edit(t: ff.Tables) -> None:  # n entries in the index, one record
        t.dicts = [list(t.dicts[0]) for _ in range(n)]
        t.ndicts = n

    section = ff.build_section(new, rng.choice([1, 512]), edit_index=edit)
    desc = f"zlayout: {n} data frames, each with a dictionary of its own of {MAX_DICT} bytes (one record)"
    return Mutation(_zarchive(s, section), desc, "none", crafted="none")


def m_zlayout(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """No change to what the archive holds, a layout no writer makes: the data in frames of
    random sizes (zstd, raw, byte-shuffled or with the section's dictionary, at random), the
    TOC in random frames, page tables of a few frames. The archive must read back."""
    sec = s.section
    if sec is None or s.plain is None or s.toc_plain is None:
        return None
    if rng.random() < MANY_DICTS_SHARE:
        return _many_dictionaries(rng, s)
    dicts = s.dict_content
    new = sec.copy()
    data: list[ff.Frame] = new.frames[: sec.data_frames()]
    kinds: Counter = Counter()
    if rng.random() < 0.7:
        data, at = [], 0
        step = max(rng.choice([64, 1000, 20000, 70000]), len(s.plain) // 20)  # at most about 40 frames
        while at < len(s.plain):
            size = min(len(s.plain) - at, rng.randrange(1, step + 1))
            data.append(_any_frame(rng, s.plain[at : at + size], dicts, kinds))
            at += size
    toc, root = s.toc_plain
    cuts = _toc_cuts(rng, len(toc), root[0]) if toc else []
    toc_kinds: Counter = Counter()
    if rng.random() < 0.5:  # as writers frame a TOC (zstd, or raw when that does not shrink it)
        toc_frames = ff.frames_of(toc, cuts)
    else:  # a TOC's frames made as any frame may be: shuffled, with a dictionary (writers never do)
        toc_frames = [_any_frame(rng, toc[a:b], dicts, toc_kinds) for a, b in itertools.pairwise([0, *cuts])]
    new.frames = data + toc_frames
    per_page = rng.choice([sec.per_page, 1, 2, 3, 5])
    section = ff.build_section(new, per_page)
    made = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "as they were"
    in_toc = ", ".join(f"{n} {k}" for k, n in sorted(toc_kinds.items())) or "as writers make them"
    desc = f"zlayout: data frames {made}; TOC in {len(cuts)} frames ({in_toc}); {per_page} frames a page"
    return Mutation(_zarchive(s, section), desc, "none", crafted="none")


def _any_frame(rng: random.Random, piece: bytes, dicts: list[bytes], kinds: Counter) -> ff.Frame:
    """A frame of ``piece`` made at random as the format allows: zstd at levels 1 to 5, raw,
    byte-shuffled by an element size that divides it, or with one of the ``dicts``."""
    zstd = zstandard()
    size = len(piece)
    kind = rng.choice(["zstd", "zstd", "raw", "shuffle", "dict"])
    elements = [e for e in (2, 4, 8, 9) if size % e == 0]
    if kind == "raw" and size <= RAW_MAX:
        checksum = zstd.ZstdCompressor(write_checksum=True).compress(piece)[-4:]
        frame = ff.Frame(pack_raw_frame(piece, checksum), size, RAW)
    elif kind == "shuffle" and elements:
        element = rng.choice(elements)
        compressor = zstd.ZstdCompressor(level=rng.randrange(1, 6), write_checksum=True)
        frame = ff.Frame(compressor.compress(_shuffled(piece, element)), size, SHUFFLE, element)
    elif kind == "dict" and dicts:
        d = rng.randrange(len(dicts))
        raw = zstd.ZstdCompressionDict(dicts[d], dict_type=zstd.DICT_TYPE_RAWCONTENT)
        compressor = zstd.ZstdCompressor(level=rng.randrange(1, 6), write_checksum=True, dict_data=raw)
        frame = ff.Frame(compressor.compress(piece), size, NO_FILTER, 0, d + 1)
    else:
        kind = "zstd"
        compressor = zstd.ZstdCompressor(level=rng.randrange(1, 6), write_checksum=True)
        frame = ff.Frame(compressor.compress(piece), size)
    kinds[kind] += 1
    return frame


MUTATORS = {
    "bitflip": m_bitflip,
    "overwrite": m_overwrite,
    "insert": m_insert,
    "delete": m_delete,
    "truncate": m_truncate,
    "splice": m_splice,
    "header": m_header,
    "toc": m_toc,
    "index": m_index,
    "datacrc": m_datacrc,
    "datashift": m_datashift,
    "value": m_value,
    "zindex": m_zindex,
    "zpage": m_zpage,
    "zdict": m_zdict,
    "zraw": m_zraw,
    "ztoc": m_ztoc,
    "zhash": m_zhash,
    "zlayout": m_zlayout,
}


# ---- running one case ----------------------------------------------------------------------------


@dataclass
class Context:
    corpus: list[Sample]
    kinds: list[str]
    weights: list[float]
    by_name: dict[str, Sample] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {s.name: s for s in self.corpus}


def make_case(ctx: Context, case_id: str) -> tuple[Sample, str, Mutation]:
    """The sample and mutation of a case id: ``seed:index`` (random), ``sweep:SAMPLE:POS``
    (a flip of bit POS % 8 at byte POS) or ``valid:SAMPLE`` (unchanged: must read back)."""
    if case_id.startswith("valid:"):
        s = ctx.by_name[case_id[6:]]
        return s, "none", Mutation(s.data, "unchanged", "none", crafted="none", copy=True)
    if case_id.startswith("sweep:"):
        _, name, pos_text = case_id.split(":")
        s = ctx.by_name[name]
        pos = int(pos_text)
        bad = bytearray(s.data)
        bad[pos] ^= 1 << (pos % 8)
        return s, "sweep", Mutation(bytes(bad), f"bitflip {pos}.{pos % 8} ({s.region(pos)})", s.region(pos))
    rng = random.Random(case_id)
    s = rng.choice([x for x in ctx.corpus if any(_applies(k, x) for k in ctx.kinds)] or ctx.corpus)
    kinds = [(k, w) for k, w in zip(ctx.kinds, ctx.weights, strict=True) if _applies(k, s)]
    for _ in range(20):
        kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0] if kinds else "bitflip"
        mut = MUTATORS[kind](rng, s, ctx.corpus)
        if mut is not None and mut.data != s.data:
            mut.copy = rng.random() < COPY_SHARE
            return s, kind, mut
    while True:  # (a bit flipped twice is no change)
        mut = m_bitflip(rng, s, ctx.corpus)
        if mut.data != s.data:
            return s, "bitflip", mut


def _applies(kind: str, s: Sample) -> bool:
    """Whether mutations of ``kind`` can change ``s`` (its structures: a TOC, a 2.1 section,
    dictionaries, hash indexes)."""
    if kind in ("toc", "index"):
        return s.toc is not None and (kind == "toc" or any(it.kind == "region" for it in s.toc[0]))
    if kind in ("ztoc", "zhash"):
        return s.vtoc is not None and (kind == "ztoc" or any(it.kind == "region" for it in s.vtoc[0]))
    if kind == "zdict":
        return s.section is not None and bool(s.section.dicts)
    return s.section is not None if kind.startswith("z") else True


@dataclass
class StageResult:
    value: Any = _MISSING
    error: BaseException | None = None
    tb: str = ""
    changed: bool = False
    where: str = ""  # the frame that raised
    explicit: bool = False  # raised by a ``raise`` statement in msglc (not a slip of its code)


def _frame_of(e: BaseException) -> str:
    """file:line of the innermost frame in msglc (else the innermost) that raised ``e``."""
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if "/msglc/" in f.filename.replace("\\", "/")]
    f = (ours or frames or [None])[-1]
    return f"{os.path.basename(f.filename)}:{f.lineno}" if f is not None else "?"


def _explicit(e: BaseException) -> bool:
    """Was ``e`` raised on purpose by msglc (its innermost frame a ``raise`` statement in
    msglc), rather than by a slip such as indexing a dict with a missing key?"""
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    return "/msglc/" in last.filename.replace("\\", "/") and (last.line or "").lstrip().startswith("raise")


def _run(fn: Any, keep_tb: bool) -> StageResult:
    try:
        return StageResult(value=fn())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - classifying every exception is the point
        return StageResult(
            error=e, tb=traceback.format_exc() if keep_tb else "", where=_frame_of(e), explicit=_explicit(e)
        )


def _root_api(r: msglc.LazyReader) -> Any:
    root = r.read()
    value = walk(root)
    if isinstance(root, (LazyDict, dict)):
        keys = list(r.keys())
        if len(r) != len(keys) or [k for k, _ in r.items()] != keys:
            raise Inconsistent("the reader's keys(), items() and len() disagree")
        for k in keys[:2]:
            if k not in r:
                raise Inconsistent(f"{k!r} not in the reader")
            _agree(_whole(r.get(k)), value[k], f"reader.get({k!r})")
    elif isinstance(root, (LazyList, list)) and len(root):
        _agree(_whole(r[-1]), value[-1], "reader[-1]")
        _agree(_whole(r[0]), value[0], "reader[0]")
    return value


def evaluate(s: Sample, mut: Mutation, keep_tb: bool = False) -> tuple[str, dict[str, StageResult], str]:
    """Run every stage on the mutated archive; returns (class, stage results, the stage and
    reason that decided the class)."""
    stages: dict[str, StageResult] = {}
    truth, expected = s.truth, s.expected
    if mut.truth == "decode":
        truth, expected = _decoded_truth(s, mut)
    outside = _OUTSIDE
    if outside is not None:
        outside.clear()
    opened = _run(lambda: msglc.LazyReader(mut.data, cached=False), keep_tb)
    stages["open"] = opened
    if opened.error is None:
        r = opened.value
        opened.value = None
        wanted = [
            p
            for p, e, o in zip(s.paths, expected, s.expected, strict=True)
            if not isinstance(e if e is not _NO_TRUTH else o, type)
        ]
        steps = {
            "inspect": lambda: _inspect(r),
            "walk": lambda: _root_api(r),
            "iter": lambda: walk_iter(r.read()),
            "paths": lambda: [_path_value(r, p) for p in s.paths],
            "many": lambda: [_whole(v) for v in r.read_many(wanted)],
            "stream": lambda: _stream_reads(mut.data, wanted, not s.big),
            "root_to_obj": lambda: _root_to_obj(r),
            "to_obj": r.to_obj,
            "verify": r.verify,
            "copy": lambda: _copies(mut.data),
        }
        if s.deep or s.big:  # the harness's walks recurse per level, or take long: the other stages read it all
            del steps["walk"], steps["iter"]
        if s.section is None:  # (for what compressed sections do differently: frames fetched, copied)
            del steps["stream"], steps["copy"]
        elif not mut.copy or s.big and mut.crafted != "none":
            del steps["copy"]
        try:
            for name, step in steps.items():
                stages[name] = _run(step, keep_tb)
                if isinstance(stages[name].error, CaseTimeout):
                    break  # the timer is spent: the rest would run unguarded
        finally:
            with contextlib.suppress(Exception):
                r.close()
    with deep_limit():
        _compare(stages, truth, expected, s)
        cls, why = classify(s, mut, stages, truth)
    if outside and cls not in ("hang", "memory"):  # asked for bytes the file does not have
        cls, why = "read-outside-file", outside[0]
    if mut.crafted == "none" and cls != "ok":  # a valid archive that does not read back
        cls, why = "valid-fails", f"{cls}: {why}"
    return cls, stages, why


_NO_TRUTH = object()


def _decoded_truth(s: Sample, mut: Mutation) -> tuple[Any, list]:
    t, bad = s.trailer, mut.data
    shift = len(bad) - len(s.data)
    section = mut.plain if mut.plain is not None else bad[t.data_off : t.data_off + t.data_len + shift]
    try:
        truth = decode_data(section)
    except Exception:  # noqa: BLE001 - not decodable: nothing to compare with
        return _NO_TRUTH, [_NO_TRUTH] * len(s.paths)
    return truth, [_expected(truth, p) for p in s.paths]


def _path_value(r: msglc.LazyReader, path: Any) -> Any:
    try:
        return _whole(r[path])
    except (KeyError, IndexError, TypeError) as e:
        if not _explicit(e):
            raise
        return _Raised(type(e))


class _Raised:
    """A lookup error a path raised (compared with what the truth implies)."""

    def __init__(self, cls: type) -> None:
        self.cls = cls


def _stream_reads(data: bytes, wanted: list, root: bool) -> tuple[list, Any]:
    """``read_many`` batched (``max_gap``) and the lazy root's ``to_obj()`` (``root``; else
    None), read through a file object: a source that is not in memory, so that reads gather
    frames in requests (``fetch_many``) and arrays are read into fresh buffers (``read_into``)."""
    with msglc.LazyReader(io.BytesIO(data), cached=False) as r:
        return [_whole(v) for v in r.read_many(wanted, max_gap=4096)], _root_to_obj(r) if root else _MISSING


class CopyInvalid(Exception):
    """A copy of the archive (``combine``, a repack) was written, but does not verify."""


def _copies(data: bytes) -> list:
    """The archive's value as two copies of it hold it, each verified: ``combine`` of it
    (its frames copied as they are, with their dictionaries, each checked) and a repack
    (``dumps`` of its reader: the same copy). A copy checks its input's data as it copies
    it, not the nodes: a copy that was written must hold the input's value, and verify
    unless the input does not (``bad-copy``)."""
    copies = []
    for how in ("combine", "repack"):
        if how == "combine":
            out = io.BytesIO()
            msglc.combine(out, [FileInfo(data, "x")])
            made = out.getvalue()
        else:
            with msglc.LazyReader(data) as r:
                made = msglc.dumps(r)
        try:
            with msglc.LazyReader(made) as c:
                c.verify()
                value = c.to_obj()
        except Exception as e:  # noqa: BLE001 - any failure of a written copy is the finding
            raise CopyInvalid(f"the {how} copy does not verify: {type(e).__name__}: {e}") from None
        copies.append(value["x"] if how == "combine" else value)
    return copies


def _inspect(r: msglc.LazyReader) -> None:
    """What a user inspects: the layout, the frames of a compressed archive and the
    dictionaries they name."""
    r.info()
    names = {f.dictionary for f in r.frames()}
    for d in sorted(names - {0}):
        r.dictionary(d)


# reads a source was asked for outside the file (offset, size, file size, where), in workers
_OUTSIDE: list[str] | None = None


def watch_reads() -> None:
    """Record every read of an in-memory archive that asks for bytes outside it (the source
    refuses it, but a reader checks every offset against the file before it reads): a bug
    class of its own. Installed in the worker processes and ``--replay`` only."""
    global _OUTSIDE
    if _OUTSIDE is not None:
        return
    _OUTSIDE = found = []

    def watched(cls: Any) -> None:
        read = cls.read

        def checked(self: Any, offset: int, size: int) -> Any:
            if offset < 0 or size < 0 or offset + size > self.size:
                where = [f for f in traceback.extract_stack()[:-1] if "/msglc/" in f.filename.replace("\\", "/")]
                at = f"{os.path.basename(where[-1].filename)}:{where[-1].lineno}" if where else "?"
                found.append(f"read {offset}+{size} of a file of {self.size} bytes, in {at}")
            return read(self, offset, size)

        cls.read = checked

    watched(BufferSource)  # LazyReader(bytes)
    watched(StreamSource)  # LazyReader(io.BytesIO(...)): the "stream" stage


def _root_to_obj(r: msglc.LazyReader) -> Any:
    root = r.read()
    return root.to_obj() if isinstance(root, (LazyList, LazyDict, LazyArray)) else root


def _compare(stages: dict[str, StageResult], truth: Any, expected: list, s: Sample) -> None:
    if truth is _NO_TRUTH:
        return
    truth_canon = s.truth_canon if truth is s.truth else canon(truth)
    for name in ("walk", "iter", "root_to_obj", "to_obj"):
        st = stages.get(name)
        if st is not None and st.error is None and not same(st.value, truth, truth_canon):
            st.changed = True
    st = stages.get("paths")
    if st is not None and st.error is None:
        for got, want in zip(st.value, expected, strict=True):
            if isinstance(want, type):
                st.changed |= not isinstance(got, _Raised)
            elif isinstance(got, _Raised):
                st.error = got.cls(f"a path of the original raised {got.cls.__name__}")
                st.where = "path lookup"
                break
            elif not same(got, want):
                st.changed = True
    wanted = [e for e in expected if not isinstance(e, type)]
    st = stages.get("many")
    if st is not None and st.error is None:
        st.changed = len(st.value) != len(wanted) or not all(map(same, st.value, wanted))
    st = stages.get("copy")
    if st is not None and st.error is None:
        st.changed = not all(same(v, truth, truth_canon) for v in st.value)
    st = stages.get("stream")
    if st is not None and st.error is None:
        many, root = st.value
        st.changed = len(many) != len(wanted) or not all(map(same, many, wanted))
        st.changed |= root is not _MISSING and not same(root, truth, truth_canon)


def classify(s: Sample, mut: Mutation, stages: dict[str, StageResult], truth: Any) -> tuple[str, str]:
    """The outcome class of a case, and the stage and reason that decided it."""
    in_data = mut.region in ("data", "mixed-data")  # lazy reads do not checksum data bytes
    lookups: list[tuple[str, BaseException]] = []  # lookup errors msglc raised on purpose
    documented = False
    for name, st in stages.items():
        e = st.error
        if e is None:
            continue
        if isinstance(e, CaseTimeout):
            return "hang", f"{name}: timed out in {st.where}"
        if isinstance(e, MemoryError):
            return "memory", f"{name}: MemoryError in {st.where}"
        if isinstance(e, Inconsistent):
            st.changed = True
            continue
        if isinstance(e, CopyInvalid):
            continue
        if isinstance(e, MsglcError):
            documented = True
            continue
        if (
            isinstance(e, (KeyError, IndexError, TypeError))
            and name in LOOKUP_STAGES
            and (st.explicit or st.where == "path lookup")
        ):
            if truth is not _NO_TRUTH or name in ("walk", "iter"):  # paths need a truth to be wrong
                lookups.append((name, e))
            continue
        return "undocumented", f"{name}: {type(e).__name__} {_short(str(e))} in {st.where}"
    verify_ok = "verify" in stages and stages["verify"].error is None
    copied = stages.get("copy")
    if copied is not None and isinstance(copied.error, CopyInvalid) and verify_ok:  # (else it copied
        return "bad-copy", str(copied.error)  # what verify() refuses, which the copy's verify() finds)
    if copied is not None and copied.changed:  # a verified copy of other values: nothing excuses it
        return "bad-copy", "a verified copy holds other values"
    changed = [name for name, st in stages.items() if st.changed]
    if verify_ok and (changed or lookups):
        what = f"{changed[0]} changed" if changed else f"{lookups[0][0]}: {type(lookups[0][1]).__name__}"
        return "wrong-verify-passes", f"{what}, verify() passed"
    if not in_data:
        if changed:
            return "wrong-outside-data", f"{changed[0]} changed"
        if lookups and not (mut.crafted == "toc" and all(isinstance(e, KeyError) for _, e in lookups)):
            name, e = lookups[0]
            return "wrong-outside-data", f"{name}: {type(e).__name__} {_short(str(e))}"
    if changed and mut.crafted == "data" and "to_obj" in changed:
        return "wrong-verify-passes", "to_obj() differs from the data it checked"
    if mut.crafted is None and stages["open"].error is None and not _benign(s, mut):
        if verify_ok:
            return "undetected-damage", "verify() passed on a damaged archive"
        if in_data and stages["to_obj"].error is None:
            return "undetected-damage", "to_obj() returned a value from damaged data"
    if changed or (lookups and in_data):
        return (
            "changed-in-data",
            f"{changed[0]} changed" if changed else f"{lookups[0][0]}: {type(lookups[0][1]).__name__}",
        )
    if lookups:
        return "lookup-crafted-toc", f"{lookups[0][0]}: KeyError"
    if verify_ok and documented and mut.crafted is not None:
        failing = next(name for name, st in stages.items() if st.error is not None)
        return "verify-passes-unreadable", f"{failing} raised"
    if documented:
        return "error", next(f"{n}: {type(st.error).__name__}" for n, st in stages.items() if st.error is not None)
    return "ok", ""


def _benign(s: Sample, mut: Mutation) -> bool:
    """A change no reader depends on: bytes nothing refers to, a header end that names the
    end of the file, or compressed bytes that still decompress to the same data, TOC and
    dictionaries (a zstd stream has bits that do not change its output, and its checksum is
    of the output)."""
    if mut.region in ("free", "dead"):
        return True
    bad = mut.data
    if s.plain is not None and s.toc_plain is not None and mut.region in ("data", "toc", "tables"):
        with contextlib.suppress(Exception), msglc.LazyReader(bad) as r:
            lt = archive_of(r).opened.trailer  # 2.1: the TOC is framed too, and the dictionaries must be alike
            toc = bytes(archive_of(r).read(lt.toc_off, lt.toc_len)), (lt.root_pos, lt.root_len)
            dicts = [r.dictionary(d) for d in range(1, len(s.dict_content) + 1)]
            if r.protocol_raw_data() == s.plain and toc == s.toc_plain and dicts == s.dict_content:
                return True
    return (
        len(bad) == len(s.data)
        and bad[:10] == s.data[:10]
        and bad[16:] == s.data[16:]
        and int.from_bytes(bad[10:16], "little") == len(bad)
    )


def run_case(ctx: Context, case_id: str, timeout: float, keep_tb: bool = False) -> dict:
    """One case, under a soft timeout; the summary the parent aggregates."""
    start = time.perf_counter()
    try:
        s, kind, mut = make_case(ctx, case_id)
    except Exception as e:  # noqa: BLE001 - a harness error: reported, never hidden
        return {
            "id": case_id,
            "cls": "harness-error",
            "why": f"{type(e).__name__}: {e}",
            "sig": f"harness:{_frame_of(e)}",
            "elapsed": 0.0,
        }
    if timeout:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        cls, stages, why = evaluate(s, mut, keep_tb)
    except CaseTimeout:
        cls, stages, why = "hang", {}, "timed out between stages"
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.perf_counter() - start
    result = {
        "id": case_id,
        "cls": cls,
        "sample": s.name,
        "kind": kind,
        "desc": mut.desc,
        "region": mut.region,
        "why": why,
        "elapsed": elapsed,
    }
    result["sig"] = _signature(cls, kind, why, stages)
    if keep_tb:
        result["stages"] = {name: _stage_text(st) for name, st in stages.items()}
    return result


def _signature(cls: str, kind: str, why: str, stages: dict[str, StageResult]) -> str:
    """What tells one failure from another: the exception and the line that raised it, or
    the stage and kind of mutation."""
    if cls in ("undocumented", "hang", "memory", "valid-fails"):
        for name, st in stages.items():
            if st.error is not None and not isinstance(st.error, (MsglcError, Inconsistent)):
                return f"{cls}:{name}:{type(st.error).__name__}@{st.where}"
        return f"{cls}:{why}"
    if cls in ("ok", "error"):
        return cls
    if cls == "read-outside-file":
        return f"{cls}:{why.rsplit(' in ', 1)[-1]}:{kind}"
    if cls == "bad-copy":
        return f"{cls}:{why.split(':')[0]}:{kind}"
    return f"{cls}:{why.split(' ')[0]}:{kind}"


def _stage_text(st: StageResult) -> str:
    if st.error is not None:
        return st.tb or f"{type(st.error).__name__}: {st.error}"
    return ("CHANGED " if st.changed else "ok ") + _short(st.value)


# ---- workers ------------------------------------------------------------------------------------

_CTX: Context | None = None


def _alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout("the case ran past its time limit")


def _limit_memory(extra_mb: int) -> None:
    if not extra_mb:
        return
    try:
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return
    limit = size + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _worker(conn: Any, timeout: float, mem_mb: int) -> None:
    watch_reads()
    _limit_memory(mem_mb)
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    assert _CTX is not None
    while True:
        job = conn.recv()
        if job is None:
            return
        for case_id in job:
            conn.send(run_case(_CTX, case_id, timeout))


class _Pool:
    """Worker processes fed chunks of case ids; a worker silent for longer than the hard
    timeout is killed (its case is a hang) and replaced; one that dies loses one case."""

    def __init__(self, workers: int, timeout: float, mem_mb: int) -> None:
        self.mp = get_context("fork")
        self.timeout, self.mem_mb = timeout, mem_mb
        self.hard = timeout + 15 if timeout else 300
        self.workers = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> dict:
        parent, child = self.mp.Pipe()
        proc = self.mp.Process(target=_worker, args=(child, self.timeout, self.mem_mb), daemon=True)
        proc.start()
        child.close()
        return {"proc": proc, "conn": parent, "inflight": deque(), "since": time.monotonic()}

    def run(self, ids: list[str], chunk: int, deadline: float | None, on_result: Any) -> None:
        queue = deque(ids[i : i + chunk] for i in range(0, len(ids), chunk))
        while True:
            for w in self.workers:
                if not w["inflight"] and queue and (deadline is None or time.monotonic() < deadline):
                    job = queue.popleft()
                    w["inflight"].extend(job)
                    w["since"] = time.monotonic()
                    w["conn"].send(job)
            busy = [w for w in self.workers if w["inflight"]]
            if not busy:
                return
            ready = connection.wait([w["conn"] for w in busy], timeout=1.0)
            now = time.monotonic()
            for i, w in enumerate(self.workers):
                if not w["inflight"]:
                    continue
                if w["conn"] in ready:
                    try:
                        result = w["conn"].recv()
                    except (EOFError, OSError):
                        self._replace(
                            i, "worker-died", "the worker died (a crash, or killed by the OS)", queue, on_result
                        )
                        continue
                    if result["id"] == w["inflight"][0]:
                        w["inflight"].popleft()
                    w["since"] = now
                    on_result(result)
                elif now - w["since"] > self.hard:
                    self._replace(i, "hang", f"no answer in {self.hard:.0f} s: worker killed", queue, on_result)

    def _replace(self, i: int, cls: str, why: str, queue: deque, on_result: Any) -> None:
        w = self.workers[i]
        w["proc"].kill()
        w["proc"].join()
        lost = w["inflight"].popleft()
        on_result({"id": lost, "cls": cls, "why": why, "sig": f"{cls}:{why.split(':')[0]}", "elapsed": self.hard})
        if w["inflight"]:
            queue.appendleft(list(w["inflight"]))
        self.workers[i] = self._spawn()

    def close(self) -> None:
        for w in self.workers:
            with contextlib.suppress(OSError):
                w["conn"].send(None)
        for w in self.workers:
            w["proc"].join(5)
            if w["proc"].is_alive():
                w["proc"].kill()
                w["proc"].join()


# ---- campaigns and reports -----------------------------------------------------------------------


def make_context(kinds: list[str] | None = None) -> Context:
    chosen = kinds or list(KIND_WEIGHTS)
    unknown = [k for k in chosen if k not in MUTATORS]
    if unknown:
        raise SystemExit(f"unknown mutation kinds {unknown}; choose from {', '.join(MUTATORS)}")
    return Context(build_corpus(), chosen, [KIND_WEIGHTS[k] for k in chosen])


def corpus_digest(corpus: list[Sample]) -> str:
    h = hashlib.sha256()
    for s in corpus:
        h.update(s.name.encode() + s.data)
    return h.hexdigest()[:16]


# ---- tiled arrays (format 2.1) ----------------------------------------------------------------

_TILE_DTYPES: list[Any] = ["<f8", ">f4", "<i2", ">i8", "u1", "?", "<c8", "S3", "<U2", [("a", "<i2"), ("b", ">f8")]]


def _tile_array(rng: random.Random, shape: tuple[int, ...], dtype: Any) -> Any:
    size = int(np.prod(shape))
    if dtype.kind == "b":
        return np.array([rng.random() < 0.5 for _ in range(size)], dtype).reshape(shape)
    if dtype.kind == "U":
        return (np.arange(size) % 97).astype(dtype).reshape(shape)
    return np.frombuffer(rng.randbytes(size * dtype.itemsize), dtype).reshape(shape).copy()


def _basic_index(rng: random.Random, shape: tuple[int, ...]) -> tuple[Any, ...]:
    key: list[Any] = []
    for n in shape[: rng.randint(0, len(shape))]:
        c = rng.random()
        if c < 0.3 and n:
            key.append(rng.randrange(-n, n))
        else:
            step = rng.choice([1, 1, 2, 3, 5, -1, -4])
            key.append(slice(rng.randint(-n - 2, n + 2), rng.randint(-n - 2, n + 2), step))
    if rng.random() < 0.3:
        key.insert(rng.randint(0, len(key)), Ellipsis)
    if rng.random() < 0.2:
        key.insert(rng.randint(0, len(key)), None)
    return tuple(key)


def _crafted_tiles(rng: random.Random, shape: tuple[int, ...]) -> list[Any]:
    """Array headers' third (and fourth) elements that a reader must refuse."""
    n = len(shape)
    good = [max(1, d) for d in shape]
    k = rng.randrange(n)
    return [
        [*good, 1],  # one size too many
        good[:-1],  # one too few
        [*good[:k], 0, *good[k + 1 :]],  # a size of 0
        [*good[:k], max(shape[k], 1) + 1 + rng.randint(0, 5), *good[k + 1 :]],  # longer than the axis
        [*good[:k], -rng.randint(1, 9), *good[k + 1 :]],
        [*good[:k], float(good[k]), *good[k + 1 :]],
        [*good[:k], True, *good[k + 1 :]],
        [*good[:k], 2**40, *good[k + 1 :]],
        [*good[:k], [good[k]], *good[k + 1 :]],
        "tiles",
        None,
        {"t": good},
    ]


def fuzz_tiles(cases: int = 200, seed: int = 0) -> list[str]:
    """Tiled NumPy arrays (format 2.1): ``cases`` random shapes (2 to 4 axes, some empty),
    tiles and dtypes, written with ``tiles=`` and read back whole, by basic indexing against
    NumPy, and by ``verify()``; and for each, crafted array headers (a tile of the wrong
    length, sizes out of range or of other types, a fourth element) that reads must refuse
    with an ``MsglcError``, before allocating anything. Returns what went wrong."""
    from msglc.format.numpy_ext import parse_head

    rng = random.Random(seed)
    problems: list[str] = []
    for case in range(cases):
        ndim = rng.randint(2, 4)
        shape = tuple(rng.choice([0, 1]) if rng.random() < 0.05 else rng.randint(1, 14) for _ in range(ndim))
        tile = tuple(rng.randint(1, max(n, 1)) for n in shape)
        dtype = np.dtype(rng.choice(_TILE_DTYPES))
        a = _tile_array(rng, shape, dtype)
        where = f"tiles case {seed}:{case} shape {shape} tile {tile} dtype {dtype}"
        try:
            data = msglc.dumps(
                {"a": a}, compression="zstd", tiles=tile, small_obj_optimization_threshold=rng.choice([1, 64, 1 << 20])
            )
            with msglc.LazyReader(data) as r:
                if not _same(r.to_obj()["a"], a):
                    problems.append(f"{where}: to_obj() differs")
                lazy = r["a"]
                if isinstance(lazy, LazyArray):
                    if not _same(np.asarray(lazy), a):
                        problems.append(f"{where}: np.asarray differs")
                    for _ in range(4):
                        key = _basic_index(rng, shape)
                        try:
                            expected = a[key]
                        except IndexError:
                            continue
                        if not _same(np.asarray(lazy[key]), np.asarray(expected)):
                            problems.append(f"{where}: [{key}] differs")
                r.verify()
        except Exception as e:  # noqa: BLE001 (every failure is reported, with its case)
            problems.append(f"{where}: {type(e).__name__}: {e}")
        descr = np.lib.format.dtype_to_descr(dtype)
        elements = a.tobytes()
        for extra in [[c] for c in _crafted_tiles(rng, shape)] + [[list(tile), 1]]:  # (a fourth element last)
            fields = [descr, list(shape), *extra]
            header = msgspec.msgpack.encode(fields)
            value = msgspec.msgpack.encode(msgspec.msgpack.Ext(78, struct.pack("<I", len(header)) + header + elements))
            for read in ("ext_hook", "parse_head"):
                try:
                    if read == "ext_hook":
                        msgspec.msgpack.decode(value, ext_hook=ext_hook)
                    else:
                        parse_head(value, 0, len(value))
                    problems.append(f"{where}: header {fields[2:]!r:.60} read by {read} without error")
                except MsglcError:
                    pass
                except Exception as e:  # noqa: BLE001
                    problems.append(f"{where}: header {fields[2:]!r:.60} gave {type(e).__name__} by {read}: {e}")
    return problems


def campaign(
    cases: int = 1000,
    seed: int = 0,
    workers: int = 2,
    seconds: float | None = None,
    kinds: list[str] | None = None,
    sweep: str | None = None,
    sweep_stride: int | None = None,
    timeout: float = 10.0,
    mem_mb: int = 1024,
    chunk: int = 16,
    progress: bool = False,
) -> dict:
    """Run ``cases`` random cases (and a bit-flip sweep of ``sweep``, default the ``doc@64``
    sample, every ``sweep_stride`` bytes) on ``workers`` processes; stop dispatching after
    ``seconds``. Returns the report (``format_report`` prints it)."""
    global _CTX
    t0 = time.perf_counter()
    ctx = make_context(kinds)
    _CTX = ctx
    built = time.perf_counter() - t0
    ids = [f"valid:{s.name}" for s in ctx.corpus] + [f"{seed}:{i}" for i in range(cases)]
    if sweep_stride:
        target = ctx.by_name[sweep or "doc@64"]
        ids += [f"sweep:{target.name}:{p}" for p in range(0, len(target.data), sweep_stride)]
    counts: Counter = Counter()
    sigs: dict[str, dict] = {}
    slow: list = []
    state = {"done": 0, "last": time.monotonic()}

    def on_result(res: dict) -> None:
        counts[res["cls"]] += 1
        entry = sigs.setdefault(res["sig"], {"cls": res["cls"], "count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < 5:
            entry["examples"].append({k: res.get(k) for k in ("id", "sample", "kind", "desc", "why", "elapsed")})
        if res.get("elapsed", 0) > SLOW_SECONDS:
            slow.append({k: res.get(k) for k in ("id", "sample", "kind", "desc", "elapsed")})
        state["done"] += 1
        if progress and time.monotonic() - state["last"] > 10:
            state["last"] = time.monotonic()
            rate = state["done"] / (time.perf_counter() - start)
            bugs = sum(counts[c] for c in BUG_CLASSES)
            print(
                f"  {state['done']}/{len(ids)} cases, {rate:.0f}/s, bug-class cases {bugs}", file=sys.stderr, flush=True
            )

    start = time.perf_counter()
    pool = _Pool(workers, timeout, mem_mb)
    try:
        pool.run(ids, chunk, None if seconds is None else time.monotonic() + seconds, on_result)
    finally:
        pool.close()
    elapsed = time.perf_counter() - start
    slow.sort(key=lambda r: -r["elapsed"])
    return {
        "seed": seed,
        "cases_requested": len(ids),
        "cases_run": state["done"],
        "seconds": round(elapsed, 2),
        "cases_per_second": round(state["done"] / elapsed, 1) if elapsed else None,
        "workers": workers,
        "kinds": ctx.kinds,
        "corpus": {s.name: len(s.data) for s in ctx.corpus},
        "corpus_digest": corpus_digest(ctx.corpus),
        "corpus_seconds": round(built, 2),
        "counts": {c: counts.get(c, 0) for c in (*BUG_CLASSES, *INFO_CLASSES)}
        | {c: n for c, n in counts.items() if c not in BUG_CLASSES + INFO_CLASSES},
        "signatures": dict(sorted(sigs.items(), key=lambda kv: (kv[1]["cls"] not in BUG_CLASSES, -kv[1]["count"]))),
        "slow": slow[:10],
        "slow_count": len(slow),
    }


def format_report(report: dict) -> str:
    lines = [
        f"msglc fuzz: {report['cases_run']} of {report['cases_requested']} cases in {report['seconds']} s "
        f"({report['cases_per_second']} cases/s, {report['workers']} workers), seed {report['seed']}, "
        f"corpus {len(report['corpus'])} archives ({report['corpus_digest']})",
    ]
    lines.append("outcomes:")
    for cls, n in report["counts"].items():
        mark = "  BUG" if cls in BUG_CLASSES and n else ""
        lines.append(f"  {cls:26} {n:8}{mark}")
    slow = f"(slow, > {SLOW_SECONDS:.0f} s)"
    lines.append(f"  {slow:26} {report['slow_count']:8}")
    shown = 0
    for sig, entry in report["signatures"].items():
        if entry["cls"] in ("ok", "error"):
            continue
        if entry["cls"] not in BUG_CLASSES and shown >= 12:
            continue
        shown += entry["cls"] not in BUG_CLASSES
        lines.append(f"[{entry['cls']}] {sig}: {entry['count']} cases")
        for ex in entry["examples"][:3]:
            lines.append(f"    --replay {ex['id']}  {ex.get('sample')}  {ex.get('desc')}  -> {ex.get('why')}")
    for ex in report["slow"][:5]:
        lines.append(f"[slow] --replay {ex['id']}  {ex.get('sample')}  {ex.get('desc')}  {ex['elapsed']:.1f} s")
    return "\n".join(lines)


def replay(case_id: str, kinds: list[str] | None, timeout: float) -> int:
    global _CTX
    ctx = make_context(kinds)
    _CTX = ctx
    signal.signal(signal.SIGALRM, _alarm)
    watch_reads()
    s, kind, mut = make_case(ctx, case_id)
    print(f"case {case_id}: sample {s.name} ({len(s.data)} bytes), {kind}: {mut.desc}")
    print(f"region {mut.region}, crafted {mut.crafted}, truth {mut.truth}; corpus {corpus_digest(ctx.corpus)}")
    res = run_case(ctx, case_id, timeout, keep_tb=True)
    for name, text in res.get("stages", {}).items():
        print(f"--- {name}: {text.rstrip()}")
    print(f"=> {res['cls']}: {res['why']} ({res['elapsed']:.3f} s)")
    return 0 if res["cls"] not in BUG_CLASSES else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmark.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=2000, help="random cases to run (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="case ids are SEED:INDEX (default 0)")
    p.add_argument("--seconds", type=float, default=None, help="stop starting cases after this many seconds")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--kinds", default=None, help=f"mutation kinds, comma-separated (default all: {','.join(MUTATORS)})")
    p.add_argument("--sweep", default=None, help="a sample to flip one bit at every --stride bytes of (e.g. doc@64)")
    p.add_argument("--stride", type=int, default=None, help="bytes between the sweep's flips (with --sweep; default 1)")
    p.add_argument(
        "--timeout", type=float, default=10.0, help="seconds a case may take before it is a hang (default 10)"
    )
    p.add_argument(
        "--mem-mb", type=int, default=1024, help="address space a worker may add to its size (default 1024 MB)"
    )
    p.add_argument(
        "--copy-share",
        type=float,
        default=0.25,
        help="share of the cases on compressed archives that copy them too (default 0.25)",
    )
    p.add_argument("--out", default=None, help="write the report as JSON here")
    p.add_argument("--replay", metavar="ID", help="run one case in this process and print every stage, with tracebacks")
    p.add_argument("--save", nargs=2, metavar=("ID", "PATH"), help="write the mutated archive of a case to PATH")
    p.add_argument("--list", action="store_true", help="list the corpus archives")
    p.add_argument("--progress", action="store_true", help="print progress to stderr")
    p.add_argument(
        "--tiles",
        type=int,
        metavar="N",
        help="instead: N random tiled arrays round-tripped and their headers crafted (fuzz_tiles)",
    )
    args = p.parse_args(argv)
    if args.tiles is not None:
        problems = fuzz_tiles(args.tiles, args.seed)
        print("\n".join(problems) or f"{args.tiles} tiled arrays: no problem")
        return 1 if problems else 0
    kinds = args.kinds.split(",") if args.kinds else None
    globals()["COPY_SHARE"] = args.copy_share  # (module state: the workers are forked after this)
    if args.replay:
        return replay(args.replay, kinds, args.timeout)
    if args.save:
        s, kind, mut = make_case(make_context(kinds), args.save[0])
        with open(args.save[1], "wb") as f:
            f.write(mut.data)
        print(f"{args.save[1]}: {s.name}, {kind}: {mut.desc}")
        return 0
    if args.list:
        for s in make_context(kinds).corpus:
            node = s.trailer.root_len or s.section is not None and s.section.root[1]
            extra = "  slack" if s.slack else ""
            if s.section is not None:
                extra += f"  {len(s.section.frames)} frames, {len(s.section.dicts)} dictionaries"
            print(f"{s.name:24} {len(s.data):8} bytes  root {'node' if node else 'plain'}{extra}")
        return 0
    sweep_stride = args.stride or (1 if args.sweep else None)
    report = campaign(
        args.cases,
        args.seed,
        args.workers,
        args.seconds,
        kinds,
        args.sweep,
        sweep_stride,
        args.timeout,
        args.mem_mb,
        progress=args.progress,
    )
    print(format_report(report))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1, default=str)
    return 1 if any(report["counts"].get(c) for c in BUG_CLASSES) else 0


if __name__ == "__main__":
    sys.exit(main())
