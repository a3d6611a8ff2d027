"""The engine-neutral parts of ``--frontend``: answer comparison, benchmark ratios, and the CLI's refusals; no engine started."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

import pytest

from conformance.live.frontend import BenchRun, FrontendRunError, bench, bench_summary, first_difference
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
    assert "Target, concurrency 256: msgpack at least 1.10x pickle: x1.080: MISSED (3 rounds: too few for a 95% interval)." in said
    assert any(line.startswith("Target, concurrency 256: the reference codec") and "MISSED" in line for line in said)


def test_sglang_bench_verdict_says_not_shown_when_the_median_misses_but_the_interval_holds_the_target():
    from conformance.engines.sglang.live_frontend import SGLangFrontend

    # reference/msgpack per round: 0.90 ... 1.05, median 0.98, 95% interval (2nd and 8th of 9) 0.92-1.04
    shown = SGLangFrontend().bench_verdict(_runs({"msgpack": [100.0] * 9, "reference": [90.0, 92.0, 95.0, 97.0, 98.0, 99.0, 101.0, 104.0, 105.0]}))
    assert shown == [
        "Target, concurrency 256: the reference codec inside SGLang at least SGLang's msgpack: reference/msgpack req/s x0.980 "
        "(95% interval x0.920-x1.040), mean ITL x1.000: NOT SHOWN (below x1.000, but its 95% interval x0.920-x1.040 holds it: the rounds cannot tell)."
    ]
    # every round behind: the interval is below 1 too
    (line,) = SGLangFrontend().bench_verdict(_runs({"msgpack": [100.0] * 9, "reference": [90.0, 92.0, 95.0, 97.0, 98.0, 99.0, 99.0, 99.0, 99.5]}))
    assert line.endswith(": MISSED (its 95% interval x0.920-x0.990 is below x1.000).")


class _ToolOnlyFrontend:
    """A front end whose benchmark tool writes fixed figures; no server, no CPU figure."""

    modes = ("a", "b")

    @contextlib.contextmanager
    def serve(self, mode, workdir):
        yield f"http://{mode}"

    #: what the tool writes beside ``completed``
    LINE = {"request_throughput": 10.0, "output_throughput": 100.0, "mean_ttft_ms": 2.0, "mean_itl_ms": 0.5, "total_output_tokens_retokenized": 16}

    def bench_argv(self, url, *, concurrency, prompts, input_len, output_len, seed, output_file):
        line = {"completed": prompts, **self.LINE}
        return [sys.executable, "-c", f"open({output_file!r}, 'w').write({json.dumps(line)!r})"]


class _MeteredFrontend(_ToolOnlyFrontend):
    """The same, with a CPU clock per server that only the tool's runs advance: 0.5 s a run for a, 1 s for b."""

    COST = {"a": 0.5, "b": 1.0}

    @contextlib.contextmanager
    def serve(self, mode, workdir):
        self.ledger = os.path.join(workdir, "runs")
        yield f"http://{mode}"

    def bench_argv(self, url, **kwargs):
        argv = super().bench_argv(url, **kwargs)
        argv[-1] += f"; open({self.ledger!r}, 'a').write({url[-1]!r})"  # the run, as the server would feel it
        return argv

    def server_cpu_seconds(self, url):
        try:
            with open(self.ledger, encoding="utf-8") as fh:
                return fh.read().count(url[-1]) * self.COST[url[-1]]
        except FileNotFoundError:
            return 0.0


def _bench(frontend, tmp_path):
    return bench(frontend, frontend.modes, concurrencies=[1], repeats=2, prompts={1: 4}, input_len=8, output_len=4, seed=0, workdir=str(tmp_path), log=lambda line: None)


def test_a_run_whose_answers_came_in_one_piece_counts_and_one_without_text_is_refused(tmp_path):
    one_piece = _ToolOnlyFrontend()
    one_piece.LINE = {**one_piece.LINE, "mean_itl_ms": 0.0}  # every answer streamed in one chunk: no gap between tokens
    assert all(r.figures["mean_itl_ms"] == 0.0 for r in _bench(one_piece, tmp_path))
    refused = _ToolOnlyFrontend()
    refused.LINE = {**refused.LINE, "total_output_tokens_retokenized": 0}  # completed, credited with tokens, no text
    with pytest.raises(FrontendRunError, match="got no tokens in mode a .*0 output tokens in the text received"):
        _bench(refused, tmp_path)


def test_a_run_reports_the_servers_cpu_per_request_read_before_and_after_the_tool(tmp_path):
    runs = _bench(_MeteredFrontend(), tmp_path)
    # read before the tool runs and after it: 0.5 s (a) or 1 s (b) over 4 requests
    assert sorted({(r.mode, r.figures["server_cpu_ms"]) for r in runs}) == [("a", 125.0), ("b", 250.0)]
    rows = {row["mode"]: row for row in bench_summary(runs, ["a", "b"])}
    assert rows["b"]["server_cpu_ms"] == 250.0 and rows["b"]["server_cpu_ms_ratio"] == 2.0
    assert rows["b"]["request_throughput_ratio"] == 1.0


def test_a_front_end_that_cannot_measure_its_cpu_has_no_cpu_figure_and_the_rest_as_before(tmp_path):
    runs = _bench(_ToolOnlyFrontend(), tmp_path)
    assert all(r.figures["server_cpu_ms"] is None and r.figures["request_throughput"] == 10.0 for r in runs)
    rows = bench_summary(runs, ["a", "b"])
    assert all(row["server_cpu_ms"] is None and row["server_cpu_ms_ratio"] is None for row in rows)
    assert all(row["mean_itl_ms_ratio"] == 1.0 for row in rows)


def test_the_sglang_verdict_gives_the_server_cpu_ratio_when_it_was_measured():
    from conformance.engines.sglang.live_frontend import SGLangFrontend

    runs = [
        BenchRun(mode, 1, rep, {"request_throughput": 80.0, "output_throughput": 1.0, "mean_ttft_ms": 1.0, "mean_itl_ms": 1.0, "server_cpu_ms": cpu})
        for rep, (a, b) in enumerate([(20.0, 19.0), (22.0, 22.0), (21.0, 21.0)])
        for mode, cpu in (("msgpack", a), ("reference", b))
    ]
    (line,) = SGLangFrontend().bench_verdict(runs)
    assert "server CPU per request x1.000" in line and line.endswith(": met.")


def test_a_session_cpu_clock_counts_the_work_of_every_process_in_it():
    pytest.importorskip("psutil")
    from conformance.engines.sglang.live_frontend import session_cpu_seconds, stop_session

    # a leader that starts a child; both burn CPU for 0.4 s, then wait to be stopped
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
    leader = burn + (
        "import subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, '-c', {burn + 'time.sleep(60)'!r}])\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", leader], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while session_cpu_seconds(proc.pid) < 0.75 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert session_cpu_seconds(proc.pid) >= 0.75  # the leader's 0.4 s and its child's
    finally:
        stop_session(proc, 5)


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
