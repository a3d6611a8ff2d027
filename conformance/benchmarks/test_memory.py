"""Decode peak memory against the payload, per codec, in a fresh process each (see :mod:`.memory`).

Recorded as benchmarks (one round, the time of the probe process is not a
measure and is never gated) so that the figures land in the same JSON as the
timings: ``extra_info["peak_ratio"]`` is the decode's peak memory over its
payload. Codec ``memcpy`` (one ``bytearray`` copy of the frames) checks the
method and must read about 2.0.
"""

from __future__ import annotations

import pytest

from conformance.benchmarks import corpus, memory
from conformance.benchmarks.codecs import CODEC_NAMES, unavailable

MEMORY_FAMILIES = [
    f
    for f in ["TokenizedGenerateReqInput-mm", "BatchTokenIDOutput-256", "tensor-1MiB", "tensor-64MiB", "tensor-256MiB"]
    if f in corpus.FAMILIES
]


@pytest.mark.parametrize("codec_name", [*CODEC_NAMES, "memcpy"])
@pytest.mark.parametrize("family", MEMORY_FAMILIES)
def test_decode_peak_memory(benchmark, family, codec_name):
    if not memory.available():
        pytest.skip("needs Linux /proc/self/clear_refs and /proc/self/status")
    reason = unavailable(codec_name)
    if reason:
        pytest.skip(reason)
    benchmark.group = f"{family} memory"
    result = benchmark.pedantic(memory.measure, args=(codec_name, family), rounds=1, iterations=1)
    benchmark.extra_info.update(result, op="memory", gate_time=False)
