"""Converting archives of the published msglc (``dump(target, LazyReader(old))``, ``msglc
convert``): parts larger than ``STREAM_ABOVE`` are streamed item by item, so memory stays
bounded whatever the reader's cache mode; lists stored in runs stream run by run; dict keys
msglc does not store (float, bytes: the published writer stores them) go through enc_hook."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import msgpack
import pytest
from legacy_helpers import indexed

import msglc
import msglc.edit.legacy
from msglc import LazyReader, LazyStats

HERE = Path(__file__).parent.parent / "golden" / "legacy"


def peak_of_dump(source: bytes, cached: bool, target: Path) -> int:
    with LazyReader(source, cached=cached) as r:
        tracemalloc.start()
        try:
            msglc.dump(target, r)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def test_a_cached_reader_converts_in_bounded_memory(tmp_path, monkeypatch):
    """The default reader (cached=True) kept every item it streamed in its views' caches,
    so a conversion held the whole archive decoded (1.7 GB for a 213 MB archive, 146 MB
    uncached): it now streams through uncached views whatever the reader's mode."""
    monkeypatch.setattr(msglc.edit.legacy, "STREAM_ABOVE", 1 << 16)
    records = [{"id": i, "name": f"record {i}", "values": [i * 0.5] * 8} for i in range(20000)]
    source = indexed(records)
    peaks = {cached: peak_of_dump(source, cached, tmp_path / f"{cached}.mlc") for cached in (True, False)}
    assert peaks[True] < 2 * peaks[False] + (1 << 20), peaks
    for cached in (True, False):
        with LazyReader(tmp_path / f"{cached}.mlc") as r:
            assert r.to_obj() == records


@pytest.mark.parametrize("cached", [True, False])
def test_a_list_in_runs_streams_run_by_run(tmp_path, monkeypatch, cached):
    """A list stored in runs larger than STREAM_ABOVE used to decode its whole run for each
    item it held: quadratic, a 20 MB list of 4 million ints did not convert in two minutes."""
    monkeypatch.setattr(msglc.edit.legacy, "STREAM_ABOVE", 100)
    source = HERE / "blocked-list-t64.msg"
    stats = LazyStats()
    with LazyReader(source, cached=cached, counter=stats) as r:
        msglc.dump(tmp_path / "out.mlc", r)
    assert stats.bytes < 2 * source.stat().st_size, stats
    with LazyReader(tmp_path / "out.mlc") as r:
        assert r.to_obj() == msgpack.unpackb((HERE / "blocked-list-t64.expected.msgpack").read_bytes())


@pytest.mark.parametrize("stream_above", [1 << 24, 100])
def test_keys_msglc_does_not_store_convert_through_enc_hook(tmp_path, monkeypatch, stream_above):
    """The refusal names enc_hook; with it, float and bytes keys (and None, bools) convert,
    whether the dict is written whole or streamed."""
    monkeypatch.setattr(msglc.edit.legacy, "STREAM_ABOVE", stream_above)
    value = {1.5: "x" * 40, b"raw": [1, 2], None: 1, True: 2, "s": {2.5: "y" * 40}}
    with LazyReader(indexed(value)) as r:
        with pytest.raises(TypeError, match="enc_hook"):
            msglc.dump(tmp_path / "refused.mlc", r)
        msglc.dump(tmp_path / "out.mlc", r, enc_hook=repr)
    assert not (tmp_path / "refused.mlc").exists()
    with LazyReader(tmp_path / "out.mlc") as r:
        assert r.to_obj() == {"1.5": "x" * 40, "b'raw'": [1, 2], "None": 1, "True": 2, "s": {"2.5": "y" * 40}}


def test_enc_hook_converts_keys_of_any_type():
    """A dict key msglc refuses goes to enc_hook whatever its kind: scalars (float, bytes,
    None, bool) as well as objects (UUIDs)."""
    data = msglc.dumps({1.5: 1, b"k": 2, None: 3, False: 4}, enc_hook=repr)
    with LazyReader(data) as r:
        assert r.to_obj() == {"1.5": 1, "b'k'": 2, "None": 3, "False": 4}
