"""The live pipeline: the engine's process topology on one machine, with a pluggable codec on every hop.

A client sends tokenized generation and embedding requests, aborts and
cache flushes to a scheduler process running a tiny deterministic model
(:mod:`.model`) on the given device; the scheduler streams token ids to a
detokenizer process, which streams text back to the client. Running the
same seeded workload once per codec and comparing every request's answers
exactly (:func:`compare_results`) is the end-to-end form of "identical
behaviour"; each run also measures throughput and inter-token latency.

Python API::

    from conformance.live import generate_workload, run_pipeline, compare_results

    work = generate_workload(64, seed=0)
    a = run_pipeline("pickle", work, device="cpu", concurrency=1)
    b = run_pipeline("reference", work, device="cpu", concurrency=1)
    assert compare_results(a, b, work) == []
    print(a.requests_per_s, a.tokens_per_s, a.mean_itl_s)

Command line: ``python -m conformance.live --compare pickle,reference --requests 32``.
"""

from .compare import Mismatch, compare_results
from .pipeline import PipelineError, PipelineResult, default_device, run_pipeline
from .workload import WorkItem, generate_workload

__all__ = [
    "run_pipeline",
    "compare_results",
    "generate_workload",
    "default_device",
    "PipelineResult",
    "PipelineError",
    "Mismatch",
    "WorkItem",
]
