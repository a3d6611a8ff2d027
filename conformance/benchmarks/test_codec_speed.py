"""Round-trip speed of the reference codec against the pickle baseline (and SGLang when installed).

Run with ``tox -e bench`` (``pytest conformance/benchmarks --benchmark-only``).
pytest-benchmark groups each message family, so the table compares codecs
measured side by side in one run; read ratios, not absolute times. Nothing
here asserts a time: regression gating compares saved runs
(``--benchmark-compare --benchmark-compare-fail=median:15%``).
"""

from __future__ import annotations

import pytest
import torch

from conformance.codecs.sglang import sglang_available
from reference_codec import PickleCodec, ReferenceCodec
from reference_codec.tests.samples import batch_token_id_output, flush_cache

CODECS = {
    "reference-v1": ReferenceCodec(),
    "reference-v2": ReferenceCodec(out_of_band_threshold=65536),
    "pickle": PickleCodec(),
    "pickle-oob": PickleCodec(out_of_band=True),
}


def _sglang_roundtrip():
    from conformance.codecs.sglang import SGLangCodec

    codec = SGLangCodec()
    io = codec._io

    def prepare(msg):
        native = codec.to_sglang(msg)  # converted once, outside the timed call: SGLang's codec alone is timed
        return lambda: io.msgpack_decode(io.msgpack_encode(native))

    return prepare


FAMILIES = {
    "control-FlushCacheReqInput": flush_cache,
    "BatchTokenIDOutput-1": lambda: batch_token_id_output(1),
    "BatchTokenIDOutput-32": lambda: batch_token_id_output(32),
    "BatchTokenIDOutput-256": lambda: batch_token_id_output(256),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("codec_name", [*CODECS, "sglang"])
def test_round_trip(benchmark, family, codec_name):
    msg = FAMILIES[family]()
    benchmark.group = family
    if codec_name == "sglang":
        if not sglang_available():
            pytest.skip("SGLang 0.5.23 is not installed (tox -e sglang)")
        benchmark(_sglang_roundtrip()(msg))
        return
    codec = CODECS[codec_name]
    frames = codec.encode(msg)
    benchmark.extra_info["bytes_on_wire"] = sum(memoryview(f).nbytes for f in frames)
    benchmark(lambda: codec.decode(codec.encode(msg)))


@pytest.mark.parametrize("size", [1 << 10, 1 << 20, 64 << 20], ids=["1KiB", "1MiB", "64MiB"])
@pytest.mark.parametrize("codec_name", list(CODECS))
def test_single_tensor_round_trip(benchmark, size, codec_name):
    msg = batch_token_id_output(1)
    msg.routed_experts = [torch.ones(size // 4, dtype=torch.float32)]
    codec = CODECS[codec_name]
    benchmark.group = f"tensor-{size}"
    benchmark(lambda: codec.decode(codec.encode(msg)))
