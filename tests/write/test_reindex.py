"""``reindex``: the TOC built from a data section's bytes alone (repacking with another
threshold or compression) is the one ``dump`` builds from the value, byte for byte."""

import numpy as np
import pytest

import msglc
from msglc.format.hash_index import BLOCK_BYTES
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, unpack_trailer
from msglc.util import accel
from msglc.write.reindex import reindex

DOCS = [
    {"runs": [{"t": i, "v": [i * 0.5] * (i % 40), "s": "s" * (i % 9), "ok": i % 2 == 0} for i in range(400)]},
    {f"k{i}": [i] * (i % 50) for i in range(3000)},  # a block-indexed dict with large values
    {i: str(i) * (i % 30) for i in range(5000)},
    [[float(i * j) for j in range(20)] for i in range(300)],
    {"a": np.arange(5000.0), "b": [np.arange(10)] * 50, "c": np.array(["\u00e9"] * 900)},
    [["ab", "cd"]] * 400,
    {"x": {"y": {"z": list(range(3000))}}},
    [list(range(i)) for i in range(150)],
    list(range(10)),
    5,
    "s" * 9000,
]


@pytest.mark.parametrize("c", [True, False], ids=["c", "python"])
@pytest.mark.parametrize("threshold", [0, 1, 64, 1024, 8192])
def test_reindex_builds_the_toc_dump_builds(monkeypatch, c, threshold):
    if not c:
        monkeypatch.setattr(accel, "speedups", None)
    for doc in DOCS:
        data = msglc.dumps(doc, small_obj_optimization_threshold=threshold)
        t = unpack_trailer(data[-TRAILER_SIZE:], len(data), data[:HEADER_SIZE])
        toc, root, _ = reindex(data[t.data_off : t.data_off + t.data_len], threshold, BLOCK_BYTES, direct=True)
        assert bytes(toc) == data[t.toc_off : t.toc_off + t.toc_len]
        assert root == (t.root_pos, t.root_len)
