"""Helpers for the strategies' own tests: "does this strategy ever generate X?"."""

from __future__ import annotations

import warnings
from typing import Callable, Iterable, Iterator, Set

import msgspec
import torch
from hypothesis import Phase, find, settings
from hypothesis.errors import HypothesisWarning, NoSuchExample
from hypothesis.strategies import SearchStrategy

__all__ = ["generates", "walk", "tensors_in"]


def generates(
    strategy: SearchStrategy,
    classify: Callable[[object], Iterable[str]],
    expected: Iterable[str],
    *,
    max_examples: int = 600,
) -> Set[str]:
    """Draw from ``strategy`` until ``classify`` has reported every label in ``expected``.

    Stops at the first example that completes the set (no shrinking); fails
    with "got ..., but should also see ..." naming the strategy otherwise.
    Runs under the loaded profile, so ``ci`` makes it deterministic.
    """
    want = set(expected)
    seen: Set[str] = set()

    def complete(value: object) -> bool:
        seen.update(classify(value))
        return want <= seen

    try:
        with warnings.catch_warnings():
            # find() renders the example that completed the set as if it had
            # failed; messages are large by design, and the warning about
            # the size of that repr says nothing about the strategy.
            warnings.filterwarnings("ignore", "Generating overly large repr", HypothesisWarning)
            find(
                strategy,
                complete,
                settings=settings(settings.default, max_examples=max_examples, phases=[Phase.generate], database=None),
            )
    except NoSuchExample:
        raise AssertionError(
            f"got {sorted(seen & want)}, but should also see {sorted(want - seen)} "
            f"within {max_examples} examples [{strategy!r:.200}]"
        ) from None
    return seen


def walk(value: object, limit: int = 200_000) -> Iterator[object]:
    """Every value nested in ``value`` (structs, lists, tuples, dicts), ``value`` first."""
    stack = [value]
    count = 0
    while stack and count < limit:
        item = stack.pop()
        count += 1
        yield item
        if isinstance(item, msgspec.Struct):
            stack.extend(getattr(item, f) for f in item.__struct_fields__)
        elif isinstance(item, (list, tuple, set, frozenset)) and not isinstance(item, torch.Size):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())


def tensors_in(value: object) -> Iterator[torch.Tensor]:
    return (v for v in walk(value) if isinstance(v, torch.Tensor))
