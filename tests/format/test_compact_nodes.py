"""Inline dict nodes as compressed archives store them (type 8: lengths, not offsets) are
expanded and checked in C when the accelerator is there, and in Python otherwise: both must
give the same offsets, the same key map and the same error for every node, sound or not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msglc import CorruptedError
from msglc.format import nodes
from msglc.format.nodes import CompactMapNode, MapNode, check_node
from msglc.util import accel

pytestmark = pytest.mark.skipif(accel.speedups is None, reason="compares the C accelerator with Python")

LENGTH = st.one_of(
    st.integers(1, 300), st.integers(-3, 0), st.integers(2**61 - 3, 2**61 + 3), st.integers(2**64 - 2, 2**64)
)


def _outcome(node: CompactMapNode) -> tuple[str, object]:
    try:
        expanded = node.expanded(100)
        return "ok", (expanded.koffs, expanded.voffs, check_node(expanded, 100, 0))
    except CorruptedError as e:
        return "error", str(e)


@settings(max_examples=400, deadline=None)
@given(
    n=st.integers(0, 12),
    first=st.one_of(st.integers(0, 6), st.integers(2**61 - 2, 2**61 + 2)),
    lengths=st.lists(st.tuples(LENGTH, LENGTH), max_size=14),
    extra=st.sampled_from([0, 0, 0, 1, -1]),
)
def test_c_and_python_expand_and_check_a_node_alike(n, first, lengths, extra):
    """Lengths of 0 or below, past 2**61 or 2**64, lists of other lengths than the keys, a first
    offset out of range: the same offsets or the same error either way."""
    lengths = (lengths * (n // max(len(lengths), 1) + 1))[:n] if lengths else [(1, 1)] * n
    klens = [k for k, _ in lengths]
    vlens = [v for _, v in lengths][: max(0, n + extra)] + [1] * max(0, extra)
    node = CompactMapNode(keys=[f"k{i}" for i in range(n)], first=first, klens=klens, vlens=vlens, kids={})
    with_c = _outcome(node)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(accel, "speedups", None)
        assert _outcome(node) == with_c


def test_a_sound_node_expands_in_c_to_python_s_offsets():
    node = CompactMapNode(keys=["a", "bb", "c"], first=3, klens=[2, 3, 2], vlens=[5, 1, 9], kids={})
    koffs, voffs = accel.speedups.expand_map(3, [2, 3, 2], [5, 1, 9])  # type: ignore[union-attr]
    assert (koffs, voffs) == ([3, 10, 14, 25], [5, 13, 16])
    assert node.expanded(0) == MapNode(keys=["a", "bb", "c"], koffs=koffs, voffs=voffs, kids={})


@pytest.mark.parametrize(
    ("koffs", "voffs", "expected"),
    [
        ([1, 5], [3], True),
        ([1, 5, 9], [3, 7], True),
        ([1, 3], [3], False),  # a value where its key starts
        ([1, 5, 9], [3, 9], False),  # ... or where the next key does
        ([1, 5, 4], [3, 7], False),
        ([1], [], True),
    ],
)
def test_entries_in_order_in_c_as_in_python(monkeypatch, koffs, voffs, expected):
    assert nodes._entries_in_order(koffs, voffs) is expected  # noqa: SLF001
    assert accel.speedups.entries_in_order(koffs, voffs) is expected  # type: ignore[union-attr]
    monkeypatch.setattr(accel, "speedups", None)
    assert nodes._entries_in_order(koffs, voffs) is expected  # noqa: SLF001


def test_what_c_cannot_take_is_left_to_python():
    speedups = accel.speedups
    assert speedups is not None
    assert speedups.expand_map(True, [1], [1]) is NotImplemented  # (a bool is not an exact int)
    assert speedups.expand_map(0, (1,), [1]) is NotImplemented  # type: ignore[arg-type]
    assert speedups.expand_map(0, [1, 2], [1]) is NotImplemented
    assert speedups.expand_map(0, [2**61], [1]) is NotImplemented
    assert speedups.entries_in_order([1, 2**64], [2]) is NotImplemented
    assert speedups.entries_in_order([1, 3], [2, 4]) is NotImplemented  # (koffs must be one longer)
    with pytest.raises(TypeError):
        speedups.expand_map(0, [1])  # type: ignore[call-arg]
