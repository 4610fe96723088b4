"""msglc.dask on a real distributed.LocalCluster (2 worker processes on loopback): arrays and
bags equal to the in-memory results, pickled readers reopened on the workers once per process,
errors from the workers reach the client as the documented exceptions, to_archive."""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

pytest.importorskip("dask")
pytest.importorskip("distributed")

import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import msglc  # noqa: E402
import msglc.dask as md  # noqa: E402
from msglc import ArchiveChangedError, LazyReader  # noqa: E402

RECORDS = [{"score": i, "t": "x" * (i % 11), "v": [i, i + 1]} for i in range(20000)]
ARRAY = np.arange(300 * 250, dtype=np.float64).reshape(300, 250)
MATRIX = [[float(i * 7 + j) for j in range(30)] for i in range(200)]
INTS = [[(i * j) % 128 for j in range(20)] for i in range(100)]  # fixints: one byte each, a fixed stride
DOC = {"runs": RECORDS, "a": ARRAY, "m": MATRIX, "ints": INTS, "meta": {"k": 1}}


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("dask") / "doc.mlc"
    msglc.dump(path, DOC, small_obj_optimization_threshold=1024)
    return path


def test_to_array_of_a_numpy_array_and_of_stride_lists(client, archive):
    x = md.to_array(archive, "a", chunks=(70, 100))
    assert x.chunks[0][:2] == (70, 70) and x.dtype == ARRAY.dtype
    np.testing.assert_array_equal(x.compute(), ARRAY)
    assert float(x.sum().compute()) == float(ARRAY.sum())
    np.testing.assert_array_equal(x[5:123:3, 7:200:5].compute(), ARRAY[5:123:3, 7:200:5])
    default = md.to_array(archive, "a")
    assert default.chunks[1] == (250,)  # whole rows: the stored order
    m = md.to_array(archive, "m", chunks=(17, 30))
    np.testing.assert_array_equal(m.compute(), np.array(MATRIX))
    np.testing.assert_array_equal(m[3:150:4, ::-2].compute(), np.array(MATRIX)[3:150:4, ::-2])
    ints = md.to_array(archive, "ints", chunks=(33, 20))
    assert ints.dtype == np.int64 and (ints.compute() == np.array(INTS)).all()


def test_from_array_of_a_lazy_array_on_workers(client, archive):
    with LazyReader(archive, cached=False) as r:
        x = da.from_array(r["a"], chunks=(64, 250))
        np.testing.assert_array_equal(x.mean(axis=0).compute(), ARRAY.mean(axis=0))


def test_to_bag_partitions_follow_the_stored_blocks(client, archive):
    bag = md.to_bag(archive, "runs", partition_size=3000)
    assert bag.npartitions > 1
    assert bag.compute() == RECORDS
    assert bag.map(lambda r: r["score"]).filter(lambda s: s % 3 == 0).sum().compute() == sum(range(0, 20000, 3))
    with LazyReader(archive) as r:
        starts = set(r["runs"].block_starts())
    sizes = bag.map_partitions(lambda p: [len(p)]).compute()
    cuts = np.cumsum([0, *sizes])[:-1]
    assert set(cuts.tolist()) <= starts and min(sizes[:-1]) >= 3000
    assert md.to_bag(archive, "m", partition_size=64).compute() == MATRIX
    with pytest.raises(ValueError, match="partition_size"):
        md.to_bag(archive, "runs", partition_size=0)
    with pytest.raises(TypeError, match="stored whole"):
        md.to_bag(archive, "meta")
    with pytest.raises(TypeError, match="not a list"):
        md.to_bag(archive)  # the root: a dict


def _shared_archives(_):
    from msglc.read import reopen

    return reopen.shared_archives()


def test_pickled_readers_reopen_once_per_worker_process(client, archive):
    reader = LazyReader(archive, cached=False)
    futures = [client.submit(lambda r, i: r[f"runs/{i}/score"], reader, i, pure=False) for i in range(40)]
    assert client.gather(futures) == list(range(40))
    part = reader["runs"]
    futures = [client.submit(lambda p, i: p[i]["t"], part, i, pure=False) for i in range(40)]
    assert client.gather(futures) == [RECORDS[i]["t"] for i in range(40)]
    counts = client.run(_shared_archives, None)
    assert set(counts.values()) == {1}  # one archive per worker process, however many tasks
    reader.close()


def test_worker_errors_reach_the_client(client, archive, tmp_path):
    with LazyReader(archive) as r, pytest.raises(KeyError, match="nope"):
        client.submit(lambda r: r["runs/5/nope"], r).result()
    missing = tmp_path / "gone.mlc"
    missing.write_bytes(archive.read_bytes())
    gone = md.to_array(missing, "a", chunks=(100, 250))
    missing.unlink()
    with pytest.raises(FileNotFoundError):
        gone.sum().compute()
    copy = tmp_path / "copy.mlc"
    copy.write_bytes(archive.read_bytes())
    bag = md.to_bag(copy, "runs", partition_size=3000)
    msglc.dump(copy, {"runs": RECORDS[:-1]}, small_obj_optimization_threshold=1024)  # changed under the graph
    with pytest.raises(ArchiveChangedError):
        bag.compute()
    with open(archive, "rb") as f, pytest.raises(TypeError, match="file object"):
        md.to_array(f, "a")
    with pytest.raises(TypeError, match="file object"):
        pickle.dumps(LazyReader(io.BytesIO(archive.read_bytes()))["a"])
    with pytest.raises(TypeError, match="not a NumPy array"):
        md.to_array(archive, "runs")


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_to_archive_equals_dump_of_the_concatenated_partitions(client, archive, tmp_path, compression):
    import dask.bag as db

    bag = md.to_bag(archive, "runs", partition_size=2500).map(lambda r: {**r, "twice": r["score"] * 2})
    out = tmp_path / "out.mlc"
    assert md.to_archive(bag, out, compression=compression, small_obj_optimization_threshold=512) == out
    want = [{**r, "twice": i * 2} for i, r in enumerate(RECORDS)]  # record i's score is i
    with LazyReader(out) as r:
        assert r.to_obj() == want and r["7000/twice"] == 14000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mlc"]  # the parts removed
    small = db.from_sequence([1, "two", [3], {"four": 4}, None], npartitions=3)
    md.to_archive(small, tmp_path / "small.mlc")
    assert msglc.LazyReader(tmp_path / "small.mlc").to_obj() == [1, "two", [3], {"four": 4}, None]


def test_to_archive_failing_partition_leaves_nothing(client, tmp_path):
    import dask.bag as db

    def boom(x):
        if x == 7:
            raise ValueError("partition failed")
        return x

    out = tmp_path / "out.mlc"
    with pytest.raises(ValueError, match="partition failed"):
        md.to_archive(db.from_sequence(range(10), npartitions=4).map(boom), out)
    assert list(tmp_path.iterdir()) == []


def _record(i):
    return {"id": i, "text": "x" * 90, "v": [i, -i]}


def test_to_archive_in_s3_joins_on_the_server_and_leaves_only_the_archive(client, s3_options):
    """Workers write the parts to S3; the join copies them on the server (their bytes do not
    travel) and removes them; failures leave no object behind."""
    import dask.bag as db

    from tools.remote import s3_bucket

    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    options = s3_options
    with s3_bucket(options, "scale") as fs:
        bag = db.range(150_000, npartitions=3).map(_record)  # about 5.5 MB a part: copied whole
        target = "s3://scale/out.mlc"
        assert md.to_archive(bag, target, storage_options=options) == target
        with LazyReader(target, storage_options=options) as r:
            r.verify()
            assert len(r) == 150_000 and r[123_456] == _record(123_456) and r[-1] == _record(149_999)
        assert fs.ls("scale", refresh=True) == ["scale/out.mlc"]  # the parts removed
        with pytest.raises(ZeroDivisionError):
            md.to_archive(
                db.range(10, npartitions=2).map(lambda x: 1 / (x - 7)), "s3://scale/bad.mlc", storage_options=options
            )
        assert fs.ls("scale", refresh=True) == ["scale/out.mlc"]
