"""Every kind of value the schema can hold comes back from the reference codec exactly."""

from __future__ import annotations

import enum
import math
import struct
from array import array

import msgspec
import numpy as np
import pytest
import torch

from reference_codec import ReferenceCodec
from reference_codec import schema as s
from reference_codec.dtypes import TORCH_DTYPES
from reference_codec.samples import batch_token_id_output, body_with_feature, minimal, tensor_ext

V1 = ReferenceCodec()
V2 = ReferenceCodec(out_of_band_threshold=0)
CODECS = pytest.mark.parametrize("codec", [V1, V2], ids=["wire-v1", "wire-v2"])


def roundtrip(codec, msg):
    return codec.decode(codec.encode(msg))


def tensor_bytes(t: torch.Tensor) -> bytes:
    flat = torch.empty(t.numel(), dtype=t.dtype)
    flat.copy_(t.detach().cpu().reshape(-1))  # a fresh tensor has unit stride whatever t's strides are
    return flat.view(torch.uint8).numpy().tobytes()


def assert_same_tensor(got: torch.Tensor, want: torch.Tensor) -> None:
    assert type(got) is torch.Tensor
    assert (got.dtype, tuple(got.shape), got.device, got.requires_grad) == (
        want.dtype,
        tuple(want.shape),
        want.device,
        want.requires_grad,
    )
    assert tensor_bytes(got) == tensor_bytes(want)


def embeds_msg(value) -> s.TokenizedEmbeddingReqInput:
    """A message whose ``mm_inputs.mm_items[0].feature`` (an untyped field) holds ``value``."""
    item = s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=value)
    msg = minimal(s.TokenizedEmbeddingReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[item])
    return msg


def feature_of(msg):
    return msg.mm_inputs.mm_items[0].feature


def _random_bytes_tensor(dtype: torch.dtype, shape) -> torch.Tensor:
    n = math.prod(shape) * dtype.itemsize
    raw = torch.from_numpy(np.random.default_rng(7).integers(0, 256, n, dtype=np.uint8))
    if dtype == torch.bool:
        raw = raw % 2
    return raw.view(dtype).reshape(shape) if n else torch.empty(shape, dtype=dtype)


@CODECS
@pytest.mark.parametrize("dtype_name", sorted(TORCH_DTYPES))
@pytest.mark.parametrize("shape", [(), (0, 3), (5,), (2, 3, 4)], ids=["0d", "empty-0x3", "1d", "3d"])
def test_tensor_of_every_dtype_and_shape_round_trips_bit_for_bit(codec, dtype_name, shape):
    tensor = _random_bytes_tensor(TORCH_DTYPES[dtype_name], shape)
    got = feature_of(roundtrip(codec, embeds_msg(tensor)))
    assert_same_tensor(got, tensor)


@CODECS
@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.arange(12.0).reshape(3, 4).t(),
        lambda: torch.arange(20, dtype=torch.bfloat16)[::3],
        lambda: torch.tensor([1.5, -0.0]).expand(4, 2),
        lambda: torch.tensor([1 + 2j, 3 - 4j]).conj(),
        lambda: torch.arange(6.0).reshape(2, 3).neg()._neg_view() if hasattr(torch.Tensor, "_neg_view") else -torch.arange(6.0),
    ],
    ids=["transposed", "strided-bf16", "expanded-stride0", "conj-view", "neg-view"],
)
def test_non_contiguous_tensor_arrives_contiguous_with_the_same_values(codec, make):
    tensor = make()
    got = feature_of(roundtrip(codec, embeds_msg(tensor)))
    assert got.is_contiguous()
    assert torch.equal(got.resolve_conj().resolve_neg(), tensor.resolve_conj().resolve_neg().contiguous())


@CODECS
def test_requires_grad_survives(codec):
    tensor = torch.randn(3, requires_grad=True)
    got = feature_of(roundtrip(codec, embeds_msg(tensor)))
    assert got.requires_grad and got.is_leaf
    assert_same_tensor(got, tensor)


def test_requires_grad_false_keeps_the_sglang_three_element_metadata():
    body = V1.encode(embeds_msg(torch.zeros(2)))[0]
    assert b"\x93\x91\x02\xa7float32\xa3cpu" in body


@CODECS
@pytest.mark.parametrize(
    "dtype",
    ["<f4", ">f4", "<i8", ">i8", "|b1", "<u2", "<c16", "<f2", "<U3", "|S5", "<M8[ns]", "<m8[s]"],
)
def test_ndarray_keeps_dtype_and_byte_order_exactly(codec, dtype):
    values = np.frombuffer(np.random.default_rng(1).integers(0, 256, 6 * np.dtype(dtype).itemsize, dtype=np.uint8).tobytes(), dtype=dtype).reshape(2, 3)
    got = feature_of(roundtrip(codec, embeds_msg(values)))
    assert type(got) is np.ndarray and got.dtype.str == values.dtype.str and got.shape == values.shape
    assert got.tobytes() == values.tobytes()


@CODECS
def test_structured_ndarray_keeps_field_names(codec):
    dtype = np.dtype([("token", "<i4"), ("logprob", ">f8"), ("grid", "<u2", (2,))])
    values = np.zeros(3, dtype=dtype)
    values["token"] = [1, 2, 3]
    values["logprob"] = [-0.5, -0.0, np.nan]
    got = feature_of(roundtrip(codec, embeds_msg(values)))
    assert got.dtype == dtype and got.dtype.names == dtype.names and got.dtype.descr == dtype.descr
    assert got.tobytes() == values.tobytes()


@CODECS
def test_fortran_ordered_ndarray_arrives_c_contiguous_with_the_same_values(codec):
    values = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    got = feature_of(roundtrip(codec, embeds_msg(values)))
    assert got.flags.c_contiguous and np.array_equal(got, values)


@CODECS
@pytest.mark.parametrize(
    "scalar",
    [np.float32(-0.0), np.float64(np.nan), np.float16(1.5), np.int8(-3), np.uint64(2**64 - 1), np.bool_(True), np.complex64(1 - 2j), np.str_("ab"), np.datetime64("2026-12-02")],
    ids=lambda v: type(v).__name__,
)
def test_numpy_scalar_keeps_its_type_and_bits(codec, scalar):
    got = feature_of(roundtrip(codec, embeds_msg(scalar)))
    assert type(got) is type(scalar)
    assert np.asarray(got).tobytes() == np.asarray(scalar).tobytes()


@CODECS
@pytest.mark.parametrize("typecode", list("bBuhHiIlLqQfd"))
def test_array_keeps_its_typecode(codec, typecode):
    values = array(typecode, "héllo" if typecode == "u" else [1, 2, 3])
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.input_ids = values
    got = roundtrip(codec, msg).input_ids
    assert type(got) is array and got.typecode == typecode and got.tobytes() == values.tobytes()


@pytest.mark.parametrize("typecode", list("bhqd"))
def test_array_metadata_in_a_longer_msgpack_form_decodes_like_the_usual_form(typecode):
    # the encoder writes the typecode as a fixstr, which decode recognises without parsing;
    # the same typecode as a str8 is just as valid and takes the general path
    values = array(typecode, [1, 2, 3])
    usual = msgspec.msgpack.encode(msgspec.msgpack.Ext(1, struct.pack(">I", 2) + b"\xa1" + typecode.encode() + values.tobytes()))
    longer = msgspec.msgpack.encode(msgspec.msgpack.Ext(1, struct.pack(">I", 3) + b"\xd9\x01" + typecode.encode() + values.tobytes()))
    decoded = [feature_of(V1.decode([body_with_feature(msgspec.Raw(ext))])) for ext in (usual, longer)]
    assert all(type(got) is array and got.typecode == typecode and got.tobytes() == values.tobytes() for got in decoded)


@CODECS
def test_int64_limits_survive_in_token_id_arrays(codec):
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.input_ids = array("q", [-(2**63), 2**63 - 1, 0])
    assert roundtrip(codec, msg).input_ids == msg.input_ids


class Unknown(enum.Enum):
    A = 1


@CODECS
def test_untyped_values_keep_tuple_size_enum_bigint_bytes_and_str(codec):
    value = {
        "tuple": (1, (2.5, "x"), []),
        "size": torch.Size([2, 0, 3]),
        "enum": s.Modality.VIDEO,
        "big": -(2**127),
        "u64": 2**64 - 1,
        "bytes": b"\x00\xff",
        "str": "\u00e9\u0301 🙂",
        "nested": [[None], {"k": (None,)}],
        1: "int key",
    }
    got = feature_of(roundtrip(codec, embeds_msg(value)))
    assert got == value
    assert list(got) == list(value)
    assert type(got["tuple"]) is tuple and type(got["tuple"][1]) is tuple and type(got["tuple"][2]) is list
    assert type(got["size"]) is torch.Size
    assert got["enum"] is s.Modality.VIDEO
    assert type(got["bytes"]) is bytes and type(got["str"]) is str


@CODECS
def test_typed_tuple_set_and_enum_fields_decode_to_their_declared_types(codec):
    item = s.MultimodalDataItem(modality=s.Modality.AUDIO, offsets=[(0, 3), (5, 9)], pad_values=(1, 2, 3))
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[item])
    msg.sampling_params = s.SamplingParams(stop_token_ids={1, 2, 2**40}, stop=["", "\n"])
    msg.num_items_assigned = {s.Modality.IMAGE: [1, 2]}
    got = roundtrip(codec, msg)
    assert got.mm_inputs.mm_items[0].offsets == [(0, 3), (5, 9)]
    assert type(got.mm_inputs.mm_items[0].offsets[0]) is tuple
    assert got.mm_inputs.mm_items[0].pad_values == (1, 2, 3)
    assert got.mm_inputs.mm_items[0].modality is s.Modality.AUDIO
    assert got.sampling_params.stop_token_ids == {1, 2, 2**40}
    assert list(got.num_items_assigned) == [s.Modality.IMAGE]


@CODECS
def test_floats_keep_their_bits(codec):
    values = [-0.0, 0.0, math.inf, -math.inf, 5e-324, struct.unpack("<d", b"\x01\x00\x00\x00\x00\x00\xf8\x7f")[0]]
    msg = minimal(s.BatchEmbeddingOutput)
    msg.rids = ["r"]
    msg.embeddings = [values]
    got = roundtrip(codec, msg).embeddings[0]
    assert [struct.pack("<d", v) for v in got] == [struct.pack("<d", v) for v in values]


@CODECS
def test_trace_ids_of_128_bits_survive_in_time_stats(codec):
    trace = s.TraceContext(trace_id=s.Int128(2**127 - 1), span_id=2**64 - 1)
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.time_stats = s.APIServerReqTimeStats(created_time=1.0, trace=trace)
    got = roundtrip(codec, msg).time_stats
    assert type(got) is s.APIServerReqTimeStats and got.trace == trace
    assert type(got.trace.trace_id) is s.Int128 and got.trace.trace_id == 2**127 - 1


@CODECS
def test_logprob_shapes_with_none_empty_and_ragged_rows_survive(codec):
    msg = batch_token_id_output(3)
    msg.input_token_logprobs_val = [[None, -0.1832, -2.9417, -0.0048], [], [-0.77]]
    msg.output_token_logprobs_val = [[], [], []]
    msg.output_top_logprobs_val = [[[-0.1, -0.2], [-0.3]], [[]], None]
    got = roundtrip(codec, msg)
    assert got.input_token_logprobs_val == msg.input_token_logprobs_val
    assert got.output_token_logprobs_val == [[], [], []]
    assert got.output_top_logprobs_val == msg.output_top_logprobs_val


@CODECS
def test_batch_output_with_routed_experts_round_trips(codec):
    msg = batch_token_id_output(8)
    got = roundtrip(codec, msg)
    for a, b in zip(got.routed_experts, msg.routed_experts):
        assert_same_tensor(a, b)
    assert got.decode_ids == msg.decode_ids and got.rids == msg.rids


def test_wire_v2_sends_large_buffers_as_views_of_their_memory():
    tensor = torch.arange(1024, dtype=torch.float32)
    codec = ReferenceCodec(out_of_band_threshold=1024)
    frames = codec.encode(embeds_msg(tensor))
    assert len(frames) == 2 and isinstance(frames[1], memoryview)
    assert np.shares_memory(np.asarray(frames[1]), tensor.numpy())


def test_wire_v2_decodes_writable_frames_in_place_and_copies_read_only_ones():
    tensor = torch.arange(1024, dtype=torch.float32)
    codec = ReferenceCodec(out_of_band_threshold=1024)
    body, buf = codec.encode(embeds_msg(tensor))
    writable = bytearray(buf)
    got = feature_of(codec.decode([body, writable]))
    assert np.shares_memory(got.numpy(), np.frombuffer(writable, dtype=np.uint8))
    frozen = bytes(buf)
    got = feature_of(codec.decode([body, frozen]))
    assert not np.shares_memory(got.numpy(), np.frombuffer(frozen, dtype=np.uint8))
    got.add_(1)  # the copy is the receiver's own, writable memory
    assert frozen == bytes(buf)


def test_wire_v2_without_large_buffers_is_byte_identical_to_wire_v1():
    msg = batch_token_id_output(2)
    msg.routed_experts = None
    msg.decode_ids = [array("q", [1])] * 2
    assert ReferenceCodec(out_of_band_threshold=4096).encode(msg) == V1.encode(msg)


def test_map_location_places_tensors_on_the_requested_device():
    body = body_with_feature(tensor_ext([[2], "float32", "cuda:1"], torch.ones(2).numpy().tobytes()))
    got = feature_of(ReferenceCodec(map_location={"cuda:1": "cpu"}).decode([body]))
    assert got.device.type == "cpu" and got.tolist() == [1.0, 1.0]
    got = feature_of(ReferenceCodec(map_location="cpu").decode([body]))
    assert got.device.type == "cpu"


def test_every_message_type_round_trips_at_its_minimal_form():
    for tag, cls in s.MESSAGE_TYPES.items():
        msg = minimal(cls)
        for codec in (V1, V2):
            assert roundtrip(codec, msg) == msg, tag


@CODECS
@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (1,), (2, 1, 3)], ids=str)
def test_ndarray_shape_survives_including_zero_d_and_empty(codec, shape):
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got = feature_of(roundtrip(codec, embeds_msg(values)))
    assert got.shape == values.shape and got.tobytes() == values.tobytes()


@CODECS
@pytest.mark.parametrize(
    "make",
    [lambda: torch.zeros(4)[::2][:1], lambda: torch.arange(6.0).reshape(3, 2)[:1, :1], lambda: torch.zeros(1, 1).t()],
    ids=["1-element-stride-2", "1x1-slice", "1x1-transposed"],
)
def test_one_element_tensors_with_odd_strides_round_trip(codec, make):
    tensor = make()
    got = feature_of(roundtrip(codec, embeds_msg(tensor)))
    assert_same_tensor(got, tensor)


@CODECS
def test_structured_ndarray_with_padding_keeps_its_padding(codec):
    dtype = np.dtype({"names": ["a", "b"], "formats": ["<u2", ">f8"], "offsets": [0, 8], "itemsize": 16})
    values = np.zeros(2, dtype=dtype)
    values["a"] = [1, 2]
    got = feature_of(roundtrip(codec, embeds_msg(values)))
    assert got.dtype == dtype and got.dtype.names == ("a", "b") and got.tobytes() == values.tobytes()


def test_typed_set_is_written_in_ascending_order_so_a_second_hop_is_byte_identical():
    stops = set()
    stops.add(15)
    stops.add(7)  # collides with 15 in an 8-slot table: iterates [7, 15] here, [15, 7] once rebuilt
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.sampling_params = s.SamplingParams(stop_token_ids=stops)
    first = V1.encode(msg)
    assert V1.encode(V1.decode(first)) == first
    assert V1.decode(first).sampling_params.stop_token_ids == {7, 15}


def test_typed_set_order_is_by_type_name_then_value_whatever_the_items():
    from hypothesis import given
    from hypothesis import strategies as st

    from reference_codec.wire import canonical_set as _canonical_set

    items = st.one_of(st.integers(), st.text(max_size=4), st.booleans(), st.floats(allow_nan=False), st.binary(max_size=3))

    @given(st.one_of(st.sets(st.integers()), st.sets(st.text(max_size=4)), st.sets(items), st.frozensets(items)))
    def check(values):
        # the set itself when it already iterates in that order (msgspec writes iteration order)
        assert list(_canonical_set(values)) == sorted(values, key=lambda v: (type(v).__name__, v))

    check()
