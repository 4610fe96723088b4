"""The msglc command: look inside archives, pull out values, convert, combine, verify.

    msglc info FILE                     format, sizes, threshold, TOC node counts, the root
    msglc ls FILE [PATH]                the children at PATH: type, length, encoded size
    msglc tree FILE [PATH] [--depth N]  the structure, from TOC nodes only
    msglc get FILE PATH [--format F]    the value at PATH as JSON (default), msgpack or repr
    msglc convert IN OUT                JSON, JSON Lines, msgpack <-> archive; archive -> archive
    msglc combine OUT IN... [--name N]  gather archives into one (a dict with --name, else a list)
    msglc verify FILE                   check everything; exit status 0 when intact

Errors are one line on stderr with exit status 1 (2 for bad arguments).
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

import msgspec

from msglc import (
    CorruptedError,
    FileInfo,
    LazyArray,
    LazyDict,
    LazyList,
    LazyReader,
    LazyWriter,
    MsglcError,
    __version__,
    combine,
    dump,
)
from msglc.cli.nested import json_text, msgpack_bytes, repr_text
from msglc.format.container import MAGIC
from msglc.format.legacy import MAGIC as LEGACY_MAGIC
from msglc.format.legacy import is_legacy
from msglc.format.numpy_ext import ext_hook
from msglc.io.atomic import atomic_file
from msglc.read.inspect import KINDS, NodeInfo
from msglc.read.paths import split_path

FORMATS = {
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".msgpack": "msgpack",
    ".mpk": "msgpack",
    ".mlc": "msglc",
    ".msglc": "msglc",
    ".msg": "msglc",  # the published msglc's customary extension: its archives are read (and converted) too
}


LAZY = (LazyDict, LazyList, LazyArray)  # the lazy parts of an archive


class CliError(Exception):
    """A problem to report in one line."""


@contextmanager
def progress(total: int, what: str) -> Iterator[Callable[[int], None]]:
    """A byte progress bar on a terminal (tqdm, when installed); nothing when piped."""
    bar = None
    if sys.stderr.isatty() and total >= 1 << 24:
        try:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="B", unit_scale=True, desc=what, file=sys.stderr, leave=False)
        except ImportError:
            pass
    try:
        yield (bar.update if bar is not None else lambda n: None)
    finally:
        if bar is not None:
            bar.close()


def type_of(value: Any) -> tuple[str, int | None]:
    """(type name, length or None) of a value as read from an archive."""
    if isinstance(value, (dict, LazyDict)):
        return "dict", len(value)
    if isinstance(value, (list, LazyList)):
        return "list", len(value)
    if isinstance(value, LazyArray) or type(value).__name__ == "ndarray":
        return f"array {value.dtype} {tuple(value.shape)}", value.size
    if isinstance(value, (str, bytes)):
        return type(value).__name__, len(value)
    return ("null" if value is None else type(value).__name__), None


def encoded_size(value: Any) -> int:
    return value.location().size if isinstance(value, LAZY) else len(_msgpack(value))


def json_default(value: Any) -> Any:
    """JSON for what JSON lacks: bytes as base64 strings, lazy parts read whole, NumPy arrays as
    nested lists whose items are numbers (long doubles as floats), [re, im] pairs (complex) and
    ISO 8601 strings (datetime64, timedelta64 as their numbers)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, LAZY):
        return value.to_obj()
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind in "Mm":  # NumPy's own text, exact at any unit
            return np.datetime_as_string(value).tolist() if value.dtype.kind == "M" else value.astype("int64").tolist()
        if value.dtype.kind == "f" and value.dtype.itemsize > 8:
            value = value.astype("f8")
        elif value.dtype.kind == "c" and value.dtype.itemsize > 16:
            value = value.astype("c16")
        return value.tolist()
    raise TypeError(f"a {type(value).__name__} has no JSON form")


def to_json(value: Any) -> str:
    """The value as one line of JSON (built whole first: nothing is printed if it fails)."""
    return json_text(to_plain(value), json_default) + "\n"


def to_plain(value: Any) -> Any:
    """Lazy parts read whole, also inside the list a slice path gives."""
    if isinstance(value, LAZY):
        return value.to_obj()
    if isinstance(value, list) and any(isinstance(v, LAZY) for v in value):
        return [to_plain(v) for v in value]
    return value


def write_json(value: Any, out: Any) -> None:
    out.write(to_json(value))


def open_reader(path: str) -> LazyReader:
    if not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    return LazyReader(path, cached=False)


def fmt_of(path: str, given: str | None) -> str:
    if given:
        return given
    ext = os.path.splitext(path)[1].lower()
    if ext in FORMATS:
        return FORMATS[ext]
    if is_archive_file(path):  # an archive, ours or the published msglc's, whatever its name
        return "msglc"
    known = ", ".join(sorted(set(FORMATS.values())))
    raise CliError(f"cannot tell the format of {path!r} from its extension; give it with --from/--to ({known})")


def is_archive_file(path: str) -> bool:
    """Does the file at ``path`` start as an msglc archive or one of the published msglc?"""
    try:
        with open(path, "rb") as f:
            head = f.read(len(LEGACY_MAGIC))
    except OSError:
        return False
    return head.startswith(MAGIC) or is_legacy(head)


def cmd_info(args: argparse.Namespace) -> None:
    with open_reader(args.file) as reader:
        info = reader.info()
        counts = dict.fromkeys(KINDS, 0)
        blocks = 0
        nodes = {node.position: node for _, _, node in reader.nodes()}  # each node once
        for node in nodes.values():
            counts[node.kind] += 1
            blocks += node.blocks
        kind, length = type_of(reader.read())
        free = info.free_space
        data = f"{info.data_size:,} bytes (plain msgpack)"
        if info.compression:
            ratio = info.data_size / info.stored_data_size
            stored = f"{info.stored_data_size:,} bytes of {info.compression} frames"
            data = f"{info.data_size:,} bytes of msgpack in {stored} ({ratio:.2f}x)"
        toc = f"{info.toc_size:,} bytes" + (f" after {free:,} bytes of free space (left by append)" if free else "")
        root = kind + (f" of {length:,}" if length is not None else "")
        root += " (small: read whole)" if info.root is None and not isinstance(reader.read(), LAZY) else ""
        version = "{}.{}".format(*info.version)
        if info.format != "msglc":
            version = f"{info.format}: an archive of the published msglc, read as it is; to convert it: " + (
                f"msglc convert {args.file} NEW.mlc"
            )
        lines = [
            ("format", version),
            ("file", f"{info.file_size:,} bytes"),
            ("data", data),
            ("TOC", toc),
            ("threshold", f"{info.threshold:,} bytes"),
            ("root", root),
            ("lazy nodes", ", ".join(f"{n} {k}" for k, n in counts.items()) + f"; {blocks} blocks"),
        ]
        if info.format != "msglc":  # the published msglc records neither its threshold nor nodes of ours
            lines = [line for line in lines if line[0] not in ("threshold", "lazy nodes")]
        for label, value in lines:
            print(f"{label:<12}{value}")


def cmd_ls(args: argparse.Namespace) -> None:
    with open_reader(args.file) as reader:
        value = reader[args.path]
        if isinstance(value, (dict, LazyDict)):
            entries: Iterator[tuple[Any, Any]] = iter(value.items())
        elif isinstance(value, (list, LazyList)):
            entries = enumerate(value)
        else:
            kind, length = type_of(value)
            raise CliError(f"{args.path or '/'} is a {kind}, not a dict or a list")
        for shown, (name, child) in enumerate(entries):
            if shown == args.limit:
                print(f"... {len(value) - shown:,} more (--limit)")
                break
            kind, length = type_of(child)
            print(f"{kind:<24}{'' if length is None else f'{length:,}':>12}{encoded_size(child):>14,}  {name}")


def cmd_tree(args: argparse.Namespace) -> None:
    with open_reader(args.file) as reader:
        value = reader[args.path]
        label = "/" + "/".join(map(str, split_path(args.path)))
        if isinstance(value, list) and any(isinstance(v, LAZY) for v in value):
            raise CliError("tree shows one value: give an index, not a slice")
        kind, length = type_of(value)
        if not isinstance(value, LAZY):
            of = "" if length is None else f" of {length:,}"
            print(f"{label}  {kind}{of}, {encoded_size(value):,} bytes (small: no TOC node)")
            return
        if not value.location().node_size:  # a row of a fixed-stride list or array: no node of its own
            size = encoded_size(value)
            print(f"{label}  {kind} of {length:,}, {size:,} bytes (part of its parent's fixed-stride node)")
            return
        for depth, name, node in reader.nodes(args.path, args.depth):
            print(f"{'  ' * depth}{name if depth else label}  {describe(node)}, {node.encoded_size:,} bytes")


def describe(node: NodeInfo) -> str:
    if node.kind == "fixed-stride list":
        return f"fixed-stride list {' x '.join(f'{n:,}' for n in node.dims)} of {node.item_size}-byte items"
    if node.kind == "array":
        return f"NumPy array, {node.length:,} bytes of elements"
    if node.kind == "dict":
        return f"dict of {node.length:,}"
    return f"{node.kind} of {node.length:,}, {node.blocks} blocks"


def cmd_get(args: argparse.Namespace) -> None:
    with open_reader(args.file) as reader:
        value = reader[args.path]
        if args.format == "msgpack":
            data = value.protocol_raw_data() if isinstance(value, LAZY) else _msgpack(to_plain(value))
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        elif args.format == "repr":
            print(repr_text(to_plain(value)))
        else:
            sys.stdout.write(to_json(value))


def _msgpack(value: Any) -> bytes:
    return msgpack_bytes(value)


def cmd_convert(args: argparse.Namespace) -> None:
    src, dst = fmt_of(args.input, args.from_), fmt_of(args.output, args.to)
    if not os.path.exists(args.input):
        raise CliError(f"no such file: {args.input}")
    if os.path.exists(args.output) and os.path.samefile(args.input, args.output):
        raise CliError(f"the output {args.output!r} is the input: write to another file")
    if src != "msglc" and dst != "msglc":
        raise CliError(f"convert reads or writes an archive: {src} -> {dst} is neither")
    options: dict[str, Any] = {} if args.threshold is None else {"small_obj_optimization_threshold": args.threshold}
    if args.compression is not None:
        if dst != "msglc":
            raise CliError(f"--compression is for writing an archive, not {dst}")
        options.update(args.compression)
    size = os.path.getsize(args.input)
    if src == dst:  # an archive repacked: copied as it is when nothing changes, else rewritten
        with open_reader(args.input) as reader:
            dump(args.output, reader, **options)
        return
    if dst == "msglc":
        if src == "jsonl":
            with progress(size, "convert") as step, LazyWriter(args.output, **options) as writer:
                writer.write(_json_lines(args.input, step))
            return
        with open(args.input, "rb") as f:
            data = f.read()  # JSON and msgpack documents are read whole: they need memory for it
        obj = _decode_json(data, args.input) if src == "json" else _decode_msgpack(data, args.input)
        dump(args.output, obj, **options)
        return
    with open_reader(args.input) as reader:
        if dst == "msgpack":  # the data section is the msgpack: copied (its checksum checked), not decoded
            with progress(reader.info().data_size, "convert") as step, atomic_file(args.output, False) as out:
                try:
                    for chunk in reader.iter_protocol_raw_data(step):
                        out.write(chunk)
                except CorruptedError:
                    raise CliError(f"{args.input}: data section checksum mismatch; nothing was written") from None
            return
        with atomic_file(args.output, False) as raw:
            text = _TextOut(raw)
            if dst == "jsonl":
                root = reader.read()
                if not isinstance(root, (list, LazyList)):
                    raise CliError("JSON Lines holds a list: the archive's root is not one")
                for item in root:
                    write_json(item.to_obj() if isinstance(item, LAZY) else item, text)
            else:
                write_json(reader.to_obj(), text)


class _TextOut:
    """Text writes to a binary file, UTF-8."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw

    def write(self, text: str) -> None:
        self.raw.write(text.encode("utf-8"))


def _decode_json(data: bytes, where: str) -> Any:
    """JSON, also with the NaN/Infinity tokens msglc writes for non-finite floats (as Python's
    json module reads them) and a UTF-8 byte order mark."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        error = e
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise CliError(f"{where} is not valid json: {error}") from None


def _decode_msgpack(data: bytes, where: str) -> Any:
    """msgpack, with msglc's NumPy array extension values read back as arrays."""
    try:
        return msgspec.msgpack.Decoder(ext_hook=ext_hook).decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as e:
        raise CliError(f"{where} is not valid msgpack: {e}") from None


def _json_lines(path: str, step: Callable[[int], None]) -> Iterator[Any]:
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            step(len(line))
            if line.strip():
                try:
                    yield _decode_json(
                        line.removeprefix(b"\xef\xbb\xbf") if number == 1 else line, f"{path}, line {number}"
                    )
                except CliError as e:
                    raise CliError(str(e).replace("is not valid json", "is not valid JSON")) from None


def cmd_combine(args: argparse.Namespace) -> None:
    if args.name and len(args.name) != len(args.inputs):
        raise CliError(f"{len(args.name)} --name for {len(args.inputs)} inputs: give one per input, or none for a list")
    for path in args.inputs:
        if not os.path.exists(path):
            raise CliError(f"no such file: {path}")
    names = args.name or [None] * len(args.inputs)
    total = sum(os.path.getsize(p) for p in args.inputs)
    with progress(total, "combine") as step:
        infos = [FileInfo(p, n) for p, n in zip(args.inputs, names, strict=True)]
        combine(args.output, infos, progress=step, **(args.compression or {}))


def cmd_verify(args: argparse.Namespace) -> None:
    with open_reader(args.file) as reader:
        with progress(reader.info().data_size, "verify") as step:
            reader.verify(progress=step)
        print(f"{args.file}: intact")


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line too (exit status 2), with a pointer to --help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="msglc", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    top.add_argument("--version", action="version", version=f"msglc {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def add(
        name: str, run: Callable[[argparse.Namespace], None], help: str, description: str = ""
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name, help=help, description=description or help, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        p.set_defaults(run=run)
        return p

    p = add("info", cmd_info, "format version, sizes, threshold, TOC node counts and the root of an archive")
    p.add_argument("file")
    path_help = (
        'a path inside the archive, like "runs/42/energy" or "runs/-1" (a path that starts with "-": put -- before it)'
    )
    p = add("ls", cmd_ls, "list the children at PATH: type, length, encoded size, name")
    p.add_argument("file")
    p.add_argument("path", nargs="?", default="", help=path_help)
    p.add_argument("--limit", type=_count(1), default=1000, help="show at most this many children (default 1000)")
    p = add("tree", cmd_tree, "the structure of the lazy parts under PATH, read from TOC nodes only")
    p.add_argument("file")
    p.add_argument("path", nargs="?", default="", help=path_help)
    p.add_argument("--depth", type=_count(0), default=None, help="levels to show below PATH (0: PATH alone)")
    p = add(
        "get",
        cmd_get,
        "print the value at PATH",
        "Print the value at PATH. JSON (the default): bytes become base64 strings, int dict keys "
        "become strings, NaN and infinities are written as NaN/Infinity/-Infinity (as Python's "
        "json module does), NumPy arrays become nested lists. msgpack: the value's exact bytes. "
        "repr: Python's repr.",
    )
    p.add_argument("file")
    p.add_argument("path", help=path_help)
    p.add_argument("--format", choices=("json", "msgpack", "repr"), default="json")
    p = add(
        "convert",
        cmd_convert,
        "JSON, JSON Lines or msgpack <-> archive, chosen by extension or --from/--to",
        "Convert between an archive (.mlc) and JSON (.json), JSON Lines (.jsonl, .ndjson) or plain "
        "msgpack (.msgpack, .mpk). JSON Lines inputs are streamed (any size; the archive's root is "
        "a list of the lines). JSON and msgpack inputs are read whole and need memory for the "
        "whole document. An archive becomes msgpack by copying its data section; JSON Lines "
        "output writes one line per item of the root list, read lazily. An archive converted to "
        "an archive is repacked with --threshold and --compression (copied as it is when neither "
        "changes anything).",
    )
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--from", dest="from_", choices=("json", "jsonl", "msgpack", "msglc"))
    p.add_argument("--to", choices=("json", "jsonl", "msgpack", "msglc"))
    p.add_argument(
        "--threshold", type=int, default=None, help="small_obj_optimization_threshold of the archive written"
    )
    _compression_option(
        p,
        "compression of the archive written (zstd level 1-22, default 3); an archive converted to an "
        "archive keeps its own unless this is given",
    )
    p = add("combine", cmd_combine, "gather archives into one without decoding them: a dict with --name, else a list")
    p.add_argument("output")
    p.add_argument("inputs", nargs="+")
    p.add_argument("--name", action="append", help="the key of each input, in order (repeat once per input)")
    _compression_option(
        p,
        "compression of the result (default: zstd when every input is compressed, else none); "
        "compressed inputs' frames are copied, not recompressed",
    )
    p = add("verify", cmd_verify, "check the whole archive; exit status 0 when intact, 1 with what is wrong")
    p.add_argument("file")
    return top


def _compression_option(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--compression", type=_compression, default=None, metavar="none|zstd[:LEVEL]", help=help)


def _compression(text: str) -> dict[str, Any]:
    """``none``, ``zstd`` or ``zstd:LEVEL`` as ``dump`` options."""
    name, colon, level = text.partition(":")
    if name == "none" and not colon:
        return {"compression": None}
    if name == "zstd" and (not colon or level.isdigit() and 1 <= int(level) <= 22):
        return {"compression": "zstd", **({"compression_level": int(level)} if level else {})}
    raise argparse.ArgumentTypeError(f"expected none, zstd or zstd:LEVEL (LEVEL 1 to 22), not {text!r}")


def _count(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"expected a number of at least {least}, got {value}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.run(args)
    except KeyboardInterrupt:
        print(f"msglc {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into head: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # one line, never a traceback
        print(f"msglc {args.command}: {_message(e)}", file=sys.stderr)
        return 1
    return 0


def _message(e: Exception) -> str:
    if isinstance(e, (CliError, MsglcError)):
        return str(e)
    if isinstance(e, KeyError):
        return str(e.args[0]) if e.args else "key not found"
    if isinstance(e, OSError):
        return f"{e.strerror or e}: {e.filename}" if e.filename else str(e)
    return f"{type(e).__name__}: {e}"
