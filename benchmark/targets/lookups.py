"""The ``lookups`` section (issues 18 and 32): everyday reads against key-value stores and the
pread floor, ``cached=False``, in one run: a 2M-key str dict against LMDB and sqlite3 (from a
file and from bytes), one record of a long list against ``os.pread`` of its exact bytes +
decode, and ``read_many``."""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

import msglc

from ..compressed import records
from ..timing import calls, interleaved, per_call
from .common import Row
from .dicts import str_dict


@contextlib.contextmanager
def _lmdb_get(d: dict[str, str], tmp: Path) -> Iterator[Callable[[str], Any]]:
    """LMDB's ``txn.get`` + msgpack decode of the value, in a read transaction."""
    import lmdb

    enc, dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()
    env = lmdb.open(str(tmp / "dict.lmdb"), map_size=4 << 30, subdir=False)  # files: unlinked after the section
    with env.begin(write=True) as txn:
        for k, v in d.items():
            txn.put(k.encode(), enc.encode(v))
    try:
        with env.begin() as txn:

            def get(key: str) -> Any:
                value = txn.get(key.encode())
                if value is None:  # every key of d was put above
                    raise KeyError(key)
                return dec.decode(value)

            yield get
    finally:
        env.close()


def _sqlite(d: dict[str, str], keys: list[str], tmp: Path) -> float:
    db = sqlite3.connect(tmp / "dict.sqlite")
    db.execute("create table kv (k text primary key, v text) without rowid")
    db.executemany("insert into kv values (?, ?)", d.items())
    db.commit()
    query = "select v from kv where k = ?"
    took = per_call(lambda k: db.execute(query, (k,)).fetchone()[0], keys)
    db.close()
    return took


def dict_lookups(n: int, lookups: int, tmp: Path) -> list[Row]:
    """Issue 32's targets: a held view's lookup at most LMDB's, ``reader["table"][k]`` at most
    1.3x; the same dict read from bytes in memory is timed beside them."""
    d, rng = str_dict(n)
    path = tmp / "table.mlc"
    msglc.dump(path, {"table": d})
    keys = rng.sample(list(d), lookups)
    sqlite_s = _sqlite(d, keys, tmp)
    with (
        _lmdb_get(d, tmp) as get,
        msglc.LazyReader(path, cached=False) as reader,
        msglc.LazyReader(path.read_bytes(), cached=False) as in_memory,
    ):
        table, memory_table = reader["table"], in_memory["table"]
        assert all(reader["table"][k] == d[k] == reader["table/" + k] == get(k) == memory_table[k] for k in keys[:100])
        best = interleaved(
            {
                "lmdb": calls(get, keys),
                "nested": calls(lambda k: reader["table"][k], keys),
                "path": calls(lambda k: reader["table/" + k], keys),
                "held": calls(table.__getitem__, keys),
                "memory": calls(memory_table.__getitem__, keys),
            }
        )
    lmdb_s, nested, by_path, held, memory = (best[k] / len(keys) for k in ("lmdb", "nested", "path", "held", "memory"))
    peers = f"LMDB {lmdb_s * 1e6:.2f}us, sqlite3 {sqlite_s * 1e6:.2f}us"
    return [
        Row(f'{n:,}-key dict: reader["table"][k] / LMDB get+decode', nested / lmdb_s, "<= 1.3", nested <= 1.3 * lmdb_s,
            f"{nested * 1e6:.2f}us; {peers}"),
        Row(f'{n:,}-key dict: reader["table/" + k] / LMDB get+decode', by_path / lmdb_s, "<= 2",
            by_path <= 2 * lmdb_s, f"{by_path * 1e6:.2f}us"),
        Row(f"{n:,}-key dict: held view table[k] / LMDB get+decode", held / lmdb_s, "<= 1", held <= lmdb_s,
            f"{held * 1e6:.2f}us"),
        Row(f"{n:,}-key dict read from bytes: held view table[k] / LMDB get+decode", memory / lmdb_s, "<= 1",
            memory <= lmdb_s, f"{memory * 1e6:.2f}us"),
    ]  # fmt: skip


def lookup_targets(keys: int, lookups: int, records_n: int, tmp: Path) -> list[Row]:
    return dict_lookups(keys, lookups, tmp) + record_reads(records_n, lookups, tmp)


@contextlib.contextmanager
def _record_pread(recs: list[Any], tmp: Path) -> Iterator[Callable[[int], Any]]:
    """``os.pread`` of one record's exact bytes in a plain msgpack file + decode."""
    plain = tmp / "runs.msgpack"
    data = msgspec.msgpack.encode(recs)
    plain.write_bytes(data)
    offsets, at = [], 5 if len(recs) >= 65536 else 3
    for raw in msgspec.msgpack.Decoder(list[msgspec.Raw]).decode(data):
        offsets.append((at, len(raw)))
        at += len(raw)
    fd = os.open(plain, os.O_RDONLY)
    dec = msgspec.msgpack.Decoder()
    try:
        yield lambda i: dec.decode(os.pread(fd, offsets[i][1], offsets[i][0]))
    finally:
        os.close(fd)


def record_reads(n: int, lookups: int, tmp: Path) -> list[Row]:
    recs = records(n)
    path = tmp / "runs.mlc"
    msglc.dump(path, {"runs": recs})
    rng = random.Random(18)
    picks = [rng.randrange(n) for _ in range(lookups)]
    paths = [f"runs/{i}/score" for i in picks]
    with _record_pread(recs, tmp) as pread, msglc.LazyReader(path, cached=False) as reader:
        runs = reader["runs"]
        assert all(runs[i] == recs[i] == pread(i) for i in picks[:100])
        assert reader.read_many(paths) == [recs[i]["score"] for i in picks]
        best = interleaved(
            {
                "floor": calls(pread, picks),
                "one": calls(runs.__getitem__, picks),
                "path": calls(reader.__getitem__, paths),
                "many": lambda: reader.read_many(paths),
            }
        )
    floor, one, by_path, many = (best[k] / len(picks) for k in ("floor", "one", "path", "many"))
    detail = f"floor {floor * 1e6:.2f}us"
    return [
        Row(f"one record of {n:,}, runs[i] / pread+decode of its bytes", one / floor, "<= 4", one <= 4 * floor,
            f"{one * 1e6:.2f}us; {detail}"),
        Row('reader[f"runs/{i}/score"] / pread+decode of the record', by_path / floor, "<= 4",
            by_path <= 4 * floor, f"{by_path * 1e6:.2f}us; {detail}"),
        Row(f"read_many of {lookups:,} paths, per path / single reads", many / by_path, "<= 0.5",
            many <= 0.5 * by_path, f"{many * 1e6:.2f}us vs {by_path * 1e6:.2f}us"),
    ]  # fmt: skip
