"""Hints in the command line's error messages: the keys nearest to one that is missing, and the
``msglc convert`` command for a JSON or msgpack file given where an archive was expected."""

from __future__ import annotations

import difflib
import itertools
import os
import shlex
from typing import Any

import msgspec

from msglc.read.paths import DICT, LIST, kind_of, resolve, split_path
from msglc.read.views import LazyHashDict

# Keys of a dict with a hash index are stored in its data, so listing them reads all its
# small entries. On this machine, for a dict of 2,000,000 short keys (85 MB): listing the keys
# took 0.95 s and difflib over them 9 s; difflib over 10,000 keys takes 0.045 s.
SCAN_KEYS = 10_000  # up to this many keys, every key is compared
SCAN_BYTES = 16 << 20  # and, for a hash-indexed dict, its entries take at most this many bytes
PROBES = 20_000  # at most this many lookups of keys one edit away, for larger dicts
SAMPLE_KEYS = 256  # keys read from the start of a large dict to learn the characters its keys use


def missing_key_hint(root: Any, path: str) -> str:
    """``"; did you mean 'grid'?"`` for a path whose lookup raised KeyError, or ``""``. The
    dict where the path stopped is found again by following the path from ``root``; the hint
    never hides the error itself, so any failure here gives ``""``."""
    try:
        stop = stopped_at(root, split_path(path))
        if stop is None:
            return ""
        names = close_keys(*stop)
    except Exception:  # a hint is a courtesy: the error the user asked about is reported anyway
        return ""
    if not names:
        return ""
    shown = [repr(k) for k in names]
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    return f"; did you mean {listed}?"


def stopped_at(root: Any, segments: list[Any]) -> tuple[Any, str] | None:
    """The dict where ``segments`` name a key it does not hold, and that segment, following
    the path as ``msglc.read.paths`` does (a slice segment goes on in every item it takes)."""
    values = [root]
    for seg in segments:
        after: list[Any] = []
        for value in values:
            kind = kind_of(value)
            if kind is DICT:
                try:
                    after.append(resolve(value, [seg]))
                except KeyError:
                    return value, seg
            elif kind is LIST and isinstance(seg, str) and ":" in seg:
                after.extend(resolve(value, [seg]))
            else:
                after.append(resolve(value, [seg]))
        values = after
    return None


def close_keys(d: Any, missing: str, n: int = 3) -> list[Any]:
    """Up to ``n`` keys of ``d`` nearest to ``missing`` (``difflib.get_close_matches`` on the
    keys as text), best first.

    The work is bounded whatever the dict's size: a dict of up to ``SCAN_KEYS`` keys has
    every key compared (a hash-indexed one only if its entries, which hold its keys, take up
    to ``SCAN_BYTES``; other dicts have their keys in memory or in their TOC node). The keys of
    a larger one are never listed. Its keys one edit away from ``missing`` (a character deleted, inserted,
    replaced or two swapped, over the characters of ``missing`` and of the dict's first
    ``SAMPLE_KEYS`` keys) and its case variants are looked up instead, at most ``PROBES`` of
    them (each a hash-index lookup: about 11 us on a 2 M-key dict), so a typo of one
    character is found, but a key further away is not suggested."""
    missing = str(missing)
    if len(d) <= SCAN_KEYS and (not isinstance(d, LazyHashDict) or d.location().size <= SCAN_BYTES):
        by_text: dict[str, Any] = {}
        for key in d:
            by_text.setdefault(str(key), key)
        return [by_text[t] for t in difflib.get_close_matches(missing, list(by_text), n)]
    alphabet = set(missing)
    for key in itertools.islice(iter(d), SAMPLE_KEYS):
        alphabet.update(str(key))
    found: dict[str, Any] = {}
    for text in one_edit_away(missing, sorted(alphabet), PROBES):
        for key in (text, _int_key(text)):
            if key is not None and key in d and text not in found:
                found[text] = key
    return [found[t] for t in difflib.get_close_matches(missing, list(found), n, cutoff=0)]


def one_edit_away(word: str, alphabet: list[str], limit: int) -> list[str]:
    """Distinct strings one edit from ``word`` (case variants first), at most ``limit``: the
    alphabet is cut to fit, since deletions and swaps are the likelier typos."""
    m = len(word)
    room = max(0, (limit - 2 * m - 3) // (2 * m + 1))
    letters = alphabet[:room]
    out = dict.fromkeys([word.lower(), word.upper(), word.title(), word.swapcase()])
    out.update(dict.fromkeys(word[:i] + word[i + 1 :] for i in range(m)))
    out.update(dict.fromkeys(word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(m - 1)))
    out.update(dict.fromkeys(word[:i] + c + word[i + 1 :] for i in range(m) for c in letters))
    out.update(dict.fromkeys(word[:i] + c + word[i:] for i in range(m + 1) for c in letters))
    out.pop(word, None)
    return list(out)[:limit]


def _int_key(text: str) -> int | None:
    """The int key a path segment ``text`` also names (``msglc.read.paths``: ``-?[0-9]+``)."""
    digits = text[1:] if text.startswith("-") else text
    return int(text) if digits.isdigit() and digits.isascii() else None


# ---- files that are not archives ---------------------------------------------------------------

SNIFF_BYTES = 1 << 16
TEXT_EXTENSIONS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".msgpack": "msgpack", ".mpk": "msgpack"}
NAMES = {"json": "JSON", "jsonl": "JSON Lines", "msgpack": "msgpack"}


def convert_hint(path: str) -> str | None:
    """For a file that is not an archive: which format it looks like and the ``msglc convert``
    command that makes an archive of it, or None when it looks like none of them."""
    fmt = sniff(path)
    named = TEXT_EXTENSIONS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        if named is None:
            return None
        return f"{path} is not an msglc archive: if it holds {NAMES[named]}, {convert_command(path, named)}"
    if fmt == "json" and named == "jsonl":  # one JSON value on one line is JSON Lines too
        fmt = "jsonl"
    return f"{path} looks like {NAMES[fmt]}, not an msglc archive: {convert_command(path, fmt)}"


def convert_command(path: str, fmt: str) -> str:
    """``msglc convert PATH NEW.mlc``, with ``--from`` when the name does not say ``fmt``."""
    base, ext = os.path.splitext(path)
    out = base + ".mlc"
    if out == path:
        out = base + "-converted.mlc"
    source = "" if TEXT_EXTENSIONS.get(ext.lower()) == fmt else f" --from {fmt}"
    return f"msglc convert {shlex.quote(path)} {shlex.quote(out)}{source}"


def sniff(path: str) -> str | None:
    """ "json", "jsonl" or "msgpack" when the first bytes of the file look like one, else None.
    JSON: a ``{`` or ``[`` after white space (and a byte order mark); JSON Lines: a first line
    that is a whole JSON value followed by another line. msgpack: a map or array header whose
    count fits in the file, followed by a byte msgpack uses."""
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return None
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    if text[:1] in (b"{", b"["):
        line, newline, rest = text.partition(b"\n")
        if newline and rest.strip()[:1] in (b"{", b"[") and _is_json(line):
            return "jsonl"
        return "json"
    return "msgpack" if _msgpack_head(head, size) else None


def _is_json(data: bytes) -> bool:
    try:
        msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return False
    return True


def _msgpack_head(head: bytes, size: int) -> bool:
    if not head:
        return False
    b = head[0]
    if 0x80 <= b <= 0x9F:
        count, width, pairs = b & 0x0F, 1, b < 0x90
    elif b in (0xDC, 0xDD, 0xDE, 0xDF):
        width = 3 if b in (0xDC, 0xDE) else 5
        if len(head) < width:
            return False
        count, pairs = int.from_bytes(head[1:width], "big"), b >= 0xDE
    else:
        return False
    if count == 0:
        return size == width
    return count * (2 if pairs else 1) <= size - width and len(head) > width and head[width] != 0xC1
