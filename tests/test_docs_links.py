"""Every relative link in README.md and docs/ leads somewhere: the file exists and, when the
link names an anchor, the target has a heading that GitHub turns into that anchor. The README
is a front door to docs/, so a moved section must not leave a link behind."""

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *ROOT.glob("docs/**/*.md")])

FENCE = re.compile(r"^(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, where a link is a link."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the text without markup, lower case, punctuation other
    than ``-`` and ``_`` dropped, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    kept = []
    for ch in text:
        if ch in "-_ " or unicodedata.category(ch)[0] in "LN":
            kept.append("-" if ch == " " else ch)
    return "".join(kept)


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, repeats numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose_lines(page.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link and image outside code."""
    out = []
    for number, line in enumerate(prose_lines(page.read_text(encoding="utf-8")), 1):
        for m in LINK.finditer(CODE_SPAN.sub("", line)):
            out.append((number, m.group(1)))
    return out


def broken(page: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with each relative link of ``page``, one line each, paths from ``root``."""
    problems = []
    for number, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not ours to check
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(root)} (prose line {number}): {target}"
        if not dest.exists():
            problems.append(f"{where}: no file {dest.relative_to(root) if dest.is_relative_to(root) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: no heading gives the anchor #{anchor}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_relative_links_resolve(page: Path) -> None:
    assert broken(page) == []


def test_slug_follows_github() -> None:
    assert slug("Remote storage (S3 and other object stores)") == "remote-storage-s3-and-other-object-stores"
    assert slug("Type 6: block-indexed dict (`BlockHashMapNode`)") == "type-6-block-indexed-dict-blockhashmapnode"
    assert slug("`configure()` option names") == "configure-option-names"
    assert slug("7. Large NumPy arrays as N-d tiles (issue 32)") == "7-large-numpy-arrays-as-n-d-tiles-issue-32"


def test_checker_finds_a_broken_link(tmp_path: Path) -> None:
    """The check itself fails on what it is meant to catch: a missing file and a missing anchor."""
    (tmp_path / "b.md").write_text("# Title here\n", encoding="utf-8")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md#title-here) [gone](c.md) [no anchor](b.md#other) `[code](x.md)`\n"
        "```\n[fenced](y.md)\n```\n[self](#nothing)\n",
        encoding="utf-8",
    )
    found = broken(page, tmp_path)
    assert len(found) == 3, found
    assert "no file c.md" in found[0] and "#other" in found[1] and "#nothing" in found[2]
