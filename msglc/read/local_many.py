"""``read_many`` of a local archive: the paths resolved together, a level at a time.

A local read costs about a microsecond, so batching requests (``fetch_rounds``, for remote
archives and the async API) saves little there; what costs is the work per path. Here the paths
are grouped by their next segment: a container shared by many paths is looked up once, and the
items of a long list that the paths ask for are read a span at a time, each span walked once in
C for all its items. A path that takes any other step (a slice, a negative index, an int key
given as str, an array, an error) is resolved on its own by ``resolve``, which gives its value
or its error exactly as ``reader[path]`` would.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msglc.read.paths import DICT, LIST, kind_of, resolve, short_steps, split_path
from msglc.read.views import MISSING, list_items, walks_spans
from msglc.util import accel
from msglc.util.runtime import gc_paused

_Member = tuple[int, list[Any]]  # (position in the request, the path's segments)


class _Batch:
    """The request: its results, and the errors of the paths that failed (raised in path order)."""

    def __init__(self, root: Any, paths: Iterable[Any]) -> None:
        self.root = root
        self.members: list[_Member] = []
        self.results: list[Any] = []
        self.errors: dict[int, BaseException] = {}
        for i, path in enumerate(paths):
            self.results.append(None)
            if type(path) is str:
                segs = path.split("/")
                self.members.append((i, [s for s in segs if s] if "" in segs else segs))
                continue
            try:
                self.members.append((i, split_path(path)))
            except Exception as e:  # noqa: BLE001 - raised in path order
                self.errors[i] = e

    def run(self) -> list[Any]:
        stack: list[tuple[Any, list[_Member], int]] = [(self.root, self.members, 0)]
        while stack:
            obj, group, depth = stack.pop()
            for value, sub in self.step(obj, group, depth):
                if len(sub) == 1:
                    self.finish(value, sub[0], depth + 1)
                else:
                    stack.append((value, sub, depth + 1))
        if self.errors:
            raise self.errors[min(self.errors)]
        return self.results

    def step(self, obj: Any, group: list[_Member], depth: int) -> list[tuple[Any, list[_Member]]]:
        """The next level of ``group`` below ``obj``: (value, its members) for each next
        segment, taken together; paths that end here get ``obj``, odd ones go ``alone``."""
        by_seg: dict[Any, list[_Member]] = {}
        kind = kind_of(obj)
        n = len(obj) if kind is LIST else 0
        speedups = accel.speedups
        grouped = speedups.group_indices(group, depth, n) if kind is LIST and speedups is not None else None
        for member in group if grouped is None else ():
            segs = member[1]
            if depth == len(segs):
                self.results[member[0]] = obj
                continue
            seg = segs[depth]
            if kind is LIST and type(seg) is str and seg.isdigit() and seg.isascii():
                seg = int(seg)
            if (kind is LIST and type(seg) is int and 0 <= seg < n) or (kind is DICT and type(seg) is str):
                by_seg.setdefault(seg, []).append(member)
            else:
                self.alone(member)
        nexts: list[tuple[Any, list[_Member]]] = []
        if kind is LIST and (grouped is not None or by_seg):
            tails: list[list[Any] | None] | None
            if grouped is not None:  # in C: (indices, their members, the tail of each lone path)
                indices, groups, tails = grouped
            else:
                indices = sorted(by_seg)
                groups = [by_seg[i] for i in indices]
                tails = [_tail(members, depth + 1) for members in groups]
            if not walks_spans(obj):  # else the rest of a path taken alone is found in C too
                tails = None
            done = 0
            try:
                for value in list_items(obj, indices, tails):  # a value one path takes is dropped at once
                    members = groups[done]
                    done += 1
                    if tails is not None and tails[done - 1] is not None:
                        if value is MISSING:  # not found by the C walk: resolved alone
                            self.alone(members[0])
                        else:
                            self.results[members[0][0]] = value
                    elif len(members) == 1:
                        self.finish(value, members[0], depth + 1)
                    else:
                        nexts.append((value, members))
            except Exception:  # noqa: BLE001 - each path then says what it says alone
                for members in groups[done:]:
                    for member in members:
                        self.alone(member)
        for key, members in by_seg.items() if kind is DICT else ():
            try:
                nexts.append((obj[key], members))
            except Exception:  # noqa: BLE001 - as above (an int key given as str, a damaged entry)
                for member in members:
                    self.alone(member)
        return nexts

    def finish(self, obj: Any, member: _Member, depth: int) -> None:
        """The rest of one path from ``obj``: its short steps, then ``resolve`` from there."""
        i, segs = member
        try:
            obj, depth = short_steps(obj, segs, depth)
            self.results[i] = obj if depth == len(segs) else resolve(obj, segs[depth:], tuple(segs[:depth]))
        except Exception as e:  # noqa: BLE001 - raised by run, in path order
            self.errors[i] = e

    def alone(self, member: _Member) -> None:
        i, segs = member
        try:
            self.results[i] = resolve(self.root, segs)
        except Exception as e:  # noqa: BLE001 - raised by run, in path order
            self.errors[i] = e


def _tail(members: list[_Member], depth: int) -> list[Any] | None:
    """The segments after ``depth`` of the one path in ``members`` (None: several, or none)."""
    return members[0][1][depth:] or None if len(members) == 1 else None


def read_grouped(root: Any, paths: Iterable[Any]) -> list[Any]:
    """``[resolve(root, split_path(p)) for p in paths]``, raising the first failing path's error.
    The cyclic GC waits meanwhile: a batch makes a few lists per path, none of them garbage,
    and the scans they set off cost about 6% of a batch of 20,000 paths."""
    with gc_paused():
        return _Batch(root, paths).run()
