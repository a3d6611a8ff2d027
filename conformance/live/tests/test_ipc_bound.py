"""``--ipc-bound``: the scheduler's outputs from precomputed tables, the decode-heavy workload, repeats."""

from __future__ import annotations

import gc
import json
import math
import time

import numpy as np
import pytest
import zmq

from conformance.equivalence import compare
from conformance.live import __main__ as cli
from conformance.live import compare_results, run_pipeline
from conformance.live.client import split_rows
from conformance.live.precomputed import MAX_TOP, PrecomputedLM
from conformance.live.process import new_stats, receive_all, send_counted
from conformance.live.scheduler import Scheduler
from conformance.live.workload import generate_decode_heavy_workload

WORKLOAD = generate_decode_heavy_workload(8, seed=1)


@pytest.fixture(scope="module")
def tables():
    return PrecomputedLM("cpu", seed=0)


def _rows(scheduler, messages):
    for msg in messages:
        scheduler.handle(msg)
    rows = {}
    while scheduler.busy:
        for _, batch in scheduler.step():
            for rid, row in split_rows(batch):
                rows.setdefault(rid, []).append(row)
    return rows


def test_tables_are_the_same_for_the_same_seed_and_differ_for_another(tables):
    again, other = PrecomputedLM("cpu", seed=0), PrecomputedLM("cpu", seed=1)
    assert tables.row(65, 3).values == again.row(65, 3).values
    assert tables.row(65, 3).values != other.row(65, 3).values
    assert tables.hidden(7, 2) == again.hidden(7, 2)


def test_a_table_row_is_a_float64_log_softmax_with_its_top_entries_sorted(tables):
    row = tables.row(10, 5)
    assert math.isclose(sum(math.exp(v) for v in row.values), 1.0, rel_tol=1e-12)
    values, ids = row.top(MAX_TOP)
    assert values == sorted(values, reverse=True) and [row.value(i) for i in ids] == values
    assert any(v != float(np.float32(v)) for v in values)  # not float32-representable
    with pytest.raises(ValueError, match="top_logprobs_num 33"):
        row.top(MAX_TOP + 1)


def test_decode_heavy_requests_stream_every_token_with_its_logprobs_and_top_k(tables):
    rows = _rows(Scheduler(tables), [m for item in WORKLOAD for m in item.messages])
    for item in WORKLOAD:
        req = item.messages[0]
        chunks = rows[item.rid]
        tokens = [t for c in chunks for t in c.output_ids[0]]
        assert len(tokens) == req.sampling_params.max_new_tokens and len(chunks) == len(tokens)
        top = [t for c in chunks for t in c.output_top_logprobs_val[0]]
        assert len(top) == len(tokens) and all(len(t) == req.top_logprobs_num for t in top)
        assert chunks[-1].finished_reasons[0] == {"type": "length", "length": len(tokens)}
        # the input logprobs come once, in the first chunk: one per prompt position, the first None
        assert len(chunks[0].input_token_logprobs_val[0]) == len(req.input_ids)
        assert chunks[0].input_token_logprobs_val[0][0] is None


def test_a_requests_outputs_from_tables_do_not_depend_on_the_batch(tables):
    target = WORKLOAD[3]
    alone = _rows(Scheduler(tables), target.messages)[target.rid]
    crowded = _rows(Scheduler(tables), [m for item in WORKLOAD for m in item.messages])[target.rid]
    assert len(alone) == len(crowded) and all(compare(a, b) is None for a, b in zip(alone, crowded))


def test_ipc_bound_pipeline_answers_identically_with_pickle_and_reference():
    runs = [run_pipeline(codec, WORKLOAD, device="cpu", concurrency=4, ipc_bound=True) for codec in ("pickle", "reference")]
    assert compare_results(runs[0], runs[1], WORKLOAD) == []
    assert [r.hop_stats["scheduler"]["model"] for r in runs] == ["PrecomputedLM", "PrecomputedLM"]
    assert runs[1].output_tokens == sum(item.messages[0].sampling_params.max_new_tokens for item in WORKLOAD)


def test_every_process_reports_the_cpu_time_of_its_sends_and_receives_within_its_own_cpu_time():
    result = run_pipeline("reference", WORKLOAD, device="cpu", concurrency=4, ipc_bound=True)
    summary = result.summary()
    assert set(summary["ipc_cpu_s"]) == {"client", "detokenizer", "scheduler"}
    for name, stats in result.hop_stats.items():  # every process both receives and sends
        assert stats["send_cpu_s"] > 0 and stats["recv_cpu_s"] > 0, name
        assert stats["send_cpu_s"] + stats["recv_cpu_s"] <= stats["cpu_s"], name
        assert math.isclose(summary["ipc_cpu_s"][name], stats["send_cpu_s"] + stats["recv_cpu_s"], abs_tol=1e-5)
    assert math.isclose(result.ipc_cpu_s, sum(summary["ipc_cpu_s"].values()), abs_tol=1e-4)
    assert f"CPU in IPC {result.ipc_cpu_s:.3f} s" in result.line()


def test_the_command_line_runs_repeats_in_balanced_orders_and_reports_medians_and_ratios(monkeypatch, tmp_path, capsys):
    canned = {codec: run_pipeline(codec, WORKLOAD[:2], device="cpu", concurrency=2, ipc_bound=True) for codec in ("pickle", "reference")}
    calls = []

    def fake_run(codec, workload, **kw):
        calls.append((codec, kw["ipc_bound"]))
        # the answers the parent keeps from earlier runs are frozen out of the client's collections
        assert gc.get_freeze_count() >= len(calls)
        return canned[codec]

    monkeypatch.setattr(cli, "run_pipeline", fake_run)
    out_file = tmp_path / "live.json"
    argv = ["--ipc-bound", "--workload", "decode-heavy", "--requests", "2", "--seed", "1", "--repeats", "2", "--json", str(out_file)]
    assert cli.main(argv) == 0
    assert calls == [("pickle", True), ("reference", True), ("reference", True), ("pickle", True)]  # neither always first
    assert gc.get_freeze_count() == 0  # and given back when the runs end
    printed = capsys.readouterr().out
    assert "ipc-bound" in printed and "median of 2" in printed and "identical" in printed
    report = json.loads(out_file.read_text())
    by_codec = {row["codec_spec"]: row for row in report["summary"]}
    assert by_codec["pickle"]["ratio_requests_per_s"] == 1.0
    ref, pk = by_codec["reference"], by_codec["pickle"]
    assert math.isclose(ref["ratio_requests_per_s"], ref["requests_per_s"] / pk["requests_per_s"], rel_tol=1e-3)
    # The report keeps CPU seconds to 4 decimals and the ratio from the unrounded values: a few milliseconds of
    # CPU rounded to 0.1 ms can move their quotient by more than 1%, so the check allows exactly that rounding.
    half = 0.5e-4
    low, high = (ref["ipc_cpu_s"] - half) / (pk["ipc_cpu_s"] + half), (ref["ipc_cpu_s"] + half) / (pk["ipc_cpu_s"] - half)
    assert low <= ref["ratio_ipc_cpu_s"] <= high, (ref, pk)
    assert "CPU in IPC" in printed
    assert report["ipc_bound"] is True and report["repeats"] == 2 and len(report["runs"]) == 4


def test_an_odd_repeat_count_is_rounded_up_to_whole_cycles_so_neither_codec_runs_first_more_often(monkeypatch, tmp_path):
    canned = {codec: run_pipeline(codec, WORKLOAD[:2], device="cpu", concurrency=2, ipc_bound=True) for codec in ("pickle", "reference")}
    calls = []
    monkeypatch.setattr(cli, "run_pipeline", lambda codec, workload, **kw: calls.append(codec) or canned[codec])
    out_file = tmp_path / "live.json"
    argv = ["--ipc-bound", "--workload", "decode-heavy", "--requests", "2", "--repeats", "3", "--json", str(out_file)]
    assert cli.main(argv) == 0
    firsts = calls[::2]
    assert len(calls) == 8 and firsts.count("pickle") == firsts.count("reference") == 2
    assert json.loads(out_file.read_text())["repeats"] == 4


def test_ratios_pair_the_runs_of_each_repeat_so_a_machine_that_slows_down_moves_both():
    from types import SimpleNamespace

    def runs(codec, rps):
        return [SimpleNamespace(codec=codec, requests_per_s=x, tokens_per_s=70 * x, ipc_cpu_s=100 / x, cpu_s=1.0, mean_itl_s=None) for x in rps]

    # measured on this VM: the machine slowed down in the last two repeats, for both codecs; each pair
    # says the reference is faster, the ratio of the two medians (194.5 / 212.8 = 0.914) says slower
    pickle = runs("pickle", [212.8, 214.7, 215.5, 130.1, 87.2])
    reference = runs("reference", [240.9, 194.5, 248.6, 141.8, 120.9])
    by_codec = {row["codec"]: row for row in cli.summarize({"pickle": pickle, "reference": reference}, "pickle")}
    ref = by_codec["reference"]
    assert ref["requests_per_s"] == 194.5  # its own median is still reported as measured
    assert ref["ratio_requests_per_s"] == pytest.approx(240.9 / 212.8, abs=1e-4)  # the median of the five pairs' ratios
    assert ref["ratio_tokens_per_s"] == ref["ratio_requests_per_s"]
    assert by_codec["pickle"]["ratio_requests_per_s"] == 1.0
    # a codec that missed a repeat cannot be paired: no ratio rather than a wrong one
    short = cli.summarize({"pickle": pickle, "reference": reference[:4]}, "pickle")
    assert short[1]["ratio_requests_per_s"] is None and short[1]["ratio_ipc_cpu_s"] is None
    assert ref["ratio_requests_per_s_interval"] is None  # 5 repeats: too few for a 95% interval
    six = cli.summarize({"pickle": pickle + pickle[:1], "reference": reference + reference[:1]}, "pickle")
    assert six[1]["ratio_requests_per_s_interval"] == [pytest.approx(194.5 / 214.7, abs=1e-4), pytest.approx(1.3865, abs=1e-4)]
    assert "req/s 95% interval x0.906-x1.387" in cli.row_line(six[1])


class _SlowCodec:
    """Burns ``cost`` seconds of CPU in each encode and decode; frames are the message itself."""

    class caps:
        decode_error = ValueError

    def __init__(self, cost: float):
        self.cost = cost

    def _burn(self) -> None:
        end = time.thread_time() + self.cost
        while time.thread_time() < end:
            pass

    def encode(self, msg):
        self._burn()
        return [msg]

    def decode(self, frames):
        self._burn()
        return bytes(frames[0])


def test_send_and_receive_count_the_cpu_time_the_codec_spends_in_them():
    context = zmq.Context()
    pull, push = context.socket(zmq.PULL), context.socket(zmq.PUSH)
    try:
        pull.bind("inproc://cpu-accounting")
        push.connect("inproc://cpu-accounting")
        codec, sent, received = _SlowCodec(0.005), new_stats(), new_stats()
        for i in range(4):
            send_counted(push, b"m%d" % i, codec, sent)
        deadline = time.monotonic() + 10
        got = []
        while len(got) < 4 and time.monotonic() < deadline:
            got += receive_all(pull, codec, received)
        assert got == [b"m0", b"m1", b"m2", b"m3"]
        assert sent["sent"] == 4 and sent["send_cpu_s"] >= 4 * 0.005
        assert received["received"] == 4 and received["recv_cpu_s"] >= 4 * 0.005
    finally:
        pull.close(linger=0)
        push.close(linger=0)
        context.term()
