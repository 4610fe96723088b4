"""``configure()`` takes every option name of the published msglc (PyPI 261017): those that mean
something here keep msglc's meaning, the rest are checked, shown by ``msglc.config.config`` and
change nothing that is written or read. The published GC counter functions."""

from __future__ import annotations

import gc

import pytest

import msglc
from msglc.config import config, configure, decrement_gc_counter, increment_gc_counter

DOC = {
    "rows": [{"id": i, "v": [float(i)] * 30, "tags": {"a", "b"}, "t": (i, str(i))} for i in range(200)],
    "ints": list(range(5000)),
    "small": {"k": [1, 2, 3]},
}

# every configure() name of the published package, with a value it accepts other than its default
PUBLISHED = {
    "small_obj_optimization_threshold": 2**14,
    "write_buffer_size": 2**24,
    "read_buffer_size": 2**17,
    "fast_loading": False,
    "fast_loading_threshold": 0.5,
    "trivial_size": 30,
    "disable_gc": False,
    "simple_repr": False,
    "copy_chunk_size": 2**20,
    "numpy_encoder": False,
    "numpy_fast_int_pack": True,
    "enable_custom_container": False,
    "has_set": False,
    "has_tuple": False,
    "has_numpy": False,
    "magic": b"new_version_coming",
    "fs": None,
    "compatibility_check": lambda magic: True,
}
MEANINGFUL = ("small_obj_optimization_threshold", "disable_gc", "numpy_encoder")  # msglc's own options too
NO_EFFECT = {k: v for k, v in PUBLISHED.items() if k not in MEANINGFUL}


@pytest.fixture(autouse=True)
def restored():
    """Every setting back as it was after each test (global state)."""
    saved = {name: getattr(config, name) for name in dir(config)}
    yield
    configure(**saved)


def test_every_published_name_is_accepted_and_shown():
    assert len(PUBLISHED) == 18
    configure(**PUBLISHED)
    for name, value in PUBLISHED.items():
        assert getattr(config, name) == value, name
    # the ones msglc has keep their meaning here
    assert msglc.LazyReader(msglc.dumps(DOC)).info().threshold == 2**14


def test_published_defaults_are_shown_before_any_configure():
    assert config.trivial_size == 20
    assert config.fast_loading is True
    assert config.fast_loading_threshold == 0.3
    assert config.write_buffer_size == 2**23
    assert config.fs is None
    assert config.compatibility_check is None


def test_options_without_meaning_here_change_no_byte():
    np = pytest.importorskip("numpy")
    doc = {**DOC, "array": np.arange(3000, dtype=np.int64)}
    before = msglc.dumps(doc, small_obj_optimization_threshold=256)
    configure(**NO_EFFECT)
    assert msglc.dumps(doc, small_obj_optimization_threshold=256) == before
    with msglc.LazyReader(before) as r:
        assert r["rows/7/v/3"] == 7.0
        assert "LazyList" in repr(r["ints"])  # simple_repr=False does not make repr read
        assert np.array_equal(r["array"], doc["array"])


def test_magic_does_not_change_the_format():
    configure(magic=b"new_version_coming")
    data = msglc.dumps([1, 2, 3])
    assert b"new_version_coming" not in data
    assert data.startswith(b"\x89MLC")
    assert msglc.LazyReader(data).read() == [1, 2, 3]


def test_numpy_encoder_true_stores_typed_binary_never_pickles():
    np = pytest.importorskip("numpy")
    configure(numpy_encoder=True)
    arr = np.linspace(0, 1, 2000).reshape(40, 50)
    data = msglc.dumps({"a": arr})
    for pickled in (b"multiarray", b"_reconstruct", b"\x80\x04\x95", b"\x80\x05\x95"):
        assert pickled not in data
    got = msglc.LazyReader(data)["a"]
    assert got.dtype == arr.dtype and np.array_equal(got, arr)


def test_numpy_encoder_false_stores_lists_as_published():
    np = pytest.importorskip("numpy")
    configure(numpy_encoder=False)
    assert msglc.LazyReader(msglc.dumps({"a": np.arange(4)})).to_obj() == {"a": [0, 1, 2, 3]}


def test_none_leaves_a_published_option_unchanged():
    configure(trivial_size=7, small_obj_optimization_threshold=1024, disable_gc=False)
    configure(trivial_size=None, small_obj_optimization_threshold=None, disable_gc=None, magic=None)
    assert (config.trivial_size, config.small_obj_optimization_threshold, config.disable_gc) == (7, 1024, False)
    assert config.magic == b"msglc-2024"


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("write_buffer_size", 0, ValueError),
        ("read_buffer_size", -1, ValueError),
        ("copy_chunk_size", 1.5, TypeError),
        ("trivial_size", True, TypeError),
        ("fast_loading", 1, TypeError),
        ("fast_loading_threshold", 1.5, ValueError),
        ("fast_loading_threshold", "0.3", TypeError),
        ("simple_repr", "yes", TypeError),
        ("numpy_fast_int_pack", "1", TypeError),
        ("has_set", 0, TypeError),
        ("magic", "msglc", TypeError),
        ("magic", b"", ValueError),
        ("magic", b"x" * 31, ValueError),
        ("compatibility_check", 3, TypeError),
        ("numpy_encoder", "yes", TypeError),
    ],
)
def test_bad_values_are_refused_and_nothing_changes(name, value, error):
    before = {n: getattr(config, n) for n in dir(config)}
    with pytest.raises(error, match=name):
        configure(trivial_size=5, **{name: value})  # the good value is not kept either
    assert {n: getattr(config, n) for n in dir(config)} == before


def test_a_default_file_system_is_refused_loudly():
    fsspec = pytest.importorskip("fsspec")
    with pytest.raises(ValueError, match="fs= to each call"):
        configure(fs=fsspec.filesystem("memory"))
    assert config.fs is None
    configure(fs=None)  # what the published configure() sets on every call


def test_unknown_names_are_still_refused():
    with pytest.raises(TypeError, match="unknown msglc option"):
        configure(trivial=3)
    with pytest.raises(TypeError, match="unknown msglc option"):
        msglc.dumps([1], trivial_size=3)  # a configure() option of the published package, not a dump() one


def test_setting_an_attribute_configures_and_checks():
    config.trivial_size = 11
    assert config.trivial_size == 11
    config.small_obj_optimization_threshold = 512
    assert msglc.LazyReader(msglc.dumps(DOC)).info().threshold == 512
    with pytest.raises(ValueError):
        config.write_buffer_size = 0
    with pytest.raises(AttributeError):
        config.no_such_option  # noqa: B018


def test_monkeypatch_sets_and_restores(monkeypatch):
    monkeypatch.setattr(config, "numpy_encoder", False)
    monkeypatch.setattr(config, "trivial_size", 4)
    assert (config.numpy_encoder, config.trivial_size) == (False, 4)
    monkeypatch.undo()
    assert (config.numpy_encoder, config.trivial_size) == (True, 20)


@pytest.fixture
def gc_state():
    was = gc.isenabled()
    yield
    if was:
        gc.enable()


# msglc itself never counts (its readers and writers pause the GC on their own), so every
# test starts and ends at a count of 0


def test_gc_counter_pauses_while_counted(gc_state):
    configure(disable_gc=True)
    gc.enable()
    assert increment_gc_counter() == 1
    assert not gc.isenabled()
    assert increment_gc_counter() == 2
    assert decrement_gc_counter() == 1
    assert not gc.isenabled()
    assert decrement_gc_counter() == 0
    assert gc.isenabled()


def test_gc_counter_below_zero_raises(gc_state):
    configure(disable_gc=True)
    with pytest.raises(RuntimeError, match="more often"):
        decrement_gc_counter()
    assert increment_gc_counter() == 1  # the failed call counted nothing
    assert decrement_gc_counter() == 0


def test_gc_counter_does_nothing_without_disable_gc(gc_state):
    configure(disable_gc=False)
    gc.enable()
    assert increment_gc_counter() == 0
    assert gc.isenabled()
    assert decrement_gc_counter() == 0


def test_gc_counter_stays_balanced_when_the_flag_changes(gc_state):
    configure(disable_gc=True)
    gc.enable()
    assert increment_gc_counter() == 1
    configure(disable_gc=False)
    assert decrement_gc_counter() == 0
    assert gc.isenabled()


def test_readers_and_writers_leave_the_counter_alone(tmp_path):
    configure(disable_gc=True)
    with msglc.LazyWriter(tmp_path / "a.mlc") as w:
        w.write(DOC)
        assert increment_gc_counter() == 1
    with msglc.LazyReader(tmp_path / "a.mlc") as r:
        assert r["rows/3/id"] == 3
        assert decrement_gc_counter() == 0
