"""Values the schema cannot carry raise EncodeError (a TypeError) naming their path."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from reference_codec import DecodeLimits, EncodeError, ReferenceCodec
from reference_codec import schema as s
from reference_codec.samples import batch_token_id_output, minimal

V1 = ReferenceCodec()


def encode_error(msg) -> EncodeError:
    with pytest.raises(EncodeError) as info:
        V1.encode(msg)
    assert isinstance(info.value, TypeError)
    return info.value


def with_feature(value):
    msg = minimal(s.TokenizedEmbeddingReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=value)])
    return msg


@dataclasses.dataclass
class Point:
    x: int


@pytest.mark.parametrize(
    "value, path, reason",
    [
        ({1, 2}, "", "set in an untyped field"),
        ([Point(1)], "[0]", "Point in an untyped field"),
        ({"k": s.WeightVersionSpan(version="v", start=0, end=1)}, "['k']", "WeightVersionSpan in an untyped field"),
        (bytearray(b"x"), "", "bytearray in an untyped field"),
        (2**130, "", "does not fit in 128 bits"),
        (np.array([object()]), "", "holds Python objects"),
        (torch.zeros(2).to_sparse(), "", "no byte layout on the wire"),
        pytest.param(lambda: torch.quantize_per_tensor(torch.zeros(2), 0.1, 0, torch.quint8), "", "no fixed byte layout", marks=pytest.mark.filterwarnings("ignore:.*quantize_per_tensor")),
    ],
    ids=["set", "dataclass", "struct", "bytearray", "130-bit-int", "object-ndarray", "sparse-tensor", "quantized-tensor"],
)
def test_untyped_values_that_would_not_decode_back_are_refused(value, path, reason):
    if callable(value):
        value = value()  # built inside the test so its deprecation warning is filtered
    error = encode_error(with_feature(value))
    assert error.path == "$.mm_inputs.mm_items[0].feature" + path.replace("['k']", ".k")
    assert reason in error.reason


def test_numpy_scalar_in_a_typed_float_field_is_refused_with_its_path():
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.sampling_params = s.SamplingParams(temperature=np.float32(0.7))
    error = encode_error(msg)
    assert error.path == "$.sampling_params.temperature" and "numpy scalar float32" in error.reason


def test_integer_beyond_64_bits_in_a_typed_field_is_refused_with_its_path():
    msg = batch_token_id_output(2)
    msg.prompt_tokens = [1, 2**64]
    error = encode_error(msg)
    assert error.path == "$.prompt_tokens[1]" and "64-bit" in error.reason


def test_text_that_is_not_utf8_is_refused_with_its_path():
    msg = batch_token_id_output(2)
    msg.decoded_texts = ["ok", "lone \ud800 surrogate"]
    error = encode_error(msg)
    assert error.path == "$.decoded_texts[1]" and "UTF-8" in error.reason


def test_a_value_that_is_not_a_schema_message_is_refused():
    for value in ("a str", 1, None, s.SamplingParams()):
        with pytest.raises(EncodeError, match="not a message of the reference schema"):
            V1.encode(value)


def test_encoding_never_mutates_the_callers_message():
    value = {"t": (1, 2), "s": torch.Size([1])}
    msg = with_feature(value)
    V1.encode(msg)
    assert msg.mm_inputs.mm_items[0].feature is value and type(value["t"]) is tuple


def test_constructor_arguments_are_validated_eagerly():
    with pytest.raises(ValueError, match="out_of_band_threshold"):
        ReferenceCodec(out_of_band_threshold=-1)
    with pytest.raises(TypeError, match="allow_pickle"):
        ReferenceCodec(allow_pickle="yes")
    with pytest.raises(TypeError, match="limits"):
        ReferenceCodec(limits={"max_depth": 3})


@pytest.mark.parametrize("leaves", [["x", 1, None], {"a": "x", "b": 1, "c": None}], ids=["list", "dict"])
def test_an_untyped_container_of_plain_leaves_past_the_depth_limit_is_refused(leaves):
    """The walk passes over a container of plain leaves in one step, but not at the depth limit, where its leaves are one level too deep."""
    codec = ReferenceCodec(limits=DecodeLimits(max_depth=2))
    with pytest.raises(EncodeError) as info:
        codec.encode(with_feature([[leaves]]))  # the container at depth 2, its leaves at 3
    assert "nested deeper than 2" in info.value.reason
    assert codec.decode(codec.encode(with_feature([leaves]))).mm_inputs.mm_items[0].feature == [leaves]


def test_a_big_int_among_plain_leaves_still_travels_exactly():
    """A container with one int beyond 64 bits is not plain: that int is written as a big integer, the rest as they are."""
    value = {"a": [1, 2**64, "x"], "b": [-(2**63), 2**64 - 1], "c": -(2**63) - 1}
    back = V1.decode(V1.encode(with_feature(value))).mm_inputs.mm_items[0].feature
    assert back == value and all(type(v) is int for v in (back["a"][1], back["c"]))
