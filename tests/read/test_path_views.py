"""str paths that led to a lazy view before start from it: ``reader["table"]`` is that view
at once, ``reader["table/" + k]`` looks ``k`` up in it; the same values and errors as
``resolve``, within the archive's bound on kept views, and nothing after close."""

import pytest

import msglc
from msglc.read import lazy_reader as reader_module
from msglc.read import views as views_module
from msglc.read.part import archive_of
from msglc.read.paths import resolve, split_path


def _table(path):
    msglc.dump(path, {"table": {f"k{i}": f"v{i}" for i in range(20_000)}, "runs": [{"id": i} for i in range(3000)]})


def test_a_str_path_to_a_view_is_not_resolved_again(tmp_path, monkeypatch):
    path = tmp_path / "table.mlc"
    _table(path)
    with msglc.LazyReader(path, cached=False) as reader:
        view = reader["table"]
        runs = reader["runs"]

        def no_lookup(*args):
            raise AssertionError("resolved again")

        monkeypatch.setattr(reader_module, "lookup", no_lookup)
        assert reader["table"] is view and reader["runs"] is runs
        assert reader["table"]["k7"] == "v7"
        assert reader["table/k8"] == "v8"  # from the view "table" led to
    with pytest.raises(ValueError, match="closed"):
        reader["table"]


PATHS = [
    "table",
    "table/k3",
    "table/",
    "table//k4",
    "table/nope",
    "table/3",
    "runs",
    "runs/5",
    "runs/-1",
    "runs/5000",
    "runs/x",
    "runs/1:3",
    "runs/7/score",
    "runs/7/nope",
    "ints",
    "ints/3",
    "ints/77",
]


@pytest.mark.parametrize("cached", [False, True])
def test_str_paths_from_a_kept_view_mean_what_resolve_says(cached, tmp_path):
    """Every path gives ``resolve``'s value or error, first time and again (its parent view
    then kept), in every order."""
    path = tmp_path / "paths.mlc"
    msglc.dump(
        path,
        {
            "table": {f"k{i}": i for i in range(3000)},
            "runs": [{"id": i, "score": i / 7} for i in range(3000)],
            "ints": {i: [i] * 300 for i in range(100)},
        },
        small_obj_optimization_threshold=1024,
    )

    def outcome(read, p):
        try:
            value = read(p)
            return ("ok", value.to_obj() if hasattr(value, "to_obj") else value)
        except Exception as e:  # the outcome compared, whatever it is
            return (type(e).__name__, str(e))

    with msglc.LazyReader(path, cached=False) as plain:
        root = plain.unwrap()
        expected = {p: outcome(lambda q: resolve(root, split_path(q)), p) for p in PATHS}
    for order in (PATHS, PATHS[::-1]):
        with msglc.LazyReader(path, cached=cached) as reader:
            for _ in range(2):
                assert {p: outcome(reader.__getitem__, p) for p in order} == expected


def test_views_kept_by_path_stay_within_the_archive_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(views_module, "MAX_VIEWS", 8)
    path = tmp_path / "many.mlc"
    msglc.dump(path, {f"t{j}": {f"k{i}": i for i in range(2000)} for j in range(20)})
    with msglc.LazyReader(path, cached=False) as reader:
        for _ in range(3):
            for j in range(20):
                assert reader[f"t{j}"]["k1999"] == 1999
                assert reader[f"t{j}/k3"] == 3
                assert len(archive_of(reader).views) <= 8
