"""The live pipeline with the scheduler on the GPU: pickle and the reference answer identically.

The same check as ``python -m conformance.live --device cuda --compare
pickle,reference``: every request's tokens, logprobs and hidden states bit
for bit, finish reasons, text and error answers, plus the pooled hidden
states of embedding requests, which travel as CUDA tensors on every hop and
must arrive on the scheduler's device.
"""

from __future__ import annotations

import pytest
import torch

from conformance.live import compare_results, generate_workload, run_pipeline
from reference_codec import schema as s

WORKLOAD = generate_workload(48, seed=0)


@pytest.fixture(scope="module")
def runs():
    return {codec: run_pipeline(codec, WORKLOAD, device="cuda:0", concurrency=16) for codec in ("pickle", "reference", "reference-v2")}


@pytest.mark.parametrize("other", ["reference", "reference-v2"])
def test_a_scheduler_on_the_gpu_answers_identically_over_pickle_and_msgpack(runs, other):
    mismatches = compare_results(runs["pickle"], runs[other], WORKLOAD)
    assert not mismatches, "\n".join(str(m) for m in mismatches[:10])
    for result in (runs["pickle"], runs[other]):
        print(result.line())


def test_pooled_hidden_states_arrive_on_the_schedulers_gpu(runs):
    pooled = [
        t
        for answers in runs["reference"].outputs.values()
        for a in answers
        if isinstance(a, s.BatchEmbeddingOutput)
        for t in (a.pooled_hidden_states or [])
        if t is not None
    ]
    if not pooled:
        pytest.skip("this workload asked for no pooled hidden states")
    assert all(t.device == torch.device("cuda:0") for t in pooled), {str(t.device) for t in pooled}


def test_answers_do_not_depend_on_concurrency_and_throughput_is_reported_at_1_and_16(runs):
    first = WORKLOAD[:12]
    single = run_pipeline("reference", first, device="cuda:0", concurrency=1)
    mismatches = [m for m in compare_results(runs["reference"], single, first) if m.rid != "<pipeline>"]
    assert not mismatches, "\n".join(str(m) for m in mismatches[:10])
    for result in (single, runs["reference"]):
        assert result.requests_per_s > 0 and result.tokens_per_s > 0
        print(result.line())
