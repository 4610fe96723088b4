"""Every hint msglc prints for a missing optional dependency installs that dependency: the
packages of the matching extra by their own names, never ``msglc[...]``, which pip resolves
to the unrelated older package of that name on PyPI."""

import importlib.metadata
import re
import sys

import numpy as np
import pytest

import msglc
import msglc.util.optional as optional

ARRAYS = msglc.dumps({"a": np.arange(3.0)})  # written while numpy is there; read while it is hidden


def _extra(name):
    """The requirement names (extras kept, versions dropped) of this project's extra ``name``,
    with the extras it includes expanded."""
    out = set()
    requires = importlib.metadata.requires("msglc")
    assert requires is not None
    for req in requires:
        spec, _, marker = req.partition(";")
        if f'extra == "{name}"' not in marker:
            continue
        spec = re.split(r"[<>=!~ ]", spec.strip(), maxsplit=1)[0]
        nested = re.fullmatch(r"msglc\[(.*)\]", spec)
        out |= set().union(*(_extra(e) for e in nested.group(1).split(","))) if nested else {spec}
    return out


def _hint(call, monkeypatch, *hidden):
    for module in hidden:
        monkeypatch.setitem(sys.modules, module, None)  # import fails
    with pytest.raises(ImportError) as raised:
        call()
    return str(raised.value)


@pytest.mark.parametrize(
    ("extra", "call", "hidden"),
    [
        ("zstd", optional.zstandard, ["zstandard"]),
        ("numpy", optional.numpy, ["numpy"]),
        ("numpy", lambda: msglc.LazyReader(ARRAYS)["a"], ["numpy"]),
        ("dask", lambda: optional.dask_module("dask.bag"), ["dask", "dask.bag"]),
        ("remote", lambda: msglc.LazyReader("s3://bucket/archive.mlc"), ["fsspec"]),
    ],
)
def test_a_missing_dependency_names_what_to_install(monkeypatch, extra, call, hidden):
    message = _hint(call, monkeypatch, *hidden)
    command = re.search(r"pip install ([^)\n]*)", message)
    assert command, message
    named = {word.strip("'\"") for word in command.group(1).split()}
    assert not any(word.startswith("msglc") for word in named), message
    assert named == _extra(extra), (named, _extra(extra))
