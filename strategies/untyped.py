"""Values for untyped schema positions (``Any``, ``object``, ``Dict[str, Any]``).

In an untyped position only the codec, not the schema, decides what comes
back, so these values carry every Python type pickle restores exactly and a
naive msgpack codec loses: tuples (vs lists), ``torch.Size``, numpy scalars,
integers beyond 64 bits, enum members, small tensors and ndarrays, bytes.
An implementation whose untyped fields carry only what JSON can say draws
``untyped_values(json_like=True)`` instead.
"""

from __future__ import annotations

import enum
import functools
from typing import Any, Dict, List, Optional, Sequence, Tuple

import hypothesis.strategies as st
import torch
from hypothesis.errors import InvalidArgument

from ._public import check_bool, check_int, named, named_composite
from .tensors import ndarrays, tensors
from .values import big_ints, edge_floats, int64s, numpy_scalars, texts

__all__ = ["untyped_values", "untyped_leaves", "untyped_keys", "torch_sizes"]

_TORCH_SIZES = named("torch_sizes", st.lists(st.integers(0, 64), max_size=4).map(torch.Size))
_SMALL_TENSORS = tensors(max_dims=2, max_side=3)
_SMALL_NDARRAYS = ndarrays(max_dims=2, max_side=3)


def torch_sizes() -> st.SearchStrategy[torch.Size]:
    """``torch.Size`` of up to 4 dimensions. Shrinks toward ``torch.Size([])``."""
    return _TORCH_SIZES


def _leaves(enums: Tuple[type, ...], json_like: bool = False) -> st.SearchStrategy:
    branches: List[st.SearchStrategy[Any]]
    if json_like:
        branches = [st.none(), st.booleans(), int64s(), edge_floats(), texts()]
    else:
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
        branches.append(st.sampled_from([member for cls in enums if issubclass(cls, enum.Enum) for member in cls]))
    shown: Dict[str, Any] = {"enums": enums} if enums else {}
    if json_like:
        shown["json_like"] = True
    return named("untyped_leaves", st.one_of(branches), **shown)


_DEFAULT_LEAVES = _leaves(())
# Keys an untyped dict can hold on every codec: msgpack maps take any scalar
# key, but only str and int64 keys decode to the same Python key everywhere.
_KEYS = st.one_of(texts(max_size=8), int64s())
_UNTYPED_KEYS = named("untyped_keys", _KEYS)
# JSON objects have str keys only.
_JSON_KEYS = texts(max_size=8)


def _containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_KEYS, children, max_size=4),
    )


def _json_containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(_JSON_KEYS, children, max_size=4))


@functools.lru_cache(maxsize=None)
def _recursive(enums: Tuple[type, ...], max_leaves: int, json_like: bool) -> st.SearchStrategy:
    leaves = _DEFAULT_LEAVES if not enums and not json_like else _leaves(enums, json_like)
    return st.recursive(leaves, _json_containers if json_like else _containers, max_leaves=max_leaves)


@named_composite("untyped_values")
def _untyped_values(draw, enums: Tuple[type, ...] = (), max_leaves: int = 6, json_like: bool = False):
    return draw(_recursive(enums, max_leaves, json_like))


_DEFAULT_UNTYPED = _untyped_values()


def untyped_leaves(*, enums: Optional[Sequence[type]] = None) -> st.SearchStrategy:
    """One non-container value of any kind :func:`untyped_values` uses. Shrinks toward ``None``."""
    return _DEFAULT_LEAVES if not enums else _leaves(_check_enums(enums))


def untyped_keys() -> st.SearchStrategy:
    """A key for an untyped dict, or an item of an untyped set: str (up to 8 code points) or int64.

    Hashable, and decoded back to the same Python key by every codec (msgpack
    maps take any scalar key, but only these two come back unchanged
    everywhere). Shrinks toward ``""``.
    """
    return _UNTYPED_KEYS


def _check_enums(enums: Sequence[type]) -> Tuple[type, ...]:
    out = tuple(enums)
    for cls in out:
        if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
            raise InvalidArgument(f"enums has {cls!r}, which is not an Enum class")
    return out


def untyped_values(
    *, enums: Optional[Sequence[type]] = None, max_leaves: int = 6, json_like: bool = False
) -> st.SearchStrategy:
    """Nested lists, tuples and dicts of ``None``/bool/int/float/str/bytes and richer leaves.

    Leaves include ints up to 128 bits, NaN/``-0.0``/infinite floats, numpy
    scalars of several dtypes, small tensors and ndarrays, ``torch.Size`` and
    members of ``enums`` (default: none; pass an implementation's enums to
    drive its codec, e.g. :data:`strategies.reference.UNTYPED` holds the
    reference schema's ``ENUM_TYPES``). Dict keys
    are str or int64. Nesting is bounded by ``max_leaves``.

    ``json_like=True``: only what JSON can say, for an implementation whose
    untyped fields carry nothing richer: ``None``, bool, int64, float, str,
    lists and str-keyed dicts; no tuples, bytes or ext types, and members of
    ``enums`` only when given. Floats still include NaN and
    the infinities: msgpack carries them, and a codec must keep them.

    Shrinks toward ``None``, then toward flatter containers with fewer leaves.
    """
    check_int(max_leaves, "max_leaves", min_value=1, max_value=64)
    check_bool(json_like, "json_like")
    if not enums and max_leaves == 6 and not json_like:
        return _DEFAULT_UNTYPED
    chosen: dict = {}
    if enums:
        chosen["enums"] = _check_enums(enums)
    if max_leaves != 6:
        chosen["max_leaves"] = max_leaves
    if json_like:
        chosen["json_like"] = True
    return _untyped_values(**chosen)
