"""The paired benchmark's design (orders balanced for position and carry-over) and its reading (the median's interval, the verdict)."""

from __future__ import annotations

import random
from collections import Counter
from math import log

import pytest

from conformance.live.frontend import bench, bench_summary
from conformance.live.paired import at_least, median_interval, round_orders, williams_cycle
from conformance.live.tests.test_frontend import _ToolOnlyFrontend


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


class _ThreeModes(_ToolOnlyFrontend):
    """A front end of three modes whose benchmark tool writes fixed figures."""

    modes = ("a", "b", "c")


def test_bench_runs_the_modes_in_a_balanced_order_and_gives_each_ratio_an_interval(tmp_path):
    frontend = _ThreeModes()
    runs = bench(frontend, frontend.modes, concurrencies=[1], repeats=6, prompts={1: 2}, input_len=8, output_len=4, seed=0, workdir=str(tmp_path), log=lambda line: None)
    order = [r.mode for r in runs]
    rounds = [order[i:i + 3] for i in range(0, 18, 3)]
    follows = Counter((x, y) for row in rounds for x, y in zip(row, row[1:]))
    assert len(follows) == 6 and set(follows.values()) == {2}, follows  # a rotation alone puts b after a 3 times and a after b never
    assert Counter(row[0] for row in rounds) == {"a": 2, "b": 2, "c": 2}
    rows = bench_summary(runs, list(frontend.modes))
    assert all(row["request_throughput_ratio_interval"] == [1.0, 1.0] for row in rows)


def test_the_report_gives_each_modes_req_s_ratio_interval_and_names_the_design(tmp_path):
    import argparse

    from conformance.live.frontend import BenchRun
    from conformance.live.frontend_main import _write_doc

    per_round = [1.0, 1.1, 0.9, 1.2, 0.95, 1.05, 1.0]  # b over a, 7 rounds: 95% interval = 1st and 7th of the sorted ratios
    runs = [
        BenchRun(mode, 1, rep, {"request_throughput": 10.0 * (ratio if mode == "b" else 1.0), "output_throughput": 1.0, "mean_ttft_ms": 1.0, "mean_itl_ms": 1.0, "server_cpu_ms": None})
        for rep, ratio in enumerate(per_round)
        for mode in ("a", "b")
    ]
    args = argparse.Namespace(input_len=8, output_len=4, prompts="1:2", repeats=7)
    doc = tmp_path / "report.md"
    _write_doc(str(doc), ["--frontend", "x"], bench_summary(runs, ["a", "b"]), runs, args, "abc1234", "a front end", ["a verdict"])
    text = doc.read_text()
    assert "Williams design" in text and "- a verdict" in text
    (b_row,) = [line for line in text.splitlines() if line.startswith("| 1 | b |")]
    assert "| 0.900-1.200 | 1.000, 1.100, 0.900, 1.200, 0.950, 1.050, 1.000 |" in b_row
