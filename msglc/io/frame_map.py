"""``FrameMap``: where each frame of a compressed section is, for ``FramedSource``. A 2.0
section's seek table is read whole when the archive opens (one page); a 2.1 section's frame
table is in pages that are read the first time a frame of theirs is needed, so opening reads
a bounded number of bytes whatever the archive's size (docs/format.md)."""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Callable

from msglc.errors import CorruptedError
from msglc.format.frames import NO_FILTER, FrameTable, Index, Page, frame_fault


class FrameMap:
    """``frames`` frames holding ``plain`` logical bytes, ``per_page`` to a page (the last may
    hold fewer); page p's first frame starts at logical ``firsts[p]``. ``load(p)`` reads and
    checks page p (None: every page is given)."""

    def __init__(
        self,
        frames: int,
        per_page: int,
        plain: int,
        firsts: list[int],
        load: Callable[[int], Page] | None,
        pages: dict[int, Page] | None = None,
    ) -> None:
        self.frames = frames
        self.per_page = per_page
        self.plain = plain
        self.firsts = firsts
        self._load = load
        self._pages: dict[int, Page] = pages or {}
        self._lock = threading.Lock()
        self.filtered = True  # some frame may be shuffled (a 2.0 table without a filter table: none is)

    @classmethod
    def whole(cls, table: FrameTable) -> FrameMap:
        """The map of a 2.0 seek table (and filter table), read whole at open: one page."""
        page = Page(table.stored, table.logical, table.codes, table.params, b"")
        made = cls(table.frames, max(table.frames, 1), table.logical[-1], [0], None, {0: page})
        made.filtered = bool(table.codes)
        return made

    def page(self, p: int) -> Page:
        page = self._pages.get(p)
        if page is not None:
            return page
        if self._load is None:
            raise CorruptedError(f"compressed section: no page table {p}")
        with self._lock:
            page = self._pages.get(p)
            if page is None:
                page = self._pages[p] = self._load(p)
        return page

    def locate(self, lo: int) -> tuple[Page, int, int]:
        """(page, index in the page, frame number) of the frame holding logical ``lo``
        (0 <= lo < ``plain``)."""
        p = bisect_right(self.firsts, lo) - 1
        page = self._pages.get(p) or self.page(p)
        k = bisect_right(page.logical, lo) - 1
        return page, k, p * self.per_page + k

    def at(self, i: int) -> tuple[Page, int]:
        """(page, index in the page) of frame ``i`` (``i == frames``: the end of the last)."""
        p, k = divmod(i, self.per_page)
        if i == self.frames and k == 0 and p:
            p, k = p - 1, self.per_page
        return self._pages.get(p) or self.page(p), k

    def frame_of(self, lo: int) -> int:
        return self.locate(lo)[2]

    def logical(self, i: int) -> int:
        """Where frame ``i`` starts in the logical stream (``frames``: its end)."""
        page, k = self.at(i)
        return page.logical[k]

    def stored(self, i: int) -> int:
        """Where frame ``i`` starts in the section (``frames``: where the last one ends)."""
        page, k = self.at(i)
        return page.stored[k]

    def shuffle(self, i: int) -> int:
        """The element size frame ``i`` is byte-shuffled by, or 0."""
        page, k = self.at(i)
        return page.shuffle(k)

    def filter(self, i: int) -> tuple[int, int]:
        """(filter code, parameter) of frame ``i`` as its page table lists them."""
        page, k = self.at(i)
        return (page.codes[k], page.params[k]) if page.codes else (NO_FILTER, 0)

    def dictionary(self, i: int) -> int:
        """The dictionary frame ``i`` was compressed with (0: none; d: the section's d-th)."""
        page, k = self.at(i)
        return page.dictionary(k)

    def check_frame(self, i: int, max_frame: int) -> str | None:
        """Why frame ``i``'s entry cannot be read (None: it can): the bounds of a frame."""
        page, k = self.at(i)
        stored, plain = page.stored[k + 1] - page.stored[k], page.logical[k + 1] - page.logical[k]
        return frame_fault("frame table", stored, plain, self.shuffle(i), max_frame)


def paged_map(index: Index, index_at: int, load: Callable[[int], Page]) -> FrameMap:
    """The map of a 2.1 section from its ``index`` (which starts at ``index_at`` in the
    section): page p is read by ``load(p)`` the first time a frame of it is needed, and
    checked to continue where page p - 1 ends and to end where page p + 1 starts (the last:
    where the section's records start, so the frames tile the section up to them)."""
    pages = index.pages
    frames_end = min([index_at, *(at for at, _, _, _ in pages), *(at for at, _, _ in index.dicts)])
    plain = index.data + index.toc

    def checked(p: int) -> Page:
        page = load(p)
        end_logical, end_stored = (pages[p + 1][1], pages[p + 1][2]) if p + 1 < len(pages) else (plain, frames_end)
        if page.logical[-1] != end_logical or page.stored[-1] != end_stored:
            raise CorruptedError(
                f"compressed section: page table {p} ends at logical {page.logical[-1]} and stored "
                f"{page.stored[-1]}, where the next part starts at {end_logical} and {end_stored}"
            )
        return page

    return FrameMap(index.frames, index.per_page or 1, plain, [first for _, first, _, _ in pages] or [0], checked)
