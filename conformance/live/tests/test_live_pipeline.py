"""The live pipeline: identical answers across codecs, and the properties that make that checkable.

The end-to-end runs share one module-scoped set of pipeline runs (starting
processes is the expensive part); the engine properties (batch invariance,
seeded sampling, error answers) run the scheduler in-process.
"""

from __future__ import annotations

import copy
import time
from array import array

import msgspec
import pytest
import torch
import zmq

from conformance.equivalence import compare
from conformance.live import PipelineError, compare_results, generate_workload, run_pipeline, sampler, tokenizer
from conformance.live.client import drive, split_rows
from conformance.live.detokenizer import Detokenizer
from conformance.live.model import TinyLM
from conformance.live.scheduler import Scheduler
from conformance.live.workload import JUNK_FRAME
from conformance.plugin import load_codec
from reference_codec import schema as s

WORKLOAD = generate_workload(12, seed=0)


@pytest.fixture(scope="module")
def runs():
    return {codec: run_pipeline(codec, WORKLOAD, device="cpu", concurrency=4) for codec in ("pickle", "reference")}


@pytest.fixture(scope="module")
def model():
    return TinyLM("cpu", seed=0)


# --- end to end -------------------------------------------------------------------


def test_pickle_and_reference_pipelines_give_identical_answers_to_every_request(runs):
    assert compare_results(runs["pickle"], runs["reference"], WORKLOAD) == []
    answered = {w.rid for w in WORKLOAD if w.kind != "junk"}
    assert set(runs["reference"].outputs) == answered
    assert all(runs["reference"].outputs[rid] for rid in answered)


def test_every_answer_finishes_its_request_and_reports_throughput(runs):
    for result in runs.values():
        for rid, answers in result.outputs.items():
            last = answers[-1]
            assert isinstance(last, s.FlushCacheReqOutput) or last.finished_reasons[0] is not None, rid
        assert result.requests_per_s > 0 and result.tokens_per_s > 0 and result.output_tokens > 0
        assert result.mean_itl_s is None or result.mean_itl_s >= 0
        assert "req/s" in result.line()


def test_junk_frames_are_counted_by_the_scheduler_and_do_not_stop_it(runs):
    junk = sum(1 for w in WORKLOAD if w.kind == "junk")
    assert junk >= 1
    for result in runs.values():
        assert result.hop_stats["scheduler"]["decode_errors"] == junk
        assert result.hop_stats["scheduler"]["decode_crashes"] == 0


def test_workload_exercises_errors_aborts_flushes_and_embeddings(runs):
    reasons = [a.finished_reasons[0] for answers in runs["reference"].outputs.values() for a in answers if hasattr(a, "finished_reasons")]
    assert any(r and r.get("status_code") == 400 for r in reasons), "an invalid request got an error answer"
    assert any(r and r["type"] == "abort" and r.get("status_code") is None for r in reasons), "an aborted request"
    kinds = {type(a).__name__ for answers in runs["reference"].outputs.values() for a in answers}
    assert {"BatchStrOutput", "BatchEmbeddingOutput", "FlushCacheReqOutput"} <= kinds


def test_a_codec_that_squeezes_floats_through_float32_is_caught_naming_the_first_differing_path(runs):
    broken = run_pipeline("conformance.tests.broken_codecs:Float64AsFloat32", WORKLOAD, device="cpu", concurrency=4)
    mismatches = compare_results(runs["pickle"], broken, WORKLOAD)
    assert mismatches, "the float32 codec went unnoticed"
    first = mismatches[0]
    assert first.rid.startswith("req-") and (first.baseline, first.other) == ("pickle", "broken:Float64AsFloat32")
    assert first.path.startswith("$.") and first.reason
    assert any("logprobs_val" in m.path and "float bits differ" in m.reason for m in mismatches), [str(m) for m in mismatches]
    assert first.rid in str(first) and "pickle vs broken:Float64AsFloat32" in str(first)


def _with_a_dropped_field(result):
    """A copy of ``result`` as a codec that lost one request's output logprobs on the way would give it."""
    damaged = copy.copy(result)
    damaged.codec = "dropper"
    damaged.outputs = dict(result.outputs)
    rid, k = next(
        (rid, k)
        for rid, answers in result.outputs.items()
        for k, a in enumerate(answers)
        if isinstance(a, s.BatchStrOutput) and a.output_token_logprobs_val[0]
    )
    answers = list(damaged.outputs[rid])
    answers[k] = msgspec.structs.replace(answers[k], output_token_logprobs_val=None)
    damaged.outputs[rid] = answers
    return damaged, rid, k


def test_a_dropped_field_is_reported_with_request_codec_pair_answer_and_path(runs):
    damaged, rid, k = _with_a_dropped_field(runs["reference"])
    (mismatch,) = compare_results(runs["pickle"], damaged, WORKLOAD)
    assert (mismatch.rid, mismatch.baseline, mismatch.other, mismatch.chunk) == (rid, "pickle", "dropper", k)
    assert mismatch.path == "$.output_token_logprobs_val" and "NoneType instead of list" in mismatch.reason


def test_the_command_line_exits_0_when_identical_1_on_a_mismatch_and_2_without_a_baseline(runs, monkeypatch, capsys):
    from conformance.live import __main__ as cli

    damaged, rid, _ = _with_a_dropped_field(runs["reference"])
    canned = {"pickle": runs["pickle"], "reference": runs["reference"], "dropper": damaged}

    def fake_run(codec, workload, **kw):
        if codec == "absent":
            raise PipelineError("the scheduler process failed")
        return canned[codec]

    monkeypatch.setattr(cli, "run_pipeline", fake_run)
    monkeypatch.setattr(cli, "WORKLOADS", {"mixed": lambda n, seed: WORKLOAD})
    assert cli.main(["--compare", "pickle,reference", "--device", "cpu"]) == 0
    assert "identical" in capsys.readouterr().out
    assert cli.main(["--compare", "pickle,dropper", "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert f"MISMATCH {rid}" in out and "[pickle vs dropper]" in out and "$.output_token_logprobs_val" in out
    assert cli.main(["--compare", "pickle,absent", "--device", "cpu"]) == 1
    assert cli.main(["--compare", "absent,pickle", "--device", "cpu"]) == 2


def test_a_pipeline_that_cannot_answer_in_time_fails_naming_the_unanswered_requests(tmp_path):
    # In-process, against sockets nobody serves: the client's deadline is what stops a stuck pipeline.
    context = zmq.Context()
    inbox, outbox, silent = context.socket(zmq.PULL), context.socket(zmq.PUSH), context.socket(zmq.PULL)
    try:
        inbox.bind(f"ipc://{tmp_path}/in")
        silent.bind(f"ipc://{tmp_path}/scheduler")  # receives, never answers
        outbox.connect(f"ipc://{tmp_path}/scheduler")
        with pytest.raises(TimeoutError, match=r"2 request\(s\) still unanswered at the deadline: req-0, req-1"):
            drive(generate_workload(3, seed=5)[:2], load_codec("reference"), outbox, inbox,
                  concurrency=2, deadline=time.monotonic() + 0.2, check=lambda: None)
    finally:
        for sock in (inbox, outbox, silent):
            sock.close(linger=0)
        context.term()


# --- the engine, in-process ---------------------------------------------------------


def _request(rid: str, ids, **kw) -> s.TokenizedGenerateReqInput:
    sampling = s.SamplingParams(**{k: kw.pop(k) for k in list(kw) if k in s.SamplingParams.__struct_fields__})
    fields = dict(
        rid=rid, input_text=None, input_ids=array("q", ids), input_embeds=None, mm_inputs=None, token_type_ids=None,
        sampling_params=sampling, return_logprob=True, logprob_start_len=0, top_logprobs_num=3,
        token_ids_logprob=[1, 2], stream=True, return_hidden_states=True,
    )
    fields.update(kw)
    return s.TokenizedGenerateReqInput(**fields)


def _answers(scheduler: Scheduler, arrivals, max_steps: int = 200):
    """Feed ``arrivals[step] = [messages]`` step by step; every row for every rid, in order."""
    rows = {}
    for step in range(max_steps):
        for msg in arrivals.get(step, []):
            scheduler.handle(msg)
        if step > max(arrivals) and not scheduler.busy:
            break
        for _, batch in scheduler.step():
            for rid, row in split_rows(batch):
                rows.setdefault(rid, []).append(row)
    return rows


def test_a_requests_tokens_logprobs_and_hidden_states_do_not_depend_on_batch_composition_or_arrival(model):
    target = lambda: _request("t", [5, 6, 7, 8], max_new_tokens=10, temperature=0.9, sampling_seed=7)  # noqa: E731
    others = lambda tag: [_request(f"{tag}{i}", [i + 1] * (i + 2), max_new_tokens=6 + i, temperature=0.0) for i in range(3)]  # noqa: E731
    alone = _answers(Scheduler(model), {0: [target()]})["t"]
    crowded = _answers(Scheduler(model), {0: others("a"), 2: [target()], 3: others("b")})["t"]
    assert len(alone) == 10
    assert [compare(a, b) for a, b in zip(alone, crowded)] == [None] * 10 and len(crowded) == 10


def test_seeded_sampling_repeats_exactly_and_another_seed_changes_it():
    logits = torch.randn(tokenizer.VOCAB_SIZE, generator=torch.Generator().manual_seed(1))

    def draws(seed):
        g = sampler.request_generator("r", seed)
        return [sampler.sample(logits, temperature=1.0, top_k=1 << 30, top_p=1.0, min_p=0.0, generator=g) for _ in range(20)]

    assert draws(3) == draws(3)
    assert draws(3) != draws(4)
    assert draws(None) == draws(None)  # unseeded: seeded from the request id


def test_greedy_sampling_takes_the_first_maximal_token():
    logits = torch.zeros(tokenizer.VOCAB_SIZE)
    logits[[9, 4]] = 5.0
    g = sampler.request_generator("r", 0)
    assert sampler.sample(logits, temperature=0.0, top_k=-1, top_p=1.0, min_p=0.0, generator=g) == 4


def test_invalid_requests_get_an_error_answer_naming_the_field(model):
    bad = [
        _request("oov", [1, 300], max_new_tokens=2),
        _request("temp", [1, 2], max_new_tokens=2, temperature=-1.0),
        _request("topk", [1, 2], max_new_tokens=2, top_k=0),
        _request("start", [1, 2], max_new_tokens=2, logprob_start_len=2),
        _request("long", [1, 2], max_new_tokens=127),
    ]
    rows = _answers(Scheduler(model), {0: bad})
    expect = {"oov": "input_ids[1] = 300", "temp": "temperature", "topk": "top_k", "start": "logprob_start_len", "long": "context length"}
    for rid, text in expect.items():
        (row,) = rows[rid]
        reason = row.finished_reasons[0]
        assert reason["type"] == "abort" and reason["status_code"] == 400 and text in reason["message"], reason


def test_an_abort_that_arrives_first_refuses_its_request_with_no_tokens(model):
    abort = s.AbortReq(rid="x", abort_message="stop it")
    rows = _answers(Scheduler(model), {0: [abort, _request("x", [1, 2, 3], max_new_tokens=50)]})
    (row,) = rows["x"]
    assert row.finished_reasons[0] == {"type": "abort", "message": "stop it", "status_code": None, "err_type": None}
    assert row.completion_tokens == [0]


def test_stop_token_and_stop_string_end_generation_and_the_detokenizer_trims_the_string(model):
    probe = _answers(Scheduler(model), {0: [_request("p", [65, 66], max_new_tokens=8, temperature=0.0, stream=False)]})["p"][0]
    tokens = list(probe.output_ids[0])
    stop_id = tokens[3]
    by_id = _answers(Scheduler(model), {0: [_request("i", [65, 66], max_new_tokens=8, temperature=0.0, stop_token_ids={stop_id}, stream=False)]})
    assert by_id["i"][0].finished_reasons[0] == {"type": "stop", "matched": stop_id}
    assert list(by_id["i"][0].output_ids[0]) == tokens[: tokens.index(stop_id) + 1]
    ascii_at = next((i for i, t in enumerate(tokens[:-1]) if 0x20 < t < 0x7F), None)
    if ascii_at is None:
        pytest.skip("the greedy continuation has no printable ASCII byte to stop on")
    stop_str = chr(tokens[ascii_at])
    rows = _answers(Scheduler(model), {0: [_request("s", [65, 66], max_new_tokens=8, temperature=0.0, stop=[stop_str], stream=False)]})
    (row,) = rows["s"]
    assert row.finished_reasons[0] == {"type": "stop", "matched": stop_str}
    assert list(row.output_ids[0]) == tokens[: ascii_at + 1]
    (text,) = Detokenizer().handle(row)
    assert text.output_strs[0] == tokenizer.decode(tokens[:ascii_at])


def test_streamed_text_holds_back_an_incomplete_utf8_character():
    assert tokenizer.stable_prefix(tokenizer.decode([0x61, 0xF0, 0x9F]), finished=False) == "a"
    assert tokenizer.decode([0x61, 0xF0, 0x9F, 0x99, 0x82]) == "a🙂"


def test_the_workload_is_the_same_for_the_same_seed():
    a, b = generate_workload(40, seed=3), generate_workload(40, seed=3)
    assert [(x.rid, x.kind, x.stream) for x in a] == [(y.rid, y.kind, y.stream) for y in b]
    assert all(compare(x.messages, y.messages) is None for x, y in zip(a, b) if x.kind != "junk")
    assert any(x.messages == [[JUNK_FRAME]] for x in a)
