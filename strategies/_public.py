"""How public strategies are declared: readable reprs and eager argument checks.

Every public strategy function in this package validates its arguments when it
is *called* (not when the strategy is first drawn from), raising
:class:`hypothesis.errors.InvalidArgument` with a message that names the
argument, and returns a strategy whose ``repr`` is the call that made it
(``tensors(dtypes=('bfloat16',), max_side=2)``) rather than a tree of
``one_of``/``map`` internals.
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Iterable, Optional, Tuple, TypeVar

import hypothesis.strategies as st
from hypothesis.errors import InvalidArgument

__all__ = [
    "named_composite",
    "named",
    "check_bool",
    "check_int",
    "check_optional_bool",
    "check_choice",
    "check_subset",
    "check_strategy",
]

T = TypeVar("T")


def named_composite(name: str) -> Callable[[Callable[..., Any]], Callable[..., st.SearchStrategy]]:
    """``st.composite``, with the resulting strategies' repr using ``name``.

    The implementation functions are private (``_tensors``) so that the public
    function of the same name can validate its arguments first; the repr then
    reads as the public call.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., st.SearchStrategy]:
        fn.__name__ = name
        fn.__qualname__ = name
        return st.composite(fn)

    return decorate


def named(name: str, strategy: st.SearchStrategy, **shown: Any) -> st.SearchStrategy:
    """``strategy``, with the repr ``name(**shown)``; draws exactly as ``strategy`` does.

    For public strategies built from ``one_of``/``map`` trees, whose own repr
    would spell out the tree.
    """

    def delegate(draw, **_ignored: Any) -> Any:
        return draw(strategy)

    return named_composite(name)(delegate)(**shown)


def check_bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be a bool, got {value!r}")
    return value


def check_optional_bool(value: object, name: str) -> Optional[bool]:
    if value is not None and not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be None or a bool, got {value!r}")
    return value


def check_int(value: object, name: str, *, min_value: Optional[int] = None, max_value: Optional[int] = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"{name} must be an int, got {value!r}")
    if min_value is not None and value < min_value:
        raise InvalidArgument(f"{name} must be >= {min_value}, got {value!r}")
    if max_value is not None and value > max_value:
        raise InvalidArgument(f"{name} must be <= {max_value}, got {value!r}")
    return value


def check_choice(value: T, name: str, allowed: Collection[T]) -> T:
    if value not in allowed:
        raise InvalidArgument(f"{name} must be one of {sorted(map(repr, allowed))}, got {value!r}")
    return value


def check_subset(values: Iterable[T], name: str, allowed: Collection[T]) -> Tuple[T, ...]:
    """``values`` as a tuple (order kept, duplicates dropped); every item must be in ``allowed``."""
    if isinstance(values, (str, bytes)):
        raise InvalidArgument(f"{name} must be a collection, got the single value {values!r}")
    try:
        items = tuple(dict.fromkeys(values))
    except TypeError:
        raise InvalidArgument(f"{name} must be an iterable, got {values!r}") from None
    if not items:
        raise InvalidArgument(f"{name} must not be empty")
    bad = [v for v in items if v not in allowed]
    if bad:
        raise InvalidArgument(f"{name} has {bad!r:.200}, which are not among {list(allowed)!r:.400}")
    return items


def check_strategy(value: object, name: str) -> st.SearchStrategy:
    if not isinstance(value, st.SearchStrategy):
        raise InvalidArgument(f"{name} must be a hypothesis strategy, got {value!r}")
    return value
