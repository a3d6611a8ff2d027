"""The engine-neutral parts of ``--frontend``: answer comparison, benchmark ratios, and the CLI's refusals; no engine started."""

from __future__ import annotations

import pytest

from conformance.live.frontend import BenchRun, bench_summary, first_difference
from conformance.live.frontend_main import main


@pytest.mark.parametrize(
    "a, b, where",
    [
        ({"x": [1, 2]}, {"x": [1, 2]}, None),
        ({"x": [1, 2]}, {"x": [1, 3]}, "$.x[1]"),
        ({"x": 1}, {"x": 1.0}, "$.x (type int vs float)"),
        ({"x": True}, {"x": 1}, "$.x (type bool vs int)"),
        ({"x": 1}, {"x": 1, "y": 2}, "$.y (missing on one side)"),
        ([1], [1, 2], "$ (length 1 vs 2)"),
    ],
)
def test_first_difference_names_the_path_and_tells_types_apart(a, b, where):
    assert first_difference(a, b) == where


def test_bench_ratios_are_per_round_then_median():
    runs = []
    for rep, (base, other) in enumerate([(10.0, 11.0), (20.0, 20.0), (5.0, 6.0)]):
        for mode, value in (("a", base), ("b", other)):
            runs.append(BenchRun(mode, 1, rep, {"request_throughput": value, "output_throughput": value, "mean_ttft_ms": value, "mean_itl_ms": value}))
    rows = {r["mode"]: r for r in bench_summary(runs, ["a", "b"])}
    assert rows["b"]["request_throughput_ratios"] == [1.1, 1.0, 1.2]
    assert rows["b"]["request_throughput_ratio"] == 1.1  # the median of the ratios, not 11/10 of the medians
    assert rows["a"]["request_throughput_ratio"] == 1.0


def test_frontend_cli_refuses_an_unknown_mode_with_the_modes_offered(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--frontend", "sglang", "--compare", "pickle,json"])
    assert exc.value.code == 2
    assert "unknown mode(s) ['json']" in capsys.readouterr().err


def test_frontend_cli_refuses_an_engine_without_a_front_end(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--frontend", "vllm"])
    assert exc.value.code == 2
    assert "has no live front end" in capsys.readouterr().err
