"""A paired benchmark's design and its reading: which order the modes run in each round, and how sure a median ratio is.

A round runs every mode once and gives one ratio per mode to the baseline;
the verdict is the median of those ratios over the rounds. The live
benchmarks (:mod:`conformance.live`) run rounds of servers or pipelines;
the in-process tool (:mod:`conformance.benchmarks.interleaved`) runs rounds
of codec calls and reads its verdicts over fresh processes. Two things decide
whether that median can be trusted on a shared, noisy machine:

- **The order within a round.** A mode that always runs first, or always
  right after the same other mode, carries whatever the machine does at that
  point (a neighbour's burst, caches and frequency left by the run before).
  :func:`round_orders` gives a Williams design: over a cycle of rounds
  (``n`` rounds for ``n`` modes when ``n`` is even, ``2n`` when odd) every
  mode runs in every position equally often and directly after every other
  mode equally often.
- **The spread of the ratios.** :func:`median_interval` gives a confidence
  interval for the median that assumes nothing about the ratios'
  distribution (rounds are taken as independent): a median below 1 whose
  interval holds 1 says the rounds cannot tell the two modes apart.
"""

from __future__ import annotations

import statistics
from math import comb
from typing import List, Optional, Sequence, Tuple, TypeVar

__all__ = [
    "round_orders",
    "median_interval",
    "williams_cycle",
    "whole_cycles",
    "live_rounds",
    "judge",
    "at_least",
    "joint_level",
    "values_needed",
    "MET",
    "MISSED",
    "NOT_SHOWN",
]

T = TypeVar("T")


def williams_cycle(n: int) -> List[List[int]]:
    """The rows of a Williams design for ``n`` treatments: indices ``0..n-1``, ``n`` rows (``n`` even) or ``2n`` (``n`` odd).

    Row ``i`` is the first row ``0, 1, n-1, 2, n-2, ...`` plus ``i`` (mod ``n``);
    for odd ``n`` the mirrored rows follow, which balance what the first half
    cannot. Over the cycle, each treatment holds each position equally often
    and follows each other treatment equally often.
    """
    if n < 1:
        raise ValueError(f"a design needs at least one treatment, got {n}")
    first = [(j + 1) // 2 if j % 2 else (n - j // 2) % n for j in range(n)]  # 0, 1, n-1, 2, n-2, ...
    rows = [[(t + i) % n for t in first] for i in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def whole_cycles(modes: int, rounds: int) -> int:
    """``rounds`` rounded up to whole :func:`williams_cycle` s of ``modes`` modes: the fewest, at least ``rounds``, that are balanced.

    Part of a cycle puts some mode first more often than another. Where the
    position matters at all, the median of the rounds' ratios then comes from
    the larger group: 15 rounds of two modes have 8 with the first mode
    first, and their median is the 8th ratio, at the edge of those 8, not
    between the two groups.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    cycle = len(williams_cycle(modes))
    return -(-rounds // cycle) * cycle


def live_rounds(modes: int, rounds: int) -> int:
    """The rounds a live benchmark runs when ``rounds`` are asked of ``modes`` modes.

    One stays one: a smoke run of every mode, too few rounds for any interval,
    whose order cannot be balanced anyway. More are a measurement, rounded up to
    :func:`whole_cycles`.
    """
    return 1 if rounds == 1 else whole_cycles(modes, rounds)


def round_orders(modes: Sequence[T], rounds: int) -> List[List[T]]:
    """The order ``modes`` run in, for each of ``rounds`` rounds: the :func:`williams_cycle` repeated (balanced over whole cycles)."""
    cycle = williams_cycle(len(modes))
    return [[modes[i] for i in cycle[r % len(cycle)]] for r in range(rounds)]


def median_interval(values: Sequence[float], level: float = 0.95) -> Optional[Tuple[float, float]]:
    """A distribution-free ``level`` confidence interval for the median that ``values`` were drawn from, or None.

    The interval is ``(x[k], x[n-1-k])`` of the sorted values ``x``, with the
    largest ``k`` whose coverage, ``1 - 2 P(Binomial(n, 1/2) <= k)``, is at
    least ``level`` (the median lies outside only when ``k`` or fewer values
    fall on one side of it); so its coverage is ``level`` or more, whatever
    the shape of the distribution. 9 rounds at 95%: the 2nd and 8th values.
    None when there are too few values for any interval to reach ``level``
    (fewer than 6 at 95%).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    n = len(values)
    ordered = sorted(values)
    best = None
    tail = 0
    for k in range(n // 2):
        tail += comb(n, k)
        if 1 - 2 * tail / 2**n < level:
            break
        best = k
    if best is None:
        return None
    return ordered[best], ordered[n - 1 - best]


def joint_level(level: float, claims: int) -> float:
    """The level each of ``claims`` intervals needs so that all of them hold together at ``level`` or more (Bonferroni).

    A verdict that reads several intervals at once ("behind in some family")
    is wrong when any one of them misses: at 95% each, one of 25 families
    falls outside its interval in about a third of runs where nothing differs.
    ``1 - (1 - level) / claims``: 95% over 25 families is 99.8% each.
    """
    if claims < 1:
        raise ValueError(f"claims must be at least 1, got {claims}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    return 1 - (1 - level) / claims


def values_needed(level: float) -> int:
    """The fewest values for which :func:`median_interval` gives an interval at ``level`` (6 at 95%, 10 at 99.8%)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    n = 1
    while median_interval([0.0] * n, level) is None:
        n += 1
    return n


#: The three verdicts of :func:`judge`.
MET, MISSED, NOT_SHOWN = "met", "MISSED", "NOT SHOWN"


def judge(ratios: Sequence[float], target: float, level: float = 0.95) -> Tuple[str, Optional[Tuple[float, float]]]:
    """Whether the median of ``ratios`` is at least ``target``: ``(verdict, interval)``, the verdict :data:`MET`, :data:`MISSED` or :data:`NOT_SHOWN`.

    :data:`MET`: the median is ``target`` or more. :data:`MISSED`: it is
    below, and so is the whole :func:`median_interval` (or there are too few
    ratios for an interval: ``interval`` is then None). :data:`NOT_SHOWN`:
    the median is below but the interval holds ``target``: these rounds cannot
    tell the two apart, and more rounds (or a quieter machine) would be needed
    to say either way. ``interval`` is the median's, whatever the verdict.
    """
    if not ratios:
        raise ValueError("no ratios to judge")
    interval = median_interval(ratios, level)
    if statistics.median(ratios) >= target:
        return MET, interval
    if interval is None or interval[1] < target:
        return MISSED, interval
    return NOT_SHOWN, interval


def at_least(ratios: Sequence[float], target: float, level: float = 0.95) -> str:
    """:func:`judge`'s verdict in words: ``met``, or ``MISSED``/``NOT SHOWN`` with the reason."""
    verdict, interval = judge(ratios, target, level)
    if verdict == MET:
        return MET
    if interval is None:
        return f"{MISSED} ({len(ratios)} rounds: too few for a {level:.0%} interval)"
    low, high = interval
    if verdict == MISSED:
        return f"{MISSED} (its {level:.0%} interval x{low:.3f}-x{high:.3f} is below x{target:.3f})"
    return f"{NOT_SHOWN} (below x{target:.3f}, but its {level:.0%} interval x{low:.3f}-x{high:.3f} holds it: the rounds cannot tell)"
