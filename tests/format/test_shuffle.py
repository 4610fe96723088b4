"""The byte shuffle of filter code 1 (``msglc.format.shuffle``): the C accelerator's
functions give the bytes of the definition (plain byte j*e + k is stored byte k*m + j) for
every element size, length and alignment, and refuse bad arguments as the Python path does."""

import array
import mmap
import os
import random
import threading

import numpy as np
import pytest

from msglc.format import shuffle as S
from msglc.util import accel

SIZES = [*range(2, 17), 17, 24, 31, 32, 64, 100, 255]
COUNTS = [0, 1, 2, 3, 7, 33, 1001]


def definition(plain: bytes, e: int) -> bytes:
    """Byte k of every element, for k = 0 .. e - 1 (docs/format.md, filter code 1)."""
    return b"".join(plain[k::e] for k in range(e))


@pytest.fixture(params=["c", "python"])
def path(request, monkeypatch):
    """Each test runs on the C accelerator's functions and on the pure-Python ones."""
    if request.param == "c":
        assert accel.speedups is not None, "the C accelerator is not built (pip install -e .)"
    else:
        monkeypatch.setattr(accel, "speedups", None)
    return request.param


def _counts(e: int) -> list[int]:
    # one large count: past the size from which C lets other threads run, and across the
    # blocks of its generic loop (16 KB of plain bytes)
    return [*COUNTS, 20011 if e <= 16 else 3001]


def _at_odd_offset(data: bytes, offset: int) -> memoryview:
    """``data`` as a slice of a larger buffer, starting ``offset`` bytes in (unaligned)."""
    return memoryview(bytes(offset) + data + b"\x00")[offset : offset + len(data)]


@pytest.mark.parametrize("e", SIZES)
def test_shuffle_and_unshuffle_give_the_definitions_bytes(path, e):
    rng = random.Random(e)
    for m in _counts(e):
        plain = rng.randbytes(m * e)
        stored = definition(plain, e)
        for offset in (0, 1, 3):
            assert S.shuffle(_at_odd_offset(plain, offset), e) == stored
            out = bytearray(m * e + 2 * offset + 1)
            S.unshuffle_into(_at_odd_offset(stored, offset), e, memoryview(out)[offset : offset + m * e])
            assert out[offset : offset + m * e] == plain
            assert not any(out[:offset]) and not any(out[offset + m * e :])  # nothing written outside
        assert S.unshuffle(stored, e) == plain


@pytest.mark.parametrize("e", SIZES)
def test_gather_picks_any_range_of_the_plain_bytes(path, e):
    rng = random.Random(1000 + e)
    for m in _counts(e):
        plain = rng.randbytes(m * e)
        stored = definition(plain, e)
        n = len(plain)
        ranges = [(0, n), (0, 0), (n, n)] + [tuple(sorted(rng.choices(range(n + 1), k=2))) for _ in range(20)]
        if m > 2:  # partial elements at both ends, and whole ones between
            ranges += [(1, n - 1), (e - 1, 2 * e + 1)]
        for lo, hi in ranges:
            assert S.gather(stored, e, lo, hi) == plain[lo:hi], (lo, hi)
            out = bytearray(hi - lo + 3)
            S.gather_into(_at_odd_offset(stored, 1), e, lo, memoryview(out)[1 : 1 + hi - lo])
            assert out[1 : 1 + hi - lo] == plain[lo:hi]
            assert out[0] == out[-1] == out[-2] == 0


@pytest.mark.parametrize("e", [1, 2, 3, 8, 9, 16])
def test_gather_grid_puts_a_block_of_the_plain_elements_in_place(path, e):
    """A strided block of an N-d tile of e-byte elements, picked out of its shuffled bytes
    (e 1: plain bytes) into its place in a larger array, as NumPy indexing the plain tile."""
    rng = np.random.default_rng(e)
    for _ in range(40):
        ext = tuple(int(n) for n in rng.integers(1, 9, size=int(rng.integers(1, 5))))
        plain = rng.integers(0, 256, size=(*ext, e), dtype=np.uint8)
        stored = definition(plain.tobytes(), e) if e > 1 else plain.tobytes()
        part = []
        for n in ext:
            st = int(rng.integers(1, 4))
            f = int(rng.integers(0, n))
            part.append((f, int(rng.integers(1, (n - 1 - f) // st + 2)), st))
        counts = tuple(c for _, c, _ in part)
        out = np.zeros((*(c + 2 for c in counts), e), np.uint8)
        where = tuple(slice(1, 1 + c) for c in counts)
        tile_strides = [e * int(np.prod(ext[k + 1 :])) for k in range(len(ext))]
        lo = sum(f * s for (f, _, _), s in zip(part, tile_strides, strict=True))
        steps = tuple(st * s for (_, _, st), s in zip(part, tile_strides, strict=True))
        out_lo = sum(out.strides[:-1])
        if part[-1][2] == 1:  # runs of the last axis
            S.gather_grid(stored, e, lo, counts[:-1], steps[:-1], counts[-1] * e, out, out_lo, out.strides[:-2])
        else:  # an element at a time
            S.gather_grid(stored, e, lo, counts, steps, e, out, out_lo, out.strides[:-1])
        expected = np.zeros_like(out)
        expected[where] = plain[tuple(slice(f, f + (c - 1) * st + 1, st) for f, c, st in part)]
        assert np.array_equal(out, expected)


class Grid(tuple[int, ...]):
    """A subclass of tuple (a named tuple is one)."""


def test_gather_grid_takes_subclasses_of_tuple(path):
    plain = bytes(range(64))
    out = bytearray(16)
    S.gather_grid(definition(plain, 8), 8, 1, Grid((2,)), Grid((16,)), 8, out, 0, Grid((8,)))
    assert out == plain[1:9] + plain[17:25]


def test_gather_grid_of_no_axes_is_one_run_and_of_no_bytes_is_nothing(path):
    plain = bytes(range(64))
    out = bytearray(10)
    S.gather_grid(definition(plain, 8), 8, 3, (), (), 5, out, 2, ())
    assert out == bytes(2) + plain[3:8] + bytes(3)
    S.gather_grid(b"", 8, 10**6, (0, 5), (1, 1), 8, bytearray(), 10**6, (1, 1))  # nothing read, nothing checked


def test_any_buffer_goes_in_and_out(path):
    """NumPy arrays, ``array.array`` and typed memoryviews are taken as their bytes."""
    a = np.linspace(0, 1, 3000).reshape(100, 30)
    stored = S.shuffle(a, 8)
    assert stored == definition(a.tobytes(), 8)
    assert S.shuffle(array.array("d", a.ravel()), 8) == stored
    assert S.shuffle(a.data, 8) == stored  # a typed memoryview of the array
    back = np.empty_like(a)
    S.unshuffle_into(stored, 8, back)
    assert np.array_equal(back, a)
    half = np.empty(1500)
    S.gather_into(stored, 8, 8 * 1500, half)
    assert np.array_equal(half, a.ravel()[1500:])


@pytest.mark.parametrize("e", [2, 3, 8, 9, 16, 17])
def test_out_may_be_src_itself(path, e):
    """Unshuffled in place, or gathered into a buffer overlapping its source: the bytes are
    those of a separate source."""
    plain = random.Random(e).randbytes(e * 5000)
    buf = bytearray(definition(plain, e))
    S.unshuffle_into(buf, e, buf)
    assert buf == plain
    buf = bytearray(definition(plain, e))
    S.gather_into(buf, e, 3, memoryview(buf)[: len(buf) - 3])
    assert buf[: len(buf) - 3] == plain[3:]


def test_round_trip_from_many_threads(path):
    """Threads shuffling and unshuffling at once (C lets them run together) each get their own bytes."""
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            rng = random.Random(seed)
            for _ in range(20):
                e = rng.choice([2, 4, 8, 9, 12])
                plain = rng.randbytes(e * rng.randrange(1000, 20000))
                out = bytearray(len(plain))
                S.unshuffle_into(S.shuffle(plain, e), e, out)
                assert out == plain
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _refusal(call):
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    return info.type, str(info.value)


BAD_CALLS = {
    "element 1": lambda: S.shuffle(b"abcd", 1),
    "element 0": lambda: S.shuffle(b"", 0),
    "element 256": lambda: S.shuffle(bytes(256), 256),
    "negative element": lambda: S.unshuffle_into(b"abcd", -2, bytearray(4)),
    "element beyond any size": lambda: S.shuffle(b"abcd", 2**70),
    "element a float": lambda: S.shuffle(b"abcd", 2.0),  # type: ignore[arg-type]
    "element a str": lambda: S.gather_into(b"abcd", "2", 0, bytearray(1)),  # type: ignore[arg-type]
    "src not whole elements": lambda: S.shuffle(b"abcde", 2),
    "src not whole elements (unshuffle)": lambda: S.unshuffle_into(b"abcde", 2, bytearray(5)),
    "src a str": lambda: S.shuffle("abcd", 2),
    "src a list": lambda: S.unshuffle_into([1, 2], 2, bytearray(2)),
    "src strided": lambda: S.shuffle(memoryview(bytes(8))[::2], 2),
    "out shorter": lambda: S.unshuffle_into(b"abcd", 2, bytearray(2)),
    "out longer": lambda: S.unshuffle_into(b"abcd", 2, bytearray(6)),
    "out read-only bytes": lambda: S.unshuffle_into(b"abcd", 2, b"wxyz"),
    "out read-only view": lambda: S.unshuffle_into(b"abcd", 2, memoryview(bytearray(4)).toreadonly()),
    "out strided": lambda: S.unshuffle_into(b"abcd", 2, memoryview(bytearray(8))[::2]),
    "out not a buffer": lambda: S.gather_into(b"abcd", 2, 0, 7),
    # several faults (e: a bad element size): refused for the first, in the same order: src, out, e
    "out read-only, e 0": lambda: S.unshuffle_into(b"abcd", 0, b"wxyz"),
    "out a str, e 1": lambda: S.gather_into(b"abcd", 1, 0, "ab"),
    "out read-only, e 256": lambda: S.gather_grid(b"abcd", 256, 0, (), (), 1, b"wxyz", 0, ()),
    "src a str, out read-only": lambda: S.gather_grid("abcd", 2, 0, (), (), 1, b"wxyz", 0, ()),
    # NumPy refuses a buffer with a ValueError of its own: the C path says why as Python does
    "out a read-only ndarray": lambda: S.gather_grid(b"ab", 2, 0, (), (), 1, np.frombuffer(bytes(2), np.uint8), 0, ()),
    "out a strided ndarray": lambda: S.unshuffle_into(b"abcd", 2, np.zeros(8, np.uint8)[::2]),
    "out a read-only mmap": lambda: S.gather_into(b"abcd", 2, 0, mmap.mmap(-1, 2, prot=mmap.PROT_READ)),
    "src a strided ndarray": lambda: S.shuffle(np.zeros(8, np.uint8)[::2], 2),
    "lo negative": lambda: S.gather_into(b"abcd", 2, -1, bytearray(1)),
    "lo past the end": lambda: S.gather_into(b"abcd", 2, 3, bytearray(2)),
    "lo beyond any size": lambda: S.gather_into(b"abcd", 2, 2**70, bytearray(1)),
    "lo far below zero": lambda: S.gather_into(b"abcd", 2, -(2**70), bytearray(1)),
    "lo a float": lambda: S.gather_into(b"abcd", 2, 1.0, bytearray(1)),  # type: ignore[arg-type]
    "gather hi before lo": lambda: S.gather(b"abcd", 2, 3, 1),
    "gather hi past the end": lambda: S.gather(b"abcd", 2, 0, 5),
    "gather of a huge range": lambda: S.gather(b"abcd", 2, 0, 2**62),  # refused, not allocated
    "grid element 0": lambda: S.gather_grid(b"abcd", 0, 0, (), (), 1, bytearray(4), 0, ()),
    "grid counts a list": lambda: S.gather_grid(b"abcd", 2, 0, [1], (1,), 1, bytearray(4), 0, (1,)),  # type: ignore[arg-type]
    "grid of 17 axes": lambda: S.gather_grid(b"abcd", 2, 0, (1,) * 17, (0,) * 17, 1, bytearray(4), 0, (0,) * 17),
    "grid strides too few": lambda: S.gather_grid(b"abcd", 2, 0, (1, 1), (1,), 1, bytearray(4), 0, (1, 1)),
    "grid out_strides a list": lambda: S.gather_grid(b"abcd", 2, 0, (1,), (1,), 1, bytearray(4), 0, [1]),  # type: ignore[arg-type]
    "grid count a float": lambda: S.gather_grid(b"abcd", 2, 0, (1.0,), (1,), 1, bytearray(4), 0, (1,)),  # type: ignore[arg-type]
    "grid count a NumPy float": lambda: S.gather_grid(b"ab", 2, 0, (np.float64(1),), (1,), 1, bytearray(2), 0, (1,)),
    "grid negative stride": lambda: S.gather_grid(b"abcd", 2, 2, (2,), (-1,), 1, bytearray(4), 0, (1,)),
    "grid lo negative": lambda: S.gather_grid(b"abcd", 2, -1, (1,), (1,), 1, bytearray(4), 0, (1,)),
    "grid run a float": lambda: S.gather_grid(b"abcd", 2, 0, (1,), (1,), 1.0, bytearray(4), 0, (1,)),  # type: ignore[arg-type]
    "grid past src": lambda: S.gather_grid(b"abcd", 2, 0, (3,), (2,), 1, bytearray(4), 0, (1,)),
    "grid past out": lambda: S.gather_grid(b"abcd", 2, 0, (2,), (1,), 2, bytearray(4), 0, (3,)),
    "grid of a huge stride": lambda: S.gather_grid(b"abcd", 2, 0, (3,), (2**62,), 1, bytearray(4), 0, (1,)),
    "grid out read-only": lambda: S.gather_grid(b"abcd", 2, 0, (1,), (1,), 1, b"wxyz", 0, (1,)),
    "grid runs overlapping in out": lambda: S.gather_grid(b"abcd", 2, 0, (3,), (0,), 2, bytearray(4), 0, (1,)),
    # 2**62 runs into one byte: refused at once (it ran for ever in C without the GIL)
    "grid of a huge count in place": lambda: S.gather_grid(b"abcd", 2, 0, (2**62,), (0,), 1, bytearray(4), 0, (0,)),
    "grid of two huge counts": lambda: S.gather_grid(b"ab", 2, 0, (2**31, 2**31), (0, 0), 1, bytearray(1), 0, (0, 0)),
}


@pytest.mark.parametrize("name", BAD_CALLS)
def test_bad_arguments_are_refused_alike_by_both_paths(name, monkeypatch):
    """A clear TypeError or ValueError naming the function and what was wrong, the same from
    the C accelerator and the Python path; never a crash."""
    assert accel.speedups is not None, "the C accelerator is not built (pip install -e .)"
    from_c = _refusal(BAD_CALLS[name])
    monkeypatch.setattr(accel, "speedups", None)
    from_python = _refusal(BAD_CALLS[name])
    assert from_c == from_python
    kind, message = from_c
    assert message.split(":")[0] in ("shuffle", "unshuffle_into", "gather_into", "gather", "gather_grid")
    if "element" in name and not name.startswith("src"):
        assert "element size" in message
    if name.startswith("out"):
        assert "out" in message


def test_large_buffers(path):
    """An 8 MB run of float64 (several of the reader's frames at once) round trips."""
    a = np.random.default_rng(5).standard_normal(1 << 20)
    stored = S.shuffle(a, 8)
    assert stored[: 1 << 20] == a.view(np.uint8)[0::8].tobytes()
    out = np.empty_like(a)
    S.unshuffle_into(stored, 8, out)
    assert np.array_equal(out, a)


def test_os_random_bytes_every_size_one_element(path):
    for e in range(2, 256):
        plain = os.urandom(e)
        assert S.shuffle(plain, e) == plain  # one element: its bytes, in order
        assert S.unshuffle(plain, e) == plain
