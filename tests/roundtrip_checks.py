"""What the round-trip property tests share: the values they dump (Hypothesis strategies), what
reading them back should give, and a walk that compares a lazy value with it part by part.

A module of its own, not conftest or a test module, so that tests in any folder import it by one
name (pytest and mypy both see tests/ as a root: ``from roundtrip_checks import ...``)."""

from hypothesis import strategies as st

from msglc import LazyDict, LazyList

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.binary(max_size=40),
)
keys = st.one_of(st.text(max_size=12), st.integers(-(2**63), 2**64 - 1))
float_rows = st.integers(1, 6).flatmap(
    lambda w: st.lists(st.lists(st.floats(allow_nan=False), min_size=w, max_size=w), min_size=1, max_size=40)
)
values = st.recursive(
    st.one_of(scalars, float_rows, st.lists(st.integers(-32, 127), max_size=200)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=30),
        st.tuples(inner, inner),
        st.dictionaries(keys, inner, max_size=30),
    ),
    max_leaves=200,
)


def plain(x: object) -> object:
    """What reading back should give: tuples and sets become lists, bytes-likes bytes."""
    if isinstance(x, (list, tuple, set, frozenset)):
        return [plain(v) for v in x]
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (bytearray, memoryview)):
        return bytes(x)
    return x


def check_lazy(lazy: object, expected: object, depth: int = 0) -> None:
    """Walk a lazy value and compare every part with the plain object."""
    if isinstance(lazy, LazyList):
        assert isinstance(expected, list)
        assert len(lazy) == len(expected)
        for i in list(range(min(len(expected), 5))) + [-1, len(expected) // 2]:
            if expected:
                check_lazy(lazy[i], expected[i], depth + 1)
        assert lazy[1:4] == expected[1:4]
        assert lazy[::-3] == expected[::-3]
        assert list(lazy) == expected
        assert lazy == expected
    elif isinstance(lazy, LazyDict):
        assert isinstance(expected, dict)
        assert list(lazy) == list(expected)
        assert len(lazy) == len(expected)
        for k, v in list(expected.items())[:8]:
            assert k in lazy
            check_lazy(lazy[k], v, depth + 1)
        assert dict(lazy.items()) == expected
        assert lazy == expected
    else:
        assert lazy == expected
