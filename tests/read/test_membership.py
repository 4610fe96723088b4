"""``key in`` a lazy dict is answered from the TOC and the stored keys, never by reading a
value: a value may be a string of gigabytes (issue: ``"big" in r`` read and decoded 1 GiB)."""

import tracemalloc

import pytest

import msglc
from msglc import CorruptedError
from msglc.util import accel
from msglc.write import encoder

BIG = 48 << 20  # a value much larger than everything else read


def _dict(n, big_at):
    d: dict[str, int | bytes] = {f"k{i}": i for i in range(n)}
    d[f"k{big_at}"] = b"\x01" * BIG
    return d


@pytest.mark.parametrize("compression", [None, "zstd"])
@pytest.mark.parametrize("n", [300, 5000], ids=["inline dict", "hash-indexed dict"])
def test_membership_reads_no_value(tmp_path, n, compression):
    path = tmp_path / "d.mlc"
    msglc.dump(path, _dict(n, n // 2), compression=compression)
    stats = msglc.LazyStats()
    with msglc.LazyReader(path, counter=stats, cached=False) as r:
        stats.clear()
        tracemalloc.start()
        try:
            present = [f"k{n // 2}", f"k{n // 2 + 1}", f"k{n // 2 - 1}", "k0", f"k{n - 1}"]
            assert all(k in r for k in present)
            assert not any(k in r for k in ["k-1", f"k{n}", "", 7, 2.5, None, True, ("k0",)])
            assert r.get("absent", "default") == "default"
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert stats.bytes < BIG // 8, stats  # bytes read from the file
        assert peak < BIG // 8, peak  # and decompressed: frames of at most 1 MB


@pytest.mark.parametrize("pure", [False, True], ids=["C", "pure Python"])
@pytest.mark.parametrize("threshold", [0, 64, 8192])
def test_membership_agrees_with_the_keys(tmp_path, monkeypatch, pure, threshold):
    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    d: dict[str | int, list[int] | str] = {f"key-{i}": [i] * (i % 9) for i in range(3000)}
    d.update({i: "int key" for i in range(0, 600, 7)})
    d["long"] = "x" * 200_000
    path = tmp_path / "d.mlc"
    msglc.dump(path, d, small_obj_optimization_threshold=threshold)
    with msglc.LazyReader(path, cached=False) as r:
        assert all(k in r for k in d)
        assert not any(k in r for k in ["key--1", "key-3000", 1, 3001, -7, "0", 2**70])


@pytest.mark.parametrize("pure", [False, True], ids=["C", "pure Python"])
def test_membership_in_a_large_block_checks_its_keys(tmp_path, monkeypatch, pure):
    """A block holding a large value is walked by its headers; a damaged key there makes the
    block disagree with its index: an error, not a wrong answer."""
    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    monkeypatch.setattr(encoder, "DIRECT_INDEX", False)  # (blocks: type 6, which dump wrote up to 1.3)
    path = tmp_path / "d.mlc"
    msglc.dump(path, _dict(5000, 2500))
    data = bytearray(path.read_bytes())
    at = data.index(b"\xa5k2501")  # the key right after the large value, in the same block
    data[at + 5] ^= 0x08  # k2501 -> k2509: its CRC-32 changes
    path.write_bytes(data)
    with msglc.LazyReader(path, cached=False) as r:
        assert "k2500" in r and "k2499" in r
        with pytest.raises(CorruptedError, match="does not match its hash index"):
            _ = "k2501" in r
