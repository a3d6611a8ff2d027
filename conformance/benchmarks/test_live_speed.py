"""The live pipeline (client -> scheduler -> detokenizer processes) per codec, at concurrency 1 and high.

>>> WIRING POINT for ``conformance/live/`` (being written alongside): this module
>>> calls ``conformance.live.pipeline.run_pipeline(codec_spec, workload,
>>> device=..., concurrency=...)`` and ``conformance.live.workload.generate_workload(n, seed)``
>>> and reads ``requests_per_s`` and ``mean_itl_s`` from the result. It skips
>>> itself when that API is not importable; adjust :func:`_run` if the API moves.

One benchmark round is one whole run (process start-up included in the
benchmark's own time, so that time is never gated); the figures the README
reports are ``extra_info["requests_per_s"]`` and ``extra_info["mean_itl_s"]``,
measured by the pipeline from the first send to the last answer.

Environment: ``IPC_BENCH_LIVE=0`` skips the module; ``IPC_BENCH_LIVE_REQUESTS``
(default 64) requests per run; ``IPC_BENCH_LIVE_HIGH`` (default 32) is the
high concurrency; ``IPC_BENCH_LIVE_DEVICE`` (default: the pipeline's, CUDA
when present).
"""

from __future__ import annotations

import os

import pytest

from conformance.benchmarks.codecs import CANDIDATE, CANDIDATE_ENV, CODEC_NAMES, bench_engine, unavailable

try:
    from conformance.live.pipeline import run_pipeline
    from conformance.live.workload import generate_workload
except Exception as exc:  # the live pipeline is not there (yet): skip, never fail collection
    run_pipeline = generate_workload = None
    _IMPORT_ERROR = f"conformance.live is not importable: {type(exc).__name__}: {exc}"
else:
    _IMPORT_ERROR = ""

#: Benchmark codec name -> the live pipeline's codec spec: a name of the default engine's ``Engine.codecs``.
#: An engine's bench codec runs live under its own name when the engine has a codec of that name.
LIVE_SPECS = {
    "reference-v1": "reference",
    "reference-v2": "reference-v2",
    "pickle": "pickle",
    "pickle-oob": "pickle-oob",
    **{name: name for name in bench_engine().bench_codecs if name in bench_engine().codecs},
}
REQUESTS = int(os.environ.get("IPC_BENCH_LIVE_REQUESTS", "64"))
HIGH = int(os.environ.get("IPC_BENCH_LIVE_HIGH", "32"))
DEVICE = os.environ.get("IPC_BENCH_LIVE_DEVICE") or None

pytestmark = [
    pytest.mark.skipif(bool(_IMPORT_ERROR), reason=_IMPORT_ERROR or "-"),
    pytest.mark.skipif(os.environ.get("IPC_BENCH_LIVE", "1") == "0", reason="IPC_BENCH_LIVE=0"),
]


def _run(codec_name: str, concurrency: int):
    spec = os.environ[CANDIDATE_ENV] if codec_name == CANDIDATE else LIVE_SPECS[codec_name]
    return run_pipeline(spec, generate_workload(REQUESTS, seed=0), device=DEVICE, concurrency=concurrency)


@pytest.mark.parametrize("codec_name", CODEC_NAMES)
@pytest.mark.parametrize("concurrency", [1, HIGH], ids=["c1", "high"])
def test_live_pipeline(benchmark, concurrency, codec_name):
    reason = unavailable(codec_name)
    if reason:
        pytest.skip(reason)
    if codec_name != CANDIDATE and codec_name not in LIVE_SPECS:
        pytest.skip(f"{codec_name} has no codec of the same name in the default engine to run live")
    family = f"live-c{concurrency}"
    benchmark.group = f"{family} live"
    result = benchmark.pedantic(_run, args=(codec_name, concurrency), rounds=1, iterations=1)
    benchmark.extra_info.update(
        family=family,
        op="live",
        codec=codec_name,
        gate_time=False,
        concurrency=concurrency,
        requests=REQUESTS,
        device=getattr(result, "device", DEVICE),
        requests_per_s=result.requests_per_s,
        mean_itl_s=result.mean_itl_s,
    )
