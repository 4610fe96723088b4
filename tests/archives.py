"""Archives the combine and append tests share: two runs and a thorough check of a result."""

import msgpack

import msglc

RUN1 = {"energy": [float(i) for i in range(3000)], "meta": {"name": "run1", "rows": [[i, i * 2] for i in range(400)]}}
RUN2 = {"energy": [1.5, 2.5], "tags": ["a", "b"]}


def write_runs(directory):
    msglc.dump(directory / "run1.mlc", RUN1, small_obj_optimization_threshold=256)
    msglc.dump(directory / "run2.mlc", RUN2)  # small: no TOC node
    return directory


def check(path, expected):
    """Everything a reader offers agrees with ``expected``, and the archive verifies."""
    with msglc.LazyReader(path) as r:
        r.verify()
        assert r.to_obj() == expected
        assert msgpack.unpackb(r.protocol_raw_data(), strict_map_key=False) == expected
