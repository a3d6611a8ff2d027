"""Encode, decode and round-trip time of every codec on every corpus family, and bytes on the wire.

Codecs: the reference (wire v1, and wire v2 with tensors of 64 KiB or more as
separate zero-copy frames), pickle (highest protocol; protocol 5 with
out-of-band buffers) and the default engine's benchmark codecs (SGLang 0.5.23's
own codec) when they are installed.
Families: :mod:`conformance.benchmarks.corpus`. Single-tensor families also
time one plain memcpy of the tensor's bytes (``numpy.copyto``) (codec ``memcpy``), the
yardstick for "a zero-copy round trip costs less than one memcpy".

Each benchmark records ``family``, ``op``, ``codec`` and ``bytes_on_wire`` in
``extra_info``; ``python -m conformance.benchmarks report`` turns the JSON of
a run into the README table. Nothing here asserts a time.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conformance.benchmarks import corpus
from conformance.benchmarks.codecs import CODEC_NAMES, get_codec, unavailable, wire_bytes

OPS = ["encode", "decode", "roundtrip"]


def _codec_or_skip(name: str):
    reason = unavailable(name)
    if reason:
        pytest.skip(reason)
    return get_codec(name)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("codec_name", CODEC_NAMES)
@pytest.mark.parametrize("family", list(corpus.FAMILIES))
def test_codec(benchmark, family, codec_name, op):
    codec = _codec_or_skip(codec_name)
    obj = codec.prepare(corpus.build(family))
    frames = codec.encode(obj)
    benchmark.group = f"{family} {op}"
    benchmark.extra_info.update(
        family=family, op=op, codec=codec_name, bytes_on_wire=wire_bytes(frames), frames=len(frames)
    )
    if family.startswith("tensor-"):
        benchmark.extra_info["payload_bytes"] = corpus.payload_tensor_bytes(corpus.build(family))
    encode, decode = codec.encode, codec.decode
    if op == "encode":
        benchmark(encode, obj)
    elif op == "decode":
        benchmark(decode, frames)
    else:
        benchmark(lambda: decode(encode(obj)))


@pytest.mark.parametrize("family", [f for f in corpus.FAMILIES if f.startswith("tensor-")])
def test_memcpy(benchmark, family):
    """One copy of the tensor's bytes into an allocated tensor: the yardstick of the zero-copy target.

    ``numpy.copyto`` on the tensors' memory is one single-threaded memcpy, as
    a codec's copy is (``Tensor.copy_`` may split a large copy over torch's
    intra-op threads, which on a loaded machine makes it erratic).
    """
    src_tensor = corpus.build(family).pooled_hidden_states[0]
    dst_tensor = torch.empty_like(src_tensor)
    src, dst = src_tensor.numpy(), dst_tensor.numpy()
    benchmark.group = f"{family} roundtrip"
    benchmark.extra_info.update(
        family=family, op="roundtrip", codec="memcpy", payload_bytes=src.nbytes
    )
    benchmark(np.copyto, dst, src)
