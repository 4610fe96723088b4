"""The cross-implementation tests' two sides: what the Python package and command give for a
path, and what the JavaScript reader and ``msglc-js`` give (one node process reads many paths,
js/test/support/read-paths.mjs)."""

from __future__ import annotations

import base64
import json
import math
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_msglc

import msglc
from msglc import LazyArray, LazyDict, LazyList, to_obj
from msglc.cli.commands import LAZY, to_json
from msglc.cli.nested import msgpack_bytes

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "js"
READ_PATHS = JS / "test" / "support" / "read-paths.mjs"
BUILD = "(cd js && npm ci && npm run build)"


def require_dist() -> None:
    """The JS package must be built (the README's test command does it before pytest)."""
    for name in ("index.js", "cli/main.js", "cli/msgpack.js"):
        if not (JS / "dist" / name).exists():
            pytest.fail(f"js/dist/{name} is missing: build the JavaScript package first: {BUILD}")


def js_read(
    target: str | Path, paths: list[str], *flags: str, timeout: float = 60
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each path's answer from the JS side (see read-paths.mjs), and the closing stats line."""
    require_dist()
    proc = subprocess.run(
        ["node", str(READ_PATHS), *flags, str(target)],
        input=json.dumps(paths),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode == 3:
        pytest.fail(proc.stderr)
    assert proc.returncode == 0, f"read-paths.mjs crashed (status {proc.returncode}):\n{proc.stderr[-4000:]}"
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == len(paths) + 1, proc.stderr[-2000:]
    return lines[:-1], lines[-1]


def js_read_many(
    archives: Sequence[str | Path], paths: list[str] | list[list[str]], *flags: str, timeout: float = 120
) -> list[dict[str, Any]]:
    """Each archive's {"lines", "stats", "opened"} from one node process; ``paths``: the same
    for every archive, or a list of paths per archive."""
    require_dist()
    if paths and isinstance(paths[0], list):
        request: dict[str, Any] = {
            "jobs": [{"archive": str(a), "paths": p} for a, p in zip(archives, paths, strict=True)]
        }
    else:
        request = {"archives": [str(a) for a in archives], "paths": paths}
    proc = subprocess.run(
        ["node", str(READ_PATHS), *flags],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"read-paths.mjs crashed (status {proc.returncode}):\n{proc.stderr[-4000:]}"
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == len(archives) + 1, proc.stderr[-2000:]
    return lines[:-1]


# ---- the two command lines ---------------------------------------------------------------------

MAIN = JS / "dist" / "cli" / "main.js"
RUN_CLI = JS / "test" / "support" / "run-cli.mjs"


def js_cli(*args: str) -> tuple[int, bytes, str]:
    require_dist()
    proc = subprocess.run(["node", str(MAIN), *args], capture_output=True, timeout=60, check=False, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stderr.decode()


def js_cli_many(commands: Sequence[Sequence[str]]) -> list[tuple[int, bytes, str]]:
    """``js_cli`` of each command, from one node process (js/test/support/run-cli.mjs)."""
    require_dist()
    proc = subprocess.run(
        ["node", str(RUN_CLI)], input=json.dumps(commands).encode(), capture_output=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, f"run-cli.mjs crashed (status {proc.returncode}):\n{proc.stderr.decode()[-4000:]}"
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == len(commands), proc.stderr.decode()[-2000:]
    return [(line["status"], base64.b64decode(line["stdout"]), line["stderr"]) for line in lines]


def py_cli(*args: str) -> tuple[int, bytes, str]:
    return run_msglc(*args, cwd=ROOT)


# ---- the Python side ---------------------------------------------------------------------------

PY_ERRORS = {KeyError: "KeyNotFoundError", IndexError: "IndexError", TypeError: "TypeError", ValueError: "ValueError"}


def cli_answer(reader: msglc.LazyReader, path: str) -> dict[str, Any]:
    """What ``msglc get`` prints for ``path``: {"msgpack": bytes, "json": text}, or
    {"error": class} (KeyError as the JS name KeyNotFoundError)."""
    try:
        value = reader[path]
    except (KeyError, IndexError, TypeError, ValueError) as e:
        return {"error": next(n for c, n in PY_ERRORS.items() if isinstance(e, c))}
    raw = value.protocol_raw_data() if isinstance(value, LAZY) else msgpack_bytes(to_obj(value))
    try:
        text = to_json(value)[:-1]
    except (TypeError, ValueError):
        text = None
    return {"msgpack": raw, "json": text}


def plain_answer(value: Any) -> dict[str, Any]:
    """The re-encoded form (``msglc get`` of a value read whole) of a value at any depth."""
    return {"msgpack": msgpack_bytes(to_obj(value)), "json": to_json(value)[:-1]}


def same_cli(py: dict[str, Any], js: dict[str, Any]) -> str | None:
    """None when the two command lines agree, else what differs."""
    if "error" in py or "error" in js:
        if py.get("error") == js.get("error"):
            return None
        return f"Python {py.get('error', 'value')}, JS {js.get('error', 'value')}: {js.get('message', '')}"
    got = base64.b64decode(js["msgpack"])
    if got != py["msgpack"]:
        return f"msgpack differs: Python {py['msgpack'][:80].hex()}..., JS {got[:80].hex()}..."
    if py["json"] is not None and (js["json"] is None or not same_json(json.loads(js["json"]), json.loads(py["json"]))):
        return f"JSON differs: Python {py['json'][:200]}, JS {str(js['json'])[:200]}"
    return None


def same_json(a: Any, b: Any) -> bool:
    """Equal parsed JSON, NaN equal to NaN, and of the same types (1 is not 1.0 here)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# ---- paths -------------------------------------------------------------------------------------


def _seg(key: Any) -> str | None:
    """The path segment that names dict key ``key``, or None when no str path can."""
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        return None
    text = str(key)
    if not text or "/" in text:
        return None
    if isinstance(key, str) and text.lstrip("-").isdigit():
        return None  # an int-like str key: ambiguous with an int key, skipped
    return text


def all_paths(reader: msglc.LazyReader, limit: int = 1_000_000, per_container: int | None = None) -> list[str]:
    """Paths to every value (up to ``limit`` paths; ``per_container`` children of each)."""
    out: list[str] = [""]
    stack: list[tuple[str, Any]] = [("", reader.read())]
    while stack and len(out) < limit:
        path, value = stack.pop()
        children: list[tuple[str, Any]] = []
        if isinstance(value, (dict, LazyDict)):
            for i, (k, v) in enumerate(value.items()):
                if per_container is not None and i >= per_container:
                    break
                seg = _seg(k)
                if seg is not None:
                    children.append((seg, v))
        elif isinstance(value, (list, LazyList)):
            n = len(value)
            picks = range(n) if per_container is None or n <= per_container else range(0, n, max(1, n // per_container))
            children = [(str(i), value[i]) for i in picks]
            if n:
                out.append(f"{path}/-1".lstrip("/"))
                out.append(f"{path}/0:{min(n, 3)}".lstrip("/"))
        elif (isinstance(value, LazyArray) or type(value).__name__ == "ndarray") and value.ndim and value.shape[0]:
            out.append(f"{path}/0".lstrip("/"))
            out.append(f"{path}/-1".lstrip("/"))
            if value.ndim > 1 and value.shape[1]:
                out.append(f"{path}/0/{value.shape[1] - 1}".lstrip("/"))
                out.append(f"{path}/1:3/0".lstrip("/"))
        for seg, v in children:
            p = f"{path}/{seg}" if path else seg
            out.append(p)
            stack.append((p, v))
    return out[:limit]


# ---- values of the library API -----------------------------------------------------------------


def untag(x: Any) -> Any:
    """A value read-paths.mjs printed in tagged JSON, as comparable Python values."""
    if isinstance(x, list):
        return [untag(v) for v in x]
    if not isinstance(x, dict):
        return x
    (tag, v), *_ = x.items()
    if tag == "$float":
        return float(v.replace("Infinity", "inf"))
    if tag == "$int":
        return int(v)
    if tag == "$bytes":
        return base64.b64decode(v)
    if tag == "$date":
        return ("date", v)
    if tag in ("$map", "$obj"):
        return {_hashable(untag(k)): untag(val) for k, val in v}
    if tag == "$nd":
        dtype, shape, data = v
        data = [untag(d) for d in data] if not isinstance(data, dict) else base64.b64decode(data["$raw"])
        return ("ndarray", _descr_text(dtype), tuple(shape), data)
    return x


def _descr_text(descr: str) -> str:
    """A dtype descr in one spelling (a structured one as compact JSON)."""
    return json.dumps(json.loads(descr), separators=(",", ":")) if descr.startswith("[") else descr


API_ERRORS = {
    KeyError: {"KeyNotFoundError"},
    IndexError: {"IndexOutOfRangeError", "RangeError"},
    TypeError: {"TypeError"},
    ValueError: {"RangeError", "TypeError"},
}


def api_expected(reader: msglc.LazyReader, path: str) -> tuple[str, Any]:
    """("value", comparable value) or ("error", Python exception class)."""
    try:
        return "value", py_comparable(reader[path])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        return "error", type(e)


def same_api(expected: tuple[str, Any], js: dict[str, Any]) -> str | None:
    """None when ``reader.read(path)`` gave what Python's reader gives."""
    kind, want = expected
    if kind == "error":
        allowed = next(v for c, v in API_ERRORS.items() if issubclass(want, c))
        got = js.get("apiError", {}).get("error")
        return None if got in allowed else f"Python {want.__name__}, JS {got or 'a value'}"
    if "apiError" in js:
        return f"Python a value, JS {js['apiError']}"
    got = untag(js["value"])
    return None if same_value(want, got) else f"values differ: Python {str(want)[:200]}, JS {str(got)[:200]}"


def _hashable(x: Any) -> Any:
    return tuple(_hashable(v) for v in x) if isinstance(x, list) else x


class Alt:
    """Forms a JS value may take for one Python value (JavaScript has no NumPy scalars and
    no float16 array): equal to any of them is equal."""

    def __init__(self, *forms: Any) -> None:
        self.forms = forms

    def __repr__(self) -> str:
        return f"Alt{self.forms!r}"


def _ndarray_form(x: Any) -> Any:
    import numpy as np

    # numpy's stubs say a list of fields, but a dtype without fields gives a str ("<f8")
    given: object = np.lib.format.dtype_to_descr(x.dtype)
    descr = _descr_text(given if isinstance(given, str) else json.dumps(given))
    shape = tuple(x.shape)
    native = x.astype(x.dtype.newbyteorder("=")) if x.dtype.byteorder not in ("=", "|") else x
    raw = np.ascontiguousarray(x).tobytes()
    half = x.dtype.kind == "f" and x.dtype.itemsize == 2
    if x.dtype.kind in "biuf" and x.dtype.itemsize <= 8 and not half:
        return ("ndarray", descr, shape, [py_comparable(v) for v in native.ravel().tolist()])
    if half:  # raw bytes (as documented), or the bits in a Uint16Array
        return Alt(("ndarray", descr, shape, raw), ("ndarray", descr, shape, native.view("u2").ravel().tolist()))
    if x.dtype.kind == "c" and x.dtype.itemsize <= 16:  # raw bytes, or (re, im) pairs in a float array
        pairs = native.view(f"f{x.dtype.itemsize // 2}").ravel().tolist()
        return Alt(("ndarray", descr, shape, raw), ("ndarray", descr, shape, pairs))
    if x.dtype.kind in "Mm":  # raw bytes, or the int64 counts in a BigInt64Array
        return Alt(("ndarray", descr, shape, raw), ("ndarray", descr, shape, native.view("i8").ravel().tolist()))
    return ("ndarray", descr, shape, raw)


def py_comparable(x: Any) -> Any:
    """A Python value (``to_obj``) in the form ``untag`` gives the JS one."""
    import numpy as np

    if isinstance(x, (LazyDict, LazyList, LazyArray)):
        x = x.to_obj()
    if isinstance(x, dict):
        return {_hashable(py_comparable(k)): py_comparable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [py_comparable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _ndarray_form(x)
    if isinstance(x, np.generic):  # a NumPy scalar: its plain value, or a 0-d array
        return Alt(py_comparable(x.item()), _ndarray_form(np.asarray(x)))
    if hasattr(x, "timestamp") and hasattr(x, "tzinfo"):
        return ("date", math.floor(x.timestamp() * 1000))
    return x


def _flexible_scalar(descr: str, raw: object) -> str | bytes | None:
    """The str or bytes a 0-d ``U`` or ``S`` array holds (NumPy's scalar: trailing NULs
    dropped), else None."""
    if not isinstance(raw, bytes):
        return None
    if descr[1:2] == "U":
        return raw.decode("utf-32-be" if descr[0] == ">" else "utf-32-le").rstrip("\0")
    if descr[1:2] == "S":
        return raw.rstrip(b"\0")
    return None


def same_value(py: Any, js: Any) -> bool:
    """Equal, with NaN equal to NaN and ints equal to integral floats (JS has one number)."""
    if isinstance(py, Alt):
        return any(same_value(form, js) for form in py.forms)
    if isinstance(py, (str, bytes)) and isinstance(js, tuple) and js[0] == "ndarray" and js[2] == ():
        return py == _flexible_scalar(js[1], js[3])
    if isinstance(py, float) and isinstance(js, (int, float)) and not isinstance(js, bool):
        return (math.isnan(py) and math.isnan(js)) or py == float(js)
    if isinstance(py, dict) and isinstance(js, dict):
        return len(py) == len(js) and all(k in js and same_value(v, js[k]) for k, v in py.items())
    if isinstance(py, (list, tuple)) and isinstance(js, (list, tuple)):
        return len(py) == len(js) and all(same_value(a, b) for a, b in zip(py, js, strict=True))
    return bool(py == js)


def random_paths(reader: msglc.LazyReader, rng: Any, n: int) -> list[str]:
    """``n`` paths: most of them to values there are, some missing (keys, indices, deeper)."""
    there = all_paths(reader, limit=20 * n, per_container=40)
    picks = rng.sample(there, min(n, len(there)))
    out = []
    for p in picks:
        r = rng.random()
        if r < 0.06:
            p = f"{p}/no-such-key".lstrip("/")
        elif r < 0.1:
            p = f"{p}/{rng.choice([10**6, -(10**6), 3])}".lstrip("/")
        out.append(p)
    return out


# ---- both sides at many paths -------------------------------------------------------------------

# an archive, its paths, and the Python side's answers at each: the command's, the library's
Expected = tuple[Path, list[str], list[dict[str, Any]], list[tuple[str, Any]]]


def expected_at(archive: Path, choose: Callable[[msglc.LazyReader], list[str]]) -> Expected:
    """The paths ``choose`` picks in ``archive`` and what the Python side answers at each."""
    with msglc.LazyReader(str(archive)) as r:
        paths = choose(r)
        return archive, paths, [cli_answer(r, p) for p in paths], [api_expected(r, p) for p in paths]


def differences(
    plan: list[Expected], answers: list[dict[str, Any]], name: Callable[[Path], str]
) -> tuple[list[str], int]:
    """Each path whose JS answer (``js_read_many --api``) differs from Python's, named by
    ``name(archive)``, and how many paths were compared."""
    problems: list[str] = []
    total = 0
    for (archive, paths, cli, api), got in zip(plan, answers, strict=True):
        assert "open" not in got, f"{archive.name} does not open: {got['open']}"
        for p, want_cli, want_api, have in zip(paths, cli, api, got["lines"], strict=True):
            total += 1
            diff = same_cli(want_cli, have) or same_api(want_api, have)
            if diff:
                problems.append(f"{name(archive)} {p!r}: {diff}")
    return problems, total
