"""The copies per buffer that ``reference_codec/wire.py`` documents ("Copies per buffer"), counted.

Counted by what is allocated (tracemalloc sees numpy's and msgspec's buffers)
and by which memory a result shares with its source, never by time.
"""

from __future__ import annotations

import tracemalloc
from array import array

import numpy as np
import pytest
import torch

from reference_codec import ReferenceCodec
from reference_codec import schema as s
from reference_codec.buffers import plain_tensor_bytes, tensor_to_wire
from reference_codec.dtypes import TORCH_DTYPES
from reference_codec.samples import minimal
from reference_codec.splice import SPLICE_MIN_BYTES

V1 = ReferenceCodec()
V2 = ReferenceCodec(out_of_band_threshold=0)
PAYLOAD = 4 << 20  # large enough that a copy stands out from everything else an encode allocates


def tensor_message(tensor: torch.Tensor) -> s.BatchEmbeddingOutput:
    msg = minimal(s.BatchEmbeddingOutput)
    msg.rids, msg.embeddings, msg.pooled_hidden_states = ["r"], [[]], [tensor]
    return msg


def big_tensor() -> torch.Tensor:
    return torch.arange(PAYLOAD // 4, dtype=torch.float32)


def traced_peak(call) -> int:
    """Bytes allocated at the peak of ``call()`` above what was allocated before it (tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def raw_offset(frame, tensor: torch.Tensor) -> int:
    data = bytes(frame)
    offset = data.find(tensor.numpy().tobytes()[:256])
    assert offset > 0
    return offset


def aligned_copy(frame, offset: int, alignment: int = 64) -> memoryview:
    """``frame``'s bytes in a writable buffer placed so that byte ``offset`` sits at an ``alignment`` address."""
    store = np.empty(len(frame) + alignment, dtype=np.uint8)
    shift = (-(store.ctypes.data + offset)) % alignment
    view = store[shift : shift + len(frame)]
    view[:] = np.frombuffer(frame, dtype=np.uint8)
    return memoryview(view)


def test_wire_v1_encode_of_a_large_tensor_allocates_one_frame_and_no_second_copy():
    msg = tensor_message(big_tensor())
    V1.encode(msg)  # warm: caches, imports
    extra = traced_peak(lambda: V1.encode(msg))
    assert PAYLOAD <= extra < 1.1 * PAYLOAD, f"encode allocated {extra / PAYLOAD:.2f}x the tensor at its peak"


def test_wire_v1_frame_of_a_large_tensor_is_a_writable_buffer_of_its_own():
    tensor = big_tensor()
    (frame,) = V1.encode(tensor_message(tensor))
    assert isinstance(frame, memoryview) and not frame.readonly
    assert not np.shares_memory(np.asarray(frame), tensor.numpy())  # the frame is the one copy


def test_wire_v1_round_trip_in_one_process_decodes_the_largest_buffer_in_place():
    tensor, small = big_tensor(), torch.arange(SPLICE_MIN_BYTES // 4 + 3, dtype=torch.float32)
    msg = tensor_message(tensor)
    msg.rids, msg.embeddings, msg.pooled_hidden_states = ["a", "b"], [[], []], [small, tensor]
    frames = V1.encode(msg)
    got = V1.decode(frames).pooled_hidden_states
    assert np.shares_memory(got[1].numpy(), np.asarray(frames[0])) and torch.equal(got[1], tensor)
    assert got[1].data_ptr() % 64 == 0 and torch.equal(got[0], small)
    extra = traced_peak(lambda: V1.decode(frames))
    assert extra < 0.5 * PAYLOAD, f"decode allocated {extra / PAYLOAD:.2f}x the largest tensor"


def test_wire_v1_splices_from_the_threshold_up_and_not_below():
    at = torch.zeros(SPLICE_MIN_BYTES, dtype=torch.uint8)
    below = torch.zeros(SPLICE_MIN_BYTES - 1, dtype=torch.uint8)
    assert isinstance(V1.encode(tensor_message(at))[0], memoryview)
    assert isinstance(V1.encode(tensor_message(below))[0], bytes)


def test_wire_v1_spliced_frame_is_the_bytes_msgspec_writes_for_the_ext_itself(monkeypatch):
    import reference_codec.codec as codec_module

    msg = tensor_message(big_tensor())
    spliced = bytes(V1.encode(msg)[0])
    monkeypatch.setattr(codec_module, "SPLICE_MIN_BYTES", 1 << 62)
    assert bytes(V1.encode(msg)[0]) == spliced


def test_wire_v1_body_holding_a_placeholder_by_chance_is_encoded_without_splicing(monkeypatch):
    import reference_codec.splice as splice_module

    prefix = b"Z" * 16  # ASCII, so a str holds the same bytes
    monkeypatch.setattr(splice_module.os, "urandom", lambda n: prefix[:n])
    msg = tensor_message(big_tensor())
    msg.rids = [(prefix + b"\0\0\0\0").decode("ascii")]  # the first placeholder's bytes, in a str
    frame = V1.encode(msg)[0]
    assert isinstance(frame, bytes)
    assert torch.equal(V1.decode([frame]).pooled_hidden_states[0], msg.pooled_hidden_states[0])


def test_wire_v1_tensor_inside_an_untyped_tuple_travels_in_its_ext_not_spliced():
    tensor = big_tensor()
    item = s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=(tensor, 1))
    msg = minimal(s.TokenizedEmbeddingReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[item])
    got = V1.decode(V1.encode(msg)).mm_inputs.mm_items[0].feature
    assert type(got) is tuple and torch.equal(got[0], tensor) and got[1] == 1


def test_wire_v2_encode_sends_the_tensor_memory_itself():
    tensor = big_tensor()
    frames = V2.encode(tensor_message(tensor))
    assert np.shares_memory(np.asarray(frames[1]), tensor.numpy())


@pytest.mark.parametrize("codec", [V1, V2], ids=["wire-v1", "wire-v2"])
def test_decode_of_a_writable_aligned_frame_views_it_and_allocates_no_copy(codec):
    tensor = big_tensor()
    frames = codec.encode(tensor_message(tensor))
    if codec is V1:
        frames = [aligned_copy(frames[0], raw_offset(frames[0], tensor))]
    else:
        frames = [frames[0], aligned_copy(frames[1], 0)]
    got = codec.decode(frames).pooled_hidden_states[0]
    assert np.shares_memory(got.numpy(), np.asarray(frames[-1]))
    assert torch.equal(got, tensor)
    extra = traced_peak(lambda: codec.decode(frames))
    assert extra < 0.1 * PAYLOAD, f"decode allocated {extra / PAYLOAD:.2f}x the tensor"


def test_wire_v1_decode_of_a_misaligned_writable_frame_copies_once_into_aligned_memory():
    tensor = big_tensor()
    (frame,) = V1.encode(tensor_message(tensor))
    misaligned = aligned_copy(frame, raw_offset(frame, tensor) + 1)
    got = V1.decode([misaligned]).pooled_hidden_states[0]
    assert not np.shares_memory(got.numpy(), np.asarray(misaligned))
    assert got.data_ptr() % 4 == 0 and torch.equal(got, tensor)
    extra = traced_peak(lambda: V1.decode([misaligned]))
    assert PAYLOAD <= extra < 1.1 * PAYLOAD


@pytest.mark.parametrize(
    "nbytes, shape",
    [(PAYLOAD, (-1,)), (64 << 10, (-1,)), (64 << 10, (64, -1))],
    ids=["4MiB-numpy-copy", "64KiB-1d-bytearray-copy", "64KiB-2d-bytearray-copy"],
)
@pytest.mark.parametrize("codec", [V1, V2], ids=["wire-v1", "wire-v2"])
def test_decode_of_read_only_bytes_copies_once_so_the_tensor_never_aliases_them(codec, nbytes, shape):
    tensor = torch.arange(nbytes // 4, dtype=torch.float32).reshape(shape)
    frames = [bytes(f) for f in codec.encode(tensor_message(tensor))]
    got = codec.decode(frames).pooled_hidden_states[0]
    assert not np.shares_memory(got.numpy(), np.frombuffer(frames[-1], dtype=np.uint8))
    assert got.data_ptr() % 16 == 0  # aligned for every dtype, complex128 included
    extra = traced_peak(lambda: codec.decode(frames))
    assert nbytes <= extra < 1.1 * nbytes + 8192  # one copy, and the message around it
    got.add_(1)  # the receiver's own, writable memory
    assert torch.equal(got, tensor + 1)


def test_decode_of_a_writable_aligned_frame_gives_an_ndarray_view_too():
    values = np.arange(PAYLOAD // 8, dtype=np.float64)
    item = s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=values)
    msg = minimal(s.TokenizedEmbeddingReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[item])
    (frame,) = V1.encode(msg)
    offset = bytes(frame).find(values.tobytes()[:256])
    writable = aligned_copy(frame, offset)
    got = V1.decode([writable]).mm_inputs.mm_items[0].feature
    assert np.shares_memory(got, np.asarray(writable)) and np.array_equal(got, values)


def test_array_decodes_into_its_own_memory_always():
    values = array("q", range(PAYLOAD // 8))
    msg = minimal(s.TokenizedGenerateReqInput)
    msg.input_ids = values
    frames = V1.encode(msg)
    got = V1.decode(frames).input_ids
    assert got == values and not np.shares_memory(np.frombuffer(got, dtype=np.uint8), np.asarray(frames[0]))


@pytest.mark.parametrize("dtype", sorted(set(TORCH_DTYPES.values()), key=str), ids=str)
def test_plain_tensor_fast_path_writes_the_bytes_of_the_general_path(dtype):
    tensor = torch.zeros((3, 5), dtype=dtype)
    fast = plain_tensor_bytes(tensor)
    _, general = tensor_to_wire(tensor)
    assert fast is None or bytes(fast) == bytes(general)
    for special in (tensor.t(), tensor.requires_grad_(dtype.is_floating_point or dtype.is_complex)):
        if special.requires_grad or not special.is_contiguous():
            assert plain_tensor_bytes(special) is None
