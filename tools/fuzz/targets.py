"""One case: a mutated archive read through every reader API in stages, and its outcome
classified against the truth."""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import signal
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import msglc
from msglc import FileInfo, LazyArray, LazyDict, LazyList, MsglcError
from msglc.io.local import BufferSource, StreamSource
from msglc.read.part import archive_of

from .common import LOOKUP_STAGES, MISSING, CaseTimeout, decode_data, deep_limit
from .corpus import Sample, expected_value
from .mutators import (
    Mutation,
    m_bitflip,
    m_datacrc,
    m_datashift,
    m_delete,
    m_header,
    m_index,
    m_insert,
    m_overwrite,
    m_splice,
    m_toc,
    m_truncate,
    m_value,
)
from .values import Inconsistent, brief, canon, require_agreement, same, walk, walk_iter, whole_value
from .zmutators import m_zdict, m_zhash, m_zindex, m_zlayout, m_zpage, m_zraw, m_ztoc

# of the cases on compressed archives (but large ones), those that run the "copy" stage: two
# copies, verified (``--copy-share`` sets it before the workers are forked)
COPY_SHARE = 0.25

MUTATORS = {
    "bitflip": m_bitflip,
    "overwrite": m_overwrite,
    "insert": m_insert,
    "delete": m_delete,
    "truncate": m_truncate,
    "splice": m_splice,
    "header": m_header,
    "toc": m_toc,
    "index": m_index,
    "datacrc": m_datacrc,
    "datashift": m_datashift,
    "value": m_value,
    "zindex": m_zindex,
    "zpage": m_zpage,
    "zdict": m_zdict,
    "zraw": m_zraw,
    "ztoc": m_ztoc,
    "zhash": m_zhash,
    "zlayout": m_zlayout,
}


# ---- running one case ----------------------------------------------------------------------------


@dataclass
class Context:
    corpus: list[Sample]
    kinds: list[str]
    weights: list[float]
    by_name: dict[str, Sample] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {s.name: s for s in self.corpus}


def make_case(ctx: Context, case_id: str) -> tuple[Sample, str, Mutation]:
    """The sample and mutation of a case id: ``seed:index`` (random), ``sweep:SAMPLE:POS``
    (a flip of bit POS % 8 at byte POS) or ``valid:SAMPLE`` (unchanged: must read back)."""
    if case_id.startswith("valid:"):
        s = ctx.by_name[case_id[6:]]
        return s, "none", Mutation(s.data, "unchanged", "none", crafted="none", copy=True)
    if case_id.startswith("sweep:"):
        _, name, pos_text = case_id.split(":")
        s = ctx.by_name[name]
        pos = int(pos_text)
        bad = bytearray(s.data)
        bad[pos] ^= 1 << (pos % 8)
        return s, "sweep", Mutation(bytes(bad), f"bitflip {pos}.{pos % 8} ({s.region(pos)})", s.region(pos))
    rng = random.Random(case_id)
    s = rng.choice([x for x in ctx.corpus if any(_applies(k, x) for k in ctx.kinds)] or ctx.corpus)
    kinds = [(k, w) for k, w in zip(ctx.kinds, ctx.weights, strict=True) if _applies(k, s)]
    for _ in range(20):
        kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0] if kinds else "bitflip"
        mut = MUTATORS[kind](rng, s, ctx.corpus)
        if mut is not None and mut.data != s.data:
            mut.copy = rng.random() < COPY_SHARE
            return s, kind, mut
    while True:  # (a bit flipped twice is no change)
        mut = m_bitflip(rng, s, ctx.corpus)
        if mut.data != s.data:
            return s, "bitflip", mut


def _applies(kind: str, s: Sample) -> bool:
    """Whether mutations of ``kind`` can change ``s`` (its structures: a TOC, a 2.1 section,
    dictionaries, hash indexes)."""
    if kind in ("toc", "index"):
        return s.toc is not None and (kind == "toc" or any(it.kind == "region" for it in s.toc[0]))
    if kind in ("ztoc", "zhash"):
        return s.vtoc is not None and (kind == "ztoc" or any(it.kind == "region" for it in s.vtoc[0]))
    if kind == "zdict":
        return s.section is not None and bool(s.section.dicts)
    return s.section is not None if kind.startswith("z") else True


@dataclass
class StageResult:
    value: Any = MISSING
    error: BaseException | None = None
    tb: str = ""
    changed: bool = False
    where: str = ""  # the frame that raised
    explicit: bool = False  # raised by a ``raise`` statement in msglc (not a slip of its code)


def _frame_of(e: BaseException) -> str:
    """file:line of the innermost frame in msglc (else the innermost) that raised ``e``."""
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if "/msglc/" in f.filename.replace("\\", "/")]
    found = ours or list(frames)
    if not found:
        return "?"
    return f"{os.path.basename(found[-1].filename)}:{found[-1].lineno}"


def _explicit(e: BaseException) -> bool:
    """Was ``e`` raised on purpose by msglc (its innermost frame a ``raise`` statement in
    msglc), rather than by a slip such as indexing a dict with a missing key?"""
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    return "/msglc/" in last.filename.replace("\\", "/") and (last.line or "").lstrip().startswith("raise")


def _run(fn: Any, keep_tb: bool) -> StageResult:
    try:
        return StageResult(value=fn())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - classifying every exception is the point
        return StageResult(
            error=e, tb=traceback.format_exc() if keep_tb else "", where=_frame_of(e), explicit=_explicit(e)
        )


def _root_api(r: msglc.LazyReader) -> Any:
    root = r.read()
    value = walk(root)
    if isinstance(root, (LazyDict, dict)):
        keys = list(r.keys())
        if len(r) != len(keys) or [k for k, _ in r.items()] != keys:
            raise Inconsistent("the reader's keys(), items() and len() disagree")
        for k in keys[:2]:
            if k not in r:
                raise Inconsistent(f"{k!r} not in the reader")
            require_agreement(whole_value(r.get(k)), value[k], f"reader.get({k!r})")
    elif isinstance(root, (LazyList, list)) and len(root):
        require_agreement(whole_value(r[-1]), value[-1], "reader[-1]")
        require_agreement(whole_value(r[0]), value[0], "reader[0]")
    return value


def evaluate(s: Sample, mut: Mutation, keep_tb: bool = False) -> tuple[str, dict[str, StageResult], str]:
    """Run every stage on the mutated archive; returns (class, stage results, the stage and
    reason that decided the class)."""
    stages: dict[str, StageResult] = {}
    truth, expected = s.truth, s.expected
    if mut.truth == "decode":
        truth, expected = _decoded_truth(s, mut)
    outside = _OUTSIDE
    if outside is not None:
        outside.clear()
    opened = _run(lambda: msglc.LazyReader(mut.data, cached=False), keep_tb)
    stages["open"] = opened
    if opened.error is None:
        r = opened.value
        opened.value = None
        wanted = [
            p
            for p, e, o in zip(s.paths, expected, s.expected, strict=True)
            if not isinstance(e if e is not _NO_TRUTH else o, type)
        ]
        steps = {
            "inspect": lambda: _inspect(r),
            "walk": lambda: _root_api(r),
            "iter": lambda: walk_iter(r.read()),
            "paths": lambda: [_path_value(r, p) for p in s.paths],
            "many": lambda: [whole_value(v) for v in r.read_many(wanted)],
            "stream": lambda: _stream_reads(mut.data, wanted, not s.big),
            "root_to_obj": lambda: _root_to_obj(r),
            "to_obj": r.to_obj,
            "verify": r.verify,
            "copy": lambda: _copies(mut.data),
        }
        if s.deep or s.big:  # the harness's walks recurse per level, or take long: the other stages read it all
            del steps["walk"], steps["iter"]
        if s.section is None:  # (for what compressed sections do differently: frames fetched, copied)
            del steps["stream"], steps["copy"]
        elif not mut.copy or s.big and mut.crafted != "none":
            del steps["copy"]
        try:
            for name, step in steps.items():
                stages[name] = _run(step, keep_tb)
                if isinstance(stages[name].error, CaseTimeout):
                    break  # the timer is spent: the rest would run unguarded
        finally:
            with contextlib.suppress(Exception):
                r.close()
    with deep_limit():
        _compare(stages, truth, expected, s)
        cls, why = classify(s, mut, stages, truth)
    if outside and cls not in ("hang", "memory"):  # asked for bytes the file does not have
        cls, why = "read-outside-file", outside[0]
    if mut.crafted == "none" and cls != "ok":  # a valid archive that does not read back
        cls, why = "valid-fails", f"{cls}: {why}"
    return cls, stages, why


_NO_TRUTH = object()


def _decoded_truth(s: Sample, mut: Mutation) -> tuple[Any, list[Any]]:
    t, bad = s.trailer, mut.data
    shift = len(bad) - len(s.data)
    section = mut.plain if mut.plain is not None else bad[t.data_off : t.data_off + t.data_len + shift]
    try:
        truth = decode_data(section)
    except Exception:  # noqa: BLE001 - not decodable: nothing to compare with
        return _NO_TRUTH, [_NO_TRUTH] * len(s.paths)
    return truth, [expected_value(truth, p) for p in s.paths]


def _path_value(r: msglc.LazyReader, path: Any) -> Any:
    try:
        return whole_value(r[path])
    except (KeyError, IndexError, TypeError) as e:
        if not _explicit(e):
            raise
        return _Raised(type(e))


class _Raised:
    """A lookup error a path raised (compared with what the truth implies)."""

    def __init__(self, cls: type) -> None:
        self.cls = cls


def _stream_reads(data: bytes, wanted: list[Any], root: bool) -> tuple[list[Any], Any]:
    """``read_many`` batched (``max_gap``) and the lazy root's ``to_obj()`` (``root``; else
    None), read through a file object: a source that is not in memory, so that reads gather
    frames in requests (``fetch_many``) and arrays are read into fresh buffers (``read_into``)."""
    with msglc.LazyReader(io.BytesIO(data), cached=False) as r:
        return [whole_value(v) for v in r.read_many(wanted, max_gap=4096)], _root_to_obj(r) if root else MISSING


class CopyInvalid(Exception):
    """A copy of the archive (``combine``, a repack) was written, but does not verify."""


def _copies(data: bytes) -> list[Any]:
    """The archive's value as two copies of it hold it, each verified: ``combine`` of it
    (its frames copied as they are, with their dictionaries, each checked) and a repack
    (``dumps`` of its reader: the same copy). A copy checks its input's data as it copies
    it, not the nodes: a copy that was written must hold the input's value, and verify
    unless the input does not (``bad-copy``)."""
    copies = []
    for how in ("combine", "repack"):
        if how == "combine":
            out = io.BytesIO()
            msglc.combine(out, [FileInfo(data, "x")])
            made = out.getvalue()
        else:
            with msglc.LazyReader(data) as r:
                made = msglc.dumps(r)
        try:
            with msglc.LazyReader(made) as c:
                c.verify()
                value = c.to_obj()
        except Exception as e:  # noqa: BLE001 - any failure of a written copy is the finding
            raise CopyInvalid(f"the {how} copy does not verify: {type(e).__name__}: {e}") from None
        copies.append(value["x"] if how == "combine" else value)
    return copies


def _inspect(r: msglc.LazyReader) -> None:
    """What a user inspects: the layout, the frames of a compressed archive and the
    dictionaries they name."""
    r.info()
    names = {f.dictionary for f in r.frames()}
    for d in sorted(names - {0}):
        r.dictionary(d)


# reads a source was asked for outside the file (offset, size, file size, where), in workers
_OUTSIDE: list[str] | None = None


def watch_reads() -> None:
    """Record every read of an in-memory archive that asks for bytes outside it (the source
    refuses it, but a reader checks every offset against the file before it reads): a bug
    class of its own. Installed in the worker processes and ``--replay`` only."""
    global _OUTSIDE
    if _OUTSIDE is not None:
        return
    _OUTSIDE = found = []

    def watched(cls: Any) -> None:
        read = cls.read

        def checked(self: Any, offset: int, size: int) -> Any:
            if offset < 0 or size < 0 or offset + size > self.size:
                where = [f for f in traceback.extract_stack()[:-1] if "/msglc/" in f.filename.replace("\\", "/")]
                at = f"{os.path.basename(where[-1].filename)}:{where[-1].lineno}" if where else "?"
                found.append(f"read {offset}+{size} of a file of {self.size} bytes, in {at}")
            return read(self, offset, size)

        cls.read = checked

    watched(BufferSource)  # LazyReader(bytes)
    watched(StreamSource)  # LazyReader(io.BytesIO(...)): the "stream" stage


def _root_to_obj(r: msglc.LazyReader) -> Any:
    root = r.read()
    return root.to_obj() if isinstance(root, (LazyList, LazyDict, LazyArray)) else root


def _compare(stages: dict[str, StageResult], truth: Any, expected: list[Any], s: Sample) -> None:
    if truth is _NO_TRUTH:
        return
    truth_canon = s.truth_canon if truth is s.truth else canon(truth)
    for name in ("walk", "iter", "root_to_obj", "to_obj"):
        st = stages.get(name)
        if st is not None and st.error is None and not same(st.value, truth, truth_canon):
            st.changed = True
    st = stages.get("paths")
    if st is not None and st.error is None:
        for got, want in zip(st.value, expected, strict=True):
            if isinstance(want, type):
                st.changed |= not isinstance(got, _Raised)
            elif isinstance(got, _Raised):
                st.error = got.cls(f"a path of the original raised {got.cls.__name__}")
                st.where = "path lookup"
                break
            elif not same(got, want):
                st.changed = True
    wanted = [e for e in expected if not isinstance(e, type)]
    st = stages.get("many")
    if st is not None and st.error is None:
        st.changed = len(st.value) != len(wanted) or not all(map(same, st.value, wanted))
    st = stages.get("copy")
    if st is not None and st.error is None:
        st.changed = not all(same(v, truth, truth_canon) for v in st.value)
    st = stages.get("stream")
    if st is not None and st.error is None:
        many, root = st.value
        st.changed = len(many) != len(wanted) or not all(map(same, many, wanted))
        st.changed |= root is not MISSING and not same(root, truth, truth_canon)


def classify(s: Sample, mut: Mutation, stages: dict[str, StageResult], truth: Any) -> tuple[str, str]:
    """The outcome class of a case, and the stage and reason that decided it."""
    in_data = mut.region in ("data", "mixed-data")  # lazy reads do not checksum data bytes
    lookups: list[tuple[str, BaseException]] = []  # lookup errors msglc raised on purpose
    documented = False
    for name, st in stages.items():
        e = st.error
        if e is None:
            continue
        if isinstance(e, CaseTimeout):
            return "hang", f"{name}: timed out in {st.where}"
        if isinstance(e, MemoryError):
            return "memory", f"{name}: MemoryError in {st.where}"
        if isinstance(e, Inconsistent):
            st.changed = True
            continue
        if isinstance(e, CopyInvalid):
            continue
        if isinstance(e, MsglcError):
            documented = True
            continue
        if (
            isinstance(e, (KeyError, IndexError, TypeError))
            and name in LOOKUP_STAGES
            and (st.explicit or st.where == "path lookup")
        ):
            if truth is not _NO_TRUTH or name in ("walk", "iter"):  # paths need a truth to be wrong
                lookups.append((name, e))
            continue
        return "undocumented", f"{name}: {type(e).__name__} {brief(str(e))} in {st.where}"
    verify_ok = "verify" in stages and stages["verify"].error is None
    copied = stages.get("copy")
    if copied is not None and isinstance(copied.error, CopyInvalid) and verify_ok:  # (else it copied
        return "bad-copy", str(copied.error)  # what verify() refuses, which the copy's verify() finds)
    if copied is not None and copied.changed:  # a verified copy of other values: nothing excuses it
        return "bad-copy", "a verified copy holds other values"
    changed = [name for name, st in stages.items() if st.changed]
    if verify_ok and (changed or lookups):
        what = f"{changed[0]} changed" if changed else f"{lookups[0][0]}: {type(lookups[0][1]).__name__}"
        return "wrong-verify-passes", f"{what}, verify() passed"
    if not in_data:
        # (a path through an item read from a moved span may raise a lookup error instead); only
        # reads of one span are excused: a walk or iteration reads the span before it too
        one_span = all(name in SPAN_STAGES for name in [*changed, *(name for name, _ in lookups)])
        if (changed or lookups) and one_span and not verify_ok and moves_a_span(mut):
            what = f"{changed[0]} changed" if changed else f"{lookups[0][0]}: {type(lookups[0][1]).__name__}"
            return "span-crafted-toc", what
        if changed:
            return "wrong-outside-data", f"{changed[0]} changed"
        if lookups and not (mut.crafted == "toc" and all(isinstance(e, KeyError) for _, e in lookups)):
            name, e = lookups[0]
            return "wrong-outside-data", f"{name}: {type(e).__name__} {brief(str(e))}"
    if changed and mut.crafted == "data" and "to_obj" in changed:
        return "wrong-verify-passes", "to_obj() differs from the data it checked"
    if mut.crafted is None and stages["open"].error is None and not _benign(s, mut):
        if verify_ok:
            return "undetected-damage", "verify() passed on a damaged archive"
        if in_data and stages["to_obj"].error is None:
            return "undetected-damage", "to_obj() returned a value from damaged data"
    if changed or (lookups and in_data):
        return (
            "changed-in-data",
            f"{changed[0]} changed" if changed else f"{lookups[0][0]}: {type(lookups[0][1]).__name__}",
        )
    if lookups:
        return "lookup-crafted-toc", f"{lookups[0][0]}: KeyError"
    if verify_ok and documented and mut.crafted is not None:
        failing = next(name for name, st in stages.items() if st.error is not None)
        return "verify-passes-unreadable", f"{failing} raised"
    if documented:
        return "error", next(f"{n}: {type(st.error).__name__}" for n, st in stages.items() if st.error is not None)
    return "ok", ""


SPAN_STAGES = ("paths", "many", "stream")  # the stages that read a path's span alone
SPAN_EDIT = re.compile(r"toc (ListNode|SpanPage|PagedListNode) at \d+: offs\[\d+\]: ")


def moves_a_span(mut: Mutation) -> bool:
    """A crafted TOC whose one edit moved where a list's span (or page) starts: what a node
    alone answers (docs/reliability.md, "Crafted files"). A read of the items of one span
    checks them against that span's bytes alone, so a start moved into an item can give other
    items that frame exactly (the last byte of a uint16, a fixint; a list inside the item, where
    a path through it then raises a lookup error); ``verify()`` refuses it."""
    return mut.crafted == "toc" and SPAN_EDIT.match(mut.desc) is not None


def _benign(s: Sample, mut: Mutation) -> bool:
    """A change no reader depends on: bytes nothing refers to, a header end that names the
    end of the file, or compressed bytes that still decompress to the same data, TOC and
    dictionaries (a zstd stream has bits that do not change its output, and its checksum is
    of the output)."""
    if mut.region in ("free", "dead"):
        return True
    bad = mut.data
    if s.plain is not None and s.toc_plain is not None and mut.region in ("data", "toc", "tables"):
        with contextlib.suppress(Exception), msglc.LazyReader(bad) as r:
            lt = archive_of(r).opened.trailer  # 2.1: the TOC is framed too, and the dictionaries must be alike
            toc = bytes(archive_of(r).read(lt.toc_off, lt.toc_len)), (lt.root_pos, lt.root_len)
            dicts = [r.dictionary(d) for d in range(1, len(s.dict_content) + 1)]
            if r.protocol_raw_data() == s.plain and toc == s.toc_plain and dicts == s.dict_content:
                return True
    return (
        len(bad) == len(s.data)
        and bad[:10] == s.data[:10]
        and bad[16:] == s.data[16:]
        and int.from_bytes(bad[10:16], "little") == len(bad)
    )


def run_case(ctx: Context, case_id: str, timeout: float, keep_tb: bool = False) -> dict[str, Any]:
    """One case, under a soft timeout; the summary the parent aggregates."""
    start = time.perf_counter()
    try:
        s, kind, mut = make_case(ctx, case_id)
    except Exception as e:  # noqa: BLE001 - a harness error: reported, never hidden
        return {
            "id": case_id,
            "cls": "harness-error",
            "why": f"{type(e).__name__}: {e}",
            "sig": f"harness:{_frame_of(e)}",
            "elapsed": 0.0,
        }
    if timeout:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        cls, stages, why = evaluate(s, mut, keep_tb)
    except CaseTimeout:
        cls, stages, why = "hang", {}, "timed out between stages"
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.perf_counter() - start
    result = {
        "id": case_id,
        "cls": cls,
        "sample": s.name,
        "kind": kind,
        "desc": mut.desc,
        "region": mut.region,
        "why": why,
        "elapsed": elapsed,
    }
    result["sig"] = _signature(cls, kind, why, stages)
    if keep_tb:
        result["stages"] = {name: _stage_text(st) for name, st in stages.items()}
    return result


def _signature(cls: str, kind: str, why: str, stages: dict[str, StageResult]) -> str:
    """What tells one failure from another: the exception and the line that raised it, or
    the stage and kind of mutation."""
    if cls in ("undocumented", "hang", "memory", "valid-fails"):
        for name, st in stages.items():
            if st.error is not None and not isinstance(st.error, (MsglcError, Inconsistent)):
                return f"{cls}:{name}:{type(st.error).__name__}@{st.where}"
        return f"{cls}:{why}"
    if cls in ("ok", "error"):
        return cls
    if cls == "read-outside-file":
        return f"{cls}:{why.rsplit(' in ', 1)[-1]}:{kind}"
    if cls == "bad-copy":
        return f"{cls}:{why.split(':')[0]}:{kind}"
    return f"{cls}:{why.split(' ')[0]}:{kind}"


def _stage_text(st: StageResult) -> str:
    if st.error is not None:
        return st.tb or f"{type(st.error).__name__}: {st.error}"
    return ("CHANGED " if st.changed else "ok ") + brief(st.value)
