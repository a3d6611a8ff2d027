"""The suite adapts messages to a codec's declared gaps, and finds what a gap would touch, at any depth."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, NamedTuple

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.properties import has_non_native_ndarray, without_dtypes
from reference_codec import schema as s
from reference_codec.samples import minimal


def _with_mask(*arrays: np.ndarray) -> s.BatchStrOutput:
    msg = minimal(s.BatchStrOutput)
    msg.output_token_sampling_mask = [
        s.SamplingMaskChunk(lengths=np.zeros(2, "<i4"), token_ids=np.zeros(1, "<i4"), logprobs=a) for a in arrays
    ]
    return msg


@settings(max_examples=1)
@given(st.none())  # without_dtypes records Hypothesis events, which exist only inside a test
def test_a_non_native_ndarray_is_found_at_any_depth_and_converted_to_native_with_the_same_values(_):
    big_endian = np.arange(6, dtype=">i4")[::2]  # non-contiguous, as pickle mishandles it
    msg = _with_mask(np.zeros(2, "<i4"), big_endian)
    assert has_non_native_ndarray(msg)
    native = without_dtypes(msg, (), native_byte_order=True)
    assert not has_non_native_ndarray(native)
    converted = native.output_token_sampling_mask[1].logprobs
    assert converted.dtype == np.dtype("<i4") and converted.tolist() == big_endian.tolist()
    assert msg.output_token_sampling_mask[1].logprobs is big_endian  # the caller's message is not changed


def test_native_and_single_byte_arrays_are_not_reported():
    assert not has_non_native_ndarray(_with_mask(np.zeros(2, "<i4"), np.zeros(3, "|u1")))
    assert not has_non_native_ndarray(minimal(s.BatchStrOutput))


class _Pair(NamedTuple):
    left: Any
    right: Any


@dataclasses.dataclass(frozen=True)
class _Frozen:
    inner: Any
    hidden: Any = dataclasses.field(default=None, init=False)


class _Items(collections.UserDict):
    pass


@settings(max_examples=1)
@given(st.none())
def test_tensors_are_detached_and_structured_arrays_sent_as_bytes_inside_dataclasses_namedtuples_and_userdicts(_):
    grad = torch.ones(2, requires_grad=True)
    record = np.array([(1, 2.5)], dtype=[("a", "<i2"), ("b", "<f4")])
    msg = _Items({"x": _Frozen(_Pair(grad, [record]))})
    adapted = without_dtypes(msg, (), requires_grad=False, structured_ndarrays=False)
    assert type(adapted) is _Items and type(adapted["x"]) is _Frozen and type(adapted["x"].inner) is _Pair
    tensor, (raw,) = adapted["x"].inner
    assert not tensor.requires_grad and tensor.tolist() == [1.0, 1.0]
    assert raw.dtype == np.uint8 and raw.shape == (1, 6) and raw.tobytes() == record.tobytes()
    assert msg["x"].inner.left is grad and grad.requires_grad  # the caller's message is not changed
    kept = without_dtypes(msg, ())
    assert kept["x"].inner.left.requires_grad and kept["x"].inner.right[0] is record


def _transport_verdict(codec: str) -> str:
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "--codec", f"conformance.tests.broken_codecs:{codec}", "-p", "no:xdist", "-q",
         "-k", "test_every_message_arrives_intact_with_interleaved_senders"],
        capture_output=True, text=True, cwd=root, timeout=600, env=dict(os.environ, PYTHONPATH=root),
    )
    return result.stdout.rstrip().splitlines()[-1]


def test_a_codec_declaring_it_is_not_thread_safe_is_encoded_one_message_at_a_time_and_an_undeclared_one_fails():
    assert _transport_verdict("SharedEncodeStateDeclared").startswith("CONFORMANCE SUITE PASSED")
    assert _transport_verdict("SharedEncodeState").startswith("CONFORMANCE SUITE FAILED")
