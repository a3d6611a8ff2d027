"""Values for untyped schema positions (``Any``, ``object``, ``Dict[str, Any]``).

In an untyped position only the codec, not the schema, decides what comes
back, so these values carry every Python type pickle restores exactly and a
naive msgpack codec loses: tuples (vs lists), ``torch.Size``, numpy scalars,
integers beyond 64 bits, enum members, small tensors and ndarrays, bytes.
"""

from __future__ import annotations

import enum
import functools
from typing import Optional, Sequence, Tuple

import hypothesis.strategies as st
import torch
from hypothesis.errors import InvalidArgument

from reference_codec.schema import ENUM_TYPES

from ._public import check_int, named, named_composite
from .tensors import ndarrays, tensors
from .values import big_ints, edge_floats, int64s, numpy_scalars, texts

__all__ = ["untyped_values", "untyped_leaves", "torch_sizes"]

_TORCH_SIZES = named("torch_sizes", st.lists(st.integers(0, 64), max_size=4).map(torch.Size))
_SMALL_TENSORS = tensors(max_dims=2, max_side=3)
_SMALL_NDARRAYS = ndarrays(max_dims=2, max_side=3)


def torch_sizes() -> st.SearchStrategy[torch.Size]:
    """``torch.Size`` of up to 4 dimensions. Shrinks toward ``torch.Size([])``."""
    return _TORCH_SIZES


def _leaves(enums: Tuple[type, ...]) -> st.SearchStrategy:
    branches = [
        st.none(),
        st.booleans(),
        int64s(),
        big_ints(),
        edge_floats(),
        texts(),
        st.binary(max_size=8),
        numpy_scalars(),
        _TORCH_SIZES,
        _SMALL_TENSORS,
        _SMALL_NDARRAYS,
    ]
    if enums:
        branches.append(st.sampled_from([member for cls in enums for member in cls]))
    return named("untyped_leaves", st.one_of(branches), **({} if enums == ENUM_TYPES else {"enums": enums}))


_DEFAULT_LEAVES = _leaves(ENUM_TYPES)
# Keys an untyped dict can hold on every codec: msgpack maps take any scalar
# key, but only str and int64 keys decode to the same Python key everywhere.
_KEYS = st.one_of(texts(max_size=8), int64s())


def _containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_KEYS, children, max_size=4),
    )


@functools.lru_cache(maxsize=None)
def _recursive(enums: Tuple[type, ...], max_leaves: int) -> st.SearchStrategy:
    leaves = _DEFAULT_LEAVES if enums == ENUM_TYPES else _leaves(enums)
    return st.recursive(leaves, _containers, max_leaves=max_leaves)


@named_composite("untyped_values")
def _untyped_values(draw, enums: Tuple[type, ...] = ENUM_TYPES, max_leaves: int = 6):
    return draw(_recursive(enums, max_leaves))


_DEFAULT_UNTYPED = _untyped_values()


def untyped_leaves(*, enums: Optional[Sequence[type]] = None) -> st.SearchStrategy:
    """One non-container value of any kind :func:`untyped_values` uses. Shrinks toward ``None``."""
    return _DEFAULT_LEAVES if enums is None else _leaves(_check_enums(enums))


def _check_enums(enums: Sequence[type]) -> Tuple[type, ...]:
    out = tuple(enums)
    for cls in out:
        if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
            raise InvalidArgument(f"enums has {cls!r}, which is not an Enum class")
    return out


def untyped_values(*, enums: Optional[Sequence[type]] = None, max_leaves: int = 6) -> st.SearchStrategy:
    """Nested lists, tuples and dicts of ``None``/bool/int/float/str/bytes and richer leaves.

    Leaves include ints up to 128 bits, NaN/``-0.0``/infinite floats, numpy
    scalars of several dtypes, small tensors and ndarrays, ``torch.Size`` and
    members of ``enums`` (default: the schema's ``ENUM_TYPES``; pass another
    implementation's enums to drive its codec). Dict keys are str or int64.
    Nesting is bounded by ``max_leaves``.

    Shrinks toward ``None``, then toward flatter containers with fewer leaves.
    """
    check_int(max_leaves, "max_leaves", min_value=1, max_value=64)
    if enums is None and max_leaves == 6:
        return _DEFAULT_UNTYPED
    chosen: dict = {} if enums is None else {"enums": _check_enums(enums)}
    if max_leaves != 6:
        chosen["max_leaves"] = max_leaves
    return _untyped_values(**chosen)
