"""The comparison msglc vs h5py: write time, random reads, file sizes, and a random-path test.

Data: an N x N matrix of random floats, stored by msglc as nested lists once per threshold
and once as a NumPy array (typed binary, ``numpy_encoder``), each plain and compressed
(``compression="zstd"``), and by h5py once per threshold (chunks of about the threshold's bytes)
with no compression, gzip and lzf, plus one contiguous dataset. Then JSON-like records (file
size against plain msgpack and the whole file zstd-compressed) and the bulk read of a smooth
compressible array by number of threads. Every measured figure lands in a ``Results``.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypedDict

import msgspec

import msglc

from .compressed import LEVEL, have_zstd, note_once, read_threads, records, row_chunks, smooth_field, zstd_whole
from .datasets import DATASETS
from .timing import best_of, calls, interleaved


class DumpOptions(TypedDict, total=False):
    """The keywords of ``msglc.dump`` that the series set."""

    compression: str
    compression_level: int


COMPRESSIONS = (None, "gzip", "lzf")
ZSTD: DumpOptions = {"compression": "zstd", "compression_level": LEVEL}
BULK_FRAME = 1 << 20  # frames of the bulk-read array and h5py's chunk bytes there
SLAB = 64  # the side of the blocks the slab figure reads
SLAB_CHUNK = 128  # h5py's chunks there (128 x 128 float64, 128 KB), as msglc's tiles


@dataclass
class Settings:
    size: int = 5000
    repeats: tuple[int, ...] = (1000, 10_000)
    thresholds: tuple[int, ...] = (12, 14, 16, 18, 20, 22)  # powers of two
    budget: float = 6.0  # seconds of reads per configuration before extrapolating
    doc_mb: int = 100  # size of the random JSON-like document
    paths: int = 1000  # random paths read from it
    seed: int = 2024
    compressed: bool = True  # msglc zstd series beside h5py's gzip and lzf (needs zstandard)
    records: int = 300_000  # JSON-like records for the records figure (0: none)
    bulk_mb: int = 400  # the smooth array read whole by threads (0: none)
    threads: tuple[int, ...] = (1, 2)  # read_threads of the bulk figure
    slabs: int = 1000  # random 64 x 64 blocks read by the slab figure (0: none) ...
    slab_mb: int = 200  # ... of a random float64 array of this size (larger than h5py's chunk cache)
    dask_mb: int = 1024  # the array reduced through Dask (0: none)
    workers: tuple[int, ...] = (1, 2)  # Dask worker processes of the scale figure
    datasets: tuple[str, ...] = tuple(DATASETS)  # real public JSON of the realdata figure (none: ())


@dataclass
class Results:
    settings: dict[str, Any]  # asdict(Settings)
    machine: str
    date: str
    write: list[dict[str, Any]] = field(default_factory=list)  # series, threshold, seconds
    read: list[dict[str, Any]] = field(default_factory=list)  # series, threshold, reads, seconds, measured_reads
    size: list[dict[str, Any]] = field(default_factory=list)  # series, threshold, bytes
    paths: dict[str, Any] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)  # series, threshold, bytes, dump_seconds, read_seconds
    bulk: list[dict[str, Any]] = field(default_factory=list)  # series, threads, seconds, bytes, nbytes
    slabs: list[dict[str, Any]] = field(
        default_factory=list
    )  # series, seconds (a block), bytes, blocks, side, chunk, n
    scale: list[dict[str, Any]] = field(default_factory=list)  # series, workers, seconds, nbytes, chunk_rows
    realdata: list[dict[str, Any]] = field(default_factory=list)  # one per dataset: targets.realdata.measure


def h5_series(compression: str | None) -> str:
    return f"h5py {compression or 'uncompressed'}"


def h5_chunk(threshold: int, n: int) -> tuple[int, int]:
    """A square chunk of about ``threshold`` bytes of float64."""
    side = max(1, min(n, int((threshold / 8) ** 0.5)))
    return side, side


def timed_reads(
    read: Callable[[int, int], Any], points: list[tuple[int, int]], repeats: tuple[int, ...], budget: float
) -> dict[int, tuple[float, int]]:
    """Elapsed time at each count in ``repeats`` of one pass of reads over ``points``.

    A pass stops once ``budget`` seconds are spent; a count not reached is then estimated from
    the mean time per read so far. Returns {count: (seconds, reads actually measured)}."""
    goal = max(repeats)
    marks = {}
    t0 = time.perf_counter()
    done = 0
    for i, j in points[:goal]:
        read(i, j)
        done += 1
        if done in repeats:
            marks[done] = (time.perf_counter() - t0, done)
        if time.perf_counter() - t0 > budget:
            break
    elapsed = time.perf_counter() - t0
    return {r: marks.get(r, (elapsed / done * r, done)) for r in repeats}


class Experiment:
    def __init__(self, settings: Settings, workdir: Path, results: Results, progress: Callable[[str], None]) -> None:
        self.s = settings
        self.dir = workdir
        self.r = results
        self.step = progress
        rng = random.Random(settings.seed)
        n = settings.size
        self.matrix = [[rng.random() for _ in range(n)] for _ in range(n)]
        self.points = [(rng.randrange(n), rng.randrange(n)) for _ in range(max(settings.repeats))]
        self.zstd = have_zstd()
        if not self.zstd:
            note_once("zstandard is not installed: no compressed msglc series, records or bulk-read figures")

    @property
    def compressed(self) -> bool:
        return self.zstd and self.s.compressed

    # -- writing -------------------------------------------------------------------------------
    def write_all(self) -> None:
        import h5py
        import numpy as np

        n = self.s.size
        plain = self.dir / "matrix.msgpack"
        enc = msgspec.msgpack.Encoder()

        def floor() -> None:
            with open(plain, "wb") as f:
                f.write(enc.encode(self.matrix))

        self.step("write: msgspec floor")
        self._write("floor: msgspec encode + write", None, floor, plain)
        for e in self.s.thresholds:
            t = 1 << e
            path = self.dir / f"m-{e}.mlc"
            self.step(f"write: msglc threshold 2^{e}")
            self._write("msglc", t, partial(msglc.dump, path, self.matrix, small_obj_optimization_threshold=t), path)
            if self.compressed:
                path = self.dir / f"m-{e}-zstd.mlc"
                self.step(f"write: msglc zstd threshold 2^{e}")
                self._write(
                    "msglc zstd",
                    t,
                    partial(msglc.dump, path, self.matrix, small_obj_optimization_threshold=t, **ZSTD),
                    path,
                )
        convert = best_of(lambda: np.asarray(self.matrix), repeat=2)
        self.r.write.append(
            {"series": "list to numpy array (h5py's input, not in its times)", "threshold": None, "seconds": convert}
        )
        array = np.asarray(self.matrix)
        self.step("write: msglc NumPy array")
        path = self.dir / "array.mlc"
        self._write("msglc NumPy array", None, lambda: msglc.dump(path, array), path)
        if self.compressed:
            zpath = self.dir / "array-zstd.mlc"
            self._write("msglc NumPy array zstd", None, lambda: msglc.dump(zpath, array, **ZSTD), zpath)
        npy = self.dir / "array.npy"
        self._write("floor: numpy.save", None, lambda: np.save(npy, array), npy)
        self.step("write: h5py contiguous")
        path = self.dir / "contiguous.h5"
        self._write("h5py contiguous", None, lambda: _h5_write(h5py, path, array, None, None), path)
        for compression in COMPRESSIONS:
            for e in self.s.thresholds:
                path = self.dir / f"m-{e}-{compression}.h5"
                self.step(f"write: {h5_series(compression)} chunk 2^{e}")
                chunks = h5_chunk(1 << e, n)
                self._write(
                    h5_series(compression),
                    1 << e,
                    partial(_h5_write, h5py, path, array, chunks, compression),
                    path,
                )

    def _write(self, series: str, threshold: int | None, write: Callable[[], object], path: Path) -> None:
        seconds = best_of(write, repeat=2, setup=lambda: path.unlink(missing_ok=True))
        self.r.write.append({"series": series, "threshold": threshold, "seconds": seconds})
        self.r.size.append({"series": series, "threshold": threshold, "bytes": path.stat().st_size})

    # -- reading -------------------------------------------------------------------------------
    def read_all(self) -> None:
        import h5py

        n = self.s.size
        self.step("read: pread floor")
        self.warm(self.dir / "matrix.msgpack")
        fd = os.open(self.dir / "matrix.msgpack", os.O_RDONLY)
        dec = msgspec.msgpack.Decoder()
        head = 3 if n < 65536 else 5
        row = (3 if n < 65536 else 5) + 9 * n
        self._reads(
            "floor: pread + decode",
            None,
            lambda i, j: dec.decode(os.pread(fd, 9, head + i * row + row - 9 * n + 9 * j)),
        )
        os.close(fd)
        for e in self.s.thresholds:
            self.step(f"read: msglc threshold 2^{e}")
            self.warm(self.dir / f"m-{e}.mlc")
            kinds = [("", f"m-{e}.mlc")] + ([(" zstd", f"m-{e}-zstd.mlc")] if self.compressed else [])
            for kind, name in kinds:
                self.warm(self.dir / name)
                with msglc.LazyReader(self.dir / name, cached=False) as reader:

                    def nested(i: int, j: int, r: msglc.LazyReader = reader) -> Any:
                        return r[i][j]

                    self._check(nested)
                    self._reads(f"msglc{kind} reader[i][j]", 1 << e, nested)
        self.step("read: msglc NumPy array")
        for kind, name in [("", "array.mlc")] + ([(" zstd", "array-zstd.mlc")] if self.compressed else []):
            self.warm(self.dir / name)
            with msglc.LazyReader(self.dir / name, cached=False) as reader:
                lazy = reader.read()

                def element(i: int, j: int, a: Any = lazy) -> Any:
                    return a[i, j]

                self._check(element)
                self._reads(f"msglc NumPy array{kind} a[i, j]", None, element)
        datasets: list[tuple[str, int | None, Path]] = [("h5py contiguous", None, self.dir / "contiguous.h5")]
        datasets += [
            (h5_series(c), 1 << e, self.dir / f"m-{e}-{c}.h5") for c in COMPRESSIONS for e in self.s.thresholds
        ]
        for series, threshold, path in datasets:
            self.step(f"read: {series} {'' if threshold is None else f'chunk {threshold >> 10} KB'}")
            for pattern, read in (("ds[i, j]", lambda d, i, j: d[i, j]), ("ds[i][j]", lambda d, i, j: d[i][j])):
                self.warm(path)
                with h5py.File(path, "r") as f:  # a fresh file: no chunks cached from the other pattern
                    ds = f["m"]

                    def h5_read(i: int, j: int, d: Any = ds, r: Callable[[Any, int, int], Any] = read) -> Any:
                        return r(d, i, j)

                    self._check(h5_read)
                    self._reads(f"{series} {pattern}", threshold, h5_read)

    @staticmethod
    def warm(path: Path) -> None:
        """Read a file once so every system is timed with its file in the OS page cache (on
        some VMs idle pages are reclaimed within seconds, which would time the disk instead)."""
        with open(path, "rb", buffering=0) as f:
            while f.read(1 << 24):
                pass

    def _check(self, read: Callable[[int, int], Any]) -> None:
        for i, j in self.points[:20]:
            if read(i, j) != self.matrix[i][j]:
                raise AssertionError(f"wrong value at ({i}, {j})")

    def _reads(self, series: str, threshold: int | None, read: Callable[[int, int], Any]) -> None:
        for count, (seconds, measured) in timed_reads(read, self.points, self.s.repeats, self.s.budget).items():
            self.r.read.append(
                {
                    "series": series,
                    "threshold": threshold,
                    "reads": count,
                    "seconds": seconds,
                    "measured_reads": measured,
                }
            )

    # -- random paths in a deep document -------------------------------------------------------
    def paths(self) -> None:
        self.step(f"paths: building a {self.s.doc_mb} MB random document")
        rng = random.Random(self.s.seed + 1)
        doc = random_document(rng, self.s.doc_mb << 20)
        paths = [random_path(rng, doc) for _ in range(self.s.paths)]
        plain = self.dir / "doc.msgpack"
        archive = self.dir / "doc.mlc"
        data = msgspec.msgpack.encode(doc)
        plain.write_bytes(data)
        self.step("paths: writing the archive")
        dump_s = best_of(partial(msglc.dump, archive, doc), repeat=1, setup=lambda: archive.unlink(missing_ok=True))
        del doc
        self.step("paths: reading")
        dec = msgspec.msgpack.Decoder()
        self.warm(plain)
        decode_s = best_of(lambda: dec.decode(plain.read_bytes()), repeat=2)
        self.warm(archive)
        with msglc.LazyReader(archive, cached=False) as reader:
            t = time.perf_counter()
            for p in paths:
                reader[p]
            per_path = (time.perf_counter() - t) / len(paths)
        firsts = []
        for p in paths[:20]:
            t = time.perf_counter()
            with msglc.LazyReader(archive, cached=False) as reader:
                reader[p]
            firsts.append(time.perf_counter() - t)
        self.r.paths = {
            "plain_bytes": plain.stat().st_size,
            "archive_bytes": archive.stat().st_size,
            "paths": len(paths),
            "mean_depth": sum(map(len, paths)) / len(paths),
            "msglc_dump_seconds": dump_s,
            "msglc_seconds_per_path": per_path,
            "msglc_open_and_first_path_seconds": sorted(firsts)[len(firsts) // 2],
            "plain_decode_seconds": decode_s,
        }

    # -- JSON-like records: file size against plain msgpack and the whole file compressed ------
    def records(self) -> None:
        """Sizes (and dump time, one random record read with ``cached=False``) of records
        ``{"id", "name", "score", "tags", "params"}`` stored as a list, per threshold, plain and
        zstd, against plain msgpack and the whole plain msgpack compressed as one zstd frame."""
        if not self.zstd or self.s.records <= 0:
            return
        self.step(f"records: building {self.s.records:,} records")
        recs = records(self.s.records)
        data = msgspec.msgpack.encode(recs)
        rows = self.r.records
        rows.append({"series": "floor: plain msgpack", "threshold": None, "bytes": len(data)})
        rows.append(
            {
                "series": f"floor: plain msgpack, whole file zstd -{LEVEL}",
                "threshold": None,
                "bytes": len(zstd_whole(data)),
            }
        )
        del data
        rng = random.Random(self.s.seed + 2)
        picks = [rng.randrange(len(recs)) for _ in range(min(1000, self.s.records))]
        for e in self.s.thresholds:
            for series, options in (("msglc", DumpOptions()), ("msglc zstd", ZSTD)):
                self.step(f"records: {series} threshold 2^{e}")
                path = self.dir / f"records-{e}{'-zstd' if options else ''}.mlc"
                dump_s = best_of(
                    partial(msglc.dump, path, recs, small_obj_optimization_threshold=1 << e, **options),
                    repeat=1,
                    setup=partial(path.unlink, missing_ok=True),
                )
                with msglc.LazyReader(path, cached=False) as reader:
                    if any(reader[i] != recs[i] for i in picks[:20]):
                        raise AssertionError(f"wrong record in {path.name}")
                    t, done, budget = time.perf_counter(), 0, self.s.budget / 4
                    for i in picks:  # large blocks take ms a record: stop after a quarter budget
                        reader[i]
                        done += 1
                        if time.perf_counter() - t > budget:
                            break
                    per_read = (time.perf_counter() - t) / done
                rows.append(
                    {
                        "series": series,
                        "threshold": 1 << e,
                        "bytes": path.stat().st_size,
                        "dump_seconds": dump_s,
                        "read_seconds": per_read,
                    }
                )
                path.unlink()

    # -- bulk reads of a compressed array, by number of threads --------------------------------
    def bulk(self) -> None:
        """A smooth float64 field read whole: ``np.asarray`` of msglc's lazy array (frames of
        1 MB) with ``read_threads`` 1, 2, ... against h5py ``ds[...]`` of datasets chunked in
        whole rows of the same bytes (one thread: one value for every thread count)."""
        if not self.zstd or self.s.bulk_mb <= 0:
            return
        import h5py
        import numpy as np

        self.step(f"bulk: building a {self.s.bulk_mb} MB smooth array")
        array = smooth_field(max(1, self.s.bulk_mb * 10**6 // 40_000))
        nbytes, chunks = array.nbytes, row_chunks(array.shape, BULK_FRAME)
        files = {  # named as in the matrix figures: msglc stores the array as a NumPy array
            "msglc NumPy array zstd": self.dir / "field-zstd.mlc",
            "msglc NumPy array": self.dir / "field.mlc",
        }
        msglc.dump(files["msglc NumPy array zstd"], array, small_obj_optimization_threshold=BULK_FRAME, **ZSTD)
        msglc.dump(files["msglc NumPy array"], array, small_obj_optimization_threshold=BULK_FRAME)
        for series, options in (
            ("h5py gzip", {"compression": "gzip"}),
            ("h5py gzip + shuffle", {"compression": "gzip", "shuffle": True}),
            ("h5py lzf", {"compression": "lzf"}),
            ("h5py uncompressed", {}),
        ):
            self.step(f"bulk: writing {series}")
            files[series] = self.dir / f"field-{len(files)}.h5"
            with h5py.File(files[series], "w") as f:
                f.create_dataset("a", data=array, chunks=chunks, **options)
        probe = array[:: max(1, array.shape[0] // 7), ::997].copy()
        del array

        def check(whole: Any, series: str) -> None:
            if not np.array_equal(whole[:: max(1, whole.shape[0] // 7), ::997], probe):
                raise AssertionError(f"{series}: wrong values read")

        def msglc_whole(path: Path) -> Any:
            with msglc.LazyReader(path, cached=False) as reader:
                return np.asarray(reader.read())

        def h5_whole(path: Path) -> Any:
            with h5py.File(path, "r") as f:
                return f["a"][...]

        # each read opens the file afresh: no frame or chunk cache carries over (a small
        # array would otherwise sit whole in msglc's 16-frame cache)
        for series, path in files.items():
            self.step(f"bulk: reading {series}")
            self.warm(path)
            whole = msglc_whole if series.startswith("msglc") else h5_whole
            check(whole(path), series)
            if series.startswith("msglc"):
                for n in self.s.threads:
                    with read_threads(n) as applied:
                        seconds = best_of(partial(msglc_whole, path))
                    self._bulk(series, n, seconds, path, nbytes, applied)
            else:
                self._bulk(series, None, best_of(partial(h5_whole, path)), path, nbytes, True)
            path.unlink()

    # -- blocks of the matrix as an array, against h5py's chunks and codecs --------------------
    def slab_reads(self) -> None:
        """Random 64 x 64 blocks of a random float64 array, the reads chunked HDF5 serves best:
        msglc plain (C order) and with zstd (in 128 x 128 tiles), against h5py in 128 x 128
        chunks without a filter and, with hdf5plugin, with Blosc2 (zstd level 3 and the byte
        shuffle) and with Zstd (level 3). The array is larger than h5py's chunk cache (8 MB)
        and msglc's frame cache (16 frames), as a user's large array is. Each file is opened
        once; the series read the same blocks in turns, the best of 3 rounds kept."""
        if self.s.slabs <= 0 or self.s.slab_mb <= 0:
            return
        import h5py
        import numpy as np

        n = max(2, int((self.s.slab_mb * 10**6 / 8) ** 0.5))
        array = np.random.default_rng(self.s.seed).random((n, n))
        side, chunk = min(SLAB, n), min(SLAB_CHUNK, n)
        rng = random.Random(self.s.seed + 1)
        corners = [(rng.randrange(n - side + 1), rng.randrange(n - side + 1)) for _ in range(self.s.slabs)]
        files = {"msglc NumPy array": self.dir / "slabs.mlc"}
        if self.zstd:
            files["msglc NumPy array zstd"] = self.dir / "slabs-zstd.mlc"
        for series, path in files.items():
            self.step(f"slabs: writing {series}")
            msglc.dump(path, array, compression="zstd" if series.endswith("zstd") else None)
        for series, options in _h5_codecs().items():
            self.step(f"slabs: writing {series}")
            files[series] = self.dir / f"slabs-{len(files)}.h5"
            with h5py.File(files[series], "w") as f:
                f.create_dataset("a", data=array, chunks=(chunk, chunk), **options)
        self.step("slabs: reading")
        with ExitStack() as stack:
            loops = {}
            for series, path in files.items():
                self.warm(path)
                if series.startswith("msglc"):
                    x = stack.enter_context(msglc.LazyReader(path)).read()
                else:
                    x = stack.enter_context(h5py.File(path, "r"))["a"]
                i, j = corners[0]
                if not np.array_equal(x[i : i + side, j : j + side], array[i : i + side, j : j + side]):
                    raise AssertionError(f"{series}: wrong values read")
                loops[series] = calls(partial(_block, x, side), corners)
            best = interleaved(loops, rounds=3)
        for series, seconds in best.items():
            self.r.slabs.append(
                {
                    "series": series,
                    "seconds": seconds / len(corners),
                    "bytes": files[series].stat().st_size,
                    "blocks": len(corners),
                    "side": side,
                    "chunk": chunk,
                    "n": n,
                }
            )
            files[series].unlink()

    def scale(self) -> None:
        """``sum(axis=0)`` over a float64 array through Dask by 1, 2, ... worker processes:
        msglc.dask.to_array against h5py's dataset through ``da.from_array``, the same 16
        chunks of whole rows (needs the dask extra; skipped without it)."""
        if self.s.dask_mb <= 0:
            return
        try:
            import dask  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            note_once("dask is not installed (pip install -e '.[dask]'): no scale figure")
            return
        from .targets.scale import array_files, cluster, reduce_array

        self.step(f"dask: writing a {self.s.dask_mb} MB array")
        archive, h5, want, rows = array_files(self.s.dask_mb, self.dir)
        chunk_rows = max(1, -(-rows // 16))
        for workers in self.s.workers:
            self.step(f"dask: {workers} workers")
            with cluster(workers):
                seconds = reduce_array(archive, h5, want, chunk_rows)
            # named as in the matrix figures: a NumPy array in msglc, a contiguous h5py dataset
            for key, series in (("msglc", "msglc NumPy array"), ("h5py", "h5py contiguous")):
                self.r.scale.append(
                    {
                        "series": series,
                        "workers": workers,
                        "seconds": seconds[key],
                        "nbytes": rows * len(want) * 8,
                        "chunk_rows": chunk_rows,
                    }
                )

    def _bulk(self, series: str, threads: int | None, seconds: float, path: Path, nbytes: int, applied: bool) -> None:
        self.r.bulk.append(
            {
                "series": series,
                "threads": threads,
                "seconds": seconds,
                "bytes": path.stat().st_size,
                "nbytes": nbytes,
                "read_threads_applied": applied,
            }
        )


def _block(x: Any, side: int, corner: tuple[int, int]) -> Any:
    """The ``side`` x ``side`` block of ``x`` at ``corner``."""
    i, j = corner
    return x[i : i + side, j : j + side]


def _h5_codecs() -> dict[str, dict[str, Any]]:
    """The h5py series of the slab figure and their filter keywords: chunked without a filter,
    and hdf5plugin's Blosc2 (zstd 3, byte shuffle) and Zstd (3) where it is installed."""
    codecs: dict[str, dict[str, Any]] = {"h5py uncompressed": {}}
    try:
        import hdf5plugin
    except ImportError:
        note_once("hdf5plugin is not installed (pip install -e '.[bench]'): no h5py Blosc2 or Zstd slabs")
        return codecs
    shuffled = hdf5plugin.Blosc2(cname="zstd", clevel=3, filters=hdf5plugin.Blosc2.SHUFFLE)
    codecs["h5py Blosc2 zstd + shuffle"] = dict(shuffled)
    codecs["h5py Zstd"] = dict(hdf5plugin.Zstd(clevel=3))
    return codecs


def _h5_write(h5py: Any, path: Path, array: Any, chunks: tuple[int, int] | None, compression: str | None) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("m", data=array, chunks=chunks, compression=compression)


def random_document(rng: random.Random, target_bytes: int) -> dict[str, Any]:
    """A deep JSON-like document of about ``target_bytes`` encoded: runs holding metadata,
    frames of mixed values, float series, nested settings, tags."""
    doc: dict[str, Any] = {"version": 3, "runs": {}}
    size = 0
    run = 0
    while size < target_bytes:
        frames = [
            {
                "t": rng.random() * 100,
                "step": k,
                "energy": [rng.gauss(0, 1) for _ in range(rng.randrange(5, 60))],
                "ok": rng.random() < 0.9,
                "label": rng.choice(["a", "bb", "ccc", None]),
                "extra": {"nested": {"deep": [rng.randrange(1000) for _ in range(rng.randrange(0, 8))]}},
            }
            for k in range(rng.randrange(50, 400))
        ]
        entry = {
            "meta": {
                "name": f"run-{run}",
                "seed": rng.getrandbits(32),
                "params": {f"p{i}": rng.random() for i in range(20)},
            },
            "frames": frames,
            "series": [rng.random() for _ in range(rng.randrange(1000, 20000))],
            "tags": [f"tag{rng.randrange(100)}" for _ in range(rng.randrange(1, 10))],
        }
        doc["runs"][f"run{run:05d}"] = entry
        size += len(msgspec.msgpack.encode(entry))
        run += 1
    return doc


def random_path(rng: random.Random, doc: Any) -> list[str | int]:
    """A random path from the root down to a scalar, preferring to go deeper: at each dict a
    container child is taken with probability 0.9 when there is one."""
    path: list[str | int] = []
    while isinstance(doc, (dict, list)) and doc:
        if isinstance(doc, dict):
            keys = list(doc)
            deeper = [k for k in keys if isinstance(doc[k], (dict, list)) and doc[k]]
            key = rng.choice(deeper if deeper and rng.random() < 0.9 else keys)
            path.append(key)
            doc = doc[key]
        else:
            i = rng.randrange(len(doc))
            path.append(i)
            doc = doc[i]
    return path


@contextmanager
def workdir(keep: bool) -> Iterator[Path]:
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="msglc-bench-"))
    try:
        yield path
    finally:
        if keep:
            print(f"files kept in {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)
