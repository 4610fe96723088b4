"""Many files in one run: the files a folder gives, and names taken from file stems (the keys
of ``msglc combine``, the outputs of ``msglc convert --out-dir``), refused when two collide."""

from __future__ import annotations

import os
from collections.abc import Iterable

from msglc.cli.errors import CliError


def stem(path: str) -> str:
    """The file's name without its folder and its last extension: ``runs/run-0042.mlc`` ->
    ``run-0042``."""
    return os.path.splitext(os.path.basename(path))[0]


def folder_files(folder: str, extensions: Iterable[str], skip: str | None = None) -> list[str]:
    """The files directly in ``folder`` whose extension is one of ``extensions`` (any case),
    sorted by name. Hidden files are left out (a writer's temporary files are hidden), and so
    is the file ``skip`` names (an output that is already there: it cannot be an input)."""
    wanted = {e.lower() for e in extensions}
    skipped = None
    if skip is not None and "://" not in skip:
        try:
            st = os.stat(skip)
            skipped = (st.st_dev, st.st_ino)
        except OSError:
            pass
    files = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(".") or os.path.splitext(entry.name)[1].lower() not in wanted:
                continue
            if not entry.is_file():  # (follows a link, as the writers and readers do)
                continue
            if skipped is not None:
                st = entry.stat()
                if (st.st_dev, st.st_ino) == skipped:
                    continue
            files.append(entry.name)
    return [os.path.join(folder, name) for name in sorted(files)]


def refuse_repeated(names: list[str], paths: list[str], what: str, remedy: str) -> None:
    """CliError naming the first two ``paths`` whose ``names`` are equal."""
    first: dict[str, str] = {}
    for name, path in zip(names, paths, strict=True):
        if name in first:
            raise CliError(f"{first[name]} and {path} {what} {name!r}: {remedy}")
        first[name] = path
