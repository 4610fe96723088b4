"""The optional C accelerator is used only when it is the build this code expects."""

import sys
import types

import pytest

import msglc
from msglc.util import accel


def _install(monkeypatch, module):
    """``module`` as what ``import msglc._speedups`` finds (the module table and the package)."""
    monkeypatch.setitem(sys.modules, "msglc._speedups", module)
    monkeypatch.setattr(msglc, "_speedups", module, raising=False)


@pytest.mark.parametrize("api", [None, accel.API - 1, accel.API + 1])
def test_a_build_from_another_version_is_set_aside_with_a_warning(api, monkeypatch):
    """An editable install keeps an old ``_speedups`` build until it is rebuilt: its functions
    may be missing or different, so msglc warns and uses the pure-Python path (same bytes)."""
    stale = types.ModuleType("msglc._speedups")
    stale.__file__ = "/somewhere/_speedups.so"
    if api is not None:
        stale.API = api  # type: ignore[attr-defined]
    _install(monkeypatch, stale)
    monkeypatch.delenv("MSGLC_PURE_PYTHON", raising=False)
    with pytest.warns(RuntimeWarning, match="built from another version of msglc"):
        assert accel._load() is None  # noqa: SLF001


def test_the_expected_build_is_used(monkeypatch):
    built = types.ModuleType("msglc._speedups")
    built.API = accel.API  # type: ignore[attr-defined]
    _install(monkeypatch, built)
    monkeypatch.delenv("MSGLC_PURE_PYTHON", raising=False)
    assert accel._load() is built  # noqa: SLF001
    monkeypatch.setenv("MSGLC_PURE_PYTHON", "1")
    assert accel._load() is None  # noqa: SLF001
