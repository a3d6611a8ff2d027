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


def _runs(values):
    """BenchRuns at concurrency 256 from {mode: [req/s per round]}."""
    return [
        BenchRun(mode, 256, rep, {"request_throughput": v, "output_throughput": v, "mean_ttft_ms": 1.0, "mean_itl_ms": 1.0})
        for mode, per_round in values.items()
        for rep, v in enumerate(per_round)
    ]


def test_sglang_bench_verdict_judges_only_what_the_run_measured():
    """A run of msgpack and reference alone has a reference target line and no pickle line; with pickle it has both."""
    from conformance.engines.sglang.live_frontend import SGLangFrontend

    said = SGLangFrontend().bench_verdict(_runs({"msgpack": [100.0, 100.0, 100.0], "reference": [99.0, 103.0, 101.0]}))
    assert said == ["Target, concurrency 256: the reference codec inside SGLang at least SGLang's msgpack: reference/msgpack req/s x1.010, mean ITL x1.000: met."]
    said = SGLangFrontend().bench_verdict(_runs({"pickle": [50.0, 50.0, 50.0], "msgpack": [100.0, 50.0, 54.0], "reference": [99.0, 50.0, 50.0]}))
    assert "Seed, concurrency 256 (msgpack ahead of pickle): msgpack/pickle req/s x1.080: confirmed." in said
    assert "Target, concurrency 256: msgpack at least 1.10x pickle: x1.080: MISSED." in said
    assert any(line.startswith("Target, concurrency 256: the reference codec") and line.endswith("MISSED.") for line in said)


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
