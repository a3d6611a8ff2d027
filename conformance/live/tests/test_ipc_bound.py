"""``--ipc-bound``: the scheduler's outputs from precomputed tables, the decode-heavy workload, repeats."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conformance.equivalence import compare
from conformance.live import __main__ as cli
from conformance.live import compare_results, run_pipeline
from conformance.live.client import split_rows
from conformance.live.precomputed import MAX_TOP, PrecomputedLM
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


def test_the_command_line_alternates_repeats_and_reports_medians_and_ratios(monkeypatch, tmp_path, capsys):
    canned = {codec: run_pipeline(codec, WORKLOAD[:2], device="cpu", concurrency=2, ipc_bound=True) for codec in ("pickle", "reference")}
    calls = []

    def fake_run(codec, workload, **kw):
        calls.append((codec, kw["ipc_bound"]))
        return canned[codec]

    monkeypatch.setattr(cli, "run_pipeline", fake_run)
    out_file = tmp_path / "live.json"
    argv = ["--ipc-bound", "--workload", "decode-heavy", "--requests", "2", "--seed", "1", "--repeats", "2", "--json", str(out_file)]
    assert cli.main(argv) == 0
    assert calls == [("pickle", True), ("reference", True), ("pickle", True), ("reference", True)]
    printed = capsys.readouterr().out
    assert "ipc-bound" in printed and "median of 2" in printed and "identical" in printed
    report = json.loads(out_file.read_text())
    by_codec = {row["codec_spec"]: row for row in report["summary"]}
    assert by_codec["pickle"]["ratio_requests_per_s"] == 1.0
    ref, pk = by_codec["reference"], by_codec["pickle"]
    assert math.isclose(ref["ratio_requests_per_s"], ref["requests_per_s"] / pk["requests_per_s"], rel_tol=1e-3)
    assert report["ipc_bound"] is True and report["repeats"] == 2 and len(report["runs"]) == 4

