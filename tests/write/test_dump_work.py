"""What a compressed ``dump`` does once only, and the C walk of inline dicts giving the
archive the Python path gives (issue 31, target 5: the writer's time)."""

from __future__ import annotations

import decimal
import random
from typing import Any

import pytest

import msglc
from msglc.util import accel
from msglc.write import compress


def _documents() -> dict[str, Any]:
    """Nested documents of small and large dicts: what real JSON looks like to the indexer."""
    rng = random.Random(5)
    return {
        f"area{a}": {
            f"item{i}": {
                "support": {
                    b: {"version_added": str(rng.randrange(100)), "notes": ["x" * rng.randrange(60)]}
                    for b in "abcdefgh"
                },
                "status": {"standard": rng.random() < 0.5, "deprecated": False},
                "blob": "y" * rng.randrange(3000),
            }
            for i in range(120)
        }
        for a in range(6)
    }


def test_a_compressed_dump_chooses_its_dictionary_once(monkeypatch, tmp_path):
    calls = []
    choose = compress.choose_dictionary

    def counted(*args, **kwargs):
        calls.append(1)
        return choose(*args, **kwargs)

    monkeypatch.setattr(compress, "choose_dictionary", counted)  # (choose_dictionaries calls it)
    doc = _documents()
    for target in (tmp_path / "a.mlc", None):
        calls.clear()
        if target is None:
            data = msglc.dumps(doc, compression="zstd")
        else:
            msglc.dump(target, doc, compression="zstd")
            data = target.read_bytes()
        assert len(calls) == 1
        with msglc.LazyReader(data) as r:
            assert any(f.dictionary for f in r.frames())  # the data is large and alike: it pays
            assert r.to_obj() == doc


@pytest.mark.parametrize("options", [{}, {"compression": "zstd"}, {"small_obj_optimization_threshold": 256}])
def test_inline_dicts_walked_in_c_give_the_python_paths_archive(monkeypatch, options):
    doc = _documents()
    fast = msglc.dumps(doc, **options)
    monkeypatch.setattr(accel, "speedups", None)
    slow = msglc.dumps(doc, **options)
    monkeypatch.undo()
    assert fast == slow
    with msglc.LazyReader(fast) as r:
        r.verify()
        assert msglc.to_obj(r["area3"]["item7"]) == doc["area3"]["item7"]


def test_a_refused_value_deep_in_inline_dicts_is_named_by_its_path():
    doc = _documents()
    doc["area2"]["item5"]["support"]["d"]["when"] = decimal.Decimal(1)  # msgspec writes it; msglc refuses it
    with pytest.raises(TypeError, match="area2/item5/support/d/when"):
        msglc.dumps(doc, compression="zstd")


def test_a_compressed_dump_that_fails_midway_leaves_the_old_file(monkeypatch, tmp_path):
    """Frames go to the temporary file as they are made: a failure once they are all written
    (making the page tables) leaves the target as it was and no temporary file."""
    target = tmp_path / "a.mlc"
    msglc.dump(target, {"old": 1})
    before = target.read_bytes()

    def failing(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(compress, "pack_page", failing)
    with pytest.raises(OSError, match="No space left"):
        msglc.dump(target, _documents(), compression="zstd")
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mlc"]
    monkeypatch.undo()
    msglc.dump(target, _documents(), compression="zstd")  # and the next one works
    with msglc.LazyReader(target) as r:
        assert r.to_obj() == _documents()
