"""Where a mutation's choices come from: Hypothesis (shrinkable) or a seeded PRNG (fast, for long runs).

Every mutation in :mod:`conformance.fuzz` takes a :class:`Choices` and asks it
for integers, elements and bytes. Under Hypothesis each choice is a draw, so a
failing input shrinks toward the earliest byte, the smallest count and the
first listed alternative. In the seeded loop each choice comes from
``random.Random(seed)``, so input number ``i`` of a run with seed ``s`` is
reproduced exactly by ``RandomChoices.for_input(s, i)``.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

import hypothesis.strategies as st

__all__ = ["Choices", "HypothesisChoices", "RandomChoices"]


class Choices:
    """The interface mutations draw from; subclasses decide where choices come from."""

    def integer(self, lo: int, hi: int, label: str = "") -> int:
        """An int in ``[lo, hi]``; shrinks toward ``lo``."""
        raise NotImplementedError

    def choice(self, options: Sequence[Any], label: str = "") -> Any:
        """One of ``options``; shrinks toward the first."""
        return options[self.integer(0, len(options) - 1, label)]

    def binary(self, max_size: int, label: str = "") -> bytes:
        """Up to ``max_size`` arbitrary bytes; shrinks toward empty."""
        raise NotImplementedError

    def boolean(self, label: str = "") -> bool:
        return bool(self.integer(0, 1, label))


class HypothesisChoices(Choices):
    """Choices drawn from a Hypothesis ``st.data()`` object, labelled so the report reads as a recipe."""

    def __init__(self, data: Any):
        self._data = data

    def integer(self, lo: int, hi: int, label: str = "") -> int:
        return self._data.draw(st.integers(lo, hi), label=label or None)

    def choice(self, options: Sequence[Any], label: str = "") -> Any:
        return self._data.draw(st.sampled_from(list(options)), label=label or None)

    def binary(self, max_size: int, label: str = "") -> bytes:
        return self._data.draw(st.binary(max_size=max_size), label=label or None)


class RandomChoices(Choices):
    """Choices from a seeded ``random.Random``: deterministic for a given seed, and cheap."""

    def __init__(self, rng: random.Random):
        self._rng = rng

    @classmethod
    def for_input(cls, seed: int, index: int) -> "RandomChoices":
        """The choices of input ``index`` in a run seeded with ``seed`` (independent of every other input)."""
        return cls(random.Random(f"{seed}:{index}"))

    def integer(self, lo: int, hi: int, label: str = "") -> int:
        return self._rng.randint(lo, hi)

    def binary(self, max_size: int, label: str = "") -> bytes:
        return self._rng.randbytes(self._rng.randint(0, max_size))
