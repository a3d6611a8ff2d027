"""Cached primitive strategies for use inside composite draws.

A strategy built inside a draw is validated and analysed afresh every time
(tens of microseconds each); these constructors hand back one shared instance
per distinct argument tuple instead, which keeps a message of several hundred
draws fast.
"""

from __future__ import annotations

import functools
from typing import Hashable, Tuple

import hypothesis.strategies as st

from ._public import named_composite

__all__ = ["ints", "exact_binary", "choice", "lists_of", "or_none", "union", "one_in"]


@functools.lru_cache(maxsize=None)
def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """``st.integers(lo, hi)``. Shrinks toward ``lo`` (or 0 when in range)."""
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=4096)
def exact_binary(size: int) -> st.SearchStrategy[bytes]:
    """``st.binary`` of exactly ``size`` bytes. Shrinks toward zero bytes."""
    return st.binary(min_size=size, max_size=size)


@functools.lru_cache(maxsize=None)
def choice(options: Tuple[Hashable, ...]) -> st.SearchStrategy:
    """``st.sampled_from(options)``. Shrinks toward the first option."""
    return st.sampled_from(options)


@functools.lru_cache(maxsize=None)
def lists_of(items: st.SearchStrategy, min_size: int, max_size: int) -> st.SearchStrategy[list]:
    """``st.lists(items, min_size=..., max_size=...)``. Shrinks toward the shortest list."""
    return st.lists(items, min_size=min_size, max_size=max_size)


def or_none(value: st.SearchStrategy) -> st.SearchStrategy:
    """``None`` a third of the time, else ``value``. Shrinks toward ``None``.

    Hypothesis draws the simplest choice (here: ``None``) more often than
    chance already; an even split would leave values under-represented.
    """
    return union((_NONE, value, value))


_NONE = st.none()


@named_composite("union")
def _union(draw, branches: Tuple[st.SearchStrategy, ...], sampler: st.SearchStrategy):
    return draw(draw(sampler))


@functools.lru_cache(maxsize=None)
def union(branches: Tuple[st.SearchStrategy, ...]) -> st.SearchStrategy:
    """One of ``branches``, each with equal probability. Shrinks toward the first.

    Unlike ``st.one_of``, which flattens nested ``one_of`` branches into one
    list (so an arm built from three alternatives is drawn three times as
    often as a plain one), every arm of a schema union gets an equal share.
    The branch is chosen by ``st.sampled_from(branches)``, whose label is
    derived from the branches: Hypothesis' mutator copies choices between
    spans of the same label, and an integer choice would share its label with
    every other integer drawn in the message.
    """
    if len(branches) == 1:
        return branches[0]
    return _union(branches=branches, sampler=st.sampled_from(branches))


@functools.lru_cache(maxsize=None)
def one_in(n: int) -> st.SearchStrategy[bool]:
    """``True`` once in ``n`` draws. Shrinks toward ``False``.

    A ``sampled_from`` of its own, for the reason :func:`union` gives.
    """
    return st.sampled_from((False,) * (n - 1) + (True,))
