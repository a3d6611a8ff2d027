"""The paired design (orders balanced for position and carry-over) and its reading (the median's interval, the verdict): conformance.paired."""

from __future__ import annotations

import random
from collections import Counter
from math import log
from typing import Tuple, cast

import pytest

from conformance.paired import at_least, joint_level, live_rounds, median_interval, round_orders, values_needed, whole_cycles, williams_cycle


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_a_williams_cycle_puts_every_mode_in_every_position_and_after_every_other_mode_equally_often(n):
    rows = williams_cycle(n)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    assert all(sorted(row) == list(range(n)) for row in rows)
    positions = Counter((pos, t) for row in rows for pos, t in enumerate(row))
    assert len(set(positions.values())) == 1 and len(positions) == n * n
    follows = Counter((a, b) for row in rows for a, b in zip(row, row[1:]))
    if n > 1:
        assert len(follows) == n * (n - 1) and len(set(follows.values())) == 1, follows


def test_round_orders_repeat_the_cycle_over_the_modes_names():
    assert round_orders(["pickle", "msgpack", "reference"], 7) == [
        ["pickle", "msgpack", "reference"],
        ["msgpack", "reference", "pickle"],
        ["reference", "pickle", "msgpack"],
        ["reference", "msgpack", "pickle"],
        ["pickle", "reference", "msgpack"],
        ["msgpack", "pickle", "reference"],
        ["pickle", "msgpack", "reference"],
    ]


@pytest.mark.parametrize("n, expected", [(5, None), (6, (1, 6)), (9, (2, 8)), (12, (3, 10)), (20, (6, 15))])
def test_the_median_interval_is_the_pair_of_order_statistics_that_reaches_95_percent(n, expected):
    values = [float(i) for i in range(n, 0, -1)]  # any order in, sorted inside
    assert median_interval(values) == expected


def test_the_median_interval_covers_the_true_median_at_least_95_percent_of_the_time_for_a_skewed_distribution():
    rng = random.Random(25)
    true_median = log(2)  # of the exponential distribution with mean 1
    trials = 4000
    for n in (6, 9, 12):
        inside = 0
        for _ in range(trials):
            low, high = median_interval([rng.expovariate(1.0) for _ in range(n)])
            inside += low <= true_median <= high
        assert inside / trials >= 0.94, (n, inside / trials)  # exact coverage 96.9%, 96.1%, 96.1%


def test_intervals_at_the_joint_level_all_hold_together_in_95_percent_of_runs_where_nothing_differs():
    # A/A: 25 families, 10 processes each, every ratio drawn around 1; a false alarm is any family whose interval lies below 1
    rng = random.Random(7)
    trials, families, processes = 1500, 25, 10

    def false_alarms(level: float) -> float:
        alarms = 0
        for _ in range(trials):
            runs = ([rng.gauss(1.0, 0.02) for _ in range(processes)] for _ in range(families))
            alarms += any(cast(Tuple[float, float], median_interval(r, level))[1] < 1 for r in runs)
        return alarms / trials

    assert false_alarms(joint_level(0.95, families)) <= 0.05  # exact: 1 - (1 - 2/1024)**25 = 4.8%
    assert false_alarms(0.95) >= 0.15  # each at 95%: 1 - (1 - 11/1024)**25 = 24%


@pytest.mark.parametrize("level, needed", [(0.95, 6), (0.99, 8), (joint_level(0.95, 25), 10), (joint_level(0.95, 13), 10)])
def test_values_needed_is_the_fewest_values_whose_median_interval_reaches_the_level(level, needed):
    assert values_needed(level) == needed
    assert median_interval([1.0] * needed, level) is not None and median_interval([1.0] * (needed - 1), level) is None


def test_the_joint_level_divides_what_may_miss_among_the_claims():
    assert joint_level(0.95, 1) == 0.95 and abs(joint_level(0.95, 25) - 0.998) < 1e-12
    with pytest.raises(ValueError, match="claims"):
        joint_level(0.95, 0)
    with pytest.raises(ValueError, match="level"):
        values_needed(1.0)


@pytest.mark.parametrize("modes, rounds, whole", [(2, 15, 16), (2, 16, 16), (3, 15, 18), (3, 1, 6), (4, 9, 12)])
def test_whole_cycles_rounds_up_to_rounds_in_which_every_mode_runs_first_equally_often(modes, rounds, whole):
    assert whole_cycles(modes, rounds) == whole
    firsts = Counter(order[0] for order in round_orders(list(range(modes)), whole))
    assert len(set(firsts.values())) == 1 and len(firsts) == modes
    with pytest.raises(ValueError, match="rounds"):
        whole_cycles(modes, 0)


def test_the_median_interval_refuses_a_level_outside_zero_and_one():
    with pytest.raises(ValueError, match="level"):
        median_interval([1.0] * 9, level=1.0)


def test_at_least_is_met_by_the_median_missed_below_the_interval_and_not_shown_inside_it():
    assert at_least([0.9, 1.0, 1.1], 1.0) == "met"
    assert at_least([0.9, 0.95, 0.99], 1.0) == "MISSED (3 rounds: too few for a 95% interval)"
    assert at_least([0.9] * 4 + [0.95] * 5, 1.0).startswith("MISSED (its 95% interval x0.900-x0.950 is below x1.000)")
    assert at_least([0.9, 0.95, 0.97, 0.98, 0.99, 1.0, 1.02, 1.05, 1.2], 1.0).startswith("NOT SHOWN")
    with pytest.raises(ValueError):
        at_least([], 1.0)


def test_live_rounds_keep_one_smoke_round_and_round_more_up_to_whole_cycles():
    assert [live_rounds(2, r) for r in (1, 2, 3, 5)] == [1, 2, 4, 6]
    assert [live_rounds(3, r) for r in (1, 2, 6, 7)] == [1, 6, 6, 12]
    with pytest.raises(ValueError):
        live_rounds(2, 0)
