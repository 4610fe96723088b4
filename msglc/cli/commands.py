"""The msglc command: look inside archives, pull out values, convert, combine, verify.

    msglc info FILE                     format, sizes, threshold, TOC node counts, the root
    msglc ls FILE [PATH]                the children at PATH: type, length, encoded size
    msglc tree FILE [PATH] [--depth N]  the structure, from TOC nodes only
    msglc get FILE PATH [--format F]    the value at PATH as JSON (default), msgpack or repr
    msglc convert IN OUT                JSON, JSON Lines, msgpack <-> archive; archive -> archive
    msglc convert IN... --out-dir DIR   many files (or folders of them) in one run
    msglc combine OUT IN...             gather archives (or folders of them) into one: a dict
                                        keyed by file stems, --name N each, or --list
    msglc verify FILE                   check everything; exit status 0 when intact
    msglc view FILE [--port N]          look at it in the browser (served on 127.0.0.1)

What convert and combine accept as OUTPUT: OUTPUT_RULE below (shown by --help).

Errors are one line on stderr with exit status 1 (2 for bad arguments).
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

import msgspec

from msglc import (
    Config,
    CorruptedError,
    FileInfo,
    LazyArray,
    LazyDict,
    LazyList,
    LazyReader,
    LazyWriter,
    MsglcError,
    NotAnArchiveError,
    __version__,
    combine,
    dump,
    to_obj,
)
from msglc.cli.batch import folder_files, refuse_repeated, stem
from msglc.cli.errors import CliError, UsageError
from msglc.cli.hints import convert_hint, missing_key_hint
from msglc.cli.nested import json_text, msgpack_bytes, repr_text
from msglc.cli.view import add_arguments as add_view_arguments
from msglc.cli.view import cmd_view
from msglc.format.layout import MAGIC
from msglc.format.legacy import MAGIC as LEGACY_MAGIC
from msglc.format.legacy import is_legacy
from msglc.format.numpy_ext import ext_hook
from msglc.io.atomic import atomic_file
from msglc.io.names import RemotePath, in_process, resolve_name
from msglc.read.inspect import KINDS, NodeInfo
from msglc.read.paths import split_path
from msglc.util.optional import loaded_numpy

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
EXTENSION = {"msglc": ".mlc", "json": ".json", "jsonl": ".jsonl", "msgpack": ".msgpack"}  # of outputs named here
ARCHIVE_EXTENSIONS = [ext for ext, fmt in FORMATS.items() if fmt == "msglc"]


LAZY = (LazyDict, LazyList, LazyArray)  # the lazy parts of an archive

OUTPUT_RULE = """\
OUTPUT is a local file, written atomically: its directory must exist, and it may be neither a
directory nor one of the inputs, nor a file without write permission (chmod a-w protects a
result). It may also be the URL of an fsspec file system that keeps what is written after msglc
exits (file://, s3://, gs://, ...; its package installed). Refused: memory:// (its files end
with the process) and "-" (the output is a file, not standard output; msglc get FILE PATH
prints a value, and ./- names a file called "-")."""


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
    np = loaded_numpy()
    if np is not None and isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind in "Mm":  # NumPy's own text, exact at any unit
            if value.dtype.kind == "m":
                return value.astype("int64").tolist()
            # datetime_as_string reads the raw bytes in the host's order, whatever the dtype's
            return np.datetime_as_string(value.astype(value.dtype.newbyteorder("="))).tolist()
        if value.dtype.kind == "f" and value.dtype.itemsize > 8:
            value = value.astype("f8")
        elif value.dtype.kind == "c" and value.dtype.itemsize > 16:
            value = value.astype("c16")
        return value.tolist()
    raise TypeError(f"a {type(value).__name__} has no JSON form")


def to_json(value: Any, indent: int | None = None) -> str:
    """The value as one line of JSON (at any depth), or indented by ``indent`` spaces a level
    (built whole first: nothing is printed if it fails)."""
    if indent is None:
        return json_text(to_obj(value), json_default) + "\n"
    try:
        return json.dumps(to_obj(value), default=json_default, indent=indent) + "\n"
    except RecursionError:
        raise CliError("the value is nested too deeply to indent: without --indent it is one line of JSON") from None


def write_json(value: Any, out: Any) -> None:
    out.write(to_json(value))


def open_reader(path: str) -> LazyReader:
    if not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    try:
        return LazyReader(path, cached=False)
    except NotAnArchiveError as e:
        raise CliError(convert_hint(path) or f"{path}: {e}") from None


def read_path(reader: LazyReader, path: str) -> Any:
    """``reader[path]``; a key that is not there is reported with the nearest keys there are."""
    try:
        return reader[path]
    except KeyError as e:
        hint = missing_key_hint(reader.read(), path)
        if not hint:
            raise
        raise CliError(_message(e) + hint) from None


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
            (
                "file",
                f"{info.file_size:,} bytes"
                + (f" (then {info.slack:,} bytes of slack left by append)" if info.slack else ""),
            ),
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
        value = read_path(reader, args.path)
        if isinstance(value, (dict, LazyDict)):
            entries: Iterator[tuple[Any, Any]] = iter(value.items())
        elif isinstance(value, (list, LazyList)):
            entries = enumerate(value)
        else:
            kind, length = type_of(value)
            raise CliError(f"{args.path or '/'} is a {kind}, not a dict or a list")
        print(f"{'TYPE':<24}{'LENGTH':>12}{'BYTES':>14}  NAME")
        for shown, (name, child) in enumerate(entries):
            if shown == args.limit:
                print(f"... {len(value) - shown:,} more (--limit)")
                break
            kind, length = type_of(child)
            print(f"{kind:<24}{'' if length is None else f'{length:,}':>12}{encoded_size(child):>14,}  {name}")


def cmd_tree(args: argparse.Namespace) -> None:
    with open_reader(args.file) as reader:
        value = read_path(reader, args.path)
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
        held = None  # each line waits for the next, which tells whether its children are listed
        for row in reader.nodes(args.path, args.depth):
            if held is not None:
                print(tree_line(*held, label, args.depth, listed=row[0] == held[0] + 1))
            held = row
        if held is not None:
            print(tree_line(*held, label, args.depth, listed=False))


def tree_line(depth: int, name: str, node: NodeInfo, label: str, max_depth: int | None, listed: bool) -> str:
    """One node of ``msglc tree``, with how many of its children the lines below it list."""
    line = f"{'  ' * depth}{name if depth else label}  {node_text(node)}, {node.encoded_size:,} bytes"
    return line + unlisted(node, listed, max_depth is not None and depth >= max_depth)


def unlisted(node: NodeInfo, listed: bool, at_depth: bool) -> str:
    """What the tree leaves out of a list or dict: its small children, which have no node
    (they are read whole, in their block or with their parent), and, below --depth, the rest.
    Nothing when every child is listed; fixed-stride lists and arrays have no children."""
    if node.kind not in ("list", "dict", "hash-indexed dict"):
        return ""
    shown = node.children if listed else 0
    if shown == node.length:
        return ""
    note = f"; {shown:,} of {node.length:,} shown"
    if node.children and not listed:  # (a node several parents share is expanded under the first)
        note += " (--depth)" if at_depth else " (listed above)"
    small = node.length - node.children
    if small:
        nouns = ("item", "items") if node.kind == "list" else ("entry", "entries")
        note += f"; {small:,} small {nouns[small != 1]} read whole"
    return note


def node_text(node: NodeInfo) -> str:
    if node.kind == "fixed-stride list":
        return f"fixed-stride list {' x '.join(f'{n:,}' for n in node.dims)} of {node.item_size}-byte items"
    if node.kind == "array":
        return f"NumPy array, {node.length:,} bytes of elements"
    if node.kind == "dict":
        return f"dict of {node.length:,}"
    return f"{node.kind} of {node.length:,}, {node.blocks:,} blocks"


def cmd_get(args: argparse.Namespace) -> None:
    if args.indent is not None and args.format != "json":
        raise UsageError(f"--indent is for JSON output, not --format {args.format}")
    with open_reader(args.file) as reader:
        value = read_path(reader, args.path)
        if args.format == "msgpack":
            data = value.protocol_raw_data() if isinstance(value, LAZY) else _msgpack(to_obj(value))
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        elif args.format == "repr":
            print(repr_text(to_obj(value)))
        else:
            sys.stdout.write(to_json(value, args.indent))


def _msgpack(value: Any) -> bytes:
    return msgpack_bytes(value)


def checked_output(path: str, inputs: list[str], into: str = "") -> Any:
    """The OUTPUT argument, refused before any work when it breaks ``OUTPUT_RULE``; a local
    path or a ``RemotePath`` for the writers. ``into``: the option that writes into a folder,
    named when OUTPUT is one."""
    if path == "-":
        raise CliError(
            "the output is a file, not standard output ('-'): name a file (./- for one called '-'), "
            "or print a value with: msglc get FILE PATH"
        )
    if path.endswith(("/", os.sep)) and not os.path.isdir(path):  # (fsspec would drop the "/")
        raise CliError(f"the output {path!r} names a directory (it ends with a separator): name a file")
    if "://" in path:
        try:
            target = resolve_name(path)
        except (ImportError, OSError, TypeError, ValueError) as e:
            raise CliError(f"cannot write to {path!r}: {_message(e)}") from None
        if isinstance(target, RemotePath):
            if in_process(target.fs):
                raise CliError(
                    f"the output {path!r} is in this process's memory (memory://), gone when msglc exits: "
                    "name a local file or the URL of lasting storage"
                )
            return target
        path = target  # file://: a local path
    if os.path.isdir(path):
        also = f" (or convert into it: {into} {path})" if into else ""
        raise CliError(f"the output {path!r} is a directory: name a file in it{also}")
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder):
        what = "not a directory" if os.path.exists(folder) else "no such directory"
        raise CliError(f"{what}: {folder} (where the output {path!r} would go)")
    if os.path.exists(path):
        for name in inputs:
            if os.path.exists(name) and os.path.samefile(name, path):
                raise CliError(f"the output {path!r} is the input {name!r} itself: write to another file")
    return path


def cmd_convert(args: argparse.Namespace) -> int:
    """One INPUT to OUTPUT, or many inputs (files and folders) into a folder: --out-dir DIR,
    or a last argument that is one when there are several inputs or a folder among them."""
    if args.out_dir is not None:
        return convert_many(args, args.paths, args.out_dir)
    if len(args.paths) == 1:
        raise UsageError("give an OUTPUT after the INPUT, or --out-dir DIR to convert into a folder")
    *inputs, last = args.paths
    if len(inputs) > 1 or os.path.isdir(inputs[0]):
        return convert_many(args, inputs, last)
    source = inputs[0]
    if not os.path.exists(source):
        raise CliError(f"no such file: {source}")
    target = checked_output(last, [source], into="--out-dir")
    src, dst = fmt_of(source, args.from_), fmt_of(last, args.to)
    if src != "msglc" and dst != "msglc":
        raise CliError(f"convert reads or writes an archive: {src} -> {dst} is neither")
    convert_file(source, target, src, dst, convert_options(args, dst), True)
    return 0


def _threshold(text: str) -> int:
    """--threshold: a number of bytes (an int >= 0); anything else is a usage error."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"a number of bytes (an int >= 0), not {text!r}")
    return value


def convert_options(args: argparse.Namespace, dst: str) -> dict[str, Any]:
    """The writer's options that --threshold and --compression give."""
    options: dict[str, Any] = {} if args.threshold is None else {"small_obj_optimization_threshold": args.threshold}
    if args.compression is not None:
        if dst != "msglc":
            raise CliError(f"--compression is for writing an archive, not {dst}")
        options.update(args.compression)
    return options


def convert_many(args: argparse.Namespace, given: list[str], folder: str) -> int:
    """Convert each input into ``folder``, its output named by its stem and the extension of
    --to (default: an archive); a folder input gives its files that convert to that. Outputs
    are checked before any is written (two inputs may not give one output, and none may be an
    input); then a failed input is reported in one line and the others are still converted.
    Returns the exit status: 1 if any input failed."""
    dst = args.to or "msglc"
    options = convert_options(args, dst)
    into = checked_folder(folder)
    formats = {args.from_} if args.from_ else ({"json", "jsonl", "msgpack"} if dst == "msglc" else {"msglc"})
    extensions = [ext for ext, fmt in FORMATS.items() if fmt in formats]
    failed: list[str] = []
    inputs: list[str] = []
    for path in given:
        if os.path.isdir(path):
            files = folder_files(path, extensions)
            if not files:
                failed.append(f"{path}: no file in this folder converts to {dst} ({', '.join(extensions)})")
            inputs.extend(files)
        else:
            inputs.append(path)
    names = [stem(path) + EXTENSION[dst] for path in inputs]
    refuse_repeated(names, inputs, "would both be converted to", "convert them into different folders")
    targets = [checked_output(into(name), inputs) for name in names]
    for line in failed:
        print(f"msglc convert: {line}", file=sys.stderr)
    total = sum(os.path.getsize(path) for path in inputs if os.path.isfile(path))
    with progress(total, "convert") as step:
        for path, target in zip(inputs, targets, strict=True):
            try:
                if not os.path.exists(path):
                    raise CliError(f"no such file: {path}")
                src = fmt_of(path, args.from_)
                if src != "msglc" and dst != "msglc":
                    raise CliError(f"convert reads or writes an archive: {src} -> {dst} is neither")
                convert_file(path, target, src, dst, options, False)
            except Exception as e:  # (not an interrupt: that stops the run)
                message = _message(e)
                failed.append(message if path in message else f"{path}: {message}")
                print(f"msglc convert: {failed[-1]}", file=sys.stderr)
            if os.path.isfile(path):
                step(os.path.getsize(path))
    return 1 if failed else 0


def checked_folder(folder: str) -> Callable[[str], str]:
    """Where ``convert_many`` writes: a local folder that exists, or the URL of one (each
    output is then checked as an OUTPUT). Returns the OUTPUT of a name in it."""
    if "://" in folder:
        return lambda name: folder.rstrip("/") + "/" + name
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise CliError(
            f"the output folder {folder!r} {what}: several inputs, or a folder, are converted into a folder "
            "(the last argument, or --out-dir DIR)"
        )
    return lambda name: os.path.join(folder, name)


def convert_file(source: str, target: Any, src: str, dst: str, options: dict[str, Any], bar: bool) -> None:
    """Convert ``source`` (format ``src``) to ``target`` (a checked OUTPUT) as ``dst``; ``bar``:
    show a progress bar of its own (on a terminal), else none."""
    size = os.path.getsize(source)
    shown = progress if bar else _no_progress
    if src == dst:  # an archive repacked: copied as it is when nothing changes, else rewritten
        with open_reader(source) as reader:
            if not options:  # neither option: its own threshold too, so that it is copied as it is
                options = {"small_obj_optimization_threshold": reader.info().threshold}
            dump(target, reader, **options)
        return
    if dst == "msglc":
        if src == "jsonl":
            with shown(size, "convert") as step, LazyWriter(target, **options) as writer:
                writer.write(_json_lines(source, step))
            return
        with open(source, "rb") as f:
            data = f.read()  # JSON and msgpack documents are read whole: they need memory for it
        obj = _decode_json(data, source) if src == "json" else _decode_msgpack(data, source)
        dump(target, obj, **options)
        return
    with open_reader(source) as reader:
        if dst == "msgpack":  # the data section is the msgpack: copied (its checksum checked), not decoded
            with shown(reader.info().data_size, "convert") as step, atomic_file(target, False) as out:
                try:
                    for chunk in reader.iter_protocol_raw_data(step):
                        out.write(chunk)
                except CorruptedError:
                    raise CliError(f"{source}: data section checksum mismatch; nothing was written") from None
            return
        with atomic_file(target, False) as raw:
            text = _TextOut(raw)
            if dst == "jsonl":
                root = reader.read()
                if not isinstance(root, (list, LazyList)):
                    raise CliError("JSON Lines holds a list: the archive's root is not one")
                for item in root:
                    write_json(item.to_obj() if isinstance(item, LAZY) else item, text)
            else:
                write_json(reader.to_obj(), text)


@contextmanager
def _no_progress(total: int, what: str) -> Iterator[Callable[[int], None]]:
    yield lambda n: None


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
        try:
            return msgspec.json.decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError) as e:
            error = e
        try:
            return json.loads(data)
        except ValueError:
            raise CliError(f"{where} is not valid json: {error}") from None
    except RecursionError:
        raise CliError(f"{where} is nested too deeply to read") from None


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
    """A dict keyed by the inputs' stems (or --name), or a list (--list); a folder input gives
    its archives, sorted by name (but not OUTPUT, when it is there already)."""
    inputs: list[str] = []
    for path in args.inputs:
        if os.path.isdir(path):
            files = folder_files(path, ARCHIVE_EXTENSIONS, skip=args.output)
            if not files:
                raise CliError(f"{path} holds no archive ({', '.join(ARCHIVE_EXTENSIONS)}) to combine")
            inputs.extend(files)
        else:
            inputs.append(path)
    if args.name and len(args.name) != len(inputs):
        folders = " (a folder counts as its archives)" if len(inputs) != len(args.inputs) else ""
        raise CliError(
            f"{len(args.name)} --name for {len(inputs)} inputs{folders}: give one per input, "
            "or none to name each by its file name (--list for a list)"
        )
    for path in inputs:
        if not os.path.exists(path):
            raise CliError(f"no such file: {path}")
        hint = None if is_archive_file(path) else convert_hint(path)
        if hint:
            raise CliError(hint)
    names: list[Any]
    if args.name:
        names = args.name
    elif args.list:
        names = [None] * len(inputs)
    else:
        names = [stem(path) for path in inputs]
        refuse_repeated(
            names, inputs, "would both have the key", "give each input its key with --name, or make a list: --list"
        )
    target = checked_output(args.output, inputs)
    total = sum(os.path.getsize(p) for p in inputs)
    with progress(total, "combine") as step:
        infos = [FileInfo(p, n) for p, n in zip(inputs, names, strict=True)]
        combine(target, infos, progress=step, **(args.compression or {}))


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
        prog="msglc",
        description=__doc__.split("\n\n")[0],
        epilog=OUTPUT_RULE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"msglc {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def add(
        name: str,
        run: Callable[[argparse.Namespace], int | None],
        help: str,
        description: str = "",
        epilog: str = "",
        usage: str | None = None,
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=help,
            description="\n\n".join(
                textwrap.fill(part, 92, break_on_hyphens=False) for part in (description or help).split("\n\n")
            ),
            epilog=epilog or None,
            usage=usage,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.set_defaults(run=run)
        return p

    p = add("info", cmd_info, "format version, sizes, threshold, TOC node counts and the root of an archive")
    p.add_argument("file")
    path_help = (
        'a path inside the archive, like "runs/42/energy" or "runs/-1" (a path that starts with "-": put -- before it)'
    )
    p = add(
        "ls",
        cmd_ls,
        "list the children at PATH: type, length, encoded size, name",
        "List the children at PATH, one a line under a header row: TYPE (with the dtype and shape "
        "of an array), LENGTH (items, entries, characters or bytes; empty for a number), BYTES "
        "(encoded size in the archive) and NAME (the key or index).",
    )
    p.add_argument("file")
    p.add_argument("path", nargs="?", default="", help=path_help)
    p.add_argument("--limit", type=_count(1), default=1000, help="show at most this many children (default 1000)")
    p = add(
        "tree",
        cmd_tree,
        "the structure of the lazy parts under PATH, read from TOC nodes only",
        "The structure of the lazy parts under PATH, read from TOC nodes only: each list or dict "
        "with a node of its own, its children that have one below it. Small children have none "
        "(they are read whole, with their block or their parent), so they are counted instead: "
        '"246 of 1,109 shown; 863 small entries read whole".',
    )
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
    p.add_argument(
        "--indent",
        type=_count(0),
        default=None,
        metavar="N",
        help="JSON indented by N spaces a level (default: one line)",
    )
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
        "changes anything).\n\n"
        "Many files in one run: give several INPUTs and a folder, as the last argument or with "
        "--out-dir. An INPUT may be a folder: it gives its files that convert to the target, sorted "
        "by name (for an archive: .json, .jsonl, .ndjson, .msgpack, .mpk; else: .mlc, .msglc, .msg; "
        "with --from: that format's). "
        "Each output is named by its input's name and the target's extension (runs/run-7.json -> "
        "DIR/run-7.mlc); the target is an archive unless --to says otherwise. Outputs are checked "
        "before any is written; then an input that fails is reported in one line and the others "
        "are still converted (exit status 1 if any failed).",
        OUTPUT_RULE + "\nDIR: a folder that exists, or the URL of one; each output in it follows the rule above.",
        "%(prog)s [options] INPUT OUTPUT\n"
        "       %(prog)s [options] INPUT... DIR\n"
        "       %(prog)s [options] INPUT... --out-dir DIR",
    )
    p.add_argument("paths", nargs="+", metavar="INPUT", help="a file to convert; many files or folders need a DIR")
    p.add_argument("--out-dir", metavar="DIR", help="convert every INPUT into the folder DIR")
    p.add_argument("--from", dest="from_", choices=("json", "jsonl", "msgpack", "msglc"))
    p.add_argument(
        "--to",
        choices=("json", "jsonl", "msgpack", "msglc"),
        help="the output's format (default: from OUTPUT's extension; into a folder: msglc)",
    )
    p.add_argument(
        "--threshold",
        type=_threshold,
        default=None,
        help="small_obj_optimization_threshold of the archive written",
    )
    _compression_option(
        p,
        f"compression of the archive written (zstd level 1-22, default {Config().compression_level}); "
        "an archive converted to an archive keeps its own unless this is given",
    )
    p = add(
        "combine",
        cmd_combine,
        "gather archives into one without decoding them: a dict keyed by their file names, or a list",
        "Gather archives into one without decoding them. The root is a dict whose keys are the "
        "inputs' file names without their extension (runs/run-0042.mlc -> run-0042): two inputs "
        "with the same name are refused. --name gives the keys instead, one per input in order; "
        "--list makes the root a list, in input order. An INPUT may be a folder: its archives "
        "(.mlc, .msglc, .msg), sorted by name, without OUTPUT if it is there already.",
        epilog=OUTPUT_RULE,
    )
    p.add_argument("output", metavar="OUTPUT")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    keys = p.add_mutually_exclusive_group()
    keys.add_argument("--name", action="append", help="the key of each input, in order (repeat once per input)")
    keys.add_argument("--list", action="store_true", help="a list of the inputs, in order, instead of a dict")
    _compression_option(
        p,
        "compression of the result (default: zstd when every input is compressed, else none); "
        "compressed inputs' frames are copied, not recompressed",
    )
    p = add("verify", cmd_verify, "check the whole archive; exit status 0 when intact, 1 with what is wrong")
    p.add_argument("file")
    p = add(
        "view",
        cmd_view,
        "look at an archive in the browser: serves the viewer and the archive on 127.0.0.1",
        "Serves the viewer page and this one archive (local, or a URL such as s3://bucket/key, read by "
        "ranges) on 127.0.0.1 only, prints the URL and opens it in the browser. Ctrl-C stops it.",
    )
    add_view_arguments(p)
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
        status = args.run(args)
    except UsageError as e:  # as argparse reports its own
        print(f"msglc {args.command}: {e} (see msglc {args.command} --help)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"msglc {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into head: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # one line, never a traceback
        print(f"msglc {args.command}: {_message(e)}", file=sys.stderr)
        return 1
    return status or 0


def _message(e: Exception) -> str:
    if isinstance(e, (CliError, MsglcError)):
        return str(e)
    if isinstance(e, KeyError):
        return str(e.args[0]) if e.args else "key not found"
    if isinstance(e, OSError):
        return f"{e.strerror or e}: {e.filename}" if e.filename else str(e)
    return f"{type(e).__name__}: {e}"
