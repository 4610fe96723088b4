"""Fuzz msglc's readers with damaged and crafted archives: ``python -m tools.fuzz``.

A corpus of valid archives is built once (every node type, several thresholds, combined,
appended and streamed archives, NumPy arrays, node-less roots, scalars, and compressed (2.1)
archives of each kind: dumped, streamed by ``LazyWriter``, combined from compressed inputs
with their dictionaries, appended to; with raw and byte-shuffled frames, dictionaries, fuse
and compact dict nodes); each case takes one of them and one mutation, both drawn from
``random.Random(f"{seed}:{index}")``, so a case is named by its id ``seed:index`` and re-run
exactly with ``--replay ID`` (with the same ``--kinds``). Mutations:

- raw bytes: ``bitflip``, ``overwrite``, ``insert``, ``delete``, ``truncate``, ``splice`` (two
  archives cut and joined), anywhere: header, data, free space, TOC, trailer, and in a
  compressed archive its frames and tables;
- ``header``: a header or trailer field changed (minor, major, end, offsets, lengths, CRCs,
  threshold), the trailer CRC recomputed or not;
- ``toc``: one TOC node decoded, a field changed (an offset, start or count moved by one,
  keys renamed, a kind changed, a child reference moved or pointed at another node), and the
  TOC laid out again with every reference, node CRC and the trailer recomputed;
- ``index``: a hash index region changed (type 3: an entry offset, a record, a page bound;
  type 6: a block offset, a record's block or fingerprint, a page bound) with its page CRCs,
  table CRC and the node's ``offs_crc`` recomputed;
- ``datacrc`` / ``datashift``: data bytes changed (or inserted, deleted) with the data CRC
  (and the trailer's lengths) recomputed: a crafted archive whose only truth is its data;
- ``value``: a value made one a read refuses (a str byte made invalid UTF-8, a byte of a
  NumPy array's header changed), the data CRC recomputed.

In a compressed archive the crafted data mutations (``datacrc``, ``datashift``, ``value``)
change the plain data and make the frames that hold it again, as they were made (raw,
shuffled, with their dictionary), so that every checksum holds (zstd's, the page tables',
the index's, the data CRC of the plain bytes). Compressed (2.1) archives have mutations of
their own, each laid out again with every offset and CRC recomputed (``frames``), page
tables of 1, 2, 3 or the writer's number of frames, so that only consistency checks can tell:

- ``zindex``: a field of the section's index (the data/TOC split, the root, frame and page
  counts, frames per page, a page's or a dictionary's place, size or plain size, the
  footer's size or descriptor);
- ``zpage``: a frame's page-table entry (stored or plain size, the next frame's moved to
  match or not, a bomb claiming a large plain size, zero sizes, the filter code and
  parameter, the dictionary number, two entries swapped, a page's stated count);
- ``zdict``: a dictionary record (its zstd frame swapped for another: its content with a
  byte changed, shorter or longer, other data, no checksum, no content size, a raw frame,
  no frame at all; its declared size; its record header);
- ``zraw``: a raw frame (a header byte, its checksum, cut short or made longer, a zstd frame
  labelled raw, a raw one labelled otherwise, its plain size grown: in-place reads past it);
- ``ztoc`` / ``zhash``: ``toc`` and ``index`` on the TOC inside the frames (decompressed,
  edited as a plain archive's, node CRCs recomputed, framed again in frames of random
  sizes): type 8 nodes (a key's length moved into its value's), type 7 (seed and shape
  fields, the region laid out for them; slots, chunk CRCs, block offsets);
- ``zlayout``: nothing changed but the layout, one no writer makes (data frames of random
  sizes, each zstd, raw, shuffled or with a dictionary; TOC frames of random sizes; small
  page tables): the archive must read back (else ``valid-fails``).

A changed filter of a data frame counts as a data change: nothing in a frame names its
filter, and lazy reads do not checksum the plain data (``verify()`` and ``to_obj()`` do).
The corpus also holds deep archives (nested 1200 levels, written with a raised recursion
limit), read at the default limit; the harness compares values with a raised one and skips
the ``walk`` and ``iter`` stages on deep archives (their checks recurse in the harness) and
on large ones (over ``BIG_SAMPLE`` bytes of data: the other stages read them whole).

Each mutated archive is opened with ``LazyReader(bytes, cached=False)`` and read in stages:
``inspect`` (``info()``, a compressed archive's ``frames()`` and the ``dictionary(d)`` they
name), ``walk`` (index every item, negative indices, slices, ``in``, ``get``, NumPy
selections), ``iter`` (iteration, ``items()``, each lazy part's ``to_obj()``), ``paths``
(``reader[path]`` for paths of the original), ``many`` (``read_many`` of them), ``stream``
(compressed archives: ``read_many`` batched and the root's ``to_obj()`` through a file
object, whose reads fetch frames together and fill arrays in place), ``root_to_obj`` (the
lazy root's ``to_obj()``, unchecked), ``to_obj`` (checked), ``verify`` and ``copy`` (a share
of the cases on compressed archives, ``--copy-share``, 0.25; not large ones: ``combine`` of
the archive and a repack of its reader, each read back verified). The values are compared
with the truth: the original value, or for crafted data the data section decoded. Outcomes:

- bug classes (``BUG_CLASSES``): ``undocumented`` (an exception other than an ``MsglcError``,
  or a KeyError/IndexError/TypeError that no data change implies), ``hang`` (the case ran past
  ``--timeout`` in its worker, or the worker stopped answering), ``memory`` (MemoryError under
  the worker's address-space limit), ``worker-died`` (a crash), ``wrong-verify-passes`` (a value
  differs from the truth and ``verify()`` passed), ``wrong-outside-data`` (a change outside
  the data section gave a different value, or a lookup error, without an error),
  ``undetected-damage`` (a damaged archive, not crafted, whose ``verify()`` passed or whose
  checked ``to_obj()`` returned a value), ``valid-fails`` (a corpus archive, unchanged, or
  laid out anew by ``zlayout``, that does not read back: every campaign starts with the
  corpus, ids ``valid:NAME``), ``verify-passes-unreadable`` (crafted data that ``verify()``
  accepts but a read refuses: verify() decodes every value, issue 29), and
  ``read-outside-file`` (a read asked the source for bytes outside the file: every offset
  is checked against the file before it is read; the source refuses it, but that is luck),
  and ``bad-copy`` (a copy was written that holds other values than the truth, or that does
  not verify although the archive copied does);
- other classes: ``ok``, ``error`` (a documented error), ``changed-in-data`` (lazy reads saw
  a changed data byte, which they do not checksum; ``verify()`` and ``to_obj()`` raised),
  ``lookup-crafted-toc`` (a crafted TOC that renames a key, or a crafted hash index, makes a
  lookup a KeyError: only reading the data could tell), ``span-crafted-toc`` (a crafted TOC
  that moves where a list's span starts gives other items that frame exactly, and
  ``verify()`` refuses the archive: only reading the span before could tell; a path through
  such an item may raise a lookup error instead of giving another value).

Cases run in worker processes (fork; ``--workers``, default 2), each under a soft timeout
(``signal.setitimer``: the traceback shows where it hung) and a hard one (the worker is
killed), with ``RLIMIT_AS`` set to its size plus ``--mem-mb``. The report gives counts per
class, the distinct failures (by exception type and the line that raised it, or by stage and
mutation kind) with example ids, and the rate.

    python -m tools.fuzz --cases 20000 --seed 1 --out report.json
    python -m tools.fuzz --seconds 60 --kinds toc,index
    python -m tools.fuzz --kinds zindex,zpage,zdict,zraw,ztoc,zhash,zlayout   # 2.1 only
    python -m tools.fuzz --sweep doc@64 --stride 1    # one bit flip at every byte
    python -m tools.fuzz --replay 1:4711              # the stages, with tracebacks
    python -m tools.fuzz --save 1:4711 case.mlc       # the mutated archive

The parts, in the order a case meets them: ``common`` (outcome classes, stages), ``values``
(comparisons with the truth), ``corpus`` (the valid archives), ``layout`` (a TOC laid out
again), ``frames`` (a 2.1 section taken apart and laid out again), ``mutators`` and
``zmutators`` (plain and compressed mutations), ``targets`` (a case read in stages and
classified), ``runner`` (workers, campaigns, reports), ``tiles`` (tiled arrays), and the
command line in ``__main__``. This is a development tool: it runs from the checkout and is not
installed with msglc.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy: one thread, a small address space

from .common import BUG_CLASSES, INFO_CLASSES  # noqa: E402
from .runner import campaign, format_report, make_context, replay  # noqa: E402
from .targets import MUTATORS, make_case, run_case  # noqa: E402
from .tiles import fuzz_tiles  # noqa: E402

__all__ = [
    "BUG_CLASSES",
    "INFO_CLASSES",
    "MUTATORS",
    "campaign",
    "format_report",
    "fuzz_tiles",
    "make_case",
    "make_context",
    "replay",
    "run_case",
]
