"""The ``lookups`` section (issue 18): everyday reads against key-value stores and the pread
floor, ``cached=False``, in one run: a 2M-key str dict against LMDB and sqlite3, one record
of a long list against ``os.pread`` of its exact bytes + decode, and ``read_many``."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import msgspec

import msglc

from ..compressed import records
from ..timing import best_of, per_call
from .common import Row
from .dicts import str_dict


def _lmdb_floor(d: dict[str, str], keys: list[str], tmp: Path) -> float:
    """LMDB's ``txn.get`` + msgpack decode of the value, per key."""
    import lmdb

    enc, dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()
    env = lmdb.open(str(tmp / "dict.lmdb"), map_size=4 << 30, subdir=False)  # files: unlinked after the section
    with env.begin(write=True) as txn:
        for k, v in d.items():
            txn.put(k.encode(), enc.encode(v))
    with env.begin() as txn:
        assert dec.decode(txn.get(keys[0].encode())) == d[keys[0]]
        floor = per_call(lambda k: dec.decode(txn.get(k.encode())), keys)
    env.close()
    return floor


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
    d, rng = str_dict(n)
    path = tmp / "table.mlc"
    msglc.dump(path, {"table": d})
    keys = rng.sample(list(d), lookups)
    lmdb_s, sqlite_s = _lmdb_floor(d, keys, tmp), _sqlite(d, keys, tmp)
    with msglc.LazyReader(path, cached=False) as reader:
        table = reader["table"]
        assert all(reader["table"][k] == d[k] == reader["table/" + k] for k in keys[:100])
        nested = per_call(lambda k: reader["table"][k], keys)
        by_path = per_call(lambda k: reader["table/" + k], keys)
        held = per_call(table.__getitem__, keys)
    peers = f"LMDB {lmdb_s * 1e6:.2f}us, sqlite3 {sqlite_s * 1e6:.2f}us"
    return [
        Row(f'{n:,}-key dict: reader["table"][k] / LMDB get+decode', nested / lmdb_s, "<= 3", nested <= 3 * lmdb_s,
            f"{nested * 1e6:.2f}us; {peers}"),
        Row(f'{n:,}-key dict: reader["table/" + k] / LMDB get+decode', by_path / lmdb_s, "<= 3",
            by_path <= 3 * lmdb_s, f"{by_path * 1e6:.2f}us"),
        Row(f"{n:,}-key dict: held view table[k] / LMDB get+decode", held / lmdb_s, "<= 2", held <= 2 * lmdb_s,
            f"{held * 1e6:.2f}us"),
    ]  # fmt: skip


def _record_floor(recs: list[Any], picks: list[int], tmp: Path) -> float:
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
        assert dec.decode(os.pread(fd, offsets[picks[0]][1], offsets[picks[0]][0])) == recs[picks[0]]
        return per_call(lambda i: dec.decode(os.pread(fd, offsets[i][1], offsets[i][0])), picks)
    finally:
        os.close(fd)


def record_reads(n: int, lookups: int, tmp: Path) -> list[Row]:
    recs = records(n)
    path = tmp / "runs.mlc"
    msglc.dump(path, {"runs": recs})
    rng = random.Random(18)
    picks = [rng.randrange(n) for _ in range(lookups)]
    paths = [f"runs/{i}/score" for i in picks]
    floor = _record_floor(recs, picks, tmp)
    with msglc.LazyReader(path, cached=False) as reader:
        runs = reader["runs"]
        assert all(runs[i] == recs[i] for i in picks[:100])
        assert reader.read_many(paths) == [recs[i]["score"] for i in picks]
        one = per_call(runs.__getitem__, picks)
        by_path = per_call(reader.__getitem__, paths)
        singles = best_of(lambda: [reader[p] for p in paths]) / len(paths)
        many = best_of(lambda: reader.read_many(paths)) / len(paths)
    detail = f"floor {floor * 1e6:.2f}us"
    return [
        Row(f"one record of {n:,}, runs[i] / pread+decode of its bytes", one / floor, "<= 4", one <= 4 * floor,
            f"{one * 1e6:.2f}us; {detail}"),
        Row('reader[f"runs/{i}/score"] / pread+decode of the record', by_path / floor, "<= 4",
            by_path <= 4 * floor, f"{by_path * 1e6:.2f}us; {detail}"),
        Row(f"read_many of {lookups:,} paths, per path / single reads", many / singles, "<= 0.5",
            many <= 0.5 * singles, f"{many * 1e6:.2f}us vs {singles * 1e6:.2f}us"),
    ]  # fmt: skip


def lookup_targets(keys: int, lookups: int, records_n: int, tmp: Path) -> list[Row]:
    return dict_lookups(keys, lookups, tmp) + record_reads(records_n, lookups, tmp)
